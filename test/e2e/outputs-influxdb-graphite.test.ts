/**
 * The influxdb and graphite outputs of the real process into real receivers from Debian's packages:
 * `influxdb` (1.6, the v1 write API) stores points whose names and values need line protocol's
 * escaping, and `graphite-carbon` stores the lines in whisper files (read back with
 * `whisper-fetch`, from `python3-whisper`).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandPath, type Daemon, startDaemon } from "../support/daemon.js";
import {
  addStream,
  freePort,
  startVigie,
  stopVigie,
  temporaryDirectory,
  type VigieProcess,
} from "../support/process.js";
import { until } from "../support/until.js";

const INFLUXD = commandPath("influxd", "influxdb", "the influxdb output e2e test");
const CARBON = commandPath("carbon-cache", "graphite-carbon", "the graphite output e2e test");
const WHISPER_FETCH =
  CARBON === "" ? "" : commandPath("whisper-fetch", "python3-whisper", "the graphite output e2e test");

/** Starts Vigie with one output `out` (its YAML lines) and a stream `out` sending every event to it. */
async function vigieWith(directory: string, output: string[]): Promise<VigieProcess> {
  const port = await freePort();
  const configFile = join(directory, "vigie.yaml");
  writeFileSync(
    configFile,
    ["http:", `  port: ${port}`, "outputs:", "  out:", ...output.map((line) => `    ${line}`), ""].join("\n"),
  );
  const vigie = await startVigie({ configFile, port, cwd: directory });
  expect(await addStream(vigie.baseUrl, "out", "{:actions {:action :output :params [:out]}}")).toBe(201);
  return vigie;
}

async function push(vigie: VigieProcess | undefined, events: unknown[]): Promise<void> {
  const pushed = await fetch(`${vigie?.baseUrl}/api/v1/stream/out`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ events }),
  });
  expect(pushed.status).toBe(200);
}

describe.skipIf(INFLUXD === "")("Vigie's influxdb output into a real InfluxDB 1", () => {
  let vigie: VigieProcess | undefined;
  let influx: Daemon | undefined;
  let influxUrl = "";

  beforeAll(async () => {
    const directory = temporaryDirectory();
    const [httpPort, rpcPort] = [await freePort(), await freePort()];
    influxUrl = `http://127.0.0.1:${httpPort}`;
    const config = join(directory, "influxdb.conf");
    writeFileSync(
      config,
      [
        "reporting-disabled = true",
        `bind-address = "127.0.0.1:${rpcPort}"`,
        "[meta]",
        `  dir = "${join(directory, "meta")}"`,
        "[data]",
        `  dir = "${join(directory, "data")}"`,
        `  wal-dir = "${join(directory, "wal")}"`,
        "[monitor]",
        "  store-enabled = false",
        "[http]",
        `  bind-address = "127.0.0.1:${httpPort}"`,
        "  log-enabled = false",
        "",
      ].join("\n"),
    );
    influx = await startDaemon({
      command: INFLUXD,
      args: ["run", "-config", config],
      readyUrl: `${influxUrl}/ping`,
      what: "InfluxDB",
    });
    const created = await fetch(`${influxUrl}/query`, {
      method: "POST",
      body: new URLSearchParams({ q: "CREATE DATABASE vigie" }),
    });
    expect(created.status).toBe(200);
    vigie = await vigieWith(directory, [
      "type: influxdb",
      `url: ${influxUrl}`,
      "database: vigie",
      "tags: [host, env]",
      "flush-interval: 100ms",
    ]);
  });

  afterAll(async () => {
    await Promise.all([influx?.stop(), stopVigie(vigie)]);
  });

  it("stores points whose measurement, tags and strings hold commas, spaces, equals signs, quotes, backslashes and line breaks", async () => {
    await push(vigie, [
      {
        service: "disk used,/var",
        host: "web 1",
        env: "a=b,c",
        state: "critical",
        description: 'say "hi" in C:\\temp\nthen stop',
        metric: 0.9,
        time: 1_700_000_000.5,
      },
      { service: "disk used,/var", host: "web 2", env: "prod", metric: 3, time: 1_700_000_001 },
      // No point: no service.
      { host: "web 3", metric: 1 },
    ]);
    const query = `${influxUrl}/query?db=vigie&q=${encodeURIComponent('SELECT * FROM "disk used,/var"')}`;
    const values = await until(async () => {
      const body = (await (await fetch(query)).json()) as {
        results: Array<{ series?: Array<{ columns: string[]; values: unknown[][] }> }>;
      };
      const series = body.results[0]?.series?.[0];
      return series !== undefined && series.values.length === 2 ? series : undefined;
    }, "the points in InfluxDB").catch((error: unknown) => {
      throw new Error(`${error}; InfluxDB said:\n${influx?.output().slice(-3000)}`);
    });
    expect(values.columns).toEqual(["time", "description", "env", "host", "metric", "state"]);
    expect(values.values).toEqual([
      ["2023-11-14T22:13:20.5Z", 'say "hi" in C:\\temp then stop', "a=b,c", "web 1", 0.9, "critical"],
      ["2023-11-14T22:13:21Z", null, "prod", "web 2", 3, null],
    ]);
    const metrics = await countedOutput(vigie);
    expect(metrics).toContain('stream_output_events_total{output="out",outcome="sent"} 2');
    expect(metrics).toContain('stream_output_events_total{output="out",outcome="dropped-rejected"} 1');
  });
});

describe.skipIf(CARBON === "" || WHISPER_FETCH === "")("Vigie's graphite output into a real carbon", () => {
  let vigie: VigieProcess | undefined;
  let carbon: Daemon | undefined;
  let whisper = "";

  beforeAll(async () => {
    const directory = temporaryDirectory();
    whisper = join(directory, "storage", "whisper");
    for (const sub of ["storage/whisper", "storage/lists", "log", "pid"])
      mkdirSync(join(directory, sub), { recursive: true });
    const [linePort, picklePort, queryPort] = [await freePort(), await freePort(), await freePort()];
    const config = join(directory, "carbon.conf");
    writeFileSync(
      config,
      [
        "[cache]",
        `STORAGE_DIR = ${join(directory, "storage")}/`,
        `LOCAL_DATA_DIR = ${whisper}/`,
        `WHITELISTS_DIR = ${join(directory, "storage", "lists")}/`,
        `LOG_DIR = ${join(directory, "log")}/`,
        `PID_DIR = ${join(directory, "pid")}/`,
        "LINE_RECEIVER_INTERFACE = 127.0.0.1",
        `LINE_RECEIVER_PORT = ${linePort}`,
        "ENABLE_UDP_LISTENER = False",
        "PICKLE_RECEIVER_INTERFACE = 127.0.0.1",
        `PICKLE_RECEIVER_PORT = ${picklePort}`,
        "CACHE_QUERY_INTERFACE = 127.0.0.1",
        `CACHE_QUERY_PORT = ${queryPort}`,
        "MAX_CREATES_PER_MINUTE = inf",
        "MAX_UPDATES_PER_SECOND = inf",
        "",
      ].join("\n"),
    );
    // One value per second, kept a day: the points are read back at their own seconds.
    writeFileSync(join(directory, "storage-schemas.conf"), "[default]\npattern = .*\nretentions = 1s:1d\n");
    carbon = await startDaemon({
      command: CARBON,
      args: [`--config=${config}`, "--nodaemon", "start"],
      readyPort: linePort,
      what: "carbon",
    });
    vigie = await vigieWith(directory, [
      "type: graphite",
      "host: 127.0.0.1",
      `port: ${linePort}`,
      'path: "vigie.{host}.{service}"',
      "flush-interval: 100ms",
    ]);
  });

  afterAll(async () => {
    await Promise.all([carbon?.stop(), stopVigie(vigie)]);
  });

  it("stores each metric under the path of its host and service, dots and spaces made _", async () => {
    const now = Math.floor(Date.now() / 1000);
    await push(vigie, [
      { host: "web1.example.org", service: "disk used", metric: 0.95, time: now - 2 },
      { host: "web1.example.org", service: "disk used", metric: 0.5, time: now - 1 },
      // Skipped: no metric.
      { host: "web1.example.org", service: "disk used", state: "ok", time: now },
    ]);
    const file = join(whisper, "vigie", "web1_example_org", "disk_used.wsp");
    const points = await until(async () => {
      if (!existsSync(file)) return undefined;
      const fetched = spawnSync(WHISPER_FETCH, [`--from=${now - 5}`, `--until=${now + 1}`, file], { encoding: "utf8" });
      const lines = fetched.stdout.split("\n").filter((line) => line !== "" && !line.endsWith("None"));
      return lines.length === 2 ? lines : undefined;
    }, "the points in carbon's whisper file").catch((error: unknown) => {
      throw new Error(`${error}; carbon said:\n${carbon?.output().slice(-3000)}`);
    });
    expect(points.map((line) => line.split("\t"))).toEqual([
      [String(now - 2), "0.950000"],
      [String(now - 1), "0.500000"],
    ]);
    const metrics = await countedOutput(vigie);
    expect(metrics).toContain('stream_output_events_total{output="out",outcome="sent"} 2');
    expect(metrics).toContain('stream_output_events_total{output="out",outcome="dropped-rejected"} 1');
  });
});

/**
 * Vigie's /metrics once the output has counted its two sent events: the receiver may show the
 * points before Vigie has read its answer and counted them.
 */
function countedOutput(vigie: { baseUrl: string } | undefined): Promise<string> {
  return until(async () => {
    const text = await (await fetch(`${vigie?.baseUrl}/metrics`)).text();
    return text.includes('stream_output_events_total{output="out",outcome="sent"} 2') ? text : undefined;
  }, "the output's sent events in /metrics");
}
