/**
 * OpenTelemetry metrics and logs from the real JS SDK and its OTLP exporters (JSON over HTTP and
 * protobuf) into the real process: each data point and log record becomes an event of a stream.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SeverityNumber } from "@opentelemetry/api-logs";
import { OTLPLogExporter as HttpJsonLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPLogExporter as ProtobufLogExporter } from "@opentelemetry/exporter-logs-otlp-proto";
import { OTLPMetricExporter as HttpJsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtobufMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { LoggerProvider, type LogRecordExporter, SimpleLogRecordProcessor } from "@opentelemetry/sdk-logs";
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addStream, freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const resource = resourceFromAttributes({
  "service.name": "shop",
  "host.name": "web-1",
  "deployment.environment": "test",
});

describe("OpenTelemetry JS SDK metric and log exporters against the real process", () => {
  let vigie: VigieProcess;
  beforeAll(async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, `http:\n  port: ${port}\n`);
    vigie = await startVigie({ configFile, port, cwd: directory });
    for (const name of ["metrics-proto", "metrics-json"]) {
      expect(await addStream(vigie.baseUrl, name, "{:actions {:action :index :params [[:service]]}}")).toBe(201);
    }
    for (const name of ["logs-proto", "logs-json"]) {
      expect(await addStream(vigie.baseUrl, name, "{:actions {:action :index :params [[:description]]}}")).toBe(201);
    }
  });
  afterAll(async () => {
    vigie.child.kill("SIGTERM");
    await vigie.exited;
  });

  async function indexed(stream: string): Promise<Array<Record<string, unknown>>> {
    const query = encodeURIComponent(b64("[:true]"));
    const response = await fetch(`${vigie.baseUrl}/api/v1/index/${stream}/search?query=${query}`);
    return ((await response.json()) as { events: Array<Record<string, unknown>> }).events;
  }

  async function exportMetrics(exporter: PushMetricExporter): Promise<void> {
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ resource, readers: [reader] });
    const meter = provider.getMeter("vigie-e2e", "1.0.0");
    meter.createCounter("orders", { unit: "{order}", description: "orders placed" }).add(3, { region: "eu" });
    meter.createUpDownCounter("sessions").add(-2);
    meter.createGauge("queue.depth").record(7.5, { queue: "mail" });
    const latency = meter.createHistogram("latency", { unit: "s" });
    latency.record(0.2);
    latency.record(7);
    await provider.forceFlush();
    await provider.shutdown();
  }

  for (const [encoding, makeExporter] of [
    ["proto", (url: string) => new ProtobufMetricExporter({ url })],
    ["json", (url: string) => new HttpJsonMetricExporter({ url })],
  ] as const) {
    it(`delivers data points with @opentelemetry/exporter-metrics-otlp-${encoding === "proto" ? "proto" : "http"}`, async () => {
      const stream = `metrics-${encoding}`;
      await exportMetrics(makeExporter(`${vigie.baseUrl}/api/v1/opentelemetry/v1/metrics/${stream}`));
      const events = await indexed(stream);
      const byService = new Map(events.map((event) => [event.service, event]));
      expect([...byService.keys()].sort()).toEqual(["latency", "orders", "queue.depth", "sessions"]);
      const common = { host: "web-1", "deployment.environment": "test", "otel.scope.name": "vigie-e2e" };
      expect(byService.get("orders")).toMatchObject({
        ...common,
        type: "sum",
        metric: 3,
        monotonic: true,
        temporality: "cumulative",
        unit: "{order}",
        description: "orders placed",
        region: "eu",
      });
      expect(byService.get("sessions")).toMatchObject({ type: "sum", metric: -2, monotonic: false });
      expect(byService.get("queue.depth")).toMatchObject({ ...common, type: "gauge", metric: 7.5, queue: "mail" });
      const latency = byService.get("latency");
      expect(latency).toMatchObject({ type: "histogram", unit: "s", count: 2, sum: 7.2, min: 0.2, max: 7 });
      const bounds = latency?.["bucket-bounds"] as number[];
      const counts = latency?.["bucket-counts"] as number[];
      expect(counts).toHaveLength(bounds.length + 1);
      expect(counts.reduce((a, b) => a + b, 0)).toBe(2);
      expect(Math.abs((latency?.time as number) - Date.now() / 1000)).toBeLessThan(60);
    });
  }

  async function exportLogs(exporter: LogRecordExporter): Promise<void> {
    const provider = new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor(exporter)] });
    const logger = provider.getLogger("vigie-e2e-logs", "2.0.0");
    logger.emit({
      severityNumber: SeverityNumber.ERROR,
      severityText: "ERROR",
      body: "payment failed",
      attributes: { "order.id": "A-42", attempts: 3 },
    });
    logger.emit({ severityNumber: SeverityNumber.WARN, body: { cart: ["book", "pen"] } });
    logger.emit({ severityNumber: SeverityNumber.INFO, body: "checkout done" });
    await provider.forceFlush();
    await provider.shutdown();
  }

  for (const [encoding, makeExporter] of [
    ["proto", (url: string) => new ProtobufLogExporter({ url })],
    ["json", (url: string) => new HttpJsonLogExporter({ url })],
  ] as const) {
    it(`delivers log records with @opentelemetry/exporter-logs-otlp-${encoding === "proto" ? "proto" : "http"}`, async () => {
      const stream = `logs-${encoding}`;
      await exportLogs(makeExporter(`${vigie.baseUrl}/api/v1/opentelemetry/v1/logs/${stream}`));
      const events = await indexed(stream);
      const byDescription = new Map(events.map((event) => [event.description, event]));
      expect([...byDescription.keys()].sort()).toEqual(["checkout done", "payment failed", '{"cart":["book","pen"]}']);
      expect(byDescription.get("payment failed")).toMatchObject({
        service: "shop",
        host: "web-1",
        state: "critical",
        severity: "ERROR",
        "severity-number": 17,
        "order.id": "A-42",
        attempts: 3,
        "otel.scope.name": "vigie-e2e-logs",
        "otel.scope.version": "2.0.0",
      });
      expect(byDescription.get('{"cart":["book","pen"]}')).toMatchObject({ state: "warning", "severity-number": 13 });
      expect(byDescription.get("checkout done")).toMatchObject({ state: "ok" });
      const time = byDescription.get("checkout done")?.time as number;
      expect(Math.abs(time - Date.now() / 1000)).toBeLessThan(60);
    });
  }
});
