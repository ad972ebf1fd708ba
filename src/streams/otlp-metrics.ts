/**
 * OpenTelemetry metrics over OTLP/HTTP: `ExportMetricsServiceRequest` bodies as OTLP/JSON
 * (lowerCamelCase fields, 64-bit integers as strings or numbers, doubles as numbers or the strings
 * `NaN`, `Infinity`, `-Infinity`, enums as integers or names) or protobuf (decoded by hand, data
 * point by data point, each measured as it is read: otlp-metrics-protobuf.ts), turned into one
 * event per data point as otlp-signals.ts describes.
 */
import { fileURLToPath } from "node:url";
import type ProtobufJs from "protobufjs";
import { lazily, lazyLibrary } from "../platform/lazy.js";
import { isPlainObject } from "../platform/validation.js";
import type { Event } from "./event.js";
import { type EventBound, type EventBounds, exceededBound } from "./event-bounds.js";
import { enumIndex, type Json, keyValues, list, OtlpError, record, seconds } from "./otlp.js";
import { INDEX, overBoundOf, type Patterns } from "./otlp-json-parts.js";
import {
  type DataPoint,
  dataPointEvent,
  type ExponentialBuckets,
  type MetricHead,
  type MetricType,
  type OtlpResponse,
  originOfJson,
  type PointValues,
} from "./otlp-signals.js";

// The schema lives in proto/ at the root, two levels up from both src/streams/ and dist/streams/.

/** `ExportMetricsServiceResponse`, to answer in protobuf. */
export const METRICS_RESPONSE: OtlpResponse = {
  type: lazily(() =>
    lazyLibrary<typeof ProtobufJs>("protobufjs")()
      .loadSync(fileURLToPath(new URL("../../proto/otlp-metrics.proto", import.meta.url)))
      .lookupType("vigie.otlp.metrics.ExportMetricsServiceResponse"),
  ),
  rejectedField: "rejectedDataPoints",
};

/** The JSON key of each metric kind's data, in the order protobuf's oneof numbers them. */
const DATA_KEYS: ReadonlyArray<readonly [string, MetricType]> = [
  ["gauge", "gauge"],
  ["sum", "sum"],
  ["histogram", "histogram"],
  ["exponentialHistogram", "exponential-histogram"],
  ["summary", "summary"],
];

const TEMPORALITY_NAMES: Readonly<Record<string, number>> = {
  AGGREGATION_TEMPORALITY_UNSPECIFIED: 0,
  AGGREGATION_TEMPORALITY_DELTA: 1,
  AGGREGATION_TEMPORALITY_CUMULATIVE: 2,
};

const SPECIAL_DOUBLES: Readonly<Record<string, number>> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  "-Infinity": Number.NEGATIVE_INFINITY,
};

/**
 * A double of OTLP/JSON: a number, a numeric string or `NaN`/`Infinity`/`-Infinity`.
 * @throws OtlpError naming `what` for anything else
 */
function double(value: unknown, what: string): number {
  if (typeof value === "number") return value;
  if (typeof value === "string") {
    const special = SPECIAL_DOUBLES[value];
    if (special !== undefined) return special;
    const number = Number(value);
    if (value.trim() !== "" && Number.isFinite(number)) return number;
  }
  throw new OtlpError(`invalid ${what} ${JSON.stringify(value)}: must be a number`);
}

function optionalDouble(value: unknown, what: string): number | undefined {
  return value === undefined || value === null ? undefined : double(value, what);
}

/**
 * An integer of OTLP/JSON (a number or a decimal string) as a number, exact up to 2^53.
 * @throws OtlpError naming `what` for anything else
 */
function integer(value: unknown, what: string): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (typeof value === "string" && /^-?\d{1,30}$/.test(value)) return Number(value);
  throw new OtlpError(`invalid ${what} ${JSON.stringify(value)}: must be an integer`);
}

function counts(value: unknown, what: string): number[] {
  return list(value).map((item) => integer(item, what));
}

function buckets(value: unknown): ExponentialBuckets {
  const side = record(value);
  return { offset: integer(side.offset, "bucket offset"), counts: counts(side.bucketCounts, "bucket count") };
}

/** The values of a data point of OTLP/JSON, by its metric's kind. */
function pointValues(point: Json, type: MetricType): PointValues {
  switch (type) {
    case "gauge":
    case "sum": {
      let value: number | undefined;
      if (point.asDouble !== undefined) value = double(point.asDouble, "asDouble");
      else if (point.asInt !== undefined) value = integer(point.asInt, "asInt");
      return { kind: "number", value };
    }
    case "histogram":
      return {
        kind: "histogram",
        count: integer(point.count, "count"),
        sum: optionalDouble(point.sum, "sum"),
        min: optionalDouble(point.min, "min"),
        max: optionalDouble(point.max, "max"),
        bounds: list(point.explicitBounds).map((item) => double(item, "explicit bound")),
        counts: counts(point.bucketCounts, "bucket count"),
      };
    case "exponential-histogram":
      return {
        kind: "exponential-histogram",
        count: integer(point.count, "count"),
        sum: optionalDouble(point.sum, "sum"),
        min: optionalDouble(point.min, "min"),
        max: optionalDouble(point.max, "max"),
        scale: integer(point.scale, "scale"),
        zeroCount: integer(point.zeroCount, "zeroCount"),
        zeroThreshold: optionalDouble(point.zeroThreshold, "zeroThreshold") ?? 0,
        positive: buckets(point.positive),
        negative: buckets(point.negative),
      };
    case "summary":
      return {
        kind: "summary",
        count: integer(point.count, "count"),
        sum: optionalDouble(point.sum, "sum") ?? 0,
        quantiles: list(point.quantileValues).map((item) => {
          const quantile = record(item);
          return {
            quantile: optionalDouble(quantile.quantile, "quantile") ?? 0,
            value: optionalDouble(quantile.value, "quantile value") ?? 0,
          };
        }),
      };
  }
}

/**
 * A metric of OTLP/JSON: its head, the list of its data points (none when it has no data), and the
 * bound a part of its head is over in a large body's skeleton (otlp-json-parts.ts).
 */
function metricOf(metric: Json): { head: MetricHead; points: unknown[]; over: EventBound | undefined } | undefined {
  // As protobuf's oneof, the last kind present wins.
  let found: readonly [Json, MetricType] | undefined;
  for (const [key, type] of DATA_KEYS) if (isPlainObject(metric[key])) found = [record(metric[key]), type];
  if (found === undefined) return undefined;
  const [data, type] = found;
  const head: MetricHead = {
    name: typeof metric.name === "string" ? metric.name : "",
    description: typeof metric.description === "string" ? metric.description : "",
    unit: typeof metric.unit === "string" ? metric.unit : "",
    type,
    temporality: enumIndex(data.aggregationTemporality, TEMPORALITY_NAMES),
    monotonic: data.isMonotonic === true,
  };
  const over = overBoundOf(metric.name, metric.description, metric.unit, data.aggregationTemporality, data.isMonotonic);
  return { head, points: list(data.dataPoints), over };
}

/**
 * The events of a parsed OTLP/JSON request (or of a large body's skeleton), one per data point, in
 * order; a point over an event bound gives the bound instead.
 * @throws OtlpError for an invalid number or time, or attribute values nested too deep
 */
export function* metricEventsOfJson(request: Json, bounds: EventBounds): Generator<Event | EventBound> {
  for (const resourceMetrics of list(request.resourceMetrics)) {
    const { resource, scopeMetrics } = record(resourceMetrics);
    const resourceAttributes = keyValues(record(resource).attributes, 1);
    for (const scopeMetricsItem of list(scopeMetrics)) {
      const { scope, metrics } = record(scopeMetricsItem);
      const origin = originOfJson(resourceAttributes, scope);
      const over = overBoundOf(resource, scope);
      for (const metricItem of list(metrics)) {
        const metric = metricOf(record(metricItem));
        if (metric === undefined) continue;
        for (const pointItem of metric.points) {
          const pointOver = over ?? metric.over ?? overBoundOf(pointItem);
          if (pointOver !== undefined) {
            yield pointOver;
            continue;
          }
          const point = record(pointItem);
          const dataPoint: DataPoint = {
            attributes: keyValues(point.attributes, 1),
            start: seconds(point.startTimeUnixNano),
            time: seconds(point.timeUnixNano),
            values: pointValues(point, metric.head.type),
          };
          const event = dataPointEvent(origin, metric.head, dataPoint);
          yield exceededBound(event, bounds) ?? event;
        }
      }
    }
  }
}

const METRIC = ["resourceMetrics", INDEX, "scopeMetrics", INDEX, "metrics", INDEX] as const;
const KIND_KEYS = DATA_KEYS.map(([key]) => key);

/** What the mapping reads of a request, for a large body's skeleton (otlp-json-parts.ts). */
export const METRICS_PATTERNS: Patterns = [
  ["resourceMetrics", INDEX, "resource"],
  ["resourceMetrics", INDEX, "scopeMetrics", INDEX, "scope"],
  [...METRIC, ["name", "description", "unit"]],
  [...METRIC, KIND_KEYS, ["aggregationTemporality", "isMonotonic"]],
  [...METRIC, KIND_KEYS, "dataPoints", INDEX],
];
