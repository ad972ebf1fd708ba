/**
 * The Riemann protocol's messages (docs/streams.md): the `Msg` schema of proto/riemann.proto,
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
import type ProtobufJs from "protobufjs";
import { lazily, lazyLibrary } from "../../platform/lazy.js";
import type { Event } from "../event.js";
import { type EventBound, type EventBounds, EventMeter } from "../event-bounds.js";
import { WireCursor } from "../protobuf-wire.js";

// The schema lives in proto/ at the root, three levels up from src/streams/riemann/ and from
// dist/streams/riemann/.
// Loaded on first use (see loadRiemannSchema): a server without the Riemann input never loads protobufjs.
const protobuf = lazyLibrary<typeof ProtobufJs>("protobufjs");
const types = lazily(() => {
  const schema = protobuf().loadSync(fileURLToPath(new URL("../../../proto/riemann.proto", import.meta.url)));
  return {
    Msg: schema.lookupType("vigie.riemann.Msg"),
    Event: schema.lookupType("vigie.riemann.Event"),
    Query: schema.lookupType("vigie.riemann.Query"),
  };
});

/**
 * Loads protobufjs and the `Msg` schema now rather than with the first message: a server with a
 * Riemann input calls it at start-up, so that the tens of milliseconds of loading are not spent in
 * the turn of the event loop that handles a client's first frame (a large one already costs its
 * copy there). Calling it again does nothing.
 */
export function loadRiemannSchema(): void {
  types();
}

/** An int64 as protobufjs decodes it: a `Long` (the `long` package is installed) or a number. */
type Int64 = number | ProtobufJs.Long;

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

/** Whether a decoded value is an `Event` instance (what the `Event` type decodes). */
function isDecodedEvent(value: unknown): value is DecodedEvent {
  return value instanceof types().Event.ctor;
}

/** Whether a decoded value is a `Query` instance. */
function isDecodedQuery(value: unknown): value is { readonly string: string } {
  return value instanceof types().Query.ctor;
}

/** `Msg` field numbers (proto/riemann.proto) and the length-delimited wire type (protobuf encoding). */
const QUERY_FIELD = 5;
const EVENTS_FIELD = 6;
const LENGTH_DELIMITED = 2;

/** The events of a message that were over an event bound, not decoded, by bound. */
export type RefusedEvents = Map<EventBound, number>;

/**
 * Reads a `Msg` body field by field (protobuf wire format, https://protobuf.dev/programming-guides/encoding/),
 * so that a large message can be decoded a slice of events at a time: each event and the query
 * are decoded by protobufjs's generated decoders, other fields (`ok`, `error`, unknown ones) are
 * skipped. A repeated `query` keeps the last one.
 *
 * With event bounds, each event is first measured on the wire ({@link measureEvent}): one over a
 * bound is skipped without being decoded and counted in {@link refused}, so that an event of a
 * million attributes costs a thousand steps, not a million objects.
 */
export class MsgReader {
  readonly #reader: ProtobufJs.Reader;
  readonly #meter: EventMeter | undefined;
  #query: { readonly string: string } | null = null;
  /** Events skipped for exceeding a bound, by bound (empty without bounds). */
  readonly refused: RefusedEvents = new Map();

  constructor(body: Uint8Array, bounds?: EventBounds) {
    this.#reader = protobuf().Reader.create(body);
    this.#meter = bounds === undefined ? undefined : new EventMeter(bounds);
  }

  /** The query read so far (`null` until one is read; its `string` may be absent: read as empty). */
  get query(): { readonly string: string } | null {
    return this.#query;
  }

  /**
   * Reads fields until `limit` more events were appended to `into` or skipped for a bound, or the
   * body ends.
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
        const length = reader.uint32();
        read += 1;
        if (this.#meter !== undefined) {
          const end = reader.pos + length;
          if (end > reader.len) throw new RangeError(`index out of range: ${end} > ${reader.len}`);
          const bound = measureEvent(reader.buf, reader.pos, end, this.#meter);
          if (bound !== undefined) {
            this.refused.set(bound, (this.refused.get(bound) ?? 0) + 1);
            reader.pos = end;
            continue;
          }
        }
        const event = types().Event.decode(reader, length);
        if (!isDecodedEvent(event)) throw new Error("the decoder returned no Event");
        into.push(event);
      } else if (field === QUERY_FIELD && wireType === LENGTH_DELIMITED) {
        const query = types().Query.decode(reader, reader.uint32());
        if (!isDecodedQuery(query)) throw new Error("the decoder returned no Query");
        this.#query = query;
      } else {
        reader.skipType(wireType);
      }
    }
    return reader.pos >= reader.len;
  }
}

/** Field names of the `Event` fields that become event fields, in UTF-8 bytes, by field number. */
const FIELD_NAME_BYTES: readonly number[] = (() => {
  const names: Record<number, string> = {
    1: "time",
    2: "state",
    3: "service",
    4: "host",
    5: "description",
    7: "tags",
    8: "ttl",
    10: "time",
    13: "metric",
    14: "metric",
    15: "metric",
  };
  const bytes: number[] = [];
  for (const [number, name] of Object.entries(names)) bytes[Number(number)] = name.length;
  return bytes;
})();

/** The bytes of the attribute key that names the target stream (not a field of the event). */
const STREAM_KEY = Buffer.from("stream", "utf8");

/**
 * Measures an encoded `Event` (the bytes `[start, end)` of `buffer`) as the event it maps to (see
 * {@link fromRiemann}): standard fields, tags, and attributes as fields (but `stream`), strings by
 * their UTF-8 bytes on the wire. Stops at the first bound exceeded, so its cost is bounded by the
 * bounds, not by the event.
 * @returns the first bound exceeded, or undefined when the event is within them
 * @throws RangeError when the bytes are not a valid `Event` (what decoding would throw)
 */
export function measureEvent(
  buffer: Uint8Array,
  start: number,
  end: number,
  meter: EventMeter,
): EventBound | undefined {
  const wire = new WireCursor(buffer, start, end);
  meter.start();
  let seen = 0; // bit per field name already counted: time, metric (two field numbers each) and tags
  while (wire.position < end) {
    const tag = wire.varint();
    const field = tag >>> 3;
    const type = tag & 7;
    if (field === 9 && type === LENGTH_DELIMITED) {
      if (!measureAttribute(wire, meter)) return meter.exceeded;
      continue;
    }
    const nameBytes = FIELD_NAME_BYTES[field];
    if (nameBytes === undefined) {
      wire.skip(type);
      continue;
    }
    const bit = field === 10 ? 1 << 1 : field >= 13 ? 1 << 13 : 1 << field;
    const first = (seen & bit) === 0;
    seen |= bit;
    if (first && !meter.field(nameBytes)) return meter.exceeded;
    if (field === 7 && type === LENGTH_DELIMITED) {
      if ((first && !meter.value()) || !meter.tag() || !meter.string(lengthOf(wire))) return meter.exceeded;
    } else if (type === LENGTH_DELIMITED) {
      if (!meter.string(lengthOf(wire))) return meter.exceeded;
    } else {
      wire.skip(type);
      if (first && !meter.value()) return meter.exceeded;
    }
  }
  return meter.exceeded;
}

/** Measures one encoded `Attribute` (key 1, value 2): a field named by its key, with a string value. */
function measureAttribute(wire: WireCursor, meter: EventMeter): boolean {
  const length = wire.varint();
  const end = wire.position + length;
  if (end > wire.end) throw new RangeError("attribute beyond the end of the event");
  let keyStart = -1;
  let keyBytes = 0;
  let valueBytes = 0;
  while (wire.position < end) {
    const tag = wire.varint();
    const type = tag & 7;
    if ((tag >>> 3 === 1 || tag >>> 3 === 2) && type === LENGTH_DELIMITED) {
      const start = wire.bytes(end);
      const bytes = wire.position - start;
      if (tag >>> 3 === 1) {
        keyStart = start;
        keyBytes = bytes;
      } else {
        valueBytes = bytes;
      }
    } else {
      wire.skip(type, end);
    }
  }
  if (wire.position !== end) throw new RangeError("truncated attribute");
  if (keyStart >= 0 && isStreamKey(wire.buffer, keyStart, keyBytes)) return true;
  return meter.field(keyBytes) && meter.string(valueBytes);
}

/** Skips a length-delimited field and returns its length. */
function lengthOf(wire: WireCursor): number {
  const start = wire.bytes();
  return wire.position - start;
}

function isStreamKey(buffer: Uint8Array, start: number, length: number): boolean {
  if (length !== STREAM_KEY.length) return false;
  for (let i = 0; i < length; i++) if (buffer[start + i] !== STREAM_KEY[i]) return false;
  return true;
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

/** `Msg.ok = true` on the wire: field 2, varint 1. */
const OK_FIELD = Uint8Array.of((2 << 3) | 0, 1);

/** The framed reply `Msg{ok: true}`, the same bytes for every message that goes through. */
export const OK_FRAME: Buffer = frame(OK_FIELD);

/** The framed reply `Msg{ok: false, error: reason}`. */
export function errorFrame(reason: string): Buffer {
  return frame(types().Msg.encode({ ok: false, error: reason }).finish());
}

/** The framed reply `Msg{ok: true, events}` to a query. */
export function eventsFrame(events: readonly Event[]): Buffer {
  return frame(
    types()
      .Msg.encode({ ok: true, events: events.map(toRiemann) })
      .finish(),
  );
}

/**
 * One event of a query's reply as the `Msg.events` field it becomes (tag, length, `Event`), so
 * that a reply can be measured and assembled an event at a time ({@link eventsFrameOf}).
 */
export function replyEventField(event: Event): Uint8Array {
  const body = types().Event.encode(toRiemann(event)).finish();
  const prefix = protobuf()
    .Writer.create()
    .uint32((EVENTS_FIELD << 3) | LENGTH_DELIMITED)
    .uint32(body.length)
    .finish();
  const field = new Uint8Array(prefix.length + body.length);
  field.set(prefix, 0);
  field.set(body, prefix.length);
  return field;
}

/** Bytes of a framed `Msg{ok: true, events}` besides its events' fields. */
export const EVENTS_FRAME_OVERHEAD = LENGTH_PREFIX + OK_FIELD.length;

/**
 * The framed reply `Msg{ok: true, events}` from its events' fields ({@link replyEventField}), the
 * same message as {@link eventsFrame}.
 * @param size the frame's bytes: {@link EVENTS_FRAME_OVERHEAD} and the fields' lengths
 */
export function eventsFrameOf(fields: readonly Uint8Array[], size: number): Buffer {
  const framed = Buffer.allocUnsafe(size);
  framed.writeUInt32BE(size - LENGTH_PREFIX, 0);
  framed.set(OK_FIELD, LENGTH_PREFIX);
  let offset = EVENTS_FRAME_OVERHEAD;
  for (const field of fields) {
    framed.set(field, offset);
    offset += field.length;
  }
  return framed;
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
  return types().Msg.encode(message).finish();
}

/** Decodes a reply body (no length prefix) into plain data, int64 fields as numbers, for tests. */
export function decodeReply(body: Uint8Array): { ok?: boolean; error?: string; events: EncodableEvent[] } {
  const object = types().Msg.toObject(types().Msg.decode(body), { longs: Number, arrays: true });
  const events: EncodableEvent[] = Array.isArray(object.events) ? object.events : [];
  const reply: { ok?: boolean; error?: string; events: EncodableEvent[] } = { events };
  if (typeof object.ok === "boolean") reply.ok = object.ok;
  if (typeof object.error === "string") reply.error = object.error;
  return reply;
}
