/**
 * The OTLP metrics and logs decoders: every kind of data point and a log record mapped to events,
 * the hand-written protobuf decoders against the OTLP/JSON mapping of what protobufjs decodes (on
 * fixed and random requests), event bounds, and bad input.
 */
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import type { Event } from "../../src/streams/event.js";
import { DEFAULT_EVENT_BOUNDS, type EventBound, type EventBounds } from "../../src/streams/event-bounds.js";
import { OtlpError } from "../../src/streams/otlp.js";
import { jsonSkeleton } from "../../src/streams/otlp-json-parts.js";
import { LOGS_PATTERNS, logEventsOfJson, OtlpLogsDecoder } from "../../src/streams/otlp-logs.js";
import { METRICS_PATTERNS, metricEventsOfJson } from "../../src/streams/otlp-metrics.js";
import { OtlpMetricsDecoder } from "../../src/streams/otlp-metrics-protobuf.js";
import { stateOfSeverity } from "../../src/streams/otlp-signals.js";

const SEED = Number(process.env.VIGIE_FC_SEED ?? 20_261_127);
const proto = (file: string) => protobuf.loadSync(fileURLToPath(new URL(`../../proto/${file}`, import.meta.url)));
const MetricsRequest = proto("otlp-metrics.proto").lookupType("vigie.otlp.metrics.ExportMetricsServiceRequest");
const LogsRequest = proto("otlp-logs.proto").lookupType("vigie.otlp.logs.ExportLogsServiceRequest");

type Json = Record<string, unknown>;
const LOOSE: EventBounds = { fields: 1e9, tags: 1e9, string: 1e9, size: 1e12 };

const all = (items: Iterable<Event | EventBound>) => [...items];
const encode = (type: protobuf.Type, request: Json) => type.encode(type.fromObject(request)).finish();
/** OTLP/JSON of a request in protobufjs' object form: longs as strings, ids as hex. */
function toJson(type: protobuf.Type, bytes: Uint8Array): Json {
  const object = type.toObject(type.decode(bytes), { longs: String, bytes: Array, defaults: false });
  return JSON.parse(
    JSON.stringify(object, (key, value) =>
      Array.isArray(value) && (key === "traceId" || key === "spanId" || key === "bytesValue")
        ? Buffer.from(value).toString(key === "bytesValue" ? "base64" : "hex")
        : value,
    ),
  );
}

const resource = {
  attributes: [
    { key: "service.name", value: { stringValue: "shop" } },
    { key: "host.name", value: { stringValue: "web-1" } },
    { key: "region", value: { stringValue: "eu" } },
  ],
};
const scope = { name: "meter", version: "1.2", attributes: [{ key: "library", value: { boolValue: true } }] };
const T = "1700000000500000000";
const S = "1700000000000000000";
const attributes = (key: string, value: string) => [{ key, value: { stringValue: value } }];

const METRICS = {
  resourceMetrics: [
    {
      resource,
      scopeMetrics: [
        {
          scope,
          metrics: [
            {
              name: "queue",
              unit: "{job}",
              gauge: { dataPoints: [{ timeUnixNano: T, asInt: 12, attributes: attributes("region", "us") }] },
            },
            {
              name: "bytes",
              description: "bytes sent",
              sum: {
                aggregationTemporality: 1,
                isMonotonic: true,
                dataPoints: [{ startTimeUnixNano: S, timeUnixNano: T, asDouble: 2.5 }],
              },
            },
            {
              name: "latency",
              histogram: {
                aggregationTemporality: 2,
                dataPoints: [
                  {
                    timeUnixNano: T,
                    count: 3,
                    sum: 1.5,
                    min: 0.1,
                    max: 1,
                    explicitBounds: [0.5, 1],
                    bucketCounts: [1, 2, 0],
                  },
                ],
              },
            },
            {
              name: "size",
              exponentialHistogram: {
                aggregationTemporality: 1,
                dataPoints: [
                  {
                    timeUnixNano: T,
                    count: 4,
                    sum: 10,
                    scale: -2,
                    zeroCount: 1,
                    zeroThreshold: 0.001,
                    positive: { offset: -1, bucketCounts: [2, 1] },
                    negative: { offset: 3, bucketCounts: [] },
                  },
                ],
              },
            },
            {
              name: "rpc",
              summary: {
                dataPoints: [
                  {
                    timeUnixNano: T,
                    count: 10,
                    sum: 4,
                    quantileValues: [
                      { quantile: 0.5, value: 0.3 },
                      { quantile: 0.99, value: 0.9 },
                    ],
                  },
                ],
              },
            },
            { name: "no data" },
          ],
        },
      ],
    },
  ],
};

const ORIGIN = {
  "service.name": "shop",
  "host.name": "web-1",
  host: "web-1",
  library: true,
  "otel.scope.name": "meter",
  "otel.scope.version": "1.2",
};
const EXPECTED_METRICS: Event[] = [
  { ...ORIGIN, region: "us", service: "queue", time: 1_700_000_000.5, type: "gauge", unit: "{job}", metric: 12 },
  {
    ...ORIGIN,
    region: "eu",
    service: "bytes",
    time: 1_700_000_000.5,
    "start-time": 1_700_000_000,
    type: "sum",
    description: "bytes sent",
    temporality: "delta",
    monotonic: true,
    metric: 2.5,
  },
  {
    ...ORIGIN,
    region: "eu",
    service: "latency",
    time: 1_700_000_000.5,
    type: "histogram",
    temporality: "cumulative",
    count: 3,
    sum: 1.5,
    min: 0.1,
    max: 1,
    "bucket-bounds": [0.5, 1],
    "bucket-counts": [1, 2, 0],
  },
  {
    ...ORIGIN,
    region: "eu",
    service: "size",
    time: 1_700_000_000.5,
    type: "exponential-histogram",
    temporality: "delta",
    count: 4,
    sum: 10,
    scale: -2,
    "zero-count": 1,
    "zero-threshold": 0.001,
    "positive-offset": -1,
    "positive-bucket-counts": [2, 1],
    "negative-offset": 3,
    "negative-bucket-counts": [],
  },
  {
    ...ORIGIN,
    region: "eu",
    service: "rpc",
    time: 1_700_000_000.5,
    type: "summary",
    count: 10,
    sum: 4,
    "quantile-0.5": 0.3,
    "quantile-0.99": 0.9,
  },
];

const LOGS = {
  resourceLogs: [
    {
      resource,
      scopeLogs: [
        {
          scope: { name: "logger" },
          logRecords: [
            {
              timeUnixNano: T,
              severityNumber: 17,
              severityText: "ERROR",
              body: { stringValue: "payment failed" },
              attributes: [...attributes("order.id", "A-42"), { key: "state", value: { stringValue: "ignored" } }],
              traceId: "5b8efff798038103d269b633813fc60c",
              spanId: "eee19b7ec3c1b174",
              eventName: "payment.failure",
            },
            {
              observedTimeUnixNano: S,
              severityNumber: 13,
              body: { kvlistValue: { values: attributes("cart", "book") } },
            },
            { body: { intValue: "7" } },
          ],
        },
      ],
    },
  ],
};

const LOG_ORIGIN = {
  "service.name": "shop",
  "host.name": "web-1",
  host: "web-1",
  region: "eu",
  service: "shop",
  "otel.scope.name": "logger",
};
const EXPECTED_LOGS: Event[] = [
  {
    ...LOG_ORIGIN,
    "order.id": "A-42",
    time: 1_700_000_000.5,
    description: "payment failed",
    state: "critical",
    severity: "ERROR",
    "severity-number": 17,
    "trace-id": "5b8efff798038103d269b633813fc60c",
    "span-id": "eee19b7ec3c1b174",
    "event-name": "payment.failure",
  },
  { ...LOG_ORIGIN, time: 1_700_000_000, description: '{"cart":"book"}', state: "warning", "severity-number": 13 },
  { ...LOG_ORIGIN, description: "7", state: "ok" },
];

const metricsProtobuf = (bytes: Uint8Array, bounds = LOOSE) => all(new OtlpMetricsDecoder(bounds).events(bytes));
const logsProtobuf = (bytes: Uint8Array, bounds = LOOSE) => all(new OtlpLogsDecoder(bounds).events(bytes));

describe("OTLP metrics", () => {
  it("maps each kind of data point, from OTLP/JSON and from protobuf alike", () => {
    expect(all(metricEventsOfJson(METRICS, LOOSE))).toEqual(EXPECTED_METRICS);
    const { traceId: _, ...request } = METRICS as Json;
    const bytes = encode(MetricsRequest, request);
    expect(metricsProtobuf(bytes)).toEqual(EXPECTED_METRICS);
  });

  it("reads OTLP/JSON's spellings: integers as strings, special doubles, enum names", () => {
    const request = {
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                {
                  name: "a",
                  gauge: { dataPoints: [{ timeUnixNano: T, asInt: "9007199254740993" }, { asDouble: "NaN" }] },
                },
                {
                  name: "b",
                  sum: {
                    aggregationTemporality: "AGGREGATION_TEMPORALITY_CUMULATIVE",
                    dataPoints: [{ asDouble: "-Infinity" }],
                  },
                },
              ],
            },
          ],
        },
      ],
    };
    const [big, nan, sum] = all(metricEventsOfJson(request, LOOSE)) as Event[];
    expect(big).toMatchObject({ service: "a", metric: 9007199254740992 });
    expect(nan?.metric).toBeNaN();
    expect(sum).toMatchObject({ temporality: "cumulative", monotonic: false, metric: Number.NEGATIVE_INFINITY });
  });

  it("refuses invalid numbers and times with a clear error", () => {
    const request = (point: Json) => ({
      resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: "a", gauge: { dataPoints: [point] } }] }] }],
    });
    expect(() => all(metricEventsOfJson(request({ asDouble: "many" }), LOOSE))).toThrow(
      new OtlpError('invalid asDouble "many": must be a number'),
    );
    expect(() => all(metricEventsOfJson(request({ asInt: 1.5 }), LOOSE))).toThrow(
      /invalid asInt 1.5: must be an integer/,
    );
    expect(() => all(metricEventsOfJson(request({ timeUnixNano: "soon" }), LOOSE))).toThrow(OtlpError);
  });

  it("refuses truncated protobuf and gives the bound a point exceeds instead of its event", () => {
    const bytes = encode(MetricsRequest, METRICS);
    expect(() => metricsProtobuf(bytes.subarray(0, bytes.length - 3))).toThrow(/truncated|beyond the end/);
    const many = Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: { intValue: i } }));
    const wide = {
      resourceMetrics: [
        {
          scopeMetrics: [
            { metrics: [{ name: "a", gauge: { dataPoints: [{ asInt: 1 }, { asInt: 2, attributes: many }] } }] },
          ],
        },
      ],
    };
    const bounds = { ...DEFAULT_EVENT_BOUNDS, fields: 20 };
    const fromProtobuf = metricsProtobuf(encode(MetricsRequest, wide), bounds);
    expect(fromProtobuf).toEqual([{ service: "a", type: "gauge", metric: 1 }, "max-event-fields"]);
    expect(all(metricEventsOfJson(wide, bounds))).toEqual(fromProtobuf);
    const buckets = {
      resourceMetrics: [
        {
          scopeMetrics: [
            { metrics: [{ name: "h", histogram: { dataPoints: [{ bucketCounts: Array(5000).fill(1) }] } }] },
          ],
        },
      ],
    };
    expect(metricsProtobuf(encode(MetricsRequest, buckets), { ...DEFAULT_EVENT_BOUNDS, size: 4096 })).toEqual([
      "max-event-size",
    ]);
  });

  it("decodes random requests as the OTLP/JSON mapping does, protobuf and large JSON alike", async () => {
    const key = fc.constantFrom("a", "b", "host.name", "service", "c.d");
    const attrs = fc.array(
      fc.record({
        key,
        value: fc.oneof(fc.record({ stringValue: fc.string({ maxLength: 4 }) }), fc.record({ intValue: fc.integer() })),
      }),
      { maxLength: 3 },
    );
    const nanos = fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String);
    const double = fc.double({ noNaN: true });
    const count = fc.bigInt({ min: 0n, max: 2n ** 53n }).map(String);
    const base = { attributes: attrs, startTimeUnixNano: nanos, timeUnixNano: nanos };
    const numberPoint = fc.record(
      { ...base, asDouble: double, asInt: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String) },
      { requiredKeys: [] },
    );
    const histogramPoint = fc.record(
      {
        ...base,
        count,
        sum: double,
        min: double,
        max: double,
        explicitBounds: fc.array(double, { maxLength: 3 }),
        bucketCounts: fc.array(count, { maxLength: 4 }),
      },
      { requiredKeys: [] },
    );
    const side = fc.record(
      { offset: fc.integer({ min: -1000, max: 1000 }), bucketCounts: fc.array(count, { maxLength: 3 }) },
      { requiredKeys: [] },
    );
    const exponentialPoint = fc.record(
      {
        ...base,
        count,
        sum: double,
        scale: fc.integer({ min: -10, max: 20 }),
        zeroCount: count,
        zeroThreshold: double,
        positive: side,
        negative: side,
        min: double,
        max: double,
      },
      { requiredKeys: [] },
    );
    const summaryPoint = fc.record(
      {
        ...base,
        count,
        sum: double,
        quantileValues: fc.array(fc.record({ quantile: double, value: double }, { requiredKeys: [] }), {
          maxLength: 3,
        }),
      },
      { requiredKeys: [] },
    );
    const points = <T>(point: fc.Arbitrary<T>) => fc.array(point, { maxLength: 3 });
    const metric = fc.record(
      {
        name: fc.string({ maxLength: 4 }),
        unit: fc.string({ maxLength: 2 }),
        gauge: fc.record({ dataPoints: points(numberPoint) }),
        sum: fc.record({
          dataPoints: points(numberPoint),
          aggregationTemporality: fc.integer({ min: 0, max: 2 }),
          isMonotonic: fc.boolean(),
        }),
        histogram: fc.record({
          dataPoints: points(histogramPoint),
          aggregationTemporality: fc.integer({ min: 0, max: 2 }),
        }),
        exponentialHistogram: fc.record({ dataPoints: points(exponentialPoint) }),
        summary: fc.record({ dataPoints: points(summaryPoint) }),
      },
      { requiredKeys: ["name"] },
    );
    const request = fc.record({
      resourceMetrics: fc.array(
        fc.record({
          resource: fc.record({ attributes: attrs }),
          scopeMetrics: fc.array(
            fc.record({
              scope: fc.record({ name: fc.string({ maxLength: 3 }), attributes: attrs }),
              metrics: fc.array(metric, { maxLength: 3 }),
            }),
            { maxLength: 2 },
          ),
        }),
        { maxLength: 2 },
      ),
    });
    await fc.assert(
      fc.asyncProperty(request, async (object) => {
        // protobufjs keeps one member of a oneof: the request as protobuf is the reference.
        const bytes = encode(MetricsRequest, object);
        const json = toJson(MetricsRequest, bytes);
        const expected = all(metricEventsOfJson(json, LOOSE));
        expect(metricsProtobuf(bytes)).toEqual(expected);
        const skeleton = await jsonSkeleton(Buffer.from(JSON.stringify(json)), METRICS_PATTERNS, LOOSE);
        expect(all(metricEventsOfJson(skeleton, LOOSE))).toEqual(expected);
      }),
      { seed: SEED, numRuns: 150 },
    );
  });
});

describe("OTLP logs", () => {
  it("maps log records, from OTLP/JSON and from protobuf alike", () => {
    expect(all(logEventsOfJson(LOGS, LOOSE))).toEqual(EXPECTED_LOGS);
    const json = JSON.parse(JSON.stringify(LOGS));
    const record = json.resourceLogs[0].scopeLogs[0].logRecords[0];
    record.traceId = Buffer.from(record.traceId, "hex").toString("base64");
    record.spanId = Buffer.from(record.spanId, "hex").toString("base64");
    expect(logsProtobuf(encode(LogsRequest, json))).toEqual(EXPECTED_LOGS);
  });

  it("maps severity numbers to states", () => {
    expect([0, 1, 9, 12, 13, 16, 17, 21, 24].map(stateOfSeverity)).toEqual([
      "ok",
      "ok",
      "ok",
      "ok",
      "warning",
      "warning",
      "critical",
      "critical",
      "critical",
    ]);
    const named = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityNumber: "SEVERITY_NUMBER_WARN2" }] }] }] };
    expect(all(logEventsOfJson(named, LOOSE))).toEqual([{ state: "warning", "severity-number": 14 }]);
  });

  it("refuses bad ids, deep bodies and truncated protobuf with a clear error", () => {
    const request = (record: Json) => ({ resourceLogs: [{ scopeLogs: [{ logRecords: [record] }] }] });
    expect(() => all(logEventsOfJson(request({ traceId: "xyz" }), LOOSE))).toThrow(/invalid id "xyz": must be hex/);
    let deep: Json = { stringValue: "bottom" };
    for (let i = 0; i < 40; i++) deep = { arrayValue: { values: [deep] } };
    expect(() => all(logEventsOfJson(request({ body: deep }), LOOSE))).toThrow(/must not nest more than 32 levels/);
    const bytes = encode(LogsRequest, request({ body: deep }));
    expect(() => logsProtobuf(bytes)).toThrow(/must not nest more than 32 levels/);
    expect(() => logsProtobuf(bytes.subarray(0, 10))).toThrow(/truncated|beyond the end/);
  });

  it("decodes random requests as the OTLP/JSON mapping does, protobuf and large JSON alike", async () => {
    const key = fc.constantFrom("a", "b", "host.name", "service.name", "description");
    const value = fc.oneof(
      fc.record({ stringValue: fc.string({ maxLength: 4 }) }),
      fc.record({ intValue: fc.integer() }),
      fc.record({ doubleValue: fc.double({ noNaN: true }) }),
      fc.record({
        arrayValue: fc.record({ values: fc.array(fc.record({ boolValue: fc.boolean() }), { maxLength: 2 }) }),
      }),
    );
    const attrs = fc.array(fc.record({ key, value }), { maxLength: 3 });
    const nanos = fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String);
    const log = fc.record(
      {
        timeUnixNano: nanos,
        observedTimeUnixNano: nanos,
        severityNumber: fc.integer({ min: 0, max: 24 }),
        severityText: fc.string({ maxLength: 4 }),
        body: value,
        attributes: attrs,
        traceId: fc.uint8Array({ minLength: 16, maxLength: 16 }),
        spanId: fc.uint8Array({ minLength: 8, maxLength: 8 }),
        eventName: fc.string({ maxLength: 3 }),
      },
      { requiredKeys: [] },
    );
    const request = fc.record({
      resourceLogs: fc.array(
        fc.record({
          resource: fc.record({ attributes: attrs }),
          scopeLogs: fc.array(
            fc.record({
              scope: fc.record({ name: fc.string({ maxLength: 3 }), version: fc.string({ maxLength: 2 }) }),
              logRecords: fc.array(log, { maxLength: 3 }),
            }),
            { maxLength: 2 },
          ),
        }),
        { maxLength: 2 },
      ),
    });
    await fc.assert(
      fc.asyncProperty(request, async (object) => {
        const bytes = encode(LogsRequest, object);
        const json = toJson(LogsRequest, bytes);
        const expected = all(logEventsOfJson(json, LOOSE));
        expect(logsProtobuf(bytes)).toEqual(expected);
        const skeleton = await jsonSkeleton(Buffer.from(JSON.stringify(json)), LOGS_PATTERNS, LOOSE);
        expect(all(logEventsOfJson(skeleton, LOOSE))).toEqual(expected);
      }),
      { seed: SEED, numRuns: 150 },
    );
  });
});

describe("large OTLP/JSON bodies", () => {
  it("keeps the last of repeated keys, as JSON.parse does", async () => {
    const text =
      '{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"first"}}]}],' +
      '"scopeLogs":[{"logRecords":[{"body":{"stringValue":"second"}}],"logRecords":5}]}],"resourceLogs":[' +
      '{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"third"}},{"body":{"stringValue":"x"},"body":{"intValue":"4"}}]}]}]}';
    const skeleton = await jsonSkeleton(Buffer.from(text), LOGS_PATTERNS, LOOSE);
    expect(all(logEventsOfJson(skeleton, LOOSE))).toEqual(all(logEventsOfJson(JSON.parse(text), LOOSE)));
    expect(all(logEventsOfJson(skeleton, LOOSE))).toEqual([
      { description: "third", state: "ok" },
      { description: "4", state: "ok" },
    ]);
  });

  it("drops every item under a value over the first bound, without parsing it", async () => {
    const many = Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, value: { intValue: String(i) } }));
    const bounds = { ...DEFAULT_EVENT_BOUNDS, fields: 20 };
    const request = {
      resourceMetrics: [
        {
          resource: { attributes: many },
          scopeMetrics: [{ metrics: [{ name: "a", gauge: { dataPoints: [{}, {}] } }] }],
        },
        {
          scopeMetrics: [
            { metrics: [{ name: "b", sum: { dataPoints: [{ asInt: "1", attributes: many }, { asInt: "2" }] } }] },
          ],
        },
      ],
    };
    const skeleton = await jsonSkeleton(Buffer.from(JSON.stringify(request)), METRICS_PATTERNS, bounds);
    const expected = ["max-event-fields", "max-event-fields", "max-event-fields"];
    expect(all(metricEventsOfJson(skeleton, bounds))).toEqual([
      ...expected,
      { service: "b", type: "sum", temporality: "unspecified", monotonic: false, metric: 2 },
    ]);
    expect(all(metricEventsOfJson(request, bounds))).toEqual(all(metricEventsOfJson(skeleton, bounds)));
    await expect(jsonSkeleton(Buffer.from("[1]"), METRICS_PATTERNS, bounds)).rejects.toThrow("must be a JSON object");
    await expect(jsonSkeleton(Buffer.from('{"a":'), METRICS_PATTERNS, bounds)).rejects.toThrow("not valid JSON");
  });
});
