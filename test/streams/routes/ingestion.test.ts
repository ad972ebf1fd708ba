import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { InjectOptions } from "fastify";
import protobuf from "protobufjs";
import { compressSync } from "snappy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { VigieServer } from "../../../src/server.js";
import { streamsModule } from "../../../src/streams/index.js";
import { startTestServer } from "../../support/server.js";
import { varint } from "../../support/varint.js";

const proto = (file: string) => protobuf.loadSync(fileURLToPath(new URL(`../../../proto/${file}`, import.meta.url)));
const WriteRequest = proto("remote-write.proto").lookupType("prometheus.WriteRequest");
const traces = proto("otlp-trace.proto");
const ExportTraceServiceRequest = traces.lookupType("vigie.otlp.ExportTraceServiceRequest");

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

function writeRequest(): Buffer {
  const bytes = WriteRequest.encode(
    WriteRequest.fromObject({
      timeseries: [
        {
          labels: [
            { name: "__name__", value: "up" },
            { name: "instance", value: "a:9100" },
          ],
          samples: [{ value: 1, timestamp: 1_700_000_000_500 }],
        },
        {
          labels: [
            { name: "__name__", value: "up" },
            { name: "instance", value: "b:9100" },
          ],
          samples: [{ value: 0, timestamp: 1_700_000_001_000 }],
        },
      ],
    }),
  ).finish();
  return compressSync(Buffer.from(bytes));
}

const SPAN = {
  traceId: "5b8efff798038103d269b633813fc60c",
  spanId: "eee19b7ec3c1b174",
  parentSpanId: "eee19b7ec3c1b173",
  name: "GET /users",
  kind: 2,
  startTimeUnixNano: "1700000000000000000",
  endTimeUnixNano: "1700000000250000000",
  attributes: [
    { key: "http.method", value: { stringValue: "GET" } },
    { key: "http.status_code", value: { intValue: "500" } },
    { key: "big", value: { intValue: "9223372036854775807" } },
    { key: "ratio", value: { doubleValue: 0.25 } },
    { key: "cached", value: { boolValue: false } },
    {
      key: "tags",
      value: {
        arrayValue: {
          values: [{ stringValue: "a" }, { intValue: "2" }, { arrayValue: { values: [{ boolValue: true }] } }],
        },
      },
    },
    {
      key: "nested",
      value: {
        kvlistValue: {
          values: [
            { key: "k", value: { stringValue: "v" } },
            { key: "n", value: { kvlistValue: { values: [] } } },
          ],
        },
      },
    },
    { key: "raw", value: { bytesValue: "aGk=" } },
  ],
  events: [
    { timeUnixNano: "1700000000100000000", name: "retry", attributes: [{ key: "attempt", value: { intValue: "2" } }] },
  ],
  links: [{ traceId: "0102030405060708090a0b0c0d0e0f10", spanId: "0102030405060708", attributes: [] }],
  status: { code: 2, message: "upstream failed" },
};

const OTLP_JSON = {
  resourceSpans: [
    {
      resource: {
        attributes: [
          { key: "service.name", value: { stringValue: "api" } },
          { key: "host.name", value: { stringValue: "web1" } },
        ],
      },
      scopeSpans: [{ scope: { name: "my-lib", version: "1.2.3" }, spans: [SPAN] }],
    },
  ],
};

const EXPECTED_EVENT = {
  service: "api",
  name: "GET /users",
  "trace-id": "5b8efff798038103d269b633813fc60c",
  "span-id": "eee19b7ec3c1b174",
  "parent-span-id": "eee19b7ec3c1b173",
  kind: "server",
  state: "error",
  description: "upstream failed",
  time: 1_700_000_000.25,
  "start-time": 1_700_000_000,
  metric: 0.25,
  attributes: {
    "http.method": "GET",
    "http.status_code": 500,
    big: "9223372036854775807",
    ratio: 0.25,
    cached: false,
    tags: ["a", 2, [true]],
    nested: { k: "v", n: {} },
    raw: "aGk=",
  },
  resource: { "service.name": "api", "host.name": "web1" },
  scope: { name: "my-lib", version: "1.2.3" },
  events: [{ name: "retry", time: 1_700_000_000.1, attributes: { attempt: 2 } }],
  links: [{ "trace-id": "0102030405060708090a0b0c0d0e0f10", "span-id": "0102030405060708", attributes: {} }],
};

/** The OTLP/JSON request as protobuf: ids and bytes as bytes, as an SDK sends them. */
function protobufRequest(): Buffer {
  const hex = (text: string) => Buffer.from(text, "hex");
  const span = {
    ...SPAN,
    traceId: hex(SPAN.traceId),
    spanId: hex(SPAN.spanId),
    parentSpanId: hex(SPAN.parentSpanId),
    attributes: SPAN.attributes.map((attribute) =>
      attribute.key === "raw" ? { key: "raw", value: { bytesValue: Buffer.from("hi") } } : attribute,
    ),
    links: [
      { traceId: hex(SPAN.links[0]?.traceId as string), spanId: hex(SPAN.links[0]?.spanId as string), attributes: [] },
    ],
  };
  const message = ExportTraceServiceRequest.fromObject({
    resourceSpans: [
      { ...OTLP_JSON.resourceSpans[0], scopeSpans: [{ scope: { name: "my-lib", version: "1.2.3" }, spans: [span] }] },
    ],
  });
  return Buffer.from(ExportTraceServiceRequest.encode(message).finish());
}

describe("ingestion routes", () => {
  let server: VigieServer;
  beforeEach(async () => {
    server = await startTestServer({
      modules: [streamsModule],
      config: { streams: { "ingestion-body-limit": "64KiB" } },
    });
    const config = b64("{:default true :actions {:action :index :params [[:service :instance :span-id]]}}");
    for (const name of ["metrics", "other"]) {
      await server.app.inject({ method: "POST", url: `/api/v1/stream/${name}`, payload: { config } });
    }
  });
  afterEach(() => server.close());

  const inject = (options: InjectOptions) => server.app.inject(options);
  const indexed = async (name: string) =>
    (await inject({ method: "GET", url: `/api/v1/index/${name}/search?query=${b64("[:true]")}` })).json().events;

  it("accepts remote write on both routes with 204 and indexes one event per sample", async () => {
    for (const path of ["/api/v1/tsdb/remote-write/metrics", "/api/v1/prometheus/remote-write/metrics"]) {
      const response = await inject({
        method: "POST",
        url: path,
        headers: {
          "content-type": "application/x-protobuf",
          "content-encoding": "snappy",
          "x-prometheus-remote-write-version": "0.1.0",
        },
        payload: writeRequest(),
      });
      expect(response.statusCode).toBe(204);
      expect(response.body).toBe("");
    }
    expect(await indexed("metrics")).toEqual([
      { service: "up", instance: "a:9100", metric: 1, time: 1_700_000_000.5 },
      { service: "up", instance: "b:9100", metric: 0, time: 1_700_000_001 },
    ]);
    const metrics = (await inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toContain('remote_write_samples_total{stream="metrics"} 4');
  });

  it("sends remote write to `default` to every default stream", async () => {
    const response = await inject({
      method: "POST",
      url: "/api/v1/tsdb/remote-write/default",
      headers: { "content-type": "application/x-protobuf" },
      payload: writeRequest(),
    });
    expect(response.statusCode).toBe(204);
    expect(await indexed("metrics")).toHaveLength(2);
    expect(await indexed("other")).toHaveLength(2);
  });

  it("answers 400 for malformed snappy or protobuf, 404 for an unknown stream, 413 and 415", async () => {
    const post = (payload: Buffer, url = "/api/v1/tsdb/remote-write/metrics", type = "application/x-protobuf") =>
      inject({ method: "POST", url, headers: { "content-type": type }, payload });
    const corrupt = await post(Buffer.from([0x05, 0x01, 0x02]));
    expect(corrupt.statusCode).toBe(400);
    expect(corrupt.json().error).toMatch(/^invalid remote write body: /);
    const notProtobuf = await post(compressSync(Buffer.from([0x0a, 0x7f, 0x01])));
    expect(notProtobuf.json()).toEqual({ error: "invalid remote write body: length beyond the end of the message" });
    expect((await post(writeRequest(), "/api/v1/tsdb/remote-write/nope")).json()).toEqual({
      error: "stream nope not found",
    });
    expect((await post(writeRequest(), "/api/v1/tsdb/remote-write/nope")).statusCode).toBe(404);
    expect((await post(Buffer.alloc(70 * 1024))).statusCode).toBe(413);
    // A small block announcing a huge decompressed size is refused before decompression.
    expect((await post(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]))).statusCode).toBe(413);
    expect((await post(writeRequest(), "/api/v1/tsdb/remote-write/metrics", "text/plain")).statusCode).toBe(415);
    expect(
      (
        await post(
          writeRequest(),
          "/api/v1/tsdb/remote-write/metrics",
          "application/x-protobuf;proto=io.prometheus.write.v2.Request",
        )
      ).statusCode,
    ).toBe(415);
    expect(await indexed("metrics")).toEqual([]);
  });

  it("maps OTLP/JSON spans to events and answers {} in JSON", async () => {
    const response = await inject({
      method: "POST",
      url: "/api/v1/opentelemetry/v1/traces/metrics",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify(OTLP_JSON),
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    expect(response.json()).toEqual({});
    expect(await indexed("metrics")).toEqual([EXPECTED_EVENT]);
    expect((await inject({ method: "GET", url: "/metrics" })).body).toContain('otlp_spans_total{stream="metrics"} 1');
  });

  it("maps OTLP protobuf spans the same way, gzip included, and answers an empty protobuf message", async () => {
    const response = await inject({
      method: "POST",
      url: "/api/v1/opentelemetry/v1/traces/metrics",
      headers: { "content-type": "application/x-protobuf", "content-encoding": "gzip" },
      payload: gzipSync(protobufRequest()),
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/x-protobuf");
    expect(response.rawPayload.length).toBe(0);
    expect(await indexed("metrics")).toEqual([EXPECTED_EVENT]);
  });

  it("accepts enum names in OTLP/JSON and omits the parent of a root span", async () => {
    const root = {
      ...SPAN,
      parentSpanId: "",
      kind: "SPAN_KIND_CLIENT",
      status: { code: "STATUS_CODE_OK" },
      events: [],
      links: [],
    };
    const request = { resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans: [root] }] }] };
    await inject({
      method: "POST",
      url: "/api/v1/opentelemetry/v1/traces/metrics",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify(request),
    });
    const [event] = await indexed("metrics");
    expect(event).toMatchObject({ kind: "client", state: "ok", scope: { name: "", version: "" } });
    expect(event).not.toHaveProperty("parent-span-id");
    expect(event).not.toHaveProperty("description");
    expect(event).not.toHaveProperty("events");
    expect(event).not.toHaveProperty("links");
  });

  it("answers 400 for malformed OTLP bodies and 404 for unknown streams", async () => {
    const post = (
      payload: Buffer | string,
      type: string,
      encoding?: string,
      url = "/api/v1/opentelemetry/v1/traces/metrics",
    ) =>
      inject({
        method: "POST",
        url,
        headers: { "content-type": type, ...(encoding ? { "content-encoding": encoding } : {}) },
        payload,
      });
    expect((await post("{nope", "application/json")).json()).toEqual({
      error: "invalid OTLP traces request: request body is not valid JSON",
    });
    expect((await post(Buffer.from([0x0a, 0x05, 0x01]), "application/x-protobuf")).statusCode).toBe(400);
    expect((await post(Buffer.from("not gzip"), "application/json", "gzip")).statusCode).toBe(400);
    expect((await post(Buffer.from("{}"), "application/json", "br")).statusCode).toBe(415);
    expect((await post("{}", "application/json", undefined, "/api/v1/opentelemetry/v1/traces/nope")).statusCode).toBe(
      404,
    );
    expect(await indexed("metrics")).toEqual([]);
  });

  it("refuses attribute values nested deeper than events may nest, in JSON and in protobuf, without a 500", async () => {
    /** A request whose span has an attribute of key-value lists nested `levels` deep, as JSON text. */
    const request = (levels: number) => {
      const open = '{"kvlistValue":{"values":[{"key":"k","value":';
      const value = `${open.repeat(levels)}{"stringValue":"leaf"}${"}]}}".repeat(levels)}`;
      const span = JSON.stringify({ ...SPAN, attributes: [] }).replace(
        '"attributes":[]',
        `"attributes":[{"key":"deep","value":${value}}]`,
      );
      return `{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"spans":[${span}]}]}]}`;
    };
    const postJson = (levels: number) =>
      inject({
        method: "POST",
        url: "/api/v1/opentelemetry/v1/traces/metrics",
        headers: { "content-type": "application/json" },
        payload: request(levels),
      });
    // The event is level 1, its attributes level 2: 30 key-value lists reach level 32, the limit.
    expect((await postJson(30)).statusCode).toBe(200);
    for (const levels of [31, 1_000]) {
      expect((await postJson(levels)).json()).toEqual({
        error: "invalid OTLP traces request: attribute values must not nest more than 32 levels deep in an event",
      });
    }
    // Written by hand: protobufjs itself recurses when encoding such a value.
    const field = (number: number, bytes: Buffer) =>
      Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
    let any = field(1, Buffer.from("leaf"));
    for (let level = 0; level < 3_000; level++) {
      any = field(6, field(1, Buffer.concat([field(1, Buffer.from("k")), field(2, any)])));
    }
    const span = Buffer.concat([
      Buffer.from(
        traces
          .lookupType("vigie.otlp.Span")
          .encode({ traceId: Buffer.alloc(16, 1), spanId: Buffer.alloc(8, 2) })
          .finish(),
      ),
      field(9, Buffer.concat([field(1, Buffer.from("deep")), field(2, any)])),
    ]);
    const deepProtobuf = field(1, field(2, field(2, span)));
    const answer = await inject({
      method: "POST",
      url: "/api/v1/opentelemetry/v1/traces/metrics",
      headers: { "content-type": "application/x-protobuf" },
      payload: deepProtobuf,
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toMatch(/^invalid OTLP traces request: /);
    expect(await indexed("metrics")).toHaveLength(1);
  });
});
