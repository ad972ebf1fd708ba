/**
 * The bounds of one event, on every way in (HTTP push, OTLP, remote write, the Riemann input, the
 * events of other modules): at most `fields` fields, counted at every depth (a key of `attributes`
 * is a field), at most `tags` tags, no string (a value or a field name) over `string` UTF-8 bytes,
 * and at most `size` bytes in all. A single-event request beyond a bound is refused with a 400
 * naming it; in a batch such an event is dropped and counted, and the rest go on.
 *
 * The size of an event is counted as the UTF-8 bytes of its field names and string values plus
 * {@link VALUE_BYTES} for each other value (number, boolean, null, object, array, the event
 * itself): about the size of its JSON text, without the punctuation, and cheap to count while an
 * event is decoded, where serialising it would cost as much as what the bound protects.
 *
 * Decoders count as they read, with an {@link EventMeter}, so that they can stop reading an event
 * as soon as it is over a bound (a frame of 1 000 000 attributes is never turned into an object);
 * an event already decoded is measured by {@link exceededBound}, one walk that stops at the first
 * bound it finds exceeded.
 */
import { type Event, isObjectOrArray } from "./event.js";

/** The bounds of one event (the `streams.max-event-*` settings). */
export interface EventBounds {
  /** Fields at every depth, the keys of nested objects (attributes) included. */
  readonly fields: number;
  /** Items of the top-level `tags` array. */
  readonly tags: number;
  /** UTF-8 bytes of one string: a value, a tag or a field name. */
  readonly string: number;
  /** Bytes in all, counted as the module's documentation says. */
  readonly size: number;
}

/** The defaults of the `streams.max-event-*` settings. */
export const DEFAULT_EVENT_BOUNDS: EventBounds = {
  fields: 1_000,
  tags: 1_000,
  string: 64 * 1024,
  size: 1024 * 1024,
};

/** Bytes counted for a value that is not a string: a number, a boolean, null, an object, an array. */
export const VALUE_BYTES = 8;

/**
 * A bound an event exceeded, named after its setting; also the `reason` label of
 * `stream_dropped_events_total`.
 */
export type EventBound = "max-event-fields" | "max-event-tags" | "max-event-string" | "max-event-size";

/** The setting that holds each bound, for messages. */
const SETTINGS: Readonly<Record<EventBound, string>> = {
  "max-event-fields": "streams.max-event-fields",
  "max-event-tags": "streams.max-event-tags",
  "max-event-string": "streams.max-event-string",
  "max-event-size": "streams.max-event-size",
};

/**
 * What an event beyond a bound has, worded to follow a field name: `has more than 1000 fields
 * (streams.max-event-fields)`.
 */
export function boundProblem(bound: EventBound, bounds: EventBounds): string {
  switch (bound) {
    case "max-event-fields":
      return `has more than ${bounds.fields} fields, nested ones included (${SETTINGS[bound]})`;
    case "max-event-tags":
      return `has more than ${bounds.tags} tags (${SETTINGS[bound]})`;
    case "max-event-string":
      return `has a string of more than ${bounds.string} bytes (${SETTINGS[bound]})`;
    case "max-event-size":
      return `is larger than ${bounds.size} bytes (${SETTINGS[bound]})`;
  }
}

/**
 * Counts an event as a decoder reads it. Every method returns false once a bound is exceeded
 * (the first one is kept in {@link exceeded}), so that the decoder can skip the rest of the event.
 * One meter serves every event of a decoder: {@link start} resets it.
 *
 * @example
 * meter.start();                         // the event: an object
 * meter.field(4) && meter.string(9);     // "host": "a.example"
 * if (meter.exceeded !== undefined) drop(meter.exceeded);
 */
export class EventMeter {
  fields = 0;
  tags = 0;
  /** Bytes so far. */
  size = 0;
  /** The first bound exceeded since {@link start}. */
  exceeded: EventBound | undefined;

  constructor(readonly bounds: EventBounds) {}

  /** Starts a new event (an object: {@link VALUE_BYTES}). */
  start(): void {
    this.fields = 0;
    this.tags = 0;
    this.size = VALUE_BYTES;
    this.exceeded = undefined;
  }

  /** A field whose name has `nameBytes` UTF-8 bytes (its value is counted apart). */
  field(nameBytes: number): boolean {
    if (++this.fields > this.bounds.fields) return this.#exceed("max-event-fields");
    if (nameBytes > this.bounds.string) return this.#exceed("max-event-string");
    return this.#add(nameBytes);
  }

  /** A string value of `bytes` UTF-8 bytes. */
  string(bytes: number): boolean {
    if (bytes > this.bounds.string) return this.#exceed("max-event-string");
    return this.#add(bytes);
  }

  /** A value that is not a string. */
  value(): boolean {
    return this.#add(VALUE_BYTES);
  }

  /** Fields and bytes measured apart: a part several events share (an OTLP resource). */
  merge(fields: number, bytes: number): boolean {
    this.fields += fields;
    if (this.fields > this.bounds.fields) return this.#exceed("max-event-fields");
    return this.#add(bytes);
  }

  /** One more item of the top-level `tags` (its value is counted apart). */
  tag(): boolean {
    if (++this.tags > this.bounds.tags) return this.#exceed("max-event-tags");
    return this.exceeded === undefined;
  }

  #add(bytes: number): boolean {
    this.size += bytes;
    if (this.size > this.bounds.size) return this.#exceed("max-event-size");
    return this.exceeded === undefined;
  }

  #exceed(bound: EventBound): false {
    this.exceeded ??= bound;
    return false;
  }
}

/**
 * Deeper than this, a walk counts a value without looking inside (events never nest this deep:
 * the ways in refuse those nesting more than 32 levels).
 */
export const WALK_DEPTH = 64;

/** What a walk over a decoded event counts: UTF-16 lengths, exact bytes only when they matter. */
class Walk {
  fields = 0;
  /** UTF-16 code units of names and strings: a lower bound of their UTF-8 bytes (at most 3×). */
  units = 0;
  /** Bytes of the other values. */
  values = 0;
  exceeded: EventBound | undefined;
  bounds: EventBounds = DEFAULT_EVENT_BOUNDS;
  /** How deep the walk went: 1 for the event, 2 for an object or array in it, and so on. */
  deepest = 1;
  /** Whether a key named `__proto__` or `constructor` was met (see {@link WalkReport}). */
  prototypeKeys = false;

  reset(bounds: EventBounds): void {
    this.deepest = 1;
    this.prototypeKeys = false;
    this.fields = 0;
    this.units = 0;
    this.values = VALUE_BYTES;
    this.exceeded = undefined;
    this.bounds = bounds;
  }

  /** Counts a string (a name or a value); false once over a bound. */
  text(text: string): boolean {
    const length = text.length;
    // A UTF-16 code unit is 1 to 3 UTF-8 bytes: only a long string needs its exact size.
    if (length * 3 > this.bounds.string && (length > this.bounds.string || byteLength(text) > this.bounds.string)) {
      this.exceeded = "max-event-string";
      return false;
    }
    this.units += length;
    return this.#within();
  }

  value(value: unknown, depth: number): boolean {
    if (typeof value === "string") return this.text(value);
    this.values += VALUE_BYTES;
    if (!isObjectOrArray(value) || depth > WALK_DEPTH) return this.#within();
    if (depth > this.deepest) this.deepest = depth;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) if (!this.value(value[i], depth + 1)) return false;
      return this.#within();
    }
    return this.object(value, depth);
  }

  object(object: Readonly<Record<string, unknown>>, depth: number): boolean {
    for (const key in object) {
      if (++this.fields > this.bounds.fields) {
        this.exceeded = "max-event-fields";
        return false;
      }
      // Internalised keys: two pointer comparisons, so that the push route needs no second
      // look at its body for the keys JSON parsers refuse.
      if (key === "__proto__" || key === "constructor") this.prototypeKeys = true;
      if (!this.text(key) || !this.value(object[key], depth + 1)) return false;
    }
    return this.#within();
  }

  #within(): boolean {
    if (this.units + this.values > this.bounds.size) {
      this.exceeded = "max-event-size";
      return false;
    }
    return true;
  }
}

const walk = new Walk();

/** UTF-8 bytes of a string (lone surrogates count 3, as they are encoded as U+FFFD). */
function byteLength(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** The exact size of a value (see the module's documentation): names and strings in UTF-8. */
function exactSize(value: unknown, depth: number): number {
  if (typeof value === "string") return byteLength(value);
  if (!isObjectOrArray(value) || depth > WALK_DEPTH) return VALUE_BYTES;
  let size = VALUE_BYTES;
  if (Array.isArray(value)) {
    for (const item of value) size += exactSize(item, depth + 1);
    return size;
  }
  for (const key in value) size += byteLength(key) + exactSize(value[key], depth + 1);
  return size;
}

/**
 * What a walk of {@link exceededBound} saw of an event within the bounds, for callers that would
 * otherwise walk it again. Both figures describe the whole event only when it is within the
 * bounds and `deepest` is at most {@link WALK_DEPTH} (deeper values are counted unseen).
 */
export interface WalkReport {
  /**
   * How deeply the event nests objects and arrays: 1 for a flat event, up to {@link WALK_DEPTH};
   * infinite when the walk stopped at a bound.
   */
  deepest: number;
  /**
   * Whether some object of the event has a key named `__proto__` or `constructor` (after JSON
   * unescaping): the keys that secure JSON parsers (Fastify's) refuse; false when it stopped early.
   */
  prototypeKeys: boolean;
}

/**
 * The first bound a decoded event exceeds, or undefined when it is within all of them. One walk
 * over the event that stops at the first bound found; strings are measured in UTF-16 code units
 * and their UTF-8 bytes counted only when that could decide (long strings, large events), so the
 * hot path allocates nothing and calls nothing per field.
 * @param report when given, receives what the walk saw ({@link WalkReport}): a caller that checks
 *   the nesting or the keys too needs no second walk of the event
 */
export function exceededBound(event: Event, bounds: EventBounds, report?: WalkReport): EventBound | undefined {
  if (report !== undefined) {
    report.deepest = Number.POSITIVE_INFINITY;
    report.prototypeKeys = false;
  }
  const tags = event.tags;
  if (Array.isArray(tags) && tags.length > bounds.tags) return "max-event-tags";
  walk.reset(bounds);
  // The walk's size is a lower bound of the bytes: beyond the bound, the event is.
  if (!walk.object(event, 1)) return walk.exceeded;
  if (report !== undefined) {
    report.deepest = walk.deepest;
    report.prototypeKeys = walk.prototypeKeys;
  }
  if (walk.units * 3 + walk.values <= bounds.size) return undefined;
  // Between the lower and the upper bound of its size: count the bytes of every string.
  return exactSize(event, 1) > bounds.size ? "max-event-size" : undefined;
}

/**
 * The events within the bounds, in order: the same array when all are (nothing is copied on the
 * usual path), else a new one without the others, each of which is passed to `refuse`.
 */
export function withinBounds<E extends Event>(
  events: readonly E[],
  bounds: EventBounds,
  refuse: (bound: EventBound) => void,
): readonly E[] {
  let kept: E[] | undefined;
  let i = 0;
  for (const event of events) {
    const bound = exceededBound(event, bounds);
    if (bound !== undefined) {
      kept ??= events.slice(0, i);
      refuse(bound);
    } else {
      kept?.push(event);
    }
    i++;
  }
  return kept ?? events;
}
