/**
 * OpenTelemetry metrics and logs (OTLP/HTTP, https://opentelemetry.io/docs/specs/otlp/): the
 * events made of a data point or a log record, whichever encoding it came in (OTLP/JSON is read by
 * otlp-metrics.ts and otlp-logs.ts, protobuf by their protobuf decoders, into the shapes below).
 *
 * Every event is flat: the attributes of the resource, of the instrumentation scope and of the
 * point or record are fields of the event (on a clash, the point's win over the scope's, which win
 * over the resource's), and the fields this mapping sets win over any attribute. Attributes named
 * like Riemann's own fields (`service`, `host`, `time`, `metric`, `state`, `description`, `tags`,
 * `ttl`) are never taken as such; `host` comes from the resource attribute `host.name`. The scope's
 * name and version are `otel.scope.name` and `otel.scope.version` (the names OpenTelemetry uses for
 * them outside OTLP), when not empty.
 *
 * A data point: `service` = metric name, `time` (seconds) from `timeUnixNano` when set,
 * `start-time` when set, `type` (`gauge`, `sum`, `histogram`, `exponential-histogram`, `summary`), `unit` and
 * `description` when not empty, `temporality` (`delta`, `cumulative`, `unspecified`) for sums and
 * histograms, `monotonic` for sums; then
 * - gauge, sum: `metric` = the value (int or double; absent when the point has none);
 * - histogram: `count`, `sum`, `min`, `max` (each when set), `bucket-bounds` (the explicit upper
 *   bounds) and `bucket-counts` (one more than the bounds: the last counts values above them);
 * - exponential histogram: `count`, `sum`, `min`, `max`, `scale`, `zero-count`, `zero-threshold`,
 *   `positive-offset`, `positive-bucket-counts`, `negative-offset`, `negative-bucket-counts`;
 * - summary: `count`, `sum`, and `quantile-<q>` = value for each quantile (`quantile-0.99`).
 * Counts are numbers (exact up to 2^53).
 *
 * A log record: `service` = resource attribute `service.name`, `description` = body (a string as
 * it is, any other value as its JSON text), `state` from the severity number (see
 * {@link stateOfSeverity}), `severity` = severity text and `severity-number` when set, `time` from
 * `timeUnixNano` or, when zero, `observedTimeUnixNano`, `trace-id` and `span-id` (hex) and
 * `event-name` when set. An event without a time is given the time of arrival by
 * {@link collectEvents}, as a push is.
 */
import type protobuf from "protobufjs";
import type { Event } from "./event.js";
import type { EventBound, EventBounds } from "./event-bounds.js";
import { exceededBound } from "./event-bounds.js";
import { type Json, keyValues, record } from "./otlp.js";
import { TurnClock } from "./slices.js";

/** Riemann's own fields: never taken from an attribute. */
const RESERVED: ReadonlySet<string> = new Set([
  "service",
  "host",
  "time",
  "metric",
  "state",
  "description",
  "tags",
  "ttl",
]);

/** Where a point or record comes from: its resource's and scope's attributes, the scope's name. */
export interface OtlpOrigin {
  readonly resource: Json;
  readonly scopeName: string;
  readonly scopeVersion: string;
  readonly scopeAttributes: Json;
}

/**
 * The origin of the items of a scope of OTLP/JSON: its resource's attributes (read once for all
 * its scopes) and the scope's.
 */
export function originOfJson(resourceAttributes: Json, scope: unknown): OtlpOrigin {
  const scopeRecord = record(scope);
  return {
    resource: resourceAttributes,
    scopeName: typeof scopeRecord.name === "string" ? scopeRecord.name : "",
    scopeVersion: typeof scopeRecord.version === "string" ? scopeRecord.version : "",
    scopeAttributes: keyValues(scopeRecord.attributes, 1),
  };
}

/** The kinds of metric, as the `type` field names them. */
export type MetricType = "gauge" | "sum" | "histogram" | "exponential-histogram" | "summary";

/** A metric, without its data points. */
export interface MetricHead {
  readonly name: string;
  readonly description: string;
  readonly unit: string;
  readonly type: MetricType;
  /** `AggregationTemporality`: 0 unspecified, 1 delta, 2 cumulative. */
  readonly temporality: number;
  readonly monotonic: boolean;
}

/** Buckets of an exponential histogram, one side of zero. */
export interface ExponentialBuckets {
  readonly offset: number;
  readonly counts: readonly number[];
}

/** What a data point holds beyond its attributes and times, by the kind of its metric. */
export type PointValues =
  | { readonly kind: "number"; readonly value: number | undefined }
  | {
      readonly kind: "histogram";
      readonly count: number;
      readonly sum: number | undefined;
      readonly min: number | undefined;
      readonly max: number | undefined;
      readonly bounds: readonly number[];
      readonly counts: readonly number[];
    }
  | {
      readonly kind: "exponential-histogram";
      readonly count: number;
      readonly sum: number | undefined;
      readonly min: number | undefined;
      readonly max: number | undefined;
      readonly scale: number;
      readonly zeroCount: number;
      readonly zeroThreshold: number;
      readonly positive: ExponentialBuckets;
      readonly negative: ExponentialBuckets;
    }
  | {
      readonly kind: "summary";
      readonly count: number;
      readonly sum: number;
      readonly quantiles: ReadonlyArray<{ readonly quantile: number; readonly value: number }>;
    };

/** A data point: attributes, times in seconds (0: not set), values. */
export interface DataPoint {
  readonly attributes: Json;
  readonly start: number;
  readonly time: number;
  readonly values: PointValues;
}

/** A log record: attributes, times in seconds (0: not set), the body as JSON (undefined: none). */
export interface LogRecord {
  readonly attributes: Json;
  readonly time: number;
  readonly observedTime: number;
  readonly severityNumber: number;
  readonly severityText: string;
  readonly body: unknown;
  readonly traceId: string;
  readonly spanId: string;
  readonly eventName: string;
}

const TEMPORALITIES = ["unspecified", "delta", "cumulative"] as const;

/**
 * The state of a log record from its severity number (OTLP's `SeverityNumber`: 1–4 TRACE, 5–8
 * DEBUG, 9–12 INFO, 13–16 WARN, 17–20 ERROR, 21–24 FATAL): `critical` from ERROR up, `warning`
 * for WARN, `ok` below (and for an unspecified severity, 0).
 */
export function stateOfSeverity(severityNumber: number): "ok" | "warning" | "critical" {
  if (severityNumber >= 17) return "critical";
  if (severityNumber >= 13) return "warning";
  return "ok";
}

function copyAttributes(event: Event, attributes: Json): void {
  for (const key in attributes) {
    if (!RESERVED.has(key)) event[key] = attributes[key];
  }
}

/** The flat fields every event has: attributes, then `host` and the scope's name and version. */
function originEvent(origin: OtlpOrigin, attributes: Json): Event {
  const event: Event = {};
  copyAttributes(event, origin.resource);
  copyAttributes(event, origin.scopeAttributes);
  copyAttributes(event, attributes);
  const host = origin.resource["host.name"];
  if (typeof host === "string") event.host = host;
  if (origin.scopeName !== "") event["otel.scope.name"] = origin.scopeName;
  if (origin.scopeVersion !== "") event["otel.scope.version"] = origin.scopeVersion;
  return event;
}

function setDefined(event: Event, key: string, value: number | undefined): void {
  if (value !== undefined) event[key] = value;
}

/** A histogram's `count`, and its `sum`, `min` and `max` when set. */
function setTotals(event: Event, totals: { count: number; sum?: number; min?: number; max?: number }): void {
  event.count = totals.count;
  setDefined(event, "sum", totals.sum);
  setDefined(event, "min", totals.min);
  setDefined(event, "max", totals.max);
}

function setValues(event: Event, values: PointValues): void {
  switch (values.kind) {
    case "number":
      setDefined(event, "metric", values.value);
      return;
    case "histogram":
      setTotals(event, values);
      event["bucket-bounds"] = values.bounds;
      event["bucket-counts"] = values.counts;
      return;
    case "exponential-histogram":
      setTotals(event, values);
      event.scale = values.scale;
      event["zero-count"] = values.zeroCount;
      event["zero-threshold"] = values.zeroThreshold;
      event["positive-offset"] = values.positive.offset;
      event["positive-bucket-counts"] = values.positive.counts;
      event["negative-offset"] = values.negative.offset;
      event["negative-bucket-counts"] = values.negative.counts;
      return;
    case "summary":
      event.count = values.count;
      event.sum = values.sum;
      for (const { quantile, value } of values.quantiles) event[`quantile-${quantile}`] = value;
      return;
  }
}

/** The event of a data point (see the module's documentation). */
export function dataPointEvent(origin: OtlpOrigin, metric: MetricHead, point: DataPoint): Event {
  const event = originEvent(origin, point.attributes);
  event.service = metric.name;
  if (point.time !== 0) event.time = point.time;
  if (point.start !== 0) event["start-time"] = point.start;
  event.type = metric.type;
  if (metric.unit !== "") event.unit = metric.unit;
  if (metric.description !== "") event.description = metric.description;
  if (metric.type !== "gauge" && metric.type !== "summary") {
    event.temporality = TEMPORALITIES[metric.temporality] ?? "unspecified";
  }
  if (metric.type === "sum") event.monotonic = metric.monotonic;
  setValues(event, point.values);
  return event;
}

/** The event of a log record (see the module's documentation). */
export function logRecordEvent(origin: OtlpOrigin, record: LogRecord): Event {
  const event = originEvent(origin, record.attributes);
  const service = origin.resource["service.name"];
  if (service !== undefined) event.service = service;
  const time = record.time !== 0 ? record.time : record.observedTime;
  if (time !== 0) event.time = time;
  if (record.body !== undefined && record.body !== null) {
    event.description = typeof record.body === "string" ? record.body : JSON.stringify(record.body);
  }
  event.state = stateOfSeverity(record.severityNumber);
  if (record.severityText !== "") event.severity = record.severityText;
  if (record.severityNumber !== 0) event["severity-number"] = record.severityNumber;
  if (record.traceId !== "") event["trace-id"] = record.traceId;
  if (record.spanId !== "") event["span-id"] = record.spanId;
  if (record.eventName !== "") event["event-name"] = record.eventName;
  return event;
}

/** The events of a request, and how many points or records were over an event bound, by bound. */
export interface OtlpDecoded {
  readonly events: Event[];
  readonly refused: Map<EventBound, number>;
}

/** Items decoded between two looks at the clock, when decoding in slices. */
const ITEMS_PER_CHECK = 64;

/**
 * Runs a decoder to its end: each item is an event (kept when within `bounds`) or the bound an
 * item exceeded (counted). A sliced run lets the event loop turn between slices.
 * @param now seconds since the epoch: the time of an event that has none
 * @throws what the decoder throws
 */
export async function collectEvents(
  items: Iterable<Event | EventBound>,
  bounds: EventBounds,
  sliced: boolean,
  now: number,
): Promise<OtlpDecoded> {
  const events: Event[] = [];
  const refused = new Map<EventBound, number>();
  const clock = sliced ? new TurnClock() : undefined;
  let count = 0;
  for (const item of items) {
    if (typeof item === "string") refused.set(item, (refused.get(item) ?? 0) + 1);
    else {
      const bound = exceededBound(item, bounds);
      if (bound === undefined) {
        item.time ??= now;
        events.push(item);
      } else refused.set(bound, (refused.get(bound) ?? 0) + 1);
    }
    if (clock !== undefined && ++count % ITEMS_PER_CHECK === 0 && clock.due()) await clock.turn();
  }
  return { events, refused };
}

/** An export response type, and the name of its partial success's count of rejected items. */
export interface OtlpResponse {
  /** The response's type, its schema loaded on first use (protobufjs: not at start-up). */
  readonly type: () => protobuf.Type;
  /** `rejectedDataPoints`, `rejectedLogRecords`. */
  readonly rejectedField: string;
}

/**
 * An export response, protobuf-encoded: empty when every item was taken, else with a
 * `partial_success` naming how many were rejected and why (OTLP/HTTP, "Partial Success").
 */
export function protobufResponse(response: OtlpResponse, rejected: number, message: string): Buffer {
  const partialSuccess = rejected === 0 ? undefined : { [response.rejectedField]: rejected, errorMessage: message };
  return Buffer.from(response.type().encode({ partialSuccess }).finish());
}

/** The same response as OTLP/JSON (64-bit integers as decimal strings, as OTLP/JSON spells them). */
export function jsonResponse(response: OtlpResponse, rejected: number, message: string): string {
  if (rejected === 0) return "{}";
  return JSON.stringify({ partialSuccess: { [response.rejectedField]: String(rejected), errorMessage: message } });
}
