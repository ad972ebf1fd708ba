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
import { type EventBound, type EventBounds, EventMeter, exceededBound } from "./event-bounds.js";
import { KINDS, STATES } from "./otlp.js";
import {
  hex,
  invalidProtobuf,
  type Json,
  lastOccurrence,
  OtlpValueReader,
  OVER,
  occurrences,
  type Region,
  type Resource,
  type Scope,
  seconds,
  utf8,
} from "./otlp-wire.js";
import { FIXED64, LENGTH_DELIMITED, VARINT, WireCursor } from "./protobuf-wire.js";
import { TurnClock } from "./slices.js";

/** Spans (or resources, or scopes) decoded between two looks at the clock, when decoding in slices. */
const SPANS_PER_CHECK = 64;

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
  readonly #values: OtlpValueReader;
  #buffer: Uint8Array = new Uint8Array(0);

  constructor(bounds: EventBounds) {
    this.#bounds = bounds;
    this.#meter = new EventMeter(bounds);
    this.#values = new OtlpValueReader(this.#meter);
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
      throw invalidProtobuf(error);
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
      throw invalidProtobuf(error);
    }
  }

  /** Walks the request, yielding after each span. */
  *#spans(body: Uint8Array, emit: (event: Event) => void): Generator<void, void, void> {
    this.#buffer = body;
    this.#values.buffer = body;
    this.refused.clear();
    for (const resourceSpans of occurrences(body, 0, body.length, 1)) {
      const resource = this.#values.attributes(lastOccurrence(body, resourceSpans, 1), 1, 2);
      yield;
      for (const scopeSpans of occurrences(body, resourceSpans.start, resourceSpans.end, 2)) {
        const scope = this.#values.scope(lastOccurrence(body, scopeSpans, 1));
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
    this.#values.buffer = this.#buffer;
  }

  /**
   * A `Span` as an event (otlp.ts), or the bound it exceeds. Its resource's measure counts first;
   * reading stops at the first bound exceeded.
   */
  #span(region: Region, resource: Resource, scope: Scope): Event | EventBound {
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
        else if (field === 9) result = this.#values.keyValue(at, end, 2, attributes);
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
        if (this.#values.keyValue(at, wire.position, 4, attributes) === OVER) return OVER;
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
          if (this.#values.keyValue(at, wire.position, 4, attributes) === OVER) return OVER;
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
}
