/**
 * The Riemann protocol's messages (streams-io.md §5): the `Msg` schema of proto/riemann.proto,
 * decoding received frames, encoding replies, and the mapping between Riemann events and Vigie
 * events, both ways.
 *
 * Received events (Riemann → Vigie): `host`, `service`, `state`, `description`, `tags`, `ttl`
 * (seconds) as fields when set; `metric` from `metric_sint64`, else `metric_d`, else `metric_f`;
 * `time` in seconds from `time_micros` / 10⁶, else `time`, else the time of receipt; every
 * attribute a top-level string field, except `stream`, which names the target stream (read with
 * {@link targetStream}). A standard field that is set wins over an attribute of the same name, so
 * `metric` and `time` stay numbers.
 *
 * Events in replies (Vigie → Riemann): the standard fields in their protobuf fields when their
 * value has the protobuf type (strings, a number, strings for `tags`), `time` as both `time`
 * (whole seconds) and `time_micros`, `metric` as `metric_sint64` when it is a safe integer, else
 * `metric_d`, and always `metric_f` too (older clients read only that one); every other top-level
 * string field as an attribute. Fields of other types have no place in the protocol and are left out.
 */
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import type { Event } from "../event.js";

// The schema lives in proto/ at the root, three levels up from src/streams/riemann/ and from
// dist/streams/riemann/.
const schema = protobuf.loadSync(fileURLToPath(new URL("../../../proto/riemann.proto", import.meta.url)));
const MsgType = schema.lookupType("vigie.riemann.Msg");
const EventType = schema.lookupType("vigie.riemann.Event");
const QueryType = schema.lookupType("vigie.riemann.Query");

/** An int64 as protobufjs decodes it: a `Long` (the `long` package is installed) or a number. */
type Int64 = number | protobuf.Long;

/**
 * A decoded `Event` (proto2). protobufjs keeps the defaults of absent fields on the prototype, so
 * presence is `Object.hasOwn(event, field)`; repeated fields are always own arrays.
 */
export interface DecodedEvent {
  readonly time: Int64;
  readonly state: string;
  readonly service: string;
  readonly host: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** Seconds. */
  readonly ttl: number;
  readonly attributes: readonly { readonly key: string; readonly value: string }[];
  readonly timeMicros: Int64;
  readonly metricSint64: Int64;
  readonly metricD: number;
  readonly metricF: number;
}

/** A decoded `Msg`: `query` is `null` when the client sent none. */
export interface DecodedMsg {
  readonly query: { readonly string: string } | null;
  readonly events: readonly DecodedEvent[];
}

/** Whether a decoded value is an `Event` instance (what `EventType.decode` builds). */
function isDecodedEvent(value: unknown): value is DecodedEvent {
  return value instanceof EventType.ctor;
}

/** Whether a decoded value is a `Query` instance. */
function isDecodedQuery(value: unknown): value is { readonly string: string } {
  return value instanceof QueryType.ctor;
}

/** `Msg` field numbers (proto/riemann.proto) and the length-delimited wire type (protobuf encoding). */
const QUERY_FIELD = 5;
const EVENTS_FIELD = 6;
const LENGTH_DELIMITED = 2;

/**
 * Reads a `Msg` body field by field (protobuf wire format, https://protobuf.dev/programming-guides/encoding/),
 * so that a large message can be decoded a slice of events at a time: each event and the query
 * are decoded by protobufjs's generated decoders, other fields (`ok`, `error`, unknown ones) are
 * skipped. A repeated `query` keeps the last one.
 */
export class MsgReader {
  readonly #reader: protobuf.Reader;
  #query: { readonly string: string } | null = null;

  constructor(body: Uint8Array) {
    this.#reader = protobuf.Reader.create(body);
  }

  /** The query read so far (`null` until one is read; its `string` may be absent: read as empty). */
  get query(): { readonly string: string } | null {
    return this.#query;
  }

  /**
   * Reads fields until `limit` more events were appended to `into`, or the body ends.
   * @returns true once the whole body is read
   * @throws Error (protobufjs' RangeError or Error) when the bytes are not a valid `Msg`: a
   *   truncated field, an invalid wire type or field number, invalid nesting
   */
  read(limit: number, into: DecodedEvent[]): boolean {
    const reader = this.#reader;
    let read = 0;
    while (reader.pos < reader.len && read < limit) {
      const tag = reader.uint32();
      const field = tag >>> 3;
      const wireType = tag & 7;
      if (field === 0) throw new Error(`invalid field number 0 at offset ${reader.pos}`);
      if (field === EVENTS_FIELD && wireType === LENGTH_DELIMITED) {
        const event = EventType.decode(reader, reader.uint32());
        if (!isDecodedEvent(event)) throw new Error("the decoder returned no Event");
        into.push(event);
        read += 1;
      } else if (field === QUERY_FIELD && wireType === LENGTH_DELIMITED) {
        const query = QueryType.decode(reader, reader.uint32());
        if (!isDecodedQuery(query)) throw new Error("the decoder returned no Query");
        this.#query = query;
      } else {
        reader.skipType(wireType);
      }
    }
    return reader.pos >= reader.len;
  }
}

/**
 * Decodes the whole body of a frame (the bytes after the length prefix) at once, for tests and
 * benchmarks: the server reads with a {@link MsgReader}, a slice of events at a time.
 * @throws Error when the bytes are not a valid `Msg` (see {@link MsgReader.read})
 */
export function decodeMsg(body: Uint8Array): DecodedMsg {
  const reader = new MsgReader(body);
  const events: DecodedEvent[] = [];
  reader.read(Number.POSITIVE_INFINITY, events);
  return { query: reader.query, events };
}

/** An int64 as a number: exact up to 2^53, the nearest double beyond (as `Long.toNumber` does). */
function toNumber(value: Int64): number {
  if (typeof value === "number") return value;
  const high = value.unsigned ? value.high >>> 0 : value.high;
  return high * 4294967296 + (value.low >>> 0);
}

/** The attribute that names an event's target stream instead of becoming a field. */
export const STREAM_ATTRIBUTE = "stream";

/** The stream an event's `stream` attribute names (the last one when repeated), if any. */
export function targetStream(source: DecodedEvent): string | undefined {
  let stream: string | undefined;
  for (const attribute of source.attributes) if (attribute.key === STREAM_ATTRIBUTE) stream = attribute.value;
  return stream;
}

/**
 * Maps a received event to a Vigie event (see the module's documentation).
 * @param now the time of receipt in seconds, for events that carry no time
 */
export function fromRiemann(source: DecodedEvent, now: number): Event {
  const event: Event = {};
  if (Object.hasOwn(source, "host")) event.host = source.host;
  if (Object.hasOwn(source, "service")) event.service = source.service;
  if (Object.hasOwn(source, "state")) event.state = source.state;
  if (Object.hasOwn(source, "description")) event.description = source.description;
  if (Object.hasOwn(source, "metricSint64")) event.metric = toNumber(source.metricSint64);
  else if (Object.hasOwn(source, "metricD")) event.metric = source.metricD;
  else if (Object.hasOwn(source, "metricF")) event.metric = source.metricF;
  if (source.tags.length > 0) event.tags = source.tags;
  if (Object.hasOwn(source, "ttl")) event.ttl = source.ttl;
  if (Object.hasOwn(source, "timeMicros")) event.time = toNumber(source.timeMicros) / 1e6;
  else if (Object.hasOwn(source, "time")) event.time = toNumber(source.time);
  else event.time = now;
  for (const attribute of source.attributes) {
    const key = attribute.key;
    // An empty key names nothing; `__proto__` cannot be an own field of a plain object.
    if (key === STREAM_ATTRIBUTE || key === "" || key === "__proto__" || Object.hasOwn(event, key)) continue;
    event[key] = attribute.value;
  }
  return event;
}

/** The fields that have a protobuf field of their own, so never become attributes. */
const STANDARD_FIELDS = new Set(["host", "service", "state", "description", "tags", "ttl", "time", "metric"]);

/** An `Event` to encode, as protobufjs' encoder reads it (camel-case names, absent = not set). */
export interface EncodableEvent {
  host?: string;
  service?: string;
  state?: string;
  description?: string;
  tags?: string[];
  ttl?: number;
  /** Whole seconds. */
  time?: number;
  timeMicros?: number;
  metricSint64?: number;
  metricD?: number;
  metricF?: number;
  attributes?: { key: string; value?: string }[];
}

/** Maps a Vigie event to the Riemann event of a reply (see the module's documentation). */
export function toRiemann(event: Event): EncodableEvent {
  const target: EncodableEvent = {};
  const { host, service, state, description, tags, ttl, time, metric } = event;
  if (typeof host === "string") target.host = host;
  if (typeof service === "string") target.service = service;
  if (typeof state === "string") target.state = state;
  if (typeof description === "string") target.description = description;
  if (Array.isArray(tags)) {
    const strings = tags.filter((tag): tag is string => typeof tag === "string");
    if (strings.length > 0) target.tags = strings;
  }
  if (typeof ttl === "number") target.ttl = ttl;
  if (typeof time === "number" && Number.isFinite(time)) {
    target.time = Math.floor(time);
    target.timeMicros = Math.round(time * 1e6);
  }
  if (typeof metric === "number") {
    if (Number.isSafeInteger(metric)) target.metricSint64 = metric;
    else target.metricD = metric;
    target.metricF = metric;
  }
  const attributes: { key: string; value: string }[] = [];
  for (const key of Object.keys(event)) {
    const value = event[key];
    if (typeof value === "string" && !STANDARD_FIELDS.has(key)) attributes.push({ key, value });
  }
  if (attributes.length > 0) target.attributes = attributes;
  return target;
}

/** Bytes of the 4-byte big-endian length prefix of every frame. */
export const LENGTH_PREFIX = 4;

/** A message body with its length prefix. */
function frame(body: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(LENGTH_PREFIX + body.length);
  framed.writeUInt32BE(body.length, 0);
  framed.set(body, LENGTH_PREFIX);
  return framed;
}

/** The framed reply `Msg{ok: true}`, the same bytes for every message that goes through. */
export const OK_FRAME: Buffer = frame(MsgType.encode({ ok: true }).finish());

/** The framed reply `Msg{ok: false, error: reason}`. */
export function errorFrame(reason: string): Buffer {
  return frame(MsgType.encode({ ok: false, error: reason }).finish());
}

/** The framed reply `Msg{ok: true, events}` to a query. */
export function eventsFrame(events: readonly Event[]): Buffer {
  return frame(MsgType.encode({ ok: true, events: events.map(toRiemann) }).finish());
}

/**
 * Encodes a `Msg` body (no length prefix): what clients send, for tests and benchmarks.
 * @param message `events` as {@link EncodableEvent}s, `query` as `{string}`
 */
export function encodeMsg(message: {
  ok?: boolean;
  error?: string;
  query?: { string?: string };
  events?: readonly EncodableEvent[];
}): Uint8Array {
  return MsgType.encode(message).finish();
}

/** Decodes a reply body (no length prefix) into plain data, int64 fields as numbers, for tests. */
export function decodeReply(body: Uint8Array): { ok?: boolean; error?: string; events: EncodableEvent[] } {
  const object = MsgType.toObject(MsgType.decode(body), { longs: Number, arrays: true });
  const events: EncodableEvent[] = Array.isArray(object.events) ? object.events : [];
  const reply: { ok?: boolean; error?: string; events: EncodableEvent[] } = { events };
  if (typeof object.ok === "boolean") reply.ok = object.ok;
  if (typeof object.error === "string") reply.error = object.error;
  return reply;
}
