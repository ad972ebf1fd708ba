/**
 * The Riemann UDP, Graphite plaintext and InfluxDB line protocol inputs of the real process
 * (docs/inputs.md) with real senders: `riemann-client send --udp` (riemann-c-client) and node
 * `dgram`; collectd's write_graphite plugin and node `net`; line protocol test vectors posted as
 * Telegraf's influxdb output would (Telegraf is not in Debian). After bad input, `/healthz` still
 * answers. A test whose binary is missing is skipped with the reason.
 */
import { type ChildProcess, execFile } from "node:child_process";
import { createSocket } from "node:dgram";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeMsg } from "../../src/streams/riemann/protocol.js";
import { collectdMissing, startCollectd } from "../support/collectd.js";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";

const RIEMANN_CLIENT = "/usr/bin/riemann-client";

/** Why a binary's tests cannot run here, printed when they are skipped. */
function missing(binary: string, what: string): string | undefined {
  if (existsSync(binary)) return undefined;
  const reason = `${binary} is not installed (Debian package ${what}): its end-to-end input tests are skipped`;
  console.warn(reason);
  return reason;
}
const NO_RIEMANN_CLIENT = missing(RIEMANN_CLIENT, "riemann-c-client");
const NO_COLLECTD = collectdMissing("write_graphite", "its end-to-end Graphite tests");

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const INDEX = "{:actions {:action :index :params [[:host :service]]}}";

const children = new Set<ChildProcess>();
let vigie: VigieProcess;
let directory: string;
let udpPort: number;
let graphitePort: number;

beforeAll(async () => {
  directory = temporaryDirectory();
  const streams = join(directory, "streams");
  mkdirSync(streams);
  writeFileSync(join(streams, "main.edn"), `{:main ${INDEX.replace("{:actions", "{:default true :actions")}}`);
  writeFileSync(join(streams, "graphite.edn"), `{:graphite ${INDEX}}`);
  writeFileSync(join(streams, "telegraf.edn"), `{:telegraf ${INDEX}}`);
  const port = await freePort();
  udpPort = await freePort();
  graphitePort = await freePort();
  const configFile = join(directory, "vigie.yaml");
  writeFileSync(
    configFile,
    [
      "http:",
      `  port: ${port}`,
      "streams:",
      `  directories: [${JSON.stringify(streams)}]`,
      "  riemann:",
      `    udp-port: ${udpPort}`,
      "  graphite:",
      "    enabled: true",
      `    port: ${graphitePort}`,
      "    stream: graphite",
      "    max-line-length: 1024",
      `    host-pattern: '^servers\\.([^.]+)\\.'`,
      "",
    ].join("\n"),
  );
  vigie = await startVigie({ configFile, port, cwd: directory });
  children.add(vigie.child);
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

async function run(file: string, args: readonly string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { timeout: 15_000 }, (error, _stdout, stderr) => {
      children.delete(child);
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stderr });
    });
    children.add(child);
  });
}

async function indexed(stream: string, condition = "[:true]"): Promise<Array<Record<string, unknown>>> {
  const response = await fetch(
    `${vigie.baseUrl}/api/v1/index/${stream}/search?query=${encodeURIComponent(b64(condition))}`,
  );
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: Array<Record<string, unknown>> }).events;
}

async function metrics(): Promise<string> {
  return (await fetch(`${vigie.baseUrl}/metrics`)).text();
}

async function healthy(): Promise<void> {
  expect((await fetch(`${vigie.baseUrl}/healthz`)).status).toBe(200);
}

async function sendDatagram(datagram: Uint8Array): Promise<void> {
  const socket = createSocket("udp4");
  try {
    await new Promise<void>((resolve, reject) =>
      socket.send(datagram, udpPort, "127.0.0.1", (error) => (error ? reject(error) : resolve())),
    );
  } finally {
    socket.close();
  }
}

describe("Riemann over UDP", () => {
  it.skipIf(NO_RIEMANN_CLIENT !== undefined)("receives riemann-client send --udp", async () => {
    const sent = await run(RIEMANN_CLIENT, [
      "send",
      "--udp",
      "--host=udp-1",
      "--service=disk",
      "--state=warning",
      "--metric-d=0.8",
      "--tag=prod",
      "--attribute=rack=r1",
      "127.0.0.1",
      String(udpPort),
    ]);
    expect(sent, sent.stderr).toMatchObject({ code: 0 });
    const [event] = await until(async () => {
      const found = await indexed("main", '[:= :host "udp-1"]');
      return found.length > 0 ? found : undefined;
    }, "the UDP event in the index");
    expect(event).toMatchObject({
      host: "udp-1",
      service: "disk",
      state: "warning",
      metric: 0.8,
      tags: ["prod"],
      rack: "r1",
    });
  });

  it("receives datagrams encoded by node, drops and counts malformed ones, and keeps serving", async () => {
    await sendDatagram(Buffer.from("\u00ff\u00ff\u00ff garbage"));
    await sendDatagram(encodeMsg({ events: [{ host: "udp-node", service: "s", metricSint64: 7 }] }));
    const [event] = await until(async () => {
      const found = await indexed("main", '[:= :host "udp-node"]');
      return found.length > 0 ? found : undefined;
    }, "the node datagram's event");
    expect(event).toMatchObject({ service: "s", metric: 7 });
    const text = await until(async () => {
      const body = await metrics();
      return body.includes('riemann_udp_datagrams_total{outcome="error"} 1') ? body : undefined;
    }, "the malformed datagram counted");
    expect(text).toMatch(/riemann_udp_datagrams_total\{outcome="ok"\} [1-9]/);
    await healthy();
  });
});

describe("Graphite plaintext", () => {
  it.skipIf(NO_COLLECTD !== undefined)(
    "receives collectd's load and memory metrics through write_graphite, the host from host-pattern",
    async () => {
      const collectd = startCollectd(directory, "vigie-e2e-collectd", [
        "LoadPlugin load",
        "LoadPlugin memory",
        "LoadPlugin write_graphite",
        "<Plugin write_graphite>",
        '  <Node "vigie">',
        '    Host "127.0.0.1"',
        `    Port "${graphitePort}"`,
        '    Protocol "tcp"',
        '    Prefix "servers."',
        "  </Node>",
        "</Plugin>",
      ]);
      children.add(collectd.child);
      try {
        const events = await until(
          async () => {
            const { exitCode } = collectd.child;
            if (exitCode !== null) throw new Error(`collectd exited with ${exitCode}:\n${collectd.output()}`);
            const found = await indexed("graphite", '[:= :host "vigie-e2e-collectd"]');
            const services = found.map((event) => String(event.service));
            const load = services.some((service) => service.startsWith("servers.vigie-e2e-collectd.load."));
            const memory = services.some((service) => service.startsWith("servers.vigie-e2e-collectd.memory."));
            return load && memory ? found : undefined;
          },
          "collectd's load and memory metrics in the graphite stream",
          25_000,
        );
        for (const event of events) {
          expect(typeof event.metric).toBe("number");
          expect(typeof event.time === "number" && Math.abs(event.time - Date.now() / 1000) < 60).toBe(true);
        }
        expect(events.map((event) => event.service)).toContain("servers.vigie-e2e-collectd.load.load.shortterm");
        expect(await indexed("main", '[:= :host "vigie-e2e-collectd"]')).toEqual([]);
      } finally {
        await collectd.stop();
        children.delete(collectd.child);
      }
    },
    40_000,
  );

  it("skips malformed lines, closes a connection on a too long line, and keeps serving", async () => {
    const socket = connect({ host: "127.0.0.1", port: graphitePort });
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    const closed = new Promise((resolve) => socket.once("close", resolve));
    socket.write(`not a line\nnet.sent 42 1700000000\n${"x".repeat(2000)}`);
    await closed;
    const [event] = await until(async () => {
      const found = await indexed("graphite", '[:= :service "net.sent"]');
      return found.length > 0 ? found : undefined;
    }, "the valid line's event");
    expect(event).toEqual({ host: "127.0.0.1", service: "net.sent", metric: 42, time: 1_700_000_000 });
    const text = await metrics();
    expect(text).toMatch(/graphite_lines_total\{outcome="malformed"\} [1-9]/);
    expect(text).toContain('graphite_closed_connections_total{reason="max-line-length"} 1');
    await healthy();
  });
});

describe("InfluxDB line protocol", () => {
  /** What Telegraf's influxdb output sends: gzipped text/plain to <url>/write?db=<database>. */
  const telegraf = (body: string, query = "db=telegraf") =>
    fetch(`${vigie.baseUrl}/api/v1/influx/write?${query}`, {
      method: "POST",
      headers: { "content-type": "text/plain; charset=utf-8", "content-encoding": "gzip", "user-agent": "Telegraf" },
      body: gzipSync(body),
    });

  it("writes the reference's examples, one event per field", async () => {
    const response = await telegraf(
      [
        "# the reference's examples",
        'myMeasurement,tag1=value1,tag2=value2 fieldKey="fieldValue" 1556813561098000000',
        "my\\ Measurement,tag\\ Key1=tag\\ Value1 fieldKey=100,other=1.5e3,count=7i,flag=T",
        'cpu,host=server\\ 01,region=uswest value=1.0,msg="all systems nominal"',
      ].join("\n"),
    );
    expect(response.status).toBe(204);
    const events = await indexed("telegraf");
    expect(events).toHaveLength(7);
    expect(events).toEqual(
      expect.arrayContaining([
        {
          service: "myMeasurement.fieldKey",
          tag1: "value1",
          tag2: "value2",
          description: "fieldValue",
          time: 1556813561.098,
        },
        expect.objectContaining({ service: "my Measurement.fieldKey", "tag Key1": "tag Value1", metric: 100 }),
        expect.objectContaining({ service: "my Measurement.other", metric: 1500 }),
        expect.objectContaining({ service: "my Measurement.count", metric: 7 }),
        expect.objectContaining({ service: "my Measurement.flag", metric: 1 }),
        expect.objectContaining({ host: "server 01", region: "uswest", service: "cpu.value", metric: 1 }),
        expect.objectContaining({ host: "server 01", service: "cpu.msg", description: "all systems nominal" }),
      ]),
    );
  });

  it("answers 400 naming the malformed line, writes the others, and keeps serving", async () => {
    const response = await telegraf("good,host=g1 f=1\nbad,host=b f=\ngood,host=g2 f=2", "db=telegraf&precision=s");
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(/^invalid line protocol: line 2: /);
    const hosts = (await indexed("telegraf", '[:= :service "good.f"]')).map((event) => event.host);
    expect(hosts.sort()).toEqual(["g1", "g2"]);
    expect((await telegraf("m f=1", "db=missing")).status).toBe(404);
    await healthy();
  });
});
