/**
 * A Vigie cluster for test/cluster: one `nats-server` with JetStream, one fresh
 * PostgreSQL database, N `vigie serve` processes with `cluster.enabled: true`, and a small load
 * balancer that sends each request to a random live instance.
 *
 * Everything started is tracked by the {@link Cluster}; {@link Cluster.stop} (called from
 * `afterAll`, also after a failed start) stops it all, SIGKILLs what does not stop in time and drops
 * the database. A process `exit` hook SIGKILLs whatever is still running as a last resort.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { Agent, createServer, request as httpRequest, type Server } from "node:http";
import { join } from "node:path";
import { dump } from "js-yaml";
import { createTestDatabase, POSTGRES_URL, type TestDatabase } from "../support/databases.js";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";

/** Number of healthcheck shards (docs/cluster.md: FNV-1a of a check's name, mod 256). */
export const SHARDS = 256;

/** Heartbeat and lease of the test clusters, in milliseconds (short, for speed). */
export const HEARTBEAT_MS = 500;
export const LEASE_MS = 3_000;

/** The nats-server binary, or "" when there is none. */
export const NATS_SERVER: string = (() => {
  const found = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" }).stdout.trim();
  if (found !== "") return found;
  return existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "";
})();

/**
 * Why the cluster tests cannot run here (printed with console.warn), or undefined when they can.
 * Use as `describe.skipIf(clusterSkip("…") !== undefined)`.
 */
export function clusterSkip(tests: string): string | undefined {
  let reason: string | undefined;
  if (POSTGRES_URL === undefined) reason = "VIGIE_TEST_POSTGRES_URL is not set";
  else if (NATS_SERVER === "") reason = "no nats-server binary (apt-get install -y nats-server)";
  if (reason !== undefined) console.warn(`skipping ${tests}: ${reason}`);
  return reason;
}

/** One member as `GET /cluster` lists it. */
export interface ClusterMember {
  readonly id: string;
  readonly url: string;
  readonly "started-at": string;
  readonly "heartbeat-at": string;
  readonly shards: number;
  readonly streams: readonly string[];
}

/** The body of `GET /cluster`. */
export interface ClusterView {
  readonly instance: string;
  readonly members: readonly ClusterMember[];
}

/** One Vigie instance of the cluster. */
export interface Instance {
  /** Its `cluster.instance-id`. */
  readonly id: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  readonly configFile: string;
  readonly directory: string;
  /** The running process; undefined before the start and after a kill. */
  process: VigieProcess | undefined;
  /** Output of the earlier processes of this instance (before restarts). */
  earlierOutput: string;
}

/** An answer parsed as JSON (body undefined when it is not JSON). */
export interface JsonAnswer {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test code reads arbitrary JSON shapes
  readonly body: any;
}

/**
 * Sends a request and parses its JSON answer.
 * @param body sent as JSON when defined
 */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: { body?: unknown; token?: string; timeoutMs?: number } = {},
): Promise<JsonAnswer> {
  const headers: Record<string, string> = {};
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

/** Base64 of UTF-8 text (stream configurations, index queries). */
export const b64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");

/** The load balancer in front of the cluster. */
export interface Balancer {
  readonly url: string;
  /** Requests forwarded so far, per instance id. */
  readonly served: Map<string, number>;
}

/** Options of {@link createCluster}. */
export interface ClusterOptions {
  /** Number of instances (default 3), ids a, b, c, … */
  readonly instances?: number;
  /** Extra configuration keys merged into every instance's file (top-level sections). */
  readonly config?: Record<string, unknown>;
  /** Configuration sections of one instance (by id), merged over `config`. */
  readonly configOf?: (id: string) => Record<string, unknown>;
  /** Environment of the first instance only (e.g. VIGIE_ADMIN_NAME / VIGIE_ADMIN_PASSWORD). */
  readonly firstEnv?: Record<string, string>;
  /** Starts the load balancer (default true). */
  readonly balancer?: boolean;
  /** A token nats-server requires of every client (`--auth`); none by default. */
  readonly natsToken?: string;
}

/** The cluster of one test file. */
export interface Cluster {
  readonly instances: readonly Instance[];
  /** Set by start(). */
  readonly balancer: Balancer;
  readonly natsUrl: string;
  readonly database: TestDatabase;
  /** Starts nats-server, the database, the instances (the first alone, then the others) and the balancer. */
  start(): Promise<void>;
  /** Stops everything started (also after a failed start) and drops the database. */
  stop(): Promise<void>;
  /** Sends `signal` (default SIGKILL) to the instance and waits for its exit; returns the exit time (ms). */
  kill(instance: Instance, signal?: NodeJS.Signals): Promise<number>;
  /** SIGKILLs nats-server (instances keep running and reconnect once it is back). */
  killNats(): Promise<void>;
  /** Starts nats-server again on the same port with the same JetStream storage. */
  restartNats(): Promise<void>;
  /** Starts the instance again with the same configuration (same id and port). */
  restart(instance: Instance): Promise<void>;
  /** Instances whose process runs. */
  alive(): Instance[];
  /** `GET /cluster` of the instance. */
  clusterView(instance: Instance): Promise<ClusterView>;
  /**
   * Waits until every live instance shows the same `expectMembers` members (the live instances'
   * ids) with the 256 shards split among them within one of an even share.
   * @returns the views, one per live instance
   */
  waitForStable(expectMembers: number, timeoutMs?: number): Promise<ClusterView[]>;
  /** The instance that owns the stream according to `GET /cluster` of `on` (undefined when none). */
  streamOwner(name: string, on?: Instance): Promise<Instance | undefined>;
  /** The instance of an id. */
  byId(id: string): Instance;
  /** The end of every instance's output (for failure messages). */
  outputs(lastChars?: number): string;
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});

function track(child: ChildProcess): void {
  running.add(child);
  child.once("exit", () => running.delete(child));
}

/** Sends SIGTERM, then SIGKILL after `graceMs`, and waits for the exit. */
async function terminate(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** `a`, `b`, … */
const instanceId = (index: number): string => String.fromCharCode(97 + index);

/** Shard counts a stable cluster of `members` may show: an even share ± 1. */
export function shardBounds(members: number): { min: number; max: number } {
  return { min: Math.floor(SHARDS / members) - 1, max: Math.ceil(SHARDS / members) + 1 };
}

/** Prepares a cluster; nothing runs before {@link Cluster.start}. */
export function createCluster(options: ClusterOptions = {}): Cluster {
  const count = options.instances ?? 3;
  const instances: Instance[] = [];
  const envs = new Map<Instance, Record<string, string>>();
  let nats: { child: ChildProcess; output: () => string } | undefined;
  let natsUrl = "";
  let database: TestDatabase | undefined;
  let balancer: Balancer | undefined;
  let balancerServer: Server | undefined;
  const balancerAgent = new Agent({ keepAlive: true });
  let stopped = false;

  let natsPlace: { storage: string; port: number; monitor: number } | undefined;
  const startNats = async (): Promise<void> => {
    if (natsPlace === undefined) {
      const storage = join(temporaryDirectory(), "jetstream");
      mkdirSync(storage);
      natsPlace = { storage, port: await freePort(), monitor: await freePort() };
    }
    const { storage, port, monitor } = natsPlace;
    const child = spawn(
      NATS_SERVER,
      [
        ...["-js", "-sd", storage, "-p", String(port), "-a", "127.0.0.1", "-m", String(monitor)],
        ...(options.natsToken === undefined ? [] : ["--auth", options.natsToken]),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    track(child);
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    nats = { child, output: () => output };
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`nats-server exited:\n${output}`);
        try {
          const answer = await fetch(`http://127.0.0.1:${monitor}/healthz?js-enabled-only=true`);
          return answer.ok ? true : undefined;
        } catch {
          return undefined;
        }
      },
      "nats-server to be ready",
      20_000,
    );
    natsUrl = `nats://127.0.0.1:${port}`;
  };

  const writeInstanceConfig = (instance: Instance, databaseUrl: string): void => {
    const base: Record<string, unknown> = {
      "log-level": process.env.VIGIE_CLUSTER_LOG_LEVEL ?? "warn",
      http: { host: "127.0.0.1", port: instance.port, "public-url": instance.baseUrl },
      database: { url: databaseUrl },
      cluster: {
        enabled: true,
        "instance-id": instance.id,
        heartbeat: `${HEARTBEAT_MS}ms`,
        lease: `${LEASE_MS}ms`,
        nats: { servers: [natsUrl] },
      },
    };
    for (const [key, value] of Object.entries({ ...options.config, ...options.configOf?.(instance.id) })) {
      const existing = base[key];
      base[key] =
        typeof existing === "object" && existing !== null && typeof value === "object" && value !== null
          ? { ...existing, ...value }
          : value;
    }
    writeFileSync(instance.configFile, dump(base));
  };

  const launch = async (instance: Instance): Promise<void> => {
    if (stopped) throw new Error("the cluster is stopped");
    const started = startVigie({
      configFile: instance.configFile,
      port: instance.port,
      cwd: instance.directory,
      ...(envs.has(instance) ? { env: envs.get(instance) } : {}),
    });
    instance.process = await started;
    track(instance.process.child);
  };

  const alive = (): Instance[] =>
    instances.filter(
      (instance) =>
        instance.process !== undefined &&
        instance.process.child.exitCode === null &&
        instance.process.child.signalCode === null,
    );

  const startBalancer = async (): Promise<void> => {
    const served = new Map<string, number>();
    const server = createServer((incoming, outgoing) => {
      const choices = alive();
      const target = choices[Math.floor(Math.random() * choices.length)];
      if (target === undefined) {
        outgoing.writeHead(502, { "content-type": "application/json" });
        outgoing.end(JSON.stringify({ error: "no instance alive" }));
        return;
      }
      served.set(target.id, (served.get(target.id) ?? 0) + 1);
      const upstream = httpRequest(
        {
          host: "127.0.0.1",
          port: target.port,
          method: incoming.method,
          path: incoming.url,
          // Host kept as the client sent it (127.0.0.1:<balancer port>, an IP literal: allowed).
          headers: incoming.headers,
          agent: balancerAgent,
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, { ...answer.headers, "x-test-instance": target.id });
          answer.pipe(outgoing);
        },
      );
      upstream.on("error", (error) => {
        if (!outgoing.headersSent) {
          outgoing.writeHead(502, { "content-type": "application/json" });
          outgoing.end(JSON.stringify({ error: `instance ${target.id}: ${error.message}` }));
        } else outgoing.destroy();
      });
      incoming.pipe(upstream);
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const address = server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    balancerServer = server;
    balancer = { url: `http://127.0.0.1:${port}`, served };
  };

  const clusterView = async (instance: Instance): Promise<ClusterView> => {
    const answer = await call(instance.baseUrl, "GET", "/cluster", { timeoutMs: 5_000 });
    if (answer.status !== 200) {
      throw new Error(`GET /cluster on ${instance.id}: ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    return answer.body as ClusterView;
  };

  const cluster: Cluster = {
    instances,
    get balancer(): Balancer {
      if (balancer === undefined) throw new Error("the balancer is not started");
      return balancer;
    },
    async killNats(): Promise<void> {
      const child = nats?.child;
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((done) => child.once("exit", () => done()));
      child.kill("SIGKILL");
      await exited;
    },
    restartNats: () => startNats(),
    get natsUrl(): string {
      return natsUrl;
    },
    get database(): TestDatabase {
      if (database === undefined) throw new Error("the database is not created");
      return database;
    },

    async start(): Promise<void> {
      await startNats();
      database = await createTestDatabase("postgres");
      for (let index = 0; index < count; index += 1) {
        const directory = temporaryDirectory();
        const port = await freePort();
        const instance: Instance = {
          id: instanceId(index),
          port,
          baseUrl: `http://127.0.0.1:${port}`,
          configFile: join(directory, "vigie.yaml"),
          directory,
          process: undefined,
          earlierOutput: "",
        };
        if (index === 0 && options.firstEnv !== undefined) envs.set(instance, options.firstEnv);
        writeInstanceConfig(instance, database.url);
        instances.push(instance);
      }
      // The first alone (it runs the migrations on the fresh database), then the others together.
      const [first, ...others] = instances;
      if (first !== undefined) await launch(first);
      await Promise.all(others.map(launch));
      if (options.balancer ?? true) await startBalancer();
    },

    async stop(): Promise<void> {
      stopped = true;
      if (balancerServer !== undefined) {
        balancerServer.closeAllConnections();
        await new Promise<void>((done) => balancerServer?.close(() => done()));
      }
      balancerAgent.destroy();
      await Promise.all(
        instances.map(async (instance) => {
          if (instance.process !== undefined) await terminate(instance.process.child, 5_000);
        }),
      );
      if (nats !== undefined) await terminate(nats.child, 5_000);
      // Anything this file started and that still runs (a start that failed half-way).
      await Promise.all([...running].map((child) => terminate(child, 1_000)));
      await database?.drop();
    },

    async kill(instance: Instance, signal: NodeJS.Signals = "SIGKILL"): Promise<number> {
      const current = instance.process;
      if (current === undefined) throw new Error(`instance ${instance.id} is not running`);
      current.child.kill(signal);
      await current.exited;
      const at = Date.now();
      instance.earlierOutput += current.output();
      instance.process = undefined;
      return at;
    },

    async restart(instance: Instance): Promise<void> {
      if (instance.process !== undefined) throw new Error(`instance ${instance.id} is still running`);
      await launch(instance);
    },

    alive,
    clusterView,

    async waitForStable(expectMembers: number, timeoutMs = 20_000): Promise<ClusterView[]> {
      let last: unknown = "no answer yet";
      const bounds = shardBounds(expectMembers);
      try {
        return await until(
          async () => {
            const live = alive();
            const expected = live.map((instance) => instance.id).sort();
            let views: ClusterView[];
            try {
              views = await Promise.all(live.map(clusterView));
            } catch (error) {
              last = String(error);
              return undefined;
            }
            last = views;
            if (live.length !== expectMembers) return undefined;
            const first = views[0];
            if (first === undefined) return undefined;
            const summary = (view: ClusterView) => JSON.stringify(view.members.map((m) => [m.id, m.shards]));
            for (const view of views) {
              const ids = view.members.map((member) => member.id);
              if (JSON.stringify(ids) !== JSON.stringify(expected)) return undefined;
              if (summary(view) !== summary(first)) return undefined;
              const total = view.members.reduce((sum, member) => sum + member.shards, 0);
              if (total !== SHARDS) return undefined;
              if (view.members.some((member) => member.shards < bounds.min || member.shards > bounds.max)) {
                return undefined;
              }
            }
            return views;
          },
          `${expectMembers} stable members`,
          timeoutMs,
        );
      } catch (error) {
        throw new Error(`${error}; last views: ${JSON.stringify(last)}`);
      }
    },

    async streamOwner(name: string, on?: Instance): Promise<Instance | undefined> {
      const from = on ?? alive()[0];
      if (from === undefined) return undefined;
      const view = await clusterView(from);
      const owners = view.members.filter((member) => member.streams.includes(name));
      if (owners.length > 1) throw new Error(`stream ${name} has ${owners.length} owners: ${JSON.stringify(view)}`);
      const owner = owners[0];
      return owner === undefined ? undefined : cluster.byId(owner.id);
    },

    byId(id: string): Instance {
      const instance = instances.find((candidate) => candidate.id === id);
      if (instance === undefined) throw new Error(`no instance ${id}`);
      return instance;
    },

    outputs(lastChars = 4_000): string {
      const parts = instances.map(
        (instance) =>
          `--- ${instance.id} ---\n${(instance.earlierOutput + (instance.process?.output() ?? "")).slice(-lastChars)}`,
      );
      if (nats !== undefined) parts.push(`--- nats-server ---\n${nats.output().slice(-lastChars)}`);
      return parts.join("\n");
    },
  };
  return cluster;
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
