// Cluster benchmark (docs/benchmarks.md): several Vigie instances (dist/cli.js serve) on one
// PostgreSQL database and one nats-server with JetStream, every process on 127.0.0.1. Each figure is
// printed beside a baseline measured in the same run; nothing here asserts a timing.
//
//   (1) CPU: 3 instances (cluster enabled) running 3 × BENCH_CHECKS http checks at 10 s against a
//       local target, the process CPU of each instance (utime + stime from /proc/<pid>/stat over the
//       window, after a warm-up), beside one instance with the cluster disabled running BENCH_CHECKS
//       checks on PostgreSQL too (its own fresh database), started first, alone. Target: each
//       instance within 20 % of the one instance. The CPU of nats-server and of the PostgreSQL
//       backends serving the database are printed too, and the target's count of requests (each
//       check once per interval).
//   (2) Forwarded pushes: BENCH_PUSH_REQUESTS pushes of 500 events, BENCH_IN_FLIGHT at a time, to a
//       non-owner of a stream (non-owner → JetStream → owner), beside the same pushes sent to the
//       owner directly. The stream is `by [:host] → fixed-event-window 500 → coll-count → index`, each
//       request's events carrying their own host: every request run whole by the owner leaves one
//       event of metric 500 in the owner's index, which the bench counts at the end. Printed: events/s
//       acknowledged to the client, and events/s run by the owner (until the owner's index holds every
//       request). Target ≥ 200 000 events/s.
//   (4) Partitioned stream (run before (3)): a stream with `:partition-by [:host]` and the pipeline of (2),
//       BENCH_PUSH_REQUESTS pushes of 500 events (each request one host, so one partition), pushed
//       round-robin to the 3 instances (BENCH_IN_FLIGHT in flight per instance: each instance runs
//       its own partitions and forwards the others' through JetStream), beside the same pushes to one
//       instance with the cluster disabled (its own database, BENCH_IN_FLIGHT in flight), which runs
//       the 64 partitions alone. Printed: events/s run (until the merged index search holds every
//       request), side by side. Target: 3 instances ≥ 2× one.
//   (3) Failover: BENCH_FAILOVER_CHECKS http checks at 1 s (their requests recorded by the target)
//       and a stream `index [:host]`; SIGKILL of the stream's owner (which owns a third of the
//       shards); the time until the killed owner's checks are requested again (checks whose requests
//       stopped for more than 2.5 intervals), until a probe pushed every 200 ms through a survivor
//       shows in the new owner's index, and whether every acknowledged probe is there. Target:
//       lease + 2 s.
//
// The three parts run on one cluster, one after the other (the checks of a part replace the
// previous part's). Every spawned process is killed and the databases dropped at the end, on an
// error and on SIGINT/SIGTERM.
//
//   npm run bench -- cluster                          (builds dist first; 60 s CPU windows)
//   BENCH_SECONDS=10 BENCH_CHECKS=2000 node bench/cluster.mjs  (a quick look)
//   BENCH_PARTS=push,failover ...                     (some parts only: cpu, push, partition, failover)
//   BENCH_WARM_UP=15 ...                              (seconds between registration and CPU window)
//   BENCH_PUSH_REQUESTS=2000 BENCH_IN_FLIGHT=8 ...    (pushes per phase of (2), requests in flight)
//   BENCH_HEARTBEAT=2s BENCH_LEASE=10s ...            (cluster.heartbeat and cluster.lease)
//   BENCH_FAILOVER_CHECKS=300 ...
//   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test ...  (the server where the temporary
//                                                      databases are created; VIGIE_TEST_POSTGRES_URL works)
//   BENCH_NATS_SERVER=/usr/sbin/nats-server ...       (default: /usr/sbin/nats-server, else on the PATH)
//   BENCH_VIGIE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" ...  (node options of every Vigie process)
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { cpuSeconds, fmt, freePort, root } from "./lib/vigie.mjs";

const pg = createRequire(join(root, "package.json"))("pg");

const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP ?? 15);
const PUSH_REQUESTS = Number(process.env.BENCH_PUSH_REQUESTS ?? 2_000);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 8);
const HEARTBEAT = process.env.BENCH_HEARTBEAT ?? "2s";
const LEASE = process.env.BENCH_LEASE ?? "10s";
const FAILOVER_CHECKS = Number(process.env.BENCH_FAILOVER_CHECKS ?? 300);
const PARTS = new Set((process.env.BENCH_PARTS ?? "cpu,push,partition,failover").split(",").map((part) => part.trim()));
const POSTGRES_URL =
  process.env.BENCH_POSTGRES_URL || process.env.VIGIE_TEST_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/test";
const INSTANCES = ["a", "b", "c"];
const INTERVAL_SECONDS = 10;
const BATCH = 500;
const FAILOVER_INTERVAL_SECONDS = 1;
const PROBE_EVERY_MS = 200;

const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));
const verdict = (ok) => (ok ? "ok" : "MISSED");
const seconds = (milliseconds) => `${(milliseconds / 1000).toFixed(2)} s`;

/** Milliseconds of a duration as the configuration writes it (`500ms`, `2s`, `1m`). */
function durationMs(text) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text);
  if (match === null) throw new Error(`cannot read duration ${text} (use e.g. 500ms, 10s)`);
  return Number(match[1]) * { ms: 1, s: 1_000, m: 60_000 }[match[2]];
}
const LEASE_MS = durationMs(LEASE);

// ---------------------------------------------------------------------------------------------
// Everything started here, stopped on every way out.

const children = new Set();
const cleanups = [];
let shuttingDown = false;

function killChildren() {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
}

async function runCleanups() {
  killChildren();
  while (cleanups.length > 0) {
    const cleanup = cleanups.pop();
    try {
      await cleanup();
    } catch (error) {
      console.error(`cleanup failed: ${error.message}`);
    }
  }
}

process.on("exit", killChildren);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (shuttingDown) return;
    shuttingDown = true;
    console.error(`\n${signal}: stopping every process started and dropping the databases`);
    runCleanups().finally(() => process.exit(130));
  });
}

/**
 * Spawns a process that is killed on every way out; its output lines are written to stderr with
 * `[label]` in front (the first 40, then only counted), and the last 30 are kept for errors.
 */
function spawnTracked(label, command, args, options = {}) {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  const tail = [];
  let printed = 0;
  let suppressed = 0;
  let pending = "";
  const onText = (text) => {
    pending += text;
    const lines = pending.split("\n");
    pending = lines.pop();
    for (const line of lines) {
      if (line === "") continue;
      tail.push(line);
      if (tail.length > 30) tail.shift();
      if (options.quiet) continue;
      if (printed < 40) {
        printed++;
        console.error(`[${label}] ${line.length > 3000 ? `${line.slice(0, 3000)}…` : line}`);
      } else suppressed++;
    }
  };
  child.stdout.setEncoding("utf8").on("data", onText);
  child.stderr.setEncoding("utf8").on("data", onText);
  const exited = new Promise((done) =>
    child.once("exit", (code, signal) => {
      children.delete(child);
      if (suppressed > 0) console.error(`[${label}] (${suppressed} more lines not shown)`);
      done(code ?? signal);
    }),
  );
  return { child, exited, tail: () => tail.join("\n"), label };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves on the exit. */
async function stopProcess(process_, graceMs = 10_000) {
  const { child, exited } = process_;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

function temporaryDirectory(prefix) {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(async () => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL and nats-server.

async function admin(statement, parameters = []) {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await client.query(statement, parameters);
  } finally {
    await client.end();
  }
}

/** A fresh database on the server of POSTGRES_URL, dropped at the end; its URL and name. */
async function temporaryDatabase(purpose) {
  const name = `vigie_bench_${purpose}_${randomBytes(4).toString("hex")}`;
  await admin(`CREATE DATABASE ${name}`);
  cleanups.push(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

/** The process ids of the PostgreSQL backends connected to `database` (local server only). */
async function backendPids(database) {
  try {
    const { rows } = await admin("select pid from pg_stat_activity where datname = $1", [database]);
    return rows.map((row) => Number(row.pid)).filter((pid) => existsSync(`/proc/${pid}/stat`));
  } catch {
    return [];
  }
}

/** CPU seconds of each pid still alive, by pid. */
function cpuOfPids(pids) {
  const cpu = new Map();
  for (const pid of pids) {
    try {
      cpu.set(pid, cpuSeconds(pid));
    } catch {
      // exited
    }
  }
  return cpu;
}

/** CPU seconds the backends used between two {@link cpuOfPids} (those alive at both). */
function backendsCpu(before, after) {
  let total = 0;
  for (const [pid, cpu] of after) if (before.has(pid)) total += cpu - before.get(pid);
  return total;
}

function natsServerPath() {
  if (process.env.BENCH_NATS_SERVER)
    return existsSync(process.env.BENCH_NATS_SERVER) ? process.env.BENCH_NATS_SERVER : undefined;
  if (existsSync("/usr/sbin/nats-server")) return "/usr/sbin/nats-server";
  const found = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" }).stdout?.trim();
  return found ? found : undefined;
}

async function portOpen(port) {
  return new Promise((done) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      done(true);
    });
    socket.once("error", () => done(false));
  });
}

async function startNats(path) {
  const port = await freePort();
  const directory = temporaryDirectory("vigie-bench-nats-");
  const nats = spawnTracked("nats", path, ["-js", "-sd", directory, "-p", String(port), "-a", "127.0.0.1"], {
    quiet: true,
  });
  const deadline = Date.now() + 15_000;
  while (!(await portOpen(port))) {
    if (nats.child.exitCode !== null)
      throw new Error(`nats-server exited with ${nats.child.exitCode}:\n${nats.tail()}`);
    if (Date.now() > deadline) throw new Error(`nats-server did not listen within 15 s:\n${nats.tail()}`);
    await sleep(100);
  }
  return { ...nats, port, url: `nats://127.0.0.1:${port}` };
}

// ---------------------------------------------------------------------------------------------
// The target of the checks, in its own process so that its CPU is not Vigie's. It counts requests
// by path; for paths under /t/ it records the time (epoch ms) of each. /__control/reset clears,
// /__control/counts and /__control/times answer JSON.

const TARGET = `
import { createServer } from "node:http";
let counts = new Map();
let times = new Map();
let total = 0;
const server = createServer((request, response) => {
  const path = request.url.split("?")[0];
  if (path.startsWith("/__control/")) {
    let body = {};
    if (path === "/__control/reset") {
      counts = new Map(); times = new Map(); total = 0;
    } else if (path === "/__control/counts") {
      const histogram = {};
      for (const count of counts.values()) histogram[count] = (histogram[count] ?? 0) + 1;
      body = { total, distinct: counts.size, histogram };
    } else if (path === "/__control/times") {
      body = Object.fromEntries(times);
    }
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify(body));
    return;
  }
  total++;
  counts.set(path, (counts.get(path) ?? 0) + 1);
  if (path.startsWith("/t/")) {
    let list = times.get(path);
    if (list === undefined) times.set(path, (list = []));
    list.push(Date.now());
  }
  response.end("ok");
});
server.keepAliveTimeout = 30_000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

async function startTarget() {
  const target = spawnTracked("target", process.execPath, ["--input-type=module", "-e", TARGET], { quiet: true });
  const deadline = Date.now() + 10_000;
  while (!/^\d+$/m.test(target.tail())) {
    if (target.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`target did not start:\n${target.tail()}`);
    await sleep(50);
  }
  const port = Number(/^(\d+)$/m.exec(target.tail())[1]);
  const control = async (what) => (await call("GET", `http://127.0.0.1:${port}/__control/${what}`)).json;
  return { ...target, port, control };
}

// ---------------------------------------------------------------------------------------------
// Vigie instances.

/** One HTTP request with a deadline; the answer's status, JSON (when it is) and text. */
async function call(method, url, body, timeoutMs = 10_000) {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

/**
 * Starts `node dist/cli.js serve` on `database`, cluster enabled when `nats` is given (instance id
 * `id`), and waits for /healthz.
 */
async function startInstance({ id, database, nats }) {
  const directory = temporaryDirectory(`vigie-bench-${id}-`);
  const port = await freePort();
  const config = join(directory, "vigie.yaml");
  const lines = [
    "http:",
    "  host: 127.0.0.1",
    `  port: ${port}`,
    // 30 000 definitions in one bulk body are over the default 1 MiB.
    '  body-limit: "16MiB"',
    "log-level: warn",
    "database:",
    `  url: ${JSON.stringify(database.url)}`,
    "healthchecks:",
    "  min-interval: 1s",
  ];
  if (nats !== undefined) {
    lines.push(
      "cluster:",
      "  enabled: true",
      `  instance-id: ${id}`,
      `  heartbeat: ${HEARTBEAT}`,
      `  lease: ${LEASE}`,
      "  nats:",
      `    servers: [${JSON.stringify(nats.url)}]`,
    );
  }
  writeFileSync(config, `${lines.join("\n")}\n`);
  const nodeArgs = (process.env.BENCH_VIGIE_NODE_ARGS ?? "").split(/\s+/).filter((arg) => arg !== "");
  const instance = spawnTracked(
    id,
    process.execPath,
    [...nodeArgs, join(root, "dist/cli.js"), "serve", "--config", config],
    {
      cwd: directory,
    },
  );
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (instance.child.exitCode !== null || instance.child.signalCode !== null) {
      throw new Error(
        `instance ${id} exited (${instance.child.exitCode ?? instance.child.signalCode}):\n${instance.tail()}`,
      );
    }
    if (Date.now() > deadline)
      throw new Error(`instance ${id} did not answer /healthz within 30 s:\n${instance.tail()}`);
    try {
      if ((await call("GET", `${base}/healthz`, undefined, 2_000)).status === 200) break;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  return {
    ...instance,
    id,
    base,
    pid: instance.child.pid,
    alive: () => instance.child.exitCode === null && instance.child.signalCode === null,
  };
}

/** GET /cluster of an instance: `{ instance, members }`, or undefined when it does not answer 200. */
async function clusterView(instance, timeoutMs = 3_000) {
  try {
    const answer = await call("GET", `${instance.base}/cluster`, undefined, timeoutMs);
    return answer.status === 200 ? answer.json : undefined;
  } catch {
    return undefined;
  }
}

/** Waits (at most `timeoutMs`) until every live instance sees them all with the 256 shards split evenly. */
async function waitForCluster(instances, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    const views = await Promise.all(instances.map((instance) => clusterView(instance)));
    last = views;
    const settled = views.every((view) => {
      if (view === undefined || view.members?.length !== instances.length) return false;
      const shards = view.members.map((member) => member.shards);
      const sum = shards.reduce((a, b) => a + b, 0);
      return sum === 256 && Math.max(...shards) - Math.min(...shards) <= 2;
    });
    if (settled) return views[0];
    await sleep(250);
  }
  console.log(
    `    (cluster not settled after ${timeoutMs / 1000} s: ${JSON.stringify(last?.map((view) => view?.members?.map((m) => `${m.id}:${m.shards}`)))})`,
  );
  return last?.find((view) => view !== undefined);
}

/** The id of the owner of `stream` in GET /cluster of `instance`, when one is listed. */
async function ownerOf(instance, stream) {
  const view = await clusterView(instance);
  return view?.members?.find((member) => member.streams?.includes(stream))?.id;
}

const streamConfig = (edn) => ({ config: Buffer.from(edn, "utf8").toString("base64") });
const query = (edn) => ({ query: Buffer.from(edn, "utf8").toString("base64") });

/** Creates a stream through `via` and waits until every instance has it and an owner is listed. */
async function createStream(instances, via, name, edn) {
  const created = await call("POST", `${via.base}/api/v1/stream/${name}`, streamConfig(edn));
  if (created.status !== 201) throw new Error(`POST /api/v1/stream/${name}: ${created.status} ${created.text}`);
  const deadline = Date.now() + 10_000 + 2 * LEASE_MS;
  for (;;) {
    const present = await Promise.all(
      instances.map(async (instance) => (await call("GET", `${instance.base}/api/v1/stream/${name}`)).status === 200),
    );
    const owner = present.every(Boolean) ? await ownerOf(via, name) : undefined;
    if (owner !== undefined) return instances.find((instance) => instance.id === owner);
    if (Date.now() > deadline) {
      throw new Error(
        `stream ${name}: present on the instances ${JSON.stringify(present)}, but no owner in GET /cluster`,
      );
    }
    await sleep(100);
  }
}

/** Events of the index of `stream` matching `edn`, searched through `instance`. */
async function search(instance, stream, edn, timeoutMs = 5_000) {
  const answer = await call("POST", `${instance.base}/api/v1/index/${stream}/search`, query(edn), timeoutMs);
  if (answer.status !== 200) throw new Error(`search of ${stream} on ${instance.id}: ${answer.status} ${answer.text}`);
  return answer.json.events;
}

/** Replaces the API checks through `via` and waits until `lastName` is known to every instance. */
async function registerChecks(instances, via, checks) {
  const started = performance.now();
  // A failed bulk is printed and tried again (three times at most): it is a finding, not the figure.
  for (let attempt = 1; ; attempt++) {
    const answer = await call("POST", `${via.base}/healthcheck/bulk`, { "http-checks": checks }, 300_000);
    if (answer.status === 201) break;
    const problem = `POST /healthcheck/bulk of ${fmt(checks.length)} checks on ${via.id}: ${answer.status} ${answer.text.slice(0, 300)}`;
    if (attempt >= 3) throw new Error(problem);
    console.log(`    (${problem}; trying again)`);
    await sleep(1_000);
  }
  const registered = performance.now() - started;
  if (checks.length === 0) return { registered, visible: registered };
  const lastName = checks.at(-1).name;
  const deadline = Date.now() + 60_000;
  for (const instance of instances) {
    while ((await call("GET", `${instance.base}/healthcheck/${lastName}`)).status !== 200) {
      if (Date.now() > deadline)
        throw new Error(`check ${lastName} not visible on ${instance.id} within 60 s of the bulk`);
      await sleep(100);
    }
  }
  return { registered, visible: performance.now() - started };
}

const httpChecks = (count, prefix, port, interval, path, timeout = "5s") =>
  Array.from({ length: count }, (_, index) => ({
    name: `${prefix}${index}`,
    target: "127.0.0.1",
    port,
    path: path(`${prefix}${index}`),
    "valid-status": [200],
    interval,
    timeout,
  }));

// ---------------------------------------------------------------------------------------------
// (1) CPU.

/**
 * Registers `count` checks at 10 s through the first instance, waits, and measures over the window
 * the CPU of each instance, of nats-server and of the database's PostgreSQL backends, and the
 * target's requests.
 */
async function measureCpu({ instances, via, count, target, database, nats }) {
  const timing = await registerChecks(
    instances,
    via,
    httpChecks(count, "c", target.port, `${INTERVAL_SECONDS}s`, (name) => `/${name}`),
  );
  console.log(
    `    registered ${fmt(count)} checks in ${seconds(timing.registered)} (on every instance after ${seconds(timing.visible)}); warming up ${WARM_UP_SECONDS} s`,
  );
  await sleep(WARM_UP_SECONDS * 1000);
  const pids = await backendPids(database.name);
  const backendsBefore = cpuOfPids(pids);
  const before = instances.map((instance) => cpuSeconds(instance.pid));
  const natsBefore = nats === undefined ? 0 : cpuSeconds(nats.child.pid);
  await target.control("reset");
  const started = performance.now();
  await sleep(WINDOW_SECONDS * 1000);
  const elapsed = (performance.now() - started) / 1000;
  const counts = await target.control("counts");
  const cores = instances.map((instance, index) => (cpuSeconds(instance.pid) - before[index]) / elapsed);
  const natsCores = nats === undefined ? undefined : (cpuSeconds(nats.child.pid) - natsBefore) / elapsed;
  const backendCores = backendsCpu(backendsBefore, cpuOfPids(pids)) / elapsed;
  const expectedPerCheck = elapsed / INTERVAL_SECONDS;
  let over = 0;
  let under = 0;
  for (const [times, checks] of Object.entries(counts.histogram)) {
    if (Number(times) > Math.ceil(expectedPerCheck) + 1) over += checks;
    if (Number(times) < Math.floor(expectedPerCheck) - 1) under += checks;
  }
  // Checks never requested count as fewer, when at least one request was due.
  if (Math.floor(expectedPerCheck) - 1 > 0) under += count - counts.distinct;
  return {
    cores,
    natsCores,
    backendCores,
    backends: pids.length,
    elapsed,
    counts,
    expected: count * expectedPerCheck,
    over,
    under,
  };
}

function requestsLine(result) {
  return `target requests in the window ${fmt(result.counts.total)} (expected about ${fmt(result.expected)}); checks requested more than ${Math.ceil(result.elapsed / INTERVAL_SECONDS) + 1} times: ${result.over}, fewer than ${Math.max(0, Math.floor(result.elapsed / INTERVAL_SECONDS) - 1)}: ${result.under}`;
}

async function partCpuBaseline(target) {
  const database = await temporaryDatabase("single");
  const instance = await startInstance({ id: "single", database });
  try {
    console.log(
      `  baseline: one instance, cluster disabled, PostgreSQL (database ${database.name}), ${fmt(CHECKS)} checks`,
    );
    const result = await measureCpu({ instances: [instance], via: instance, count: CHECKS, target, database });
    console.log(
      `    CPU: ${result.cores[0].toFixed(3)} cores (${(result.cores[0] * result.elapsed).toFixed(2)} s over ${result.elapsed.toFixed(1)} s); PostgreSQL backends (${result.backends}): ${result.backendCores.toFixed(3)} cores`,
    );
    console.log(`    ${requestsLine(result)}`);
    return result;
  } finally {
    await stopProcess(instance);
  }
}

async function partCpuCluster(cluster, baseline) {
  const { instances, target, database, nats } = cluster;
  const view = await clusterView(instances[0]);
  console.log(
    `  cluster: ${instances.length} instances, ${fmt(CHECKS * instances.length)} checks (shards ${view?.members?.map((member) => `${member.id} ${member.shards}`).join(", ")}), one nats-server, database ${database.name}`,
  );
  const result = await measureCpu({
    instances,
    via: instances[0],
    count: CHECKS * instances.length,
    target,
    database,
    nats,
  });
  const base = baseline?.cores[0];
  for (const [index, instance] of instances.entries()) {
    const cores = result.cores[index];
    const ratio =
      base === undefined
        ? ""
        : `   ×${(cores / base).toFixed(2)} of the baseline   target ≤ ×1.20   ${verdict(cores <= base * 1.2)}`;
    console.log(
      `    instance ${instance.id}: ${cores.toFixed(3)} cores (${(cores * result.elapsed).toFixed(2)} s over ${result.elapsed.toFixed(1)} s)${ratio}`,
    );
  }
  const mean = result.cores.reduce((a, b) => a + b, 0) / result.cores.length;
  if (base !== undefined) {
    console.log(
      `    mean of the ${instances.length} instances: ${mean.toFixed(3)} cores against ${base.toFixed(3)} for one instance with ${fmt(CHECKS)} checks: ×${(mean / base).toFixed(2)} (total ${(mean * instances.length).toFixed(3)} cores for ${instances.length}× the checks)`,
    );
  }
  console.log(
    `    nats-server: ${result.natsCores.toFixed(3)} cores; PostgreSQL backends (${result.backends}): ${result.backendCores.toFixed(3)} cores${baseline === undefined ? "" : ` (baseline's: ${baseline.backendCores.toFixed(3)})`}`,
  );
  console.log(`    ${requestsLine(result)}`);
  // The next parts do not run these checks.
  await registerChecks(instances, instances[0], []);
}

// ---------------------------------------------------------------------------------------------
// (2) Forwarded pushes.

const COUNT_STREAM = `{:actions {:action :by :params [{:fields [:host]}]
  :children [{:action :fixed-event-window :params [{:size ${BATCH}}]
    :children [{:action :coll-count
      :children [{:action :index :params [[:host]]}]}]}]}}`;

/** The bodies of `count` pushes of {@link BATCH} events, request k's events all with host `<phase>-<k>`. */
function pushBodies(phase, count) {
  const time = Math.floor(Date.now() / 1000);
  const bodies = new Array(count);
  for (let k = 0; k < count; k++) {
    const event = `{"host":"${phase}-${k}","service":"bench","phase":"${phase}","metric":1,"time":${time}}`;
    bodies[k] = `{"events":[${new Array(BATCH).fill(event).join(",")}]}`;
  }
  return bodies;
}

/** Pushes `bodies` to `stream` on `instance`, IN_FLIGHT at a time; the time and the failures. */
async function push(instance, stream, bodies) {
  const agent = new Agent({ connections: IN_FLIGHT, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const failures = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < bodies.length) {
      const k = next++;
      try {
        const response = await request(`${instance.base}/api/v1/stream/${stream}`, {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: bodies[k],
          dispatcher: agent,
        });
        const text = await response.body.text();
        if (response.statusCode !== 200) failures.push(`${response.statusCode} ${text.slice(0, 200)}`);
      } catch (error) {
        failures.push(error.message);
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const elapsed = performance.now() - started;
  await agent.close();
  return { started, elapsed, failures };
}

/** Polls the owner's index until it holds `expected` events of `phase` (or 120 s): when, and how many. */
async function waitForRun(owner, stream, phase, expected) {
  const deadline = performance.now() + 120_000;
  let events = [];
  for (;;) {
    events = await search(owner, stream, `[:= :phase "${phase}"]`, 30_000);
    if (events.length >= expected || performance.now() > deadline) break;
    await sleep(50);
  }
  return { at: performance.now(), events };
}

const CPU_LABELS = (cluster) => [...cluster.instances.map((instance) => instance.id), "nats-server"];
function cpuSnapshot(cluster) {
  return [
    ...cluster.instances.map((instance) => (instance.alive() ? cpuSeconds(instance.pid) : 0)),
    cpuSeconds(cluster.nats.child.pid),
  ];
}
function cpuLine(cluster, before, after) {
  return CPU_LABELS(cluster)
    .map((label, index) => `${label} ${(after[index] - before[index]).toFixed(2)} s`)
    .join(", ");
}

async function partPush(cluster) {
  const { instances } = cluster;
  const stream = "bench-count";
  const owner = await createStream(instances, instances[0], stream, COUNT_STREAM);
  const forwarder = instances.find((instance) => instance !== owner);
  const events = PUSH_REQUESTS * BATCH;
  console.log(
    `  stream ${stream} (by [:host] → fixed-event-window ${BATCH} → coll-count → index [:host]) owned by ${owner.id}; ${fmt(PUSH_REQUESTS)} pushes of ${BATCH} events (${fmt(events)} events) per phase, ${IN_FLIGHT} in flight`,
  );

  // Warm-up of both paths, then a wait until the owner ran it.
  const warm = pushBodies("warm", 100);
  await push(owner, stream, warm.slice(0, 50));
  await push(forwarder, stream, warm.slice(50));
  await waitForRun(owner, stream, "warm", 100);

  const phases = [];
  for (const [phase, instance] of [
    ["direct", owner],
    ["forwarded", forwarder],
  ]) {
    const bodies = pushBodies(phase, PUSH_REQUESTS);
    const cpuBefore = cpuSnapshot(cluster);
    const pushed = await push(instance, stream, bodies);
    const run = await waitForRun(owner, stream, phase, PUSH_REQUESTS - pushed.failures.length);
    const cpuAfter = cpuSnapshot(cluster);
    phases.push({ phase, instance, pushed, run, cpuBefore, cpuAfter });
  }
  for (const { phase, instance, pushed, run, cpuBefore, cpuAfter } of phases) {
    const acknowledged = PUSH_REQUESTS - pushed.failures.length;
    const ackRate = (acknowledged * BATCH) / (pushed.elapsed / 1000);
    const runMs = run.at - pushed.started;
    const complete = run.events.filter((event) => event.metric === BATCH).length;
    const runRate = (complete * BATCH) / (runMs / 1000);
    const label =
      phase === "direct"
        ? `to the owner ${owner.id} directly (baseline)`
        : `to the non-owner ${instance.id} (→ JetStream → ${owner.id})`;
    console.log(`    ${label}:`);
    console.log(
      `      acknowledged: ${fmt(ackRate)} events/s (${fmt(acknowledged)} requests in ${seconds(pushed.elapsed)})${pushed.failures.length > 0 ? `; ${pushed.failures.length} failed, e.g. ${pushed.failures[0]}` : ""}`,
    );
    console.log(
      `      run by the owner: ${fmt(runRate)} events/s (every request in ${owner.id}'s index ${seconds(runMs)} after the first push)${phase === "forwarded" ? `   target ≥ 200 000 events/s   ${verdict(runRate >= 200_000)}` : ""}`,
    );
    console.log(
      `      owner's index: ${fmt(run.events.length)} of ${fmt(PUSH_REQUESTS)} requests, ${fmt(complete)} with all ${BATCH} events counted (${fmt(complete * BATCH)} events)${run.events.length > PUSH_REQUESTS ? "  MORE THAN PUSHED" : ""}`,
    );
    console.log(`      CPU over the phase: ${cpuLine(cluster, cpuBefore, cpuAfter)}`);
  }
  const [direct, forwarded] = phases;
  const rate = (p) =>
    ((p.run.events.filter((event) => event.metric === BATCH).length * BATCH) / (p.run.at - p.pushed.started)) * 1000;
  console.log(`    forwarded / direct (run by the owner): ${(rate(forwarded) / rate(direct)).toFixed(2)}`);
  // The final count, from every instance (a non-owner's search is answered by the owner).
  const totals = [];
  for (const instance of instances) {
    try {
      const all = await search(instance, stream, "[:always-true]", 10_000);
      totals.push(`${instance.id} ${fmt(all.filter((event) => event.metric === BATCH).length * BATCH)}`);
    } catch (error) {
      totals.push(`${instance.id} (${error.message})`);
    }
  }
  console.log(
    `    events counted in the index (warm-up included, ${fmt((100 + 2 * PUSH_REQUESTS) * BATCH)} pushed), searched through each instance: ${totals.join(", ")}`,
  );
}

// ---------------------------------------------------------------------------------------------
// (4) A partitioned stream across instances.

const PARTITIONED_STREAM = COUNT_STREAM.replace("{:actions", "{:partition-by [:host] :actions");

/** Pushes `bodies` round-robin over `instances` (each with its own IN_FLIGHT), then waits until the merged index holds them. */
async function pushSpread(instances, stream, phase, bodies) {
  const started = performance.now();
  const shares = instances.map((_, lane) => bodies.filter((_, k) => k % instances.length === lane));
  const results = await Promise.all(instances.map((instance, lane) => push(instance, stream, shares[lane])));
  const failures = results.flatMap((result) => result.failures);
  const acknowledgedMs = performance.now() - started;
  const run = await waitForRun(instances[0], stream, phase, bodies.length - failures.length);
  const complete = run.events.filter((event) => event.metric === BATCH).length;
  return { acknowledgedMs, runMs: run.at - started, complete, failures };
}

async function partPartition(cluster) {
  const { instances } = cluster;
  const stream = "bench-partitioned";
  const events = PUSH_REQUESTS * BATCH;
  console.log(
    `  stream ${stream} (:partition-by [:host], by [:host] → fixed-event-window ${BATCH} → coll-count → index [:host]); ${fmt(PUSH_REQUESTS)} pushes of ${BATCH} events (${fmt(events)} events), one host each, ${IN_FLIGHT} in flight per instance`,
  );
  const rows = [];
  // One instance, cluster disabled: it runs the 64 partitions alone.
  const database = await temporaryDatabase("partition_single");
  const single = await startInstance({ id: "single", database });
  try {
    const created = await call("POST", `${single.base}/api/v1/stream/${stream}`, streamConfig(PARTITIONED_STREAM));
    if (created.status !== 201) throw new Error(`POST /api/v1/stream/${stream}: ${created.status} ${created.text}`);
    await pushSpread([single], stream, "warm", pushBodies("warm", 100));
    const cpuBefore = cpuSeconds(single.pid);
    rows.push({
      label: "1 instance (cluster disabled)",
      ...(await pushSpread([single], stream, "one", pushBodies("one", PUSH_REQUESTS))),
      cpu: `${(cpuSeconds(single.pid) - cpuBefore).toFixed(2)} s`,
    });
  } finally {
    await stopProcess(single);
  }
  // Three instances: each partition leased by one of them.
  const created = await call("POST", `${instances[0].base}/api/v1/stream/${stream}`, streamConfig(PARTITIONED_STREAM));
  if (created.status !== 201) throw new Error(`POST /api/v1/stream/${stream}: ${created.status} ${created.text}`);
  const deadline = Date.now() + 10_000 + 3 * LEASE_MS;
  let spread = [];
  while (Date.now() < deadline) {
    const view = await clusterView(instances[0]);
    spread = (view?.members ?? []).map((member) => ({
      id: member.id,
      partitions: member.streams.filter((key) => key.startsWith(`${stream}#`)).length,
    }));
    if (spread.reduce((sum, member) => sum + member.partitions, 0) === 64 && spread.every((m) => m.partitions >= 20))
      break;
    await sleep(200);
  }
  console.log(`    partitions per member: ${spread.map((member) => `${member.id} ${member.partitions}`).join(", ")}`);
  await pushSpread(instances, stream, "warm", pushBodies("warm", 100));
  const cpuBefore = cpuSnapshot(cluster);
  const spreadRun = await pushSpread(instances, stream, "three", pushBodies("three", PUSH_REQUESTS));
  rows.push({
    label: `${instances.length} instances (round-robin)`,
    ...spreadRun,
    cpu: cpuLine(cluster, cpuBefore, cpuSnapshot(cluster)),
  });
  const rate = (row) => (row.complete * BATCH) / (row.runMs / 1000);
  for (const row of rows) {
    console.log(
      `    ${row.label.padEnd(32)} run: ${fmt(rate(row)).padStart(9)} events/s   acknowledged: ${fmt(((PUSH_REQUESTS - row.failures.length) * BATCH) / (row.acknowledgedMs / 1000)).padStart(9)} events/s   ${fmt(row.complete)} of ${fmt(PUSH_REQUESTS)} requests complete${row.failures.length > 0 ? `; ${row.failures.length} failed, e.g. ${row.failures[0]}` : ""}; CPU ${row.cpu}`,
    );
  }
  const [one, three] = rows;
  const ratio = rate(three) / rate(one);
  console.log(
    `    ${instances.length} instances / 1 instance: ×${ratio.toFixed(2)}   target ≥ ×2   ${verdict(ratio >= 2)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// (3) Failover.

const PROBE_STREAM = "bench-probe";

function quantile(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

async function partFailover(cluster) {
  const { instances, target } = cluster;
  const owner = await createStream(
    instances,
    instances[0],
    PROBE_STREAM,
    "{:actions {:action :index :params [[:host]]}}",
  );
  const checks = httpChecks(
    FAILOVER_CHECKS,
    "f",
    target.port,
    `${FAILOVER_INTERVAL_SECONDS}s`,
    (name) => `/t/${name}`,
    "500ms",
  );
  await registerChecks(instances, instances[0], checks);
  const settled = await waitForCluster(instances, 30_000);
  const victimShards = settled?.members?.find((member) => member.id === owner.id)?.shards;
  const victim = owner;
  const survivors = instances.filter((instance) => instance !== victim);
  console.log(
    `  ${FAILOVER_CHECKS} http checks at ${FAILOVER_INTERVAL_SECONDS}s and stream ${PROBE_STREAM} (index [:host]); killing ${victim.id}, owner of the stream and of ${victimShards ?? "?"} shards; heartbeat ${HEARTBEAT}, lease ${LEASE}`,
  );
  // A few intervals of requests before the kill.
  await sleep(3_000);
  await target.control("reset");
  // At a random moment of the victim's heartbeat period, so that runs sample where the kill falls.
  await sleep(3_000 + Math.random() * durationMs(HEARTBEAT));

  const beforeKill = await clusterView(survivors[0]);
  const lastHeartbeat = Date.parse(beforeKill?.members?.find((member) => member.id === victim.id)?.["heartbeat-at"]);
  const killedAt = Date.now();
  victim.child.kill("SIGKILL");
  await victim.exited;

  const hardDeadline = killedAt + LEASE_MS + 40_000;
  let stop = false;
  const probes = [];
  let probeSeenAt;
  let probeSeenOn;
  let memberGoneAt;
  let newOwner;
  let newOwnerAt;
  const probeLoop = async () => {
    for (let k = 0; !stop && Date.now() < hardDeadline; k++) {
      const via = survivors[k % survivors.length];
      const probe = { host: `probe-${k}`, via: via.id, sentAt: Date.now() };
      probes.push(probe);
      try {
        const answer = await call(
          "PUT",
          `${via.base}/api/v1/stream/${PROBE_STREAM}`,
          { event: { host: probe.host, service: "probe", metric: k } },
          5_000,
        );
        probe.status = answer.status;
        if (answer.status !== 200) probe.error = answer.text.slice(0, 200);
      } catch (error) {
        probe.error = error.message;
      }
      probe.answeredAt = Date.now();
      await sleep(Math.max(0, probe.sentAt + PROBE_EVERY_MS - Date.now()));
    }
  };
  const searchLoop = async (instance) => {
    while (!stop && Date.now() < hardDeadline && probeSeenAt === undefined) {
      const began = Date.now();
      try {
        const found = await search(instance, PROBE_STREAM, '[:= :service "probe"]', 5_000);
        if (found.length > 0 && probeSeenAt === undefined) {
          probeSeenAt = Date.now();
          probeSeenOn = instance.id;
        }
      } catch {
        // the owner is unavailable (503) until a survivor takes the stream
      }
      await sleep(Math.max(0, began + 100 - Date.now()));
    }
  };
  const clusterLoop = async () => {
    while (!stop && Date.now() < hardDeadline && (memberGoneAt === undefined || newOwnerAt === undefined)) {
      const began = Date.now();
      const view = await clusterView(survivors[0]);
      if (view !== undefined) {
        if (memberGoneAt === undefined && !view.members.some((member) => member.id === victim.id))
          memberGoneAt = Date.now();
        const listed = view.members.find((member) => member.streams?.includes(PROBE_STREAM))?.id;
        if (newOwnerAt === undefined && listed !== undefined && listed !== victim.id) {
          newOwnerAt = Date.now();
          newOwner = survivors.find((instance) => instance.id === listed);
        }
      }
      await sleep(Math.max(0, began + 100 - Date.now()));
    }
  };
  const loops = [probeLoop(), ...survivors.map(searchLoop), clusterLoop()];
  // Until the stream ran a probe and has its owner, then 4 intervals more for the checks.
  while (Date.now() < hardDeadline) {
    const last = Math.max(probeSeenAt ?? Number.POSITIVE_INFINITY, newOwnerAt ?? Number.POSITIVE_INFINITY);
    if (Date.now() > Math.max(last, killedAt + LEASE_MS) + 4_000 + 4_000 * FAILOVER_INTERVAL_SECONDS) break;
    await sleep(100);
  }
  stop = true;
  await Promise.all(loops);
  const endedAt = Date.now();

  // Checks: those whose requests stopped for more than 2.5 intervals at the kill were the victim's.
  const times = await target.control("times");
  const interval = FAILOVER_INTERVAL_SECONDS * 1000;
  const resumed = [];
  let orphans = 0;
  let notResumed = 0;
  let twice = 0;
  for (const check of checks) {
    const list = times[check.path] ?? [];
    for (let i = 1; i < list.length; i++) if (list[i] - list[i - 1] < interval / 2) twice++;
    const before = list.filter((time) => time <= killedAt);
    const after = list.filter((time) => time > killedAt);
    const last = before.at(-1) ?? killedAt - interval;
    const first = after[0];
    if (first !== undefined && first - last <= 2.5 * interval) continue;
    orphans++;
    if (first === undefined) notResumed++;
    else resumed.push(first - killedAt);
  }
  resumed.sort((a, b) => a - b);
  const goal = LEASE_MS + 2_000;
  console.log(`    lease ${LEASE} → target lease + 2 s = ${seconds(goal)} after the kill`);
  if (Number.isFinite(lastHeartbeat)) {
    console.log(
      `    ${victim.id}'s last heartbeat (GET /cluster just before the kill) ${seconds(killedAt - lastHeartbeat)} before the kill: its lease ended ${seconds(lastHeartbeat + LEASE_MS - killedAt)} after the kill`,
    );
  }
  console.log(
    `    ${victim.id} gone from GET /cluster of ${survivors[0].id}: ${memberGoneAt === undefined ? "not within the run" : `after ${seconds(memberGoneAt - killedAt)}`}; ${PROBE_STREAM} listed under ${newOwner?.id ?? "nobody"}${newOwnerAt === undefined ? "" : ` after ${seconds(newOwnerAt - killedAt)}`}${newOwnerAt !== undefined && Number.isFinite(lastHeartbeat) ? ` (${seconds(newOwnerAt - lastHeartbeat - LEASE_MS)} after the lease ended)` : ""}`,
  );
  const expectedOrphans =
    victimShards === undefined
      ? ""
      : ` (about ${Math.round((FAILOVER_CHECKS * victimShards) / 256)} expected from its ${victimShards} shards)`;
  if (resumed.length > 0) {
    const all = notResumed === 0 ? resumed.at(-1) : Number.POSITIVE_INFINITY;
    console.log(
      `    checks: ${orphans} of ${FAILOVER_CHECKS} stopped at the kill${expectedOrphans}; requested again after ${seconds(resumed[0])} (first), ${seconds(quantile(resumed, 0.5))} (median), ${seconds(resumed.at(-1))} (last; a check waits up to its ${FAILOVER_INTERVAL_SECONDS} s interval for its slot)${notResumed > 0 ? `, ${notResumed} never within ${seconds(endedAt - killedAt)}` : ""}   target ≤ ${seconds(goal)}: first ${verdict(resumed[0] <= goal)}, last ${verdict(all <= goal)}`,
    );
  } else {
    console.log(
      `    checks: ${orphans} of ${FAILOVER_CHECKS} stopped at the kill${expectedOrphans}, none requested again within ${seconds(endedAt - killedAt)}   MISSED`,
    );
  }
  console.log(`    requests of one check less than half an interval apart (since 3 s before the kill): ${twice}`);

  const acknowledged = probes.filter((probe) => probe.status === 200);
  const refused = probes.filter((probe) => probe.status !== 200);
  if (probeSeenAt !== undefined) {
    console.log(
      `    stream: a probe pushed through a survivor found in the index (search via ${probeSeenOn}) ${seconds(probeSeenAt - killedAt)} after the kill   target ≤ ${seconds(goal)}   ${verdict(probeSeenAt - killedAt <= goal)}`,
    );
  } else {
    console.log(`    stream: no probe found in the index within ${seconds(endedAt - killedAt)}   MISSED`);
  }
  const probeAnswers = acknowledged.map((probe) => probe.answeredAt - probe.sentAt).sort((a, b) => a - b);
  console.log(
    `    probes: ${probes.length} pushed every ${PROBE_EVERY_MS} ms through ${survivors.map((s) => s.id).join(" and ")}, ${acknowledged.length} acknowledged (answer p50 ${probeAnswers.length > 0 ? quantile(probeAnswers, 0.5) : "-"} ms, max ${probeAnswers.at(-1) ?? "-"} ms)${refused.length > 0 ? `, ${refused.length} refused, e.g. ${refused[0].status ?? ""} ${refused[0].error}` : ""}`,
  );
  // Every acknowledged probe must reach the new owner: wait for the last ones, then compare.
  const ownerNow = newOwner ?? survivors[0];
  let found = [];
  const settleDeadline = Date.now() + 10_000;
  for (;;) {
    try {
      found = await search(ownerNow, PROBE_STREAM, '[:= :service "probe"]', 5_000);
    } catch (error) {
      found = [];
      if (Date.now() > settleDeadline) console.log(`    final search on ${ownerNow.id} failed: ${error.message}`);
    }
    const hosts = new Set(found.map((event) => event.host));
    if (acknowledged.every((probe) => hosts.has(probe.host)) || Date.now() > settleDeadline) break;
    await sleep(200);
  }
  const hosts = new Set(found.map((event) => event.host));
  const lost = acknowledged.filter((probe) => !hosts.has(probe.host));
  console.log(
    `    acknowledged probes in ${ownerNow.id}'s index: ${acknowledged.length - lost.length} of ${acknowledged.length}${
      lost.length > 0
        ? `; LOST: ${lost
            .slice(0, 10)
            .map((probe) => `${probe.host} (via ${probe.via}, ${seconds(probe.sentAt - killedAt)} after the kill)`)
            .join(", ")}`
        : ""
    }`,
  );
  const view = await clusterView(survivors[0]);
  console.log(
    `    GET /cluster after: ${view?.members?.map((member) => `${member.id} ${member.shards} shards [${member.streams.join(" ")}]`).join(", ")}`,
  );
}

// ---------------------------------------------------------------------------------------------

async function main() {
  console.log(
    `cluster benchmark on ${spawnSync("nproc", { encoding: "utf8" }).stdout.trim()} cores; parts: ${[...PARTS].join(", ")}`,
  );
  if (!existsSync(join(root, "dist/cli.js")))
    throw new Error(`${join(root, "dist/cli.js")} is missing: build first (npm run bench does)`);
  const reasons = [];
  try {
    await admin("select 1");
  } catch (error) {
    reasons.push(
      `PostgreSQL at ${POSTGRES_URL.replace(/\/\/[^@/]*@/, "//…@")} unreachable (${error.message}); set BENCH_POSTGRES_URL`,
    );
  }
  const natsPath = natsServerPath();
  if (natsPath === undefined)
    reasons.push("nats-server not found (/usr/sbin/nats-server, PATH, BENCH_NATS_SERVER); apt-get install nats-server");
  if (reasons.length > 0) {
    for (const part of ["(1) CPU", "(2) forwarded pushes", "(4) partitioned stream", "(3) failover"])
      console.log(`${part}: skipped: ${reasons.join("; ")}`);
    return;
  }

  const target = await startTarget();
  let baseline;
  if (PARTS.has("cpu")) {
    console.log(
      `(1) CPU of http checks at ${INTERVAL_SECONDS} s; window ${WINDOW_SECONDS} s after ${WARM_UP_SECONDS} s of warm-up`,
    );
    baseline = await partCpuBaseline(target);
  }

  const nats = await startNats(natsPath);
  const database = await temporaryDatabase("cluster");
  const instances = [];
  for (const id of INSTANCES) instances.push(await startInstance({ id, database, nats }));
  const cluster = { instances, target, database, nats };
  const settled = await waitForCluster(instances, 30_000 + 3 * LEASE_MS);
  console.log(
    `cluster: ${instances.map((instance) => `${instance.id} ${instance.base}`).join(", ")}; nats-server ${nats.url}; heartbeat ${HEARTBEAT}, lease ${LEASE}; shards ${settled?.members?.map((member) => `${member.id} ${member.shards}`).join(", ")}`,
  );

  if (PARTS.has("cpu")) await partCpuCluster(cluster, baseline);
  if (PARTS.has("push")) {
    console.log(`(2) forwarded pushes, batches of ${BATCH}`);
    await partPush(cluster);
  }
  if (PARTS.has("partition")) {
    console.log(`(4) a partitioned stream across ${instances.length} instances, batches of ${BATCH}`);
    await partPartition(cluster);
  }
  if (PARTS.has("failover")) {
    console.log("(3) failover: SIGKILL of an owner");
    await partFailover(cluster);
  }
  for (const instance of instances) await stopProcess(instance);
  await stopProcess(nats);
  await stopProcess(target);
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  if (!shuttingDown) {
    shuttingDown = true;
    await runCleanups();
  }
}
