/**
 * What the remote write and OTLP (traces, metrics, logs) routes say of themselves in `GET /openapi.json`
 * (docs/streams.md). Their bodies are read raw, by decoders rather than validators: the schemas
 * here describe the wire formats. No `security`: a token is needed only with
 * `security.require-token`.
 */
import type { RouteDescription } from "../../platform/openapi.js";
import type { JsonSchema } from "../../platform/validation.js";

export const remoteWrite: RouteDescription = {
  summary: "Prometheus remote write 1.0: one event per sample (snappy-compressed protobuf WriteRequest)",
  body: {
    mediaType: "application/x-protobuf",
    schema: {
      type: "string",
      contentMediaType: "application/x-protobuf",
      description: "a snappy block (not the framed format) of a prometheus.WriteRequest (proto/remote-write.proto)",
    },
  },
  headers: {
    "Content-Encoding": {
      enum: ["snappy"],
      description: "what Prometheus sends: the body is read as a snappy block whatever this says",
    },
  },
  success: { status: 204 },
  // 503: in a cluster, the events cannot reach the instance owning the stream.
  errors: [503],
};

/** An OTLP/JSON `AnyValue` (lowerCamelCase, 64-bit integers as strings or numbers). */
const ANY_VALUE: JsonSchema = { type: "object", description: "an OTLP AnyValue: stringValue, intValue, …" };

const KEY_VALUES: JsonSchema = {
  type: "array",
  items: { type: "object", properties: { key: { type: "string" }, value: ANY_VALUE }, required: ["key"] },
};

const NANOSECONDS: JsonSchema = { type: ["string", "integer"], description: "nanoseconds since the epoch" };

const SPAN: JsonSchema = {
  type: "object",
  properties: {
    traceId: { type: "string", pattern: "^([0-9a-fA-F]{32})?$" },
    spanId: { type: "string", pattern: "^([0-9a-fA-F]{16})?$" },
    parentSpanId: { type: "string", pattern: "^([0-9a-fA-F]{16})?$" },
    name: { type: "string" },
    kind: { type: ["integer", "string"], description: "SpanKind, as its number or its name" },
    startTimeUnixNano: NANOSECONDS,
    endTimeUnixNano: NANOSECONDS,
    attributes: KEY_VALUES,
    status: { type: "object", properties: { code: { type: ["integer", "string"] }, message: { type: "string" } } },
    events: { type: "array", items: { type: "object" } },
    links: { type: "array", items: { type: "object" } },
  },
};

/** OTLP/JSON `ExportTraceServiceRequest` (OTLP/HTTP's JSON encoding). */
const EXPORT_TRACE_REQUEST: JsonSchema = {
  type: "object",
  properties: {
    resourceSpans: {
      type: "array",
      items: {
        type: "object",
        properties: {
          resource: { type: "object", properties: { attributes: KEY_VALUES } },
          scopeSpans: {
            type: "array",
            items: {
              type: "object",
              properties: {
                scope: { type: "object", properties: { name: { type: "string" }, version: { type: "string" } } },
                spans: { type: "array", items: SPAN },
              },
            },
          },
        },
      },
    },
  },
};

export const otlpTraces: RouteDescription = {
  summary: "OTLP/HTTP traces: one event per span; JSON or protobuf, optionally gzipped",
  body: [
    { mediaType: "application/json", schema: EXPORT_TRACE_REQUEST },
    {
      mediaType: "application/x-protobuf",
      schema: {
        type: "string",
        contentMediaType: "application/x-protobuf",
        description: "an opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest",
      },
    },
  ],
  headers: {
    "Content-Encoding": { enum: ["identity", "gzip"], default: "identity", description: "gzip: the body is gzipped" },
  },
  example: {
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: "shop" } }] },
        scopeSpans: [
          {
            scope: { name: "shop-tracer", version: "1.0.0" },
            spans: [
              {
                traceId: "5b8efff798038103d269b633813fc60c",
                spanId: "eee19b7ec3c1b174",
                name: "GET /users",
                kind: 2,
                startTimeUnixNano: "1700000000000000000",
                endTimeUnixNano: "1700000000250000000",
                attributes: [{ key: "http.method", value: { stringValue: "GET" } }],
              },
            ],
          },
        ],
      },
    ],
  },
  // An empty ExportTraceServiceResponse, in the request's encoding.
  success: {
    content: [
      {
        mediaType: "application/json",
        schema: {
          type: "object",
          properties: { partialSuccess: { type: "object" } },
          description: "an ExportTraceServiceResponse (empty: every span within the bounds was taken)",
        },
      },
      {
        mediaType: "application/x-protobuf",
        schema: {
          type: "string",
          contentMediaType: "application/x-protobuf",
          description: "an ExportTraceServiceResponse (empty: every span within the bounds was taken)",
        },
      },
    ],
  },
  errors: [503],
};

/** The parts of the metrics and logs routes' descriptions that differ. */
interface SignalDescription {
  readonly summary: string;
  /** `ExportMetricsServiceRequest` … */
  readonly request: string;
  /** `ExportMetricsServiceResponse` … */
  readonly response: string;
  /** `rejectedDataPoints` … */
  readonly rejected: string;
  /** `data point` … */
  readonly item: string;
  readonly schema: JsonSchema;
  readonly example: Record<string, unknown>;
}

/** An OTLP/HTTP route of metrics or logs: JSON or protobuf, optionally gzipped, partial success. */
function signalRoute(signal: SignalDescription): RouteDescription {
  const answer = `an ${signal.response}: empty when every ${signal.item} was taken, else a partialSuccess counting those dropped for an event bound`;
  return {
    summary: signal.summary,
    body: [
      { mediaType: "application/json", schema: signal.schema },
      {
        mediaType: "application/x-protobuf",
        schema: { type: "string", contentMediaType: "application/x-protobuf", description: `an ${signal.request}` },
      },
    ],
    headers: {
      "Content-Encoding": { enum: ["identity", "gzip"], default: "identity", description: "gzip: the body is gzipped" },
    },
    example: signal.example,
    success: {
      content: [
        {
          mediaType: "application/json",
          schema: {
            type: "object",
            properties: {
              partialSuccess: {
                type: "object",
                properties: {
                  [signal.rejected]: { type: "string", description: "how many were dropped (an int64, as a string)" },
                  errorMessage: { type: "string" },
                },
              },
            },
            description: answer,
          },
        },
        {
          mediaType: "application/x-protobuf",
          schema: { type: "string", contentMediaType: "application/x-protobuf", description: answer },
        },
      ],
    },
    errors: [503],
  };
}

/** A resource and scope level of OTLP/JSON, holding `items` under `key`. */
function scoped(scopeKey: string, itemsKey: string, items: JsonSchema): JsonSchema {
  return {
    type: "object",
    properties: {
      resource: { type: "object", properties: { attributes: KEY_VALUES } },
      [scopeKey]: {
        type: "array",
        items: {
          type: "object",
          properties: {
            scope: {
              type: "object",
              properties: { name: { type: "string" }, version: { type: "string" }, attributes: KEY_VALUES },
            },
            [itemsKey]: { type: "array", items },
          },
        },
      },
    },
  };
}

const DATA_POINTS: JsonSchema = {
  type: "object",
  properties: { dataPoints: { type: "array", items: { type: "object" } } },
  description: "dataPoints, aggregationTemporality (not for gauges and summaries), isMonotonic (sums)",
};

const METRIC: JsonSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    description: { type: "string" },
    unit: { type: "string" },
    gauge: DATA_POINTS,
    sum: DATA_POINTS,
    histogram: DATA_POINTS,
    exponentialHistogram: DATA_POINTS,
    summary: DATA_POINTS,
  },
};

export const otlpMetrics: RouteDescription = signalRoute({
  summary: "OTLP/HTTP metrics: one event per data point; JSON or protobuf, optionally gzipped",
  request: "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest",
  response: "ExportMetricsServiceResponse",
  rejected: "rejectedDataPoints",
  item: "data point",
  schema: {
    type: "object",
    properties: { resourceMetrics: { type: "array", items: scoped("scopeMetrics", "metrics", METRIC) } },
  },
  example: {
    resourceMetrics: [
      {
        resource: { attributes: [{ key: "host.name", value: { stringValue: "web-1" } }] },
        scopeMetrics: [
          {
            scope: { name: "shop-meter", version: "1.0.0" },
            metrics: [
              {
                name: "queue.length",
                unit: "{job}",
                gauge: {
                  dataPoints: [
                    {
                      timeUnixNano: "1700000000000000000",
                      asInt: "12",
                      attributes: [{ key: "queue", value: { stringValue: "mail" } }],
                    },
                  ],
                },
              },
            ],
          },
        ],
      },
    ],
  },
});

const LOG_RECORD: JsonSchema = {
  type: "object",
  properties: {
    timeUnixNano: NANOSECONDS,
    observedTimeUnixNano: NANOSECONDS,
    severityNumber: { type: ["integer", "string"], description: "SeverityNumber, as its number or its name" },
    severityText: { type: "string" },
    body: ANY_VALUE,
    attributes: KEY_VALUES,
    traceId: { type: "string", pattern: "^([0-9a-fA-F]{32})?$" },
    spanId: { type: "string", pattern: "^([0-9a-fA-F]{16})?$" },
    eventName: { type: "string" },
  },
};

export const otlpLogs: RouteDescription = signalRoute({
  summary: "OTLP/HTTP logs: one event per log record; JSON or protobuf, optionally gzipped",
  request: "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest",
  response: "ExportLogsServiceResponse",
  rejected: "rejectedLogRecords",
  item: "log record",
  schema: {
    type: "object",
    properties: { resourceLogs: { type: "array", items: scoped("scopeLogs", "logRecords", LOG_RECORD) } },
  },
  example: {
    resourceLogs: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: "shop" } }] },
        scopeLogs: [
          {
            scope: { name: "shop-logger" },
            logRecords: [
              {
                timeUnixNano: "1700000000000000000",
                severityNumber: 17,
                severityText: "ERROR",
                body: { stringValue: "payment failed" },
                attributes: [{ key: "order.id", value: { stringValue: "A-42" } }],
              },
            ],
          },
        ],
      },
    ],
  },
});
