/**
 * The OTLP/HTTP metrics and logs routes through app.inject: both encodings, gzip, the response
 * (empty, or a partial success for items over an event bound), and the errors.
 */
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { InjectOptions } from "fastify";
import protobuf from "protobufjs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { VigieServer } from "../../../src/server.js";
import { streamsModule } from "../../../src/streams/index.js";
import { startTestServer } from "../../support/server.js";

const proto = (file: string) => protobuf.loadSync(fileURLToPath(new URL(`../../../proto/${file}`, import.meta.url)));
const metricsProto = proto("otlp-metrics.proto");
const logsProto = proto("otlp-logs.proto");
const MetricsRequest = metricsProto.lookupType("vigie.otlp.metrics.ExportMetricsServiceRequest");
const MetricsResponse = metricsProto.lookupType("vigie.otlp.metrics.ExportMetricsServiceResponse");
const LogsRequest = logsProto.lookupType("vigie.otlp.logs.ExportLogsServiceRequest");
const LogsResponse = logsProto.lookupType("vigie.otlp.logs.ExportLogsServiceResponse");

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const encode = (type: protobuf.Type, request: object) => Buffer.from(type.encode(type.fromObject(request)).finish());

const T = "1700000000000000000";
const WIDE = Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: { intValue: String(i) } }));

const METRICS = {
  resourceMetrics: [
    {
      resource: { attributes: [{ key: "host.name", value: { stringValue: "web-1" } }] },
      scopeMetrics: [
        {
          metrics: [
            { name: "queue", gauge: { dataPoints: [{ timeUnixNano: "1700000000000000000", asInt: "12" }] } },
            { name: "wide", gauge: { dataPoints: [{ asDouble: 1, attributes: WIDE }] } },
          ],
        },
      ],
    },
  ],
};

const LOGS = {
  resourceLogs: [
    {
      resource: { attributes: [{ key: "service.name", value: { stringValue: "shop" } }] },
      scopeLogs: [
        {
          logRecords: [
            { timeUnixNano: "1700000000000000000", severityNumber: 18, body: { stringValue: "disk full" } },
            { body: { stringValue: "wide" }, attributes: WIDE },
          ],
        },
      ],
    },
  ],
};

const QUEUE = { service: "queue", host: "web-1", "host.name": "web-1", time: 1_700_000_000, type: "gauge", metric: 12 };
const DISK = {
  service: "shop",
  "service.name": "shop",
  time: 1_700_000_000,
  description: "disk full",
  state: "critical",
  "severity-number": 18,
};
const REFUSED = "1 %s dropped: the event has more than 20 fields, nested ones included (streams.max-event-fields)";

describe("OTLP/HTTP metrics and logs routes", () => {
  let server: VigieServer;
  beforeEach(async () => {
    server = await startTestServer({
      modules: [streamsModule],
      config: { streams: { "ingestion-body-limit": "1MiB", "max-event-fields": 20 } },
    });
    const config = b64("{:default true :actions {:action :index :params [[:service :description]]}}");
    for (const name of ["signals", "other"]) {
      await server.app.inject({ method: "POST", url: `/api/v1/stream/${name}`, payload: { config } });
    }
  });
  afterEach(() => server.close());

  const inject = (options: InjectOptions) => server.app.inject(options);
  const indexed = async (name: string) =>
    (await inject({ method: "GET", url: `/api/v1/index/${name}/search?query=${b64("[:true]")}` })).json().events;
  const post = (
    signal: string,
    payload: Buffer | string,
    type: string,
    headers: Record<string, string> = {},
    stream = "signals",
  ) =>
    inject({
      method: "POST",
      url: `/api/v1/opentelemetry/v1/${signal}/${stream}`,
      headers: { "content-type": type, ...headers },
      payload,
    });

  it("takes OTLP/JSON metrics and answers a partial success for a point over a bound", async () => {
    const response = await post("metrics", JSON.stringify(METRICS), "application/json");
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    expect(response.json()).toEqual({
      partialSuccess: { rejectedDataPoints: "1", errorMessage: REFUSED.replace("%s", "data points") },
    });
    expect(await indexed("signals")).toEqual([QUEUE]);
    const metrics = (await inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toContain('otlp_data_points_total{stream="signals"} 1');
    expect(metrics).toMatch(
      /stream_dropped_events_total\{stream="signals",action="otlp",reason="max-event-fields"\} 1/,
    );
  });

  it("takes gzipped protobuf metrics and answers an ExportMetricsServiceResponse", async () => {
    const response = await post("metrics", gzipSync(encode(MetricsRequest, METRICS)), "application/x-protobuf", {
      "content-encoding": "gzip",
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/x-protobuf");
    const answer = MetricsResponse.toObject(MetricsResponse.decode(response.rawPayload), { longs: Number });
    expect(answer).toEqual({
      partialSuccess: { rejectedDataPoints: 1, errorMessage: REFUSED.replace("%s", "data points") },
    });
    expect(await indexed("signals")).toEqual([QUEUE]);
    const whole = {
      resourceMetrics: [{ scopeMetrics: [{ metrics: [METRICS.resourceMetrics[0]?.scopeMetrics[0]?.metrics[0]] }] }],
    };
    const empty = await post("metrics", encode(MetricsRequest, whole), "application/x-protobuf");
    expect(empty.rawPayload.length).toBe(0);
  });

  it("reads a large OTLP/JSON body a slice at a time, with the same answer", async () => {
    const points = Array.from({ length: 3000 }, (_, i) => ({ timeUnixNano: T, asInt: String(i) }));
    points.push({ timeUnixNano: T, asInt: "-1", attributes: WIDE } as (typeof points)[number]);
    const request = {
      resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: "many", gauge: { dataPoints: points } }] }] }],
    };
    const text = JSON.stringify(request);
    expect(text.length).toBeGreaterThan(64 * 1024);
    const response = await post("metrics", text, "application/json");
    expect(response.json()).toEqual({
      partialSuccess: { rejectedDataPoints: "1", errorMessage: REFUSED.replace("%s", "data points") },
    });
    expect(await indexed("signals")).toEqual([{ service: "many", time: 1_700_000_000, type: "gauge", metric: 2999 }]);
    const metrics = (await inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toContain('otlp_data_points_total{stream="signals"} 3000');
    const broken = await post("metrics", `${text.slice(0, -2)}`, "application/json");
    expect(broken.json()).toEqual({ error: "invalid OTLP metrics request: request body is not valid JSON" });
  });

  it("takes logs in both encodings, to the default streams too", async () => {
    const json = await post("logs", JSON.stringify(LOGS), "application/json", {}, "default");
    expect(json.statusCode).toBe(200);
    expect(json.json()).toEqual({
      partialSuccess: { rejectedLogRecords: "1", errorMessage: REFUSED.replace("%s", "log records") },
    });
    expect(await indexed("signals")).toEqual([DISK]);
    expect(await indexed("other")).toEqual([DISK]);
    const protobufAnswer = await post("logs", encode(LogsRequest, LOGS), "application/x-protobuf");
    expect(protobufAnswer.statusCode).toBe(200);
    expect(LogsResponse.toObject(LogsResponse.decode(protobufAnswer.rawPayload), { longs: Number })).toEqual({
      partialSuccess: { rejectedLogRecords: 1, errorMessage: REFUSED.replace("%s", "log records") },
    });
    // A record without a time takes the time of arrival, as a push does.
    const untimed = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: "no time" } }] }] }] };
    expect((await post("logs", JSON.stringify(untimed), "application/json")).json()).toEqual({});
    const [arrived] = (await indexed("signals")).filter(
      (event: { description: string }) => event.description === "no time",
    );
    expect(Math.abs(arrived.time - Date.now() / 1000)).toBeLessThan(60);
    const metrics = (await inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toContain('otlp_log_records_total{stream="signals"} 2');
    expect(metrics).toContain('otlp_log_records_total{stream="default"} 1');
  });

  it("answers 400 for malformed bodies, 404 for an unknown stream, 413 and 415", async () => {
    for (const signal of ["metrics", "logs"]) {
      expect((await post(signal, "{nope", "application/json")).json()).toEqual({
        error: `invalid OTLP ${signal} request: request body is not valid JSON`,
      });
      expect((await post(signal, "[]", "application/json")).json()).toEqual({
        error: `invalid OTLP ${signal} request: request body must be a JSON object`,
      });
      const truncated = await post(signal, Buffer.from([0x0a, 0x05, 0x01]), "application/x-protobuf");
      expect(truncated.statusCode).toBe(400);
      expect(truncated.json().error).toMatch(new RegExp(`^invalid OTLP ${signal} request: invalid protobuf: `));
      expect(
        (await post(signal, Buffer.from("not gzip"), "application/json", { "content-encoding": "gzip" })).statusCode,
      ).toBe(400);
      expect((await post(signal, "{}", "application/json", {}, "nope")).json()).toEqual({
        error: "stream nope not found",
      });
      expect((await post(signal, "{}", "application/json", { "content-encoding": "br" })).statusCode).toBe(415);
      expect((await post(signal, "{}", "text/plain")).statusCode).toBe(415);
      expect((await post(signal, Buffer.alloc(1100 * 1024), "application/x-protobuf")).statusCode).toBe(413);
      const bomb = gzipSync(Buffer.alloc(2 * 1024 * 1024));
      expect((await post(signal, bomb, "application/x-protobuf", { "content-encoding": "gzip" })).statusCode).toBe(413);
    }
    const badPoint = {
      resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: "a", sum: { dataPoints: [{ asDouble: "lots" }] } }] }] }],
    };
    expect((await post("metrics", JSON.stringify(badPoint), "application/json")).json()).toEqual({
      error: 'invalid OTLP metrics request: invalid asDouble "lots": must be a number',
    });
    expect(await indexed("signals")).toEqual([]);
  });
});
