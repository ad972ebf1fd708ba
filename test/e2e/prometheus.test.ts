import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addStream, freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** The Prometheus binary (Debian's `prometheus` package, installed by .ci/run), if any. */
const PROMETHEUS = spawnSync("sh", ["-c", "command -v prometheus"], { encoding: "utf8" }).stdout.trim();
if (PROMETHEUS === "") {
  console.warn("skipping the Prometheus remote-write e2e test: no prometheus binary (apt-get install -y prometheus)");
}

describe.skipIf(PROMETHEUS === "")("a real Prometheus remote-writing to Vigie", () => {
  let vigie: VigieProcess;
  let prometheus: ReturnType<typeof spawn>;
  let prometheusOutput = "";
  let vigiePort: number;

  beforeAll(async () => {
    const directory = temporaryDirectory();
    vigiePort = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, `http:\n  port: ${vigiePort}\n`);
    vigie = await startVigie({ configFile, port: vigiePort, cwd: directory });
    const stream =
      '{:actions {:action :where :params [[:= :service "http_requests_total"]] :children [{:action :index :params [[:service :instance :method :route :status]]}]}}';
    expect(await addStream(vigie.baseUrl, "prom", stream)).toBe(201);

    // Scrapes Vigie's own /metrics every second and remote-writes what it scraped back to Vigie.
    const prometheusConfig = join(directory, "prometheus.yml");
    writeFileSync(
      prometheusConfig,
      [
        "global:",
        "  scrape_interval: 1s",
        "scrape_configs:",
        "  - job_name: vigie",
        "    static_configs:",
        `      - targets: ["127.0.0.1:${vigiePort}"]`,
        "remote_write:",
        `  - url: http://127.0.0.1:${vigiePort}/api/v1/tsdb/remote-write/prom`,
        "    queue_config:",
        "      batch_send_deadline: 1s",
        "",
      ].join("\n"),
    );
    const data = join(directory, "prometheus-data");
    mkdirSync(data);
    const prometheusPort = await freePort();
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${prometheusConfig}`,
        `--storage.tsdb.path=${data}`,
        `--web.listen-address=127.0.0.1:${prometheusPort}`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    prometheus.stdout?.on("data", (chunk) => {
      prometheusOutput += chunk;
    });
    prometheus.stderr?.on("data", (chunk) => {
      prometheusOutput += chunk;
    });
  });

  afterAll(async () => {
    prometheus?.kill("SIGTERM");
    vigie?.child.kill("SIGTERM");
    await vigie?.exited;
  });

  it("delivers samples of http_requests_total with their labels, value and time", async () => {
    const query = encodeURIComponent(b64('[:and [:= :route "/healthz"] [:= :job "vigie"]]'));
    let events: Array<Record<string, unknown>> = [];
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline && events.length === 0) {
      await new Promise((wait) => setTimeout(wait, 1000));
      const response = await fetch(`${vigie.baseUrl}/api/v1/index/prom/search?query=${query}`);
      events = ((await response.json()) as { events: Array<Record<string, unknown>> }).events;
    }
    expect(events.length, `no sample arrived; Prometheus said:\n${prometheusOutput.slice(-3000)}`).toBeGreaterThan(0);
    const [event] = events;
    expect(event).toMatchObject({
      service: "http_requests_total",
      job: "vigie",
      instance: `127.0.0.1:${vigiePort}`,
      method: "GET",
      route: "/healthz",
      status: "200",
    });
    expect(typeof event?.metric).toBe("number");
    expect(event?.metric as number).toBeGreaterThanOrEqual(1);
    expect(Math.abs((event?.time as number) - Date.now() / 1000)).toBeLessThan(120);
    const metrics = await (await fetch(`${vigie.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/remote_write_samples_total\{stream="prom"\} [1-9]/);
  });
});
