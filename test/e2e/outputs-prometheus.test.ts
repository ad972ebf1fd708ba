import { mkdirSync, writeFileSync } from "node:fs";
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

/** The Prometheus binary (Debian's `prometheus` package, installed by .ci/run), if any. */
const PROMETHEUS = commandPath("prometheus", "prometheus", "the prometheus-remote-write output e2e test");

interface VectorResult {
  metric: Record<string, string>;
  value?: [number, string];
  values?: Array<[number, string]>;
}

describe.skipIf(PROMETHEUS === "")("Vigie's prometheus-remote-write output into a real Prometheus", () => {
  let vigie: VigieProcess | undefined;
  let prometheus: Daemon | undefined;
  let prometheusUrl = "";

  beforeAll(async () => {
    const directory = temporaryDirectory();
    const prometheusPort = await freePort();
    prometheusUrl = `http://127.0.0.1:${prometheusPort}`;
    const prometheusConfig = join(directory, "prometheus.yml");
    // No scrape: the only samples are those Vigie writes.
    writeFileSync(prometheusConfig, "global:\n  scrape_interval: 1m\n");
    const data = join(directory, "prometheus-data");
    mkdirSync(data);
    prometheus = await startDaemon({
      command: PROMETHEUS,
      args: [
        `--config.file=${prometheusConfig}`,
        `--storage.tsdb.path=${data}`,
        `--web.listen-address=127.0.0.1:${prometheusPort}`,
        "--web.enable-remote-write-receiver",
      ],
      readyUrl: `${prometheusUrl}/-/ready`,
      what: "Prometheus",
    });

    const vigiePort = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        "http:",
        `  port: ${vigiePort}`,
        "streams:",
        "  outputs:",
        "    tsdb:",
        "      type: prometheus-remote-write",
        `      url: ${prometheusUrl}/api/v1/write`,
        "      flush-interval: 100ms",
        "",
      ].join("\n"),
    );
    vigie = await startVigie({ configFile, port: vigiePort, cwd: directory });
    expect(await addStream(vigie.baseUrl, "metrics", "{:actions {:action :output :params [:tsdb]}}")).toBe(201);
  });

  afterAll(async () => {
    await Promise.all([prometheus?.stop(), stopVigie(vigie)]);
  });

  async function query(promql: string, time: number): Promise<VectorResult[]> {
    const url = `${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}&time=${time}`;
    const body = (await (await fetch(url)).json()) as { status: string; data: { result: VectorResult[] } };
    expect(body.status).toBe("success");
    return body.data.result;
  }

  it("stores the samples of a stream's events, named by service, with the events' string fields as labels", async () => {
    const now = Math.floor(Date.now() / 1000);
    const events = [
      { service: "vigie_e2e_temperature", host: "web-1", "data-center": "par1", metric: 20.5, time: now - 2 },
      { service: "vigie_e2e_temperature", host: "web-2", "data-center": "par1", metric: 30, time: now - 2 },
      { service: "vigie_e2e_temperature", host: "web-1", "data-center": "par1", metric: 21.5, time: now - 1 },
      { service: "vigie_e2e_temperature", host: "web-1", "data-center": "par1", metric: 22.25, time: now },
      // Not samples: no metric; a description is never a label.
      { service: "vigie_e2e_temperature", host: "web-3", state: "ok", time: now },
    ];
    const pushed = await fetch(`${vigie?.baseUrl}/api/v1/stream/metrics`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ events }),
    });
    expect(pushed.status).toBe(200);

    const series = await until(async () => {
      const result = await query('vigie_e2e_temperature{host="web-1"}[1m]', now + 1);
      return result.length > 0 && (result[0]?.values?.length ?? 0) >= 3 ? result : undefined;
    }, "the samples in Prometheus").catch((error: unknown) => {
      throw new Error(`${error}; Prometheus said:\n${prometheus?.output().slice(-3000)}`);
    });
    expect(series).toEqual([
      {
        metric: { __name__: "vigie_e2e_temperature", host: "web-1", data_center: "par1" },
        values: [
          [now - 2, "20.5"],
          [now - 1, "21.5"],
          [now, "22.25"],
        ],
      },
    ]);
    const latest = await query("vigie_e2e_temperature", now);
    latest.sort((a, b) => String(a.metric.host).localeCompare(String(b.metric.host)));
    expect(latest).toEqual([
      { metric: { __name__: "vigie_e2e_temperature", host: "web-1", data_center: "par1" }, value: [now, "22.25"] },
      { metric: { __name__: "vigie_e2e_temperature", host: "web-2", data_center: "par1" }, value: [now, "30"] },
    ]);

    const metrics = await (await fetch(`${vigie?.baseUrl}/metrics`)).text();
    expect(metrics).toContain('stream_output_events_total{output="tsdb",outcome="sent"} 4');
    expect(metrics).toContain('stream_output_events_total{output="tsdb",outcome="dropped-rejected"} 1');
  });
});
