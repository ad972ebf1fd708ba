/**
 * The Riemann protocol input of the real process (docs/streams.md) with the real clients from
 * Debian's packages: riemann-c-client's `riemann-client send` and `query` (TCP and TLS with client
 * certificates) and collectd's write_riemann plugin; then bad input, after which `/healthz` still
 * answers. A test whose binary is missing is skipped with the reason.
 */
import { type ChildProcess, execFile } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { connect as connectTcp, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeMsg } from "../../src/streams/riemann/protocol.js";
import { generateCertificates, OPENSSL_MISSING } from "../healthchecks/certificates.js";
import { collectdMissing, startCollectd } from "../support/collectd.js";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { frameOf, RiemannClient, withLength } from "../support/riemann.js";
import { until } from "../support/until.js";

const RIEMANN_CLIENT = "/usr/bin/riemann-client";

/** Why a binary's tests cannot run here, printed when they are skipped. */
function missing(binary: string, what: string): string | undefined {
  if (existsSync(binary)) return undefined;
  const reason = `${binary} is not installed (Debian package ${what}): its Riemann end-to-end tests are skipped`;
  console.warn(reason);
  return reason;
}
const NO_RIEMANN_CLIENT = missing(RIEMANN_CLIENT, "riemann-c-client");
const NO_COLLECTD = collectdMissing("write_riemann", "its Riemann end-to-end tests");

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** Every process a test spawns, killed in afterAll whatever happened. */
const children = new Set<ChildProcess>();
const clients: RiemannClient[] = [];

afterAll(async () => {
  for (const client of clients) client.destroy();
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** Runs a command to completion (at most 15 s) and returns its exit code and output. */
async function run(file: string, args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { timeout: 15_000 }, (error, stdout, stderr) => {
      children.delete(child);
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
    children.add(child);
  });
}

/** Starts the real process with the Riemann input on a free port and stream files of `streams`. */
async function startWithRiemann(streams: Record<string, string>, riemann: Record<string, string | number> = {}) {
  const directory = temporaryDirectory();
  const streamDirectory = join(directory, "streams");
  mkdirSync(streamDirectory);
  for (const [name, config] of Object.entries(streams)) {
    writeFileSync(join(streamDirectory, `${name}.edn`), `{:${name} ${config}}`);
  }
  const port = await freePort();
  const riemannPort = await freePort();
  const configFile = join(directory, "vigie.yaml");
  const riemannLines = Object.entries({ enabled: true, host: "127.0.0.1", port: riemannPort, ...riemann }).map(
    ([key, value]) => `    ${key}: ${JSON.stringify(value)}`,
  );
  writeFileSync(
    configFile,
    [
      "http:",
      `  port: ${port}`,
      "streams:",
      `  directories: [${JSON.stringify(streamDirectory)}]`,
      "  riemann:",
      ...riemannLines,
      "",
    ].join("\n"),
  );
  const vigie = await startVigie({ configFile, port, cwd: directory });
  children.add(vigie.child);
  return { vigie, riemannPort, directory };
}

async function indexed(vigie: VigieProcess, stream: string, condition = "[:true]") {
  const response = await fetch(
    `${vigie.baseUrl}/api/v1/index/${stream}/search?query=${encodeURIComponent(b64(condition))}`,
  );
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: Array<Record<string, unknown>> }).events;
}

async function stop(vigie: VigieProcess | undefined): Promise<void> {
  if (vigie === undefined) return;
  vigie.child.kill("SIGTERM");
  await vigie.exited;
}

describe("the Riemann input of the real process over TCP", () => {
  let vigie: VigieProcess;
  let riemannPort: number;
  let directory: string;

  beforeAll(async () => {
    ({ vigie, riemannPort, directory } = await startWithRiemann(
      {
        main: "{:default true :actions {:action :index :params [[:host :service]]}}",
        collectd: "{:actions {:action :index :params [[:host :service]]}}",
      },
      { "max-frame-size": 65_536 },
    ));
  });
  afterAll(async () => {
    await stop(vigie);
  });

  describe.skipIf(NO_RIEMANN_CLIENT !== undefined)("riemann-client (riemann-c-client)", () => {
    it("sends events that queries then find, in the index and through riemann-client query", async () => {
      const sent = await run(RIEMANN_CLIENT, [
        "send",
        "--host=web-1",
        "--service=cpu",
        "--state=critical",
        "--description=too busy",
        "--metric-d=0.95",
        "--ttl=60",
        "--tag=prod",
        "--attribute=datacenter=eu-1",
        "127.0.0.1",
        String(riemannPort),
      ]);
      expect(sent, sent.stderr).toMatchObject({ code: 0 });
      for (const [host, metric] of [
        ["web-2", "--metric-sint64=3"],
        ["db-1", "--metric-f=0.5"],
      ] as const) {
        const result = await run(RIEMANN_CLIENT, [
          "send",
          "-h",
          host,
          "-S",
          "cpu",
          metric,
          "127.0.0.1",
          String(riemannPort),
        ]);
        expect(result, result.stderr).toMatchObject({ code: 0 });
      }

      const events = await indexed(vigie, "main", '[:= :service "cpu"]');
      expect(events.map((event) => event.host).sort()).toEqual(["db-1", "web-1", "web-2"]);
      expect(events.find((event) => event.host === "web-1")).toMatchObject({
        service: "cpu",
        state: "critical",
        description: "too busy",
        metric: 0.95,
        ttl: 60,
        tags: ["prod"],
        datacenter: "eu-1",
      });
      expect(events.find((event) => event.host === "web-2")).toMatchObject({ metric: 3 });
      expect(events.find((event) => event.host === "db-1")).toMatchObject({ metric: 0.5 });
      const time = events[0]?.time;
      expect(typeof time === "number" && Math.abs(time - Date.now() / 1000) < 60).toBe(true);

      const query = await run(RIEMANN_CLIENT, [
        "query",
        "--json",
        'service = "cpu" and (metric > 0.9 or host =~ "web%") and tagged "prod"',
        "127.0.0.1",
        String(riemannPort),
      ]);
      expect(query, query.stderr).toMatchObject({ code: 0 });
      const found = JSON.parse(query.stdout) as Array<Record<string, unknown>>;
      expect(found).toHaveLength(1);
      expect(found[0]).toMatchObject({
        host: "web-1",
        service: "cpu",
        state: "critical",
        description: "too busy",
        metric_d: 0.95,
        ttl: 60,
        tags: ["prod"],
        attributes: { datacenter: "eu-1" },
      });
      const numbers = await run(RIEMANN_CLIENT, ["query", "--json", "metric = 3", "127.0.0.1", String(riemannPort)]);
      expect(
        (JSON.parse(numbers.stdout) as Array<Record<string, unknown>>).map((event) => event.metric_sint64),
      ).toEqual([3]);
    });

    it("reports an unknown stream and a query syntax error as failures, and keeps serving", async () => {
      const unknown = await run(RIEMANN_CLIENT, [
        "send",
        "-h",
        "lost",
        "-a",
        "stream=nope",
        "127.0.0.1",
        String(riemannPort),
      ]);
      expect(unknown.code).not.toBe(0);
      expect(unknown.stderr).toContain('unknown stream "nope"');
      expect(await indexed(vigie, "main", '[:= :host "lost"]')).toEqual([]);

      const invalid = await run(RIEMANN_CLIENT, ["query", 'host = "a" and', "127.0.0.1", String(riemannPort)]);
      expect(invalid.code).not.toBe(0);
      expect(invalid.stderr).toContain("invalid query at offset 14");

      const routed = await run(RIEMANN_CLIENT, [
        "send",
        "-h",
        "routed",
        "-a",
        "stream=collectd",
        "127.0.0.1",
        String(riemannPort),
      ]);
      expect(routed, routed.stderr).toMatchObject({ code: 0 });
      expect((await indexed(vigie, "collectd", '[:= :host "routed"]')).map((event) => event.host)).toEqual(["routed"]);
    });
  });

  it.skipIf(NO_COLLECTD !== undefined)(
    "receives collectd's cpu, memory and load metrics through write_riemann",
    async () => {
      const collectd = startCollectd(directory, "vigie-e2e-collectd", [
        "LoadPlugin cpu",
        "LoadPlugin memory",
        "LoadPlugin load",
        "LoadPlugin write_riemann",
        '<Plugin "write_riemann">',
        '  <Node "vigie">',
        '    Host "127.0.0.1"',
        `    Port "${riemannPort}"`,
        "    Protocol TCP",
        "    Batch true",
        "    BatchFlushTimeout 1",
        "  </Node>",
        '  Tag "collectd"',
        '  Attribute "stream" "collectd"',
        "</Plugin>",
      ]);
      children.add(collectd.child);
      try {
        const condition = '[:= :host "vigie-e2e-collectd"]';
        const events = await until(
          async () => {
            const { exitCode } = collectd.child;
            if (exitCode !== null) throw new Error(`collectd exited with ${exitCode}:\n${collectd.output()}`);
            const found = await indexed(vigie, "collectd", condition);
            const plugins = new Set(found.map((event) => event.plugin));
            return ["cpu", "memory", "load"].every((plugin) => plugins.has(plugin)) ? found : undefined;
          },
          "collectd's cpu, memory and load metrics in the index",
          25_000,
        );
        for (const event of events) {
          expect(event).toMatchObject({ tags: ["collectd"], ttl: 2 });
          // A first rate (cpu) is NaN, which JSON writes as null.
          expect(typeof event.metric === "number" || event.metric === null).toBe(true);
          expect(typeof event.time === "number" && Math.abs(event.time - Date.now() / 1000) < 60).toBe(true);
          expect(event).not.toHaveProperty("stream");
        }
        const memory = events.find((event) => event.plugin === "memory");
        expect(memory).toMatchObject({ type: "memory", ds_type: "gauge", ds_name: "value" });
        expect(typeof memory?.metric === "number" && memory.metric > 0).toBe(true);
        expect(events.some((event) => typeof event.service === "string" && /^cpu-\d+\/cpu-/.test(event.service))).toBe(
          true,
        );
        // Nothing went to the default stream: the attribute routed every event.
        expect(await indexed(vigie, "main", condition)).toEqual([]);
      } finally {
        await collectd.stop();
        children.delete(collectd.child);
      }
    },
    40_000,
  );

  it("answers or closes on bad input, never crashing, and /healthz answers afterwards", async () => {
    const connect = async () => {
      const client = await RiemannClient.connect(riemannPort);
      clients.push(client);
      return client;
    };
    // Garbage: an HTTP request reads as a huge length: an error reply, then the connection closes.
    const garbage = await connect();
    garbage.write(Buffer.from("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    expect((await garbage.reply()).error).toMatch(/^frame of \d+ bytes is over the limit of 65536 bytes/);
    await garbage.closed;

    // Oversized frame.
    const oversized = await connect();
    oversized.write(withLength(encodeMsg({ events: [{ description: "x".repeat(70_000) }] })));
    expect((await oversized.reply()).ok).toBe(false);
    await oversized.closed;

    // Undecodable protobuf, then an invalid query: answered, the connection goes on.
    const kept = await connect();
    kept.write(withLength(Buffer.from([0xff, 0xff, 0xff])));
    expect((await kept.reply()).error).toMatch(/^undecodable message: /);
    expect((await kept.send({ query: "host = = 1" })).error).toMatch(/^invalid query at offset 7: /);
    expect(await kept.send({ events: [{ host: "still-here", service: "s", time: 1 }] })).toMatchObject({ ok: true });

    // A truncated frame, then the client ends its side: an error reply, then the connection closes.
    const truncated = await connect();
    const frame = frameOf({ events: [{ host: "half" }] });
    truncated.socket.end(frame.subarray(0, frame.length - 2));
    expect((await truncated.reply()).error).toMatch(/^truncated frame: /);
    await truncated.closed;

    // A client that vanishes mid-frame.
    const vanished = await connect();
    vanished.write(frameOf({ events: [{ host: "gone" }] }).subarray(0, 7));
    vanished.socket.resetAndDestroy();

    const health = await fetch(`${vigie.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    expect((await indexed(vigie, "main", '[:= :host "still-here"]')).map((event) => event.host)).toEqual([
      "still-here",
    ]);
    expect(await indexed(vigie, "main", '[:or [:= :host "half"] [:= :host "gone"]]')).toEqual([]);
    const metrics = await (await fetch(`${vigie.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^riemann_messages_total\{outcome="error"\} [1-9]/m);
    expect(metrics).toMatch(/^riemann_events_total [1-9]/m);
    await until(async () => {
      const text = await (await fetch(`${vigie.baseUrl}/metrics`)).text();
      // `kept` is the only connection left open.
      return /^riemann_connections 1$/m.test(text) ? true : undefined;
    }, "the closed connections to be counted out");
  });
});

describe.skipIf(NO_RIEMANN_CLIENT !== undefined || OPENSSL_MISSING !== undefined)(
  "the Riemann input of the real process over TLS with client certificates",
  () => {
    let vigie: VigieProcess | undefined;
    let riemannPort: number;
    const certificates = OPENSSL_MISSING === undefined ? generateCertificates() : undefined;

    beforeAll(async () => {
      if (certificates === undefined) return;
      ({ vigie, riemannPort } = await startWithRiemann(
        { main: "{:default true :actions {:action :index :params [[:host :service]]}}" },
        { "tls-cert": certificates.serverCert, "tls-key": certificates.serverKey, "tls-ca": certificates.caCert },
      ));
    });
    afterAll(async () => {
      await stop(vigie);
    });

    it("accepts riemann-client with a client certificate and refuses it without one", async () => {
      if (certificates === undefined) return;
      const tls = ["--tls", "-o", `cafile=${certificates.caCert}`];
      const withCertificate = [
        ...tls,
        "-o",
        `certfile=${certificates.clientCert}`,
        "-o",
        `keyfile=${certificates.clientKey}`,
      ];
      const address = ["127.0.0.1", String(riemannPort)];
      const sent = await run(RIEMANN_CLIENT, [
        "send",
        ...withCertificate,
        "-h",
        "tls-host",
        "-S",
        "secure",
        ...address,
      ]);
      expect(sent, sent.stderr).toMatchObject({ code: 0 });
      const query = await run(RIEMANN_CLIENT, [
        "query",
        ...withCertificate,
        "--json",
        'service = "secure"',
        ...address,
      ]);
      expect(query, query.stderr).toMatchObject({ code: 0 });
      expect((JSON.parse(query.stdout) as Array<Record<string, unknown>>).map((event) => event.host)).toEqual([
        "tls-host",
      ]);

      const anonymous = await run(RIEMANN_CLIENT, ["send", ...tls, "-h", "anonymous", ...address]);
      expect(anonymous.code).not.toBe(0);
      const plain = await run(RIEMANN_CLIENT, ["send", "-h", "plain", ...address]);
      expect(plain.code).not.toBe(0);
      expect(vigie && (await indexed(vigie, "main", '[:or [:= :host "anonymous"] [:= :host "plain"]]'))).toEqual([]);
      expect((await fetch(`${vigie?.baseUrl}/healthz`)).status).toBe(200);
    });
  },
);

describe.skipIf(NO_RIEMANN_CLIENT !== undefined || OPENSSL_MISSING !== undefined)(
  "the bounds of the Riemann input of the real process over TLS",
  () => {
    let vigie: VigieProcess | undefined;
    let riemannPort: number;
    const certificates = OPENSSL_MISSING === undefined ? generateCertificates() : undefined;
    const sockets: Socket[] = [];

    beforeAll(async () => {
      if (certificates === undefined) return;
      ({ vigie, riemannPort } = await startWithRiemann(
        { main: "{:default true :actions {:action :index :params [[:host :service]]}}" },
        {
          "tls-cert": certificates.serverCert,
          "tls-key": certificates.serverKey,
          "max-connections": 20,
          "max-connections-per-address": 10,
          "handshake-timeout": "500ms",
        },
      ));
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await stop(vigie);
    });

    /** A TCP connection from `localAddress` that never starts TLS nor closes its side. */
    async function silent(localAddress: string): Promise<Socket> {
      const socket = connectTcp({ host: "127.0.0.1", port: riemannPort, localAddress, allowHalfOpen: true });
      sockets.push(socket);
      socket.on("error", () => {});
      socket.resume();
      await new Promise((resolve) => socket.once("connect", resolve));
      return socket;
    }

    async function metric(line: RegExp): Promise<string | undefined> {
      const text = await (await fetch(`${vigie?.baseUrl}/metrics`)).text();
      return line.exec(text)?.[1];
    }

    it("frees the slots of clients that never finish their handshake, then serves riemann-client", async () => {
      if (certificates === undefined) return;
      // Every slot taken, ten per address; half of the clients ended their side (CLOSE-WAIT).
      const addresses = ["127.0.0.1", "127.0.0.3"];
      const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => silent(addresses[i % 2] as string)));
      for (const socket of taken.slice(0, 10)) socket.end();
      // riemann-client's TLS needs a certificate of its own, which this server does not ask for.
      const tls = [
        "--tls",
        "-o",
        `cafile=${certificates.caCert}`,
        "-o",
        `certfile=${certificates.clientCert}`,
        "-o",
        `keyfile=${certificates.clientKey}`,
      ];
      // Another client is refused meanwhile.
      const refused = await run(RIEMANN_CLIENT, ["send", ...tls, "-h", "refused", "127.0.0.1", String(riemannPort)]);
      expect(refused.code).not.toBe(0);
      // The server ends each silent connection within the handshake timeout (and some margin).
      await until(
        async () => (taken.every((socket) => socket.readableEnded) ? true : undefined),
        "every silent connection to be closed by the server",
        5_000,
      );
      const sent = await run(RIEMANN_CLIENT, [
        "send",
        ...tls,
        "-h",
        "served",
        "-S",
        "after-timeouts",
        "127.0.0.1",
        String(riemannPort),
      ]);
      expect(sent, sent.stderr).toMatchObject({ code: 0 });
      expect(vigie && (await indexed(vigie, "main", '[:= :service "after-timeouts"]'))).toHaveLength(1);
      expect(await metric(/^riemann_refused_connections_total\{reason="handshake-timeout"\} (\d+)$/m)).toBe("20");
      expect(Number(await metric(/^riemann_refused_connections_total\{reason="max-connections"\} (\d+)$/m))).toBe(1);
    });

    it("closes connections beyond max-connections-per-address, other addresses served", async () => {
      if (certificates === undefined) return;
      const ca = certificates.read(certificates.caCert);
      const mine = await Promise.all(Array.from({ length: 10 }, () => RiemannClient.connect(riemannPort, { ca })));
      clients.push(...mine);
      const beyond = await RiemannClient.connect(riemannPort, { ca }).then(
        (client) => {
          clients.push(client);
          return client.closed.then(() => "closed");
        },
        () => "refused",
      );
      expect(["closed", "refused"]).toContain(beyond);
      const other = await RiemannClient.connect(riemannPort, { ca }, "127.0.0.2");
      clients.push(other);
      expect(await other.send({ events: [{ host: "other", time: 1 }] })).toMatchObject({ ok: true });
      expect(await mine[0]?.send({ events: [{ host: "mine", time: 1 }] })).toMatchObject({ ok: true });
      expect(await metric(/^riemann_refused_connections_total\{reason="max-connections-per-address"\} (\d+)$/m)).toBe(
        "1",
      );
      for (const client of mine) client.destroy();
    });
  },
);
