/**
 * What the hand-written OTLP protobuf decoders share (https://opentelemetry.io/docs/specs/otlp/):
 * finding the messages of a repeated field, and reading resources, scopes and attribute values
 * (`KeyValue`, `AnyValue`) into JSON while an {@link EventMeter} counts them, so that a decoder can
 * drop an event at its first bound exceeded rather than decode a million attributes.
 *
 * Messages follow proto/otlp-common.proto. Singular fields keep their last occurrence, repeated
 * ones every occurrence in order, unknown fields are skipped.
 */
import { MAX_EVENT_NESTING } from "./event.js";
import type { EventBound, EventMeter } from "./event-bounds.js";
import { type Json, OtlpError } from "./otlp.js";
import type { OtlpOrigin } from "./otlp-signals.js";
import { FIXED64, LENGTH_DELIMITED, VARINT, WireCursor, WireError } from "./protobuf-wire.js";

/** An object of the event being decoded. */
export type { Json };

/** What a value decoder returns once the event is over a bound: stop reading it. */
export const OVER = Symbol("over a bound");

/** A region `[start, end)` of the body. */
export interface Region {
  readonly start: number;
  readonly end: number;
}

/** A resource's attributes, measured once for all its events. */
export interface Resource {
  readonly attributes: Json;
  readonly fields: number;
  readonly size: number;
  readonly exceeded: EventBound | undefined;
}

/** An `InstrumentationScope`: name, version and, when read, its attributes (measured as a resource). */
export interface Scope {
  readonly name: string;
  readonly version: string;
  readonly attributes: Resource;
}

/** UTF-8 text of `[start, end)`. */
export const utf8 = (buffer: Uint8Array, start: number, end: number): string =>
  Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength).toString("utf8", start, end);

/** Lower-case hex of `[start, end)`. */
export const hex = (buffer: Uint8Array, start: number, end: number): string =>
  Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength).toString("hex", start, end);

/** Nanoseconds to seconds, keeping sub-microsecond precision beyond 2^53 ns. */
export function seconds(nanoseconds: bigint): number {
  return Number(nanoseconds / 1_000_000_000n) + Number(nanoseconds % 1_000_000_000n) / 1e9;
}

/** An int64 as a number when exactly representable (|v| ≤ 2^53), else its decimal string. */
export function int64(value: bigint): number | string {
  return value <= 9007199254740992n && value >= -9007199254740992n ? Number(value) : value.toString();
}

/** The regions of every occurrence of field `number` (length-delimited) in `[start, end)`. */
export function occurrences(buffer: Uint8Array, start: number, end: number, number: number): Region[] {
  const found: Region[] = [];
  const wire = new WireCursor(buffer, start, end);
  while (wire.position < end) {
    const tag = wire.varint();
    if (tag >>> 3 === number && (tag & 7) === LENGTH_DELIMITED) {
      const at = wire.bytes();
      found.push({ start: at, end: wire.position });
    } else {
      wire.skip(tag & 7);
    }
  }
  return found;
}

/** The last occurrence of field `number` (length-delimited) in `region`, if any. */
export function lastOccurrence(buffer: Uint8Array, region: Region, number: number): Region | undefined {
  return occurrences(buffer, region.start, region.end, number).pop();
}

/** A wire-format error as an OtlpError; another error as it is. */
export function invalidProtobuf(error: unknown): unknown {
  if (error instanceof WireError) return new OtlpError(`invalid protobuf: ${error.message}`);
  return error;
}

/**
 * Reads attribute values from one body into JSON, counting them with a meter. Not reentrant: the
 * decoder that owns it sets {@link buffer} for each request and decodes one at a time.
 */
export class OtlpValueReader {
  /** The body being decoded. */
  buffer: Uint8Array = new Uint8Array(0);

  constructor(readonly meter: EventMeter) {}

  /**
   * The attributes (field `field`, `KeyValue`s) of a message, measured on a fresh start of the
   * meter: a `Resource` (field 1) or an `InstrumentationScope` (field 3). Absent: none.
   */
  attributes(region: Region | undefined, field: number, depth: number): Resource {
    const meter = this.meter;
    meter.start();
    const attributes: Json = {};
    if (region !== undefined) {
      const wire = new WireCursor(this.buffer, region.start, region.end);
      while (wire.position < region.end) {
        const tag = wire.varint();
        if (tag >>> 3 === field && (tag & 7) === LENGTH_DELIMITED) {
          const at = wire.bytes();
          if (this.keyValue(at, wire.position, depth, attributes) === OVER) break;
        } else {
          wire.skip(tag & 7);
        }
      }
    }
    return { attributes, fields: meter.fields, size: meter.size, exceeded: meter.exceeded };
  }

  /**
   * An `InstrumentationScope`: name (1), version (2) and, when `attributesDepth` is given, its
   * attributes (3) measured as {@link attributes} does.
   */
  scope(region: Region | undefined, attributesDepth?: number): Scope {
    let name = "";
    let version = "";
    if (region !== undefined) {
      const wire = new WireCursor(this.buffer, region.start, region.end);
      while (wire.position < region.end) {
        const tag = wire.varint();
        const field = tag >>> 3;
        if ((field === 1 || field === 2) && (tag & 7) === LENGTH_DELIMITED) {
          const at = wire.bytes();
          const text = utf8(this.buffer, at, wire.position);
          if (field === 1) name = text;
          else version = text;
        } else {
          wire.skip(tag & 7);
        }
      }
    }
    const attributes =
      attributesDepth === undefined
        ? { attributes: {}, fields: 0, size: 0, exceeded: undefined }
        : this.attributes(region, 3, attributesDepth);
    return { name, version, attributes };
  }

  /**
   * A `KeyValue` set into `into` (one without a key is ignored, as OTLP/JSON's mapping does).
   * @param depth how deep `into` sits in the event (the event is 1, `attributes` 2)
   * @returns OVER once the event is over a bound
   * @throws OtlpError for values nested beyond {@link MAX_EVENT_NESTING}
   */
  keyValue(start: number, end: number, depth: number, into: Json): unknown {
    const buffer = this.buffer;
    let key: string | undefined;
    let keyBytes = 0;
    let value: Region | undefined;
    const wire = new WireCursor(buffer, start, end);
    while (wire.position < end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      if ((field === 1 || field === 2) && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        if (field === 1) {
          keyBytes = wire.position - at;
          key = utf8(buffer, at, wire.position);
        } else {
          value = { start: at, end: wire.position };
        }
      } else wire.skip(tag & 7);
    }
    // `__proto__` cannot be an own field of a plain object: ignored like a missing key.
    if (key === undefined || key === "__proto__") return undefined;
    if (!this.meter.field(keyBytes)) return OVER;
    const decoded = value === undefined ? this.#noValue() : this.anyValue(value.start, value.end, depth + 1);
    if (decoded === OVER) return OVER;
    into[key] = decoded;
    return undefined;
  }

  #noValue(): unknown {
    return this.meter.value() ? null : OVER;
  }

  /**
   * An `AnyValue` as JSON (otlp.ts): the first set of string, bool, int, double, array, kvlist,
   * bytes (in that order, as OTLP/JSON's mapping reads them); none set is null.
   * @param depth how deep the value sits in the event
   * @returns OVER once the event is over a bound
   * @throws OtlpError for arrays and maps nested beyond {@link MAX_EVENT_NESTING}
   */
  anyValue(start: number, end: number, depth: number): unknown {
    const buffer = this.buffer;
    const meter = this.meter;
    // The last occurrence of each member: string (1), bool (2), int (3), double (4), array (5),
    // kvlist (6), bytes (7).
    let string: Region | undefined;
    let bool: number | undefined;
    let int: bigint | undefined;
    let double: number | undefined;
    let array: Region | undefined;
    let map: Region | undefined;
    let bytes: Region | undefined;
    const wire = new WireCursor(buffer, start, end);
    while (wire.position < end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      const type = tag & 7;
      if (type === LENGTH_DELIMITED && (field === 1 || field === 5 || field === 6 || field === 7)) {
        const from = wire.bytes();
        const region = { start: from, end: wire.position };
        if (field === 1) string = region;
        else if (field === 5) array = region;
        else if (field === 6) map = region;
        else bytes = region;
      } else if (type === VARINT && field === 2) bool = wire.varint();
      else if (type === VARINT && field === 3) int = wire.varint64();
      else if (type === FIXED64 && field === 4) double = wire.double();
      else wire.skip(type);
    }
    if (string !== undefined) {
      return meter.string(string.end - string.start) ? utf8(buffer, string.start, string.end) : OVER;
    }
    if (bool !== undefined) return meter.value() ? bool !== 0 : OVER;
    if (int !== undefined) {
      const value = int64(int);
      const counted = typeof value === "string" ? meter.string(value.length) : meter.value();
      return counted ? value : OVER;
    }
    if (double !== undefined) return meter.value() ? double : OVER;
    if (array !== undefined || map !== undefined) {
      if (depth > MAX_EVENT_NESTING) {
        throw new OtlpError(`attribute values must not nest more than ${MAX_EVENT_NESTING} levels deep in an event`);
      }
      if (!meter.value()) return OVER;
      if (array !== undefined) return this.#array(array, depth);
      if (map !== undefined) return this.#map(map, depth);
    }
    if (bytes !== undefined) {
      const text = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength).toString(
        "base64",
        bytes.start,
        bytes.end,
      );
      return meter.string(text.length) ? text : OVER;
    }
    return meter.value() ? null : OVER;
  }

  /** An `ArrayValue`: its values (field 1). */
  #array(region: Region, depth: number): unknown {
    const items: unknown[] = [];
    const wire = new WireCursor(this.buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      if (tag >>> 3 === 1 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        const item = this.anyValue(at, wire.position, depth + 1);
        if (item === OVER) return OVER;
        items.push(item);
      } else wire.skip(tag & 7);
    }
    return items;
  }

  /** A `KeyValueList`: its key-values (field 1) as an object. */
  #map(region: Region, depth: number): unknown {
    const object: Json = {};
    const wire = new WireCursor(this.buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      if (tag >>> 3 === 1 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        if (this.keyValue(at, wire.position, depth, object) === OVER) return OVER;
      } else wire.skip(tag & 7);
    }
    return object;
  }
}

/** A scope of a metrics or logs request: where its items come from, and its region. */
export interface ScopeLevel {
  readonly origin: OtlpOrigin;
  /** The bound the resource's or scope's attributes exceed: every item of the scope exceeds it. */
  readonly over: EventBound | undefined;
  /** The fields and bytes the resource's and scope's attributes add to each item's event. */
  readonly shared: { readonly fields: number; readonly size: number };
  /** The `ScopeMetrics` or `ScopeLogs`: its items are field 2. */
  readonly region: Region;
}

/**
 * The scopes of an `ExportMetricsServiceRequest` or `ExportLogsServiceRequest` (same layout: the
 * request's field 1 holds resources; each has its `Resource` as field 1 and scopes as field 2;
 * each scope its `InstrumentationScope` as field 1), their attributes read with `values` (whose
 * buffer is `body`) as flat fields of the events.
 */
export function* scopeLevels(body: Uint8Array, values: OtlpValueReader): Generator<ScopeLevel, void, void> {
  for (const resourceRegion of occurrences(body, 0, body.length, 1)) {
    const resource = values.attributes(lastOccurrence(body, resourceRegion, 1), 1, 1);
    for (const region of occurrences(body, resourceRegion.start, resourceRegion.end, 2)) {
      const scope = values.scope(lastOccurrence(body, region, 1), 1);
      const origin: OtlpOrigin = {
        resource: resource.attributes,
        scopeName: scope.name,
        scopeVersion: scope.version,
        scopeAttributes: scope.attributes.attributes,
      };
      const over = resource.exceeded ?? scope.attributes.exceeded;
      const shared = { fields: resource.fields + scope.attributes.fields, size: resource.size + scope.attributes.size };
      yield { origin, over, shared, region };
    }
  }
}
