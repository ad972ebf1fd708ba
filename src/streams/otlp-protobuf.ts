/**
 * OTLP/HTTP traces in protobuf (https://opentelemetry.io/docs/specs/otlp/), decoded by hand, span
 * by span, into the events otlp.ts describes (the same mapping as OTLP/JSON, checked against
 * protobufjs by a differential test): each span is measured as it is read, so that a span of a
 * million attributes is dropped after a thousand, and a large request can be decoded a slice per
 * turn of the event loop.
 *
 * Schema: proto/otlp-trace.proto. Singular fields keep their last occurrence, repeated ones every
 * occurrence in order, unknown fields are skipped; a `resource` or `scope` may come after the
 * spans it applies to.
 */

import type { Event } from "./event.js";
import { MAX_EVENT_NESTING } from "./event.js";
import { type EventBound, type EventBounds, EventMeter, exceededBound } from "./event-bounds.js";
import { KINDS, OtlpError, STATES } from "./otlp.js";
import { FIXED64, LENGTH_DELIMITED, VARINT, WireCursor, WireError } from "./protobuf-wire.js";
import { TurnClock } from "./slices.js";

type Json = Record<string, unknown>;

/** What a value decoder returns once the event is over a bound: stop reading it. */
const OVER = Symbol("over a bound");

/** Spans (or resources, or scopes) decoded between two looks at the clock, when decoding in slices. */
const SPANS_PER_CHECK = 64;

/** A region `[start, end)` of the body. */
interface Region {
  readonly start: number;
  readonly end: number;
}

/** A resource's attributes, measured once for all its spans. */
interface Resource {
  readonly attributes: Json;
  readonly fields: number;
  readonly size: number;
  readonly exceeded: EventBound | undefined;
}

const utf8 = (buffer: Uint8Array, start: number, end: number) =>
  Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength).toString("utf8", start, end);

const hex = (buffer: Uint8Array, start: number, end: number) =>
  Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength).toString("hex", start, end);

/** Nanoseconds to seconds, keeping sub-microsecond precision beyond 2^53 ns. */
function seconds(nanoseconds: bigint): number {
  return Number(nanoseconds / 1_000_000_000n) + Number(nanoseconds % 1_000_000_000n) / 1e9;
}

/** An int64 as a number when exactly representable (|v| ≤ 2^53), else its decimal string. */
function int64(value: bigint): number | string {
  return value <= 9007199254740992n && value >= -9007199254740992n ? Number(value) : value.toString();
}

/** The regions of every occurrence of field `number` (length-delimited) in `[start, end)`. */
function occurrences(buffer: Uint8Array, start: number, end: number, number: number): Region[] {
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

/**
 * Decodes `ExportTraceServiceRequest` bodies into one event per span, each held to the event
 * bounds: a span over one is counted in {@link refused} and not emitted. Not reentrant: a request
 * decoded in slices needs an instance of its own.
 */
export class OtlpProtobufDecoder {
  /** Spans of the last request over an event bound, by bound. */
  readonly refused = new Map<EventBound, number>();
  readonly #bounds: EventBounds;
  readonly #meter: EventMeter;
  #buffer: Uint8Array = new Uint8Array(0);

  constructor(bounds: EventBounds) {
    this.#bounds = bounds;
    this.#meter = new EventMeter(bounds);
  }

  /**
   * Decodes a request at once, passing each span's event to `emit` in order.
   * @throws OtlpError when the bytes are not a valid request
   */
  decode(body: Uint8Array, emit: (event: Event) => void): void {
    const spans = this.#spans(body, emit);
    try {
      while (!spans.next().done);
    } catch (error) {
      throw this.#invalid(error);
    }
  }

  /**
   * Decodes a request as {@link decode} does, a slice per turn of the event loop.
   * @throws OtlpError when the bytes are not a valid request (the spans before were emitted)
   */
  async decodeSliced(body: Uint8Array, emit: (event: Event) => void): Promise<void> {
    const spans = this.#spans(body, emit);
    const clock = new TurnClock();
    try {
      for (let count = 1; !spans.next().done; count++) {
        if (count % SPANS_PER_CHECK === 0 && clock.due()) await clock.turn();
      }
    } catch (error) {
      throw this.#invalid(error);
    }
  }

  #invalid(error: unknown): unknown {
    if (error instanceof WireError) return new OtlpError(`invalid protobuf: ${error.message}`);
    return error;
  }

  /** Walks the request, yielding after each span. */
  *#spans(body: Uint8Array, emit: (event: Event) => void): Generator<void, void, void> {
    this.#buffer = body;
    this.refused.clear();
    for (const resourceSpans of occurrences(body, 0, body.length, 1)) {
      const resourceRegion = occurrences(body, resourceSpans.start, resourceSpans.end, 1).pop();
      const resource = this.#resource(resourceRegion);
      yield;
      for (const scopeSpans of occurrences(body, resourceSpans.start, resourceSpans.end, 2)) {
        const scopeRegion = occurrences(body, scopeSpans.start, scopeSpans.end, 1).pop();
        const scope = this.#scope(scopeRegion);
        yield;
        for (const span of occurrences(body, scopeSpans.start, scopeSpans.end, 2)) {
          const event = resource.exceeded === undefined ? this.#span(span, resource, scope) : resource.exceeded;
          if (typeof event === "string") this.refused.set(event, (this.refused.get(event) ?? 0) + 1);
          else emit(event);
          yield;
        }
      }
    }
    this.#buffer = new Uint8Array(0);
  }

  /** A `Resource`'s attributes (field 1), measured (absent: none). */
  #resource(region: Region | undefined): Resource {
    const meter = this.#meter;
    meter.start();
    const attributes: Json = {};
    if (region !== undefined) {
      const wire = new WireCursor(this.#buffer, region.start, region.end);
      while (wire.position < region.end) {
        const tag = wire.varint();
        if (tag >>> 3 === 1 && (tag & 7) === LENGTH_DELIMITED) {
          const at = wire.bytes();
          if (this.#keyValue(at, wire.position, 2, attributes) === OVER) break;
        } else {
          wire.skip(tag & 7);
        }
      }
    }
    return { attributes, fields: meter.fields, size: meter.size, exceeded: meter.exceeded };
  }

  /** An `InstrumentationScope`'s name (1) and version (2). */
  #scope(region: Region | undefined): { name: string; version: string } {
    const scope = { name: "", version: "" };
    if (region === undefined) return scope;
    const wire = new WireCursor(this.#buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      if ((field === 1 || field === 2) && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        const text = utf8(this.#buffer, at, wire.position);
        if (field === 1) scope.name = text;
        else scope.version = text;
      } else {
        wire.skip(tag & 7);
      }
    }
    return scope;
  }

  /**
   * A `Span` as an event (otlp.ts), or the bound it exceeds. Its resource's measure counts first;
   * reading stops at the first bound exceeded.
   */
  #span(region: Region, resource: Resource, scope: { name: string; version: string }): Event | EventBound {
    const buffer = this.#buffer;
    const meter = this.#meter;
    meter.start();
    meter.merge(resource.fields, resource.size);
    const span = { traceId: "", spanId: "", parentSpanId: "", name: "", kind: 0, start: 0n, end: 0n };
    let status: Region | undefined;
    const attributes: Json = {};
    const events: Json[] = [];
    const links: Json[] = [];
    const wire = new WireCursor(buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      const type = tag & 7;
      if (type === LENGTH_DELIMITED && field !== 3 && field <= 15) {
        const at = wire.bytes();
        const end = wire.position;
        let result: unknown;
        if (field === 1) span.traceId = hex(buffer, at, end);
        else if (field === 2) span.spanId = hex(buffer, at, end);
        else if (field === 4) span.parentSpanId = hex(buffer, at, end);
        else if (field === 5) span.name = utf8(buffer, at, end);
        else if (field === 9) result = this.#keyValue(at, end, 2, attributes);
        else if (field === 11) result = this.#spanEvent(at, end, events);
        else if (field === 13) result = this.#link(at, end, links);
        else if (field === 15) status = { start: at, end };
        // OVER comes with the bound the meter found exceeded.
        if (result === OVER && meter.exceeded !== undefined) return meter.exceeded;
      } else if (field === 6 && type === VARINT) {
        span.kind = wire.varint();
      } else if ((field === 7 || field === 8) && type === FIXED64) {
        if (field === 7) span.start = wire.fixed64();
        else span.end = wire.fixed64();
      } else {
        wire.skip(type);
      }
    }
    const event: Event = {
      service: resource.attributes["service.name"],
      name: span.name,
      "trace-id": span.traceId,
      "span-id": span.spanId,
    };
    if (span.parentSpanId !== "") event["parent-span-id"] = span.parentSpanId;
    const { code, message } = this.#status(status);
    event.kind = KINDS[span.kind] ?? "unspecified";
    event.state = STATES[code] ?? "unset";
    if (message !== "") event.description = message;
    const end = seconds(span.end);
    const start = seconds(span.start);
    event.time = end;
    event["start-time"] = start;
    event.metric = end - start;
    event.attributes = attributes;
    event.resource = resource.attributes;
    event.scope = { name: scope.name, version: scope.version };
    if (events.length > 0) event.events = events;
    if (links.length > 0) event.links = links;
    return exceededBound(event, this.#bounds) ?? event;
  }

  /** A `Status`: code (3) and message (2). */
  #status(region: Region | undefined): { code: number; message: string } {
    const status = { code: 0, message: "" };
    if (region === undefined) return status;
    const wire = new WireCursor(this.#buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      if (tag >>> 3 === 3 && (tag & 7) === VARINT) status.code = wire.varint();
      else if (tag >>> 3 === 2 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        status.message = utf8(this.#buffer, at, wire.position);
      } else wire.skip(tag & 7);
    }
    return status;
  }

  /** A `Span.Event`: time (1), name (2), attributes (3). */
  #spanEvent(start: number, end: number, into: Json[]): unknown {
    const meter = this.#meter;
    const attributes: Json = {};
    let name = "";
    let time = 0n;
    const wire = new WireCursor(this.#buffer, start, end);
    if (!meter.value()) return OVER;
    while (wire.position < end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      if (field === 1 && (tag & 7) === FIXED64) time = wire.fixed64();
      else if (field === 2 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        name = utf8(this.#buffer, at, wire.position);
        if (!meter.string(wire.position - at)) return OVER;
      } else if (field === 3 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        if (this.#keyValue(at, wire.position, 4, attributes) === OVER) return OVER;
      } else wire.skip(tag & 7);
    }
    into.push({ name, time: seconds(time), attributes });
    return undefined;
  }

  /** A `Span.Link`: trace id (1), span id (2), trace state (3), attributes (4). */
  #link(start: number, end: number, into: Json[]): unknown {
    const buffer = this.#buffer;
    const meter = this.#meter;
    const attributes: Json = {};
    let traceId = "";
    let spanId = "";
    let traceState = "";
    const wire = new WireCursor(buffer, start, end);
    if (!meter.value()) return OVER;
    while (wire.position < end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      if (field >= 1 && field <= 4 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        if (field === 4) {
          if (this.#keyValue(at, wire.position, 4, attributes) === OVER) return OVER;
          continue;
        }
        if (!meter.string(wire.position - at)) return OVER;
        if (field === 1) traceId = hex(buffer, at, wire.position);
        else if (field === 2) spanId = hex(buffer, at, wire.position);
        else traceState = utf8(buffer, at, wire.position);
      } else wire.skip(tag & 7);
    }
    const link: Json = { "trace-id": traceId, "span-id": spanId };
    if (traceState !== "") link["trace-state"] = traceState;
    link.attributes = attributes;
    into.push(link);
    return undefined;
  }

  /**
   * A `KeyValue` set into `into` (one without a key is ignored, as OTLP/JSON's mapping does).
   * @param depth how deep `into` sits in the event (the span event is 1, `attributes` 2)
   * @returns OVER once the event is over a bound
   */
  #keyValue(start: number, end: number, depth: number, into: Json): unknown {
    const buffer = this.#buffer;
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
    if (!this.#meter.field(keyBytes)) return OVER;
    const decoded = value === undefined ? this.#noValue() : this.#anyValue(value.start, value.end, depth + 1);
    if (decoded === OVER) return OVER;
    into[key] = decoded;
    return undefined;
  }

  #noValue(): unknown {
    return this.#meter.value() ? null : OVER;
  }

  /**
   * An `AnyValue` as JSON (otlp.ts): the first set of string, bool, int, double, array, kvlist,
   * bytes (in that order, as OTLP/JSON's mapping reads them); none set is null.
   * @throws OtlpError for arrays and maps nested beyond {@link MAX_EVENT_NESTING}
   */
  #anyValue(start: number, end: number, depth: number): unknown {
    const buffer = this.#buffer;
    const meter = this.#meter;
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
    const wire = new WireCursor(this.#buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      if (tag >>> 3 === 1 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        const item = this.#anyValue(at, wire.position, depth + 1);
        if (item === OVER) return OVER;
        items.push(item);
      } else wire.skip(tag & 7);
    }
    return items;
  }

  /** A `KeyValueList`: its key-values (field 1) as an object. */
  #map(region: Region, depth: number): unknown {
    const object: Json = {};
    const wire = new WireCursor(this.#buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      if (tag >>> 3 === 1 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        if (this.#keyValue(at, wire.position, depth, object) === OVER) return OVER;
      } else wire.skip(tag & 7);
    }
    return object;
  }
}
