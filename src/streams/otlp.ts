/**
 * OpenTelemetry traces: OTLP/HTTP `ExportTraceServiceRequest` bodies, protobuf or
 * JSON (https://opentelemetry.io/docs/specs/otlp/), turned into one event per span. This module
 * maps parsed OTLP/JSON; protobuf bodies are decoded by otlp-protobuf.ts, large JSON ones by
 * otlp-json.ts, into the same events.
 *
 * Event fields: `service` (resource attribute `service.name`), `name`, `trace-id`, `span-id`,
 * `parent-span-id` (lower-case hex, absent for a root span), `kind`, `state` (status: `unset`,
 * `ok`, `error`), `description` (status message, when there is one), `time` (end, seconds),
 * `start-time` (seconds), `metric` (duration, seconds), `attributes`, `resource`, `scope`
 * (`name`, `version`), and `events` and `links` when the span has some.
 */
import { isPlainObject } from "../platform/validation.js";
import { type Event, MAX_EVENT_NESTING } from "./event.js";

/** A body that is not a valid OTLP export request (traces, metrics or logs). */
export class OtlpError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OtlpError";
  }
}

/**
 * The empty `ExportTraceServiceResponse` (proto/otlp-trace.proto), protobuf-encoded: zero bytes, as
 * every field is default (protobuf encoding writes no default field), so no schema is loaded.
 */
export const EMPTY_PROTOBUF_RESPONSE: Buffer = Buffer.alloc(0);

/** Span kinds by their enum number. */
export const KINDS = ["unspecified", "internal", "server", "client", "producer", "consumer"] as const;
const KIND_NAMES: Readonly<Record<string, number>> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
/** Span status codes by their enum number. */
export const STATES = ["unset", "ok", "error"] as const;
const STATE_NAMES: Readonly<Record<string, number>> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };

/** A parsed OTLP/JSON object. */
export type Json = Record<string, unknown>;

/** A value that should be an object: itself, or an empty one when it is not. */
export function record(value: unknown): Json {
  return isPlainObject(value) ? value : {};
}

/** A value that should be an array: itself, or an empty one when it is not. */
export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * An id as lower-case hex: protobuf gives bytes; OTLP/JSON gives hex strings (OTLP spec, "JSON
 * Protobuf Encoding": trace and span ids are hex, not base64).
 */
export function hexId(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex");
  if (typeof value === "string") {
    if (!/^[0-9a-fA-F]*$/.test(value)) throw new OtlpError(`invalid id ${JSON.stringify(value)}: must be hex`);
    return value.toLowerCase();
  }
  return "";
}

/** Nanoseconds (a decimal string, a number or a protobufjs Long) to seconds. */
export function seconds(value: unknown): number {
  if (value === undefined || value === null) return 0;
  const text = String(value);
  if (!/^\d+$/.test(text)) throw new OtlpError(`invalid time ${JSON.stringify(text)}: must be nanoseconds`);
  // Whole seconds and the remainder apart keep sub-microsecond precision beyond 2^53 ns.
  const nanoseconds = BigInt(text);
  return Number(nanoseconds / 1_000_000_000n) + Number(nanoseconds % 1_000_000_000n) / 1e9;
}

/**
 * An int64 attribute value as a number when it is exactly representable (|v| ≤ 2^53), else as its
 * decimal string (a number beyond would silently lose digits).
 */
function int64(value: unknown): number | string {
  const text = String(value);
  if (!/^-?\d+$/.test(text)) throw new OtlpError(`invalid integer ${JSON.stringify(text)}`);
  const big = BigInt(text);
  return big <= 9007199254740992n && big >= -9007199254740992n ? Number(big) : text;
}

/**
 * An `AnyValue` as JSON: strings, booleans, numbers, arrays and objects; bytes as base64.
 * @param depth how deep this value sits in the event (the span event is 1, `attributes` 2)
 * @throws OtlpError beyond {@link MAX_EVENT_NESTING} levels, before recursing further
 */
export function anyValue(value: unknown, depth: number): unknown {
  const any = record(value);
  if (any.stringValue !== undefined) return String(any.stringValue);
  if (any.boolValue !== undefined) return Boolean(any.boolValue);
  if (any.intValue !== undefined) return int64(any.intValue);
  if (any.doubleValue !== undefined) return Number(any.doubleValue);
  if (any.arrayValue !== undefined || any.kvlistValue !== undefined) {
    if (depth > MAX_EVENT_NESTING) {
      throw new OtlpError(`attribute values must not nest more than ${MAX_EVENT_NESTING} levels deep in an event`);
    }
    if (any.arrayValue !== undefined)
      return list(record(any.arrayValue).values).map((item) => anyValue(item, depth + 1));
    return keyValues(record(any.kvlistValue).values, depth);
  }
  if (any.bytesValue !== undefined) {
    const bytes = any.bytesValue;
    return bytes instanceof Uint8Array
      ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")
      : String(bytes);
  }
  return null;
}

/**
 * A list of `KeyValue` as a JSON object key → value.
 * @param depth how deep the object sits in the event (see {@link anyValue})
 */
export function keyValues(values: unknown, depth: number): Json {
  const object: Json = {};
  for (const entry of list(values)) {
    const { key, value } = record(entry);
    if (typeof key === "string") object[key] = anyValue(value, depth + 1);
  }
  return object;
}

/** An enum given as its number or its name (OTLP/JSON accepts both); unknown names read as 0. */
export function enumIndex(value: unknown, names: Readonly<Record<string, number>>): number {
  if (typeof value === "number") return value;
  if (typeof value === "string") return names[value] ?? 0;
  return 0;
}

function spanEvent(span: Json, resource: Json, scope: Json): Event {
  const start = seconds(span.startTimeUnixNano);
  const end = seconds(span.endTimeUnixNano);
  const status = record(span.status);
  const event: Event = {
    service: resource["service.name"],
    name: typeof span.name === "string" ? span.name : "",
    "trace-id": hexId(span.traceId),
    "span-id": hexId(span.spanId),
  };
  const parent = hexId(span.parentSpanId);
  if (parent !== "") event["parent-span-id"] = parent;
  event.kind = KINDS[enumIndex(span.kind, KIND_NAMES)] ?? "unspecified";
  event.state = STATES[enumIndex(status.code, STATE_NAMES)] ?? "unset";
  if (typeof status.message === "string" && status.message !== "") event.description = status.message;
  event.time = end;
  event["start-time"] = start;
  event.metric = end - start;
  event.attributes = keyValues(span.attributes, 2);
  event.resource = resource;
  event.scope = {
    name: typeof scope.name === "string" ? scope.name : "",
    version: typeof scope.version === "string" ? scope.version : "",
  };
  const events = list(span.events);
  if (events.length > 0) {
    event.events = events.map((item) => {
      const spanEventItem = record(item);
      return {
        name: typeof spanEventItem.name === "string" ? spanEventItem.name : "",
        time: seconds(spanEventItem.timeUnixNano),
        attributes: keyValues(spanEventItem.attributes, 4),
      };
    });
  }
  const links = list(span.links);
  if (links.length > 0) {
    event.links = links.map((item) => {
      const link = record(item);
      const mapped: Json = { "trace-id": hexId(link.traceId), "span-id": hexId(link.spanId) };
      if (typeof link.traceState === "string" && link.traceState !== "") mapped["trace-state"] = link.traceState;
      mapped.attributes = keyValues(link.attributes, 4);
      return mapped;
    });
  }
  return event;
}

/** The attributes of a `Resource` (parsed OTLP/JSON) as an event's `resource`: key → value. */
export function resourceAttributesOf(resource: unknown): Json {
  return keyValues(record(resource).attributes, 2);
}

/**
 * The event of one span (parsed OTLP/JSON, or protobufjs' object of a protobuf one): see the
 * module's documentation. What is not an object reads as an empty one.
 * @param resourceAttributes its resource's, from {@link resourceAttributesOf} (shared by its spans)
 * @throws OtlpError for an invalid id or time, or attribute values nested too deep
 */
export function spanEventOf(span: unknown, resourceAttributes: Json, scope: unknown): Event {
  return spanEvent(record(span), resourceAttributes, record(scope));
}

/**
 * Maps a decoded request (parsed OTLP/JSON, or protobufjs' object of a protobuf one, longs as
 * strings) to one event per span.
 * @throws OtlpError as {@link spanEventOf}
 */
export function eventsOfRequest(request: Json): Event[] {
  const events: Event[] = [];
  for (const resourceSpans of list(request.resourceSpans)) {
    const { resource, scopeSpans } = record(resourceSpans);
    const resourceAttributes = resourceAttributesOf(resource);
    for (const scopeSpansItem of list(scopeSpans)) {
      const { scope, spans } = record(scopeSpansItem);
      for (const span of list(spans)) events.push(spanEventOf(span, resourceAttributes, scope));
    }
  }
  return events;
}

/**
 * Parses an OTLP/JSON request body (traces, metrics or logs) that must be a JSON object.
 * @throws OtlpError when the text is not JSON or not an object
 */
export function parseJsonRequest(text: string): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new OtlpError("request body is not valid JSON");
  }
  if (!isPlainObject(parsed)) throw new OtlpError("request body must be a JSON object");
  return parsed;
}

/**
 * Decodes an OTLP/JSON `ExportTraceServiceRequest` (lowerCamelCase fields, hex ids, 64-bit
 * integers as strings or numbers, enums as integers or names).
 * @throws OtlpError when the text is not JSON or not a request object
 */
export function decodeJsonTraces(text: string): Event[] {
  return eventsOfRequest(parseJsonRequest(text));
}
