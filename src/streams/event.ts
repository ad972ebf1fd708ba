/**
 * Events: JSON objects with a free schema. Conventional fields: host, service,
 * state, metric, time (Unix seconds, fractional allowed), ttl (seconds), description, tags.
 */
import { DEFAULT_TTL_SECONDS, timeOf } from "../platform/outputs/event.js";
import { isPlainObject } from "../platform/validation.js";

export { DEFAULT_TTL_SECONDS, metricOf, timeOf } from "../platform/outputs/event.js";

/** An event: a JSON object. */
export type Event = Record<string, unknown>;

/**
 * How deeply objects and arrays may nest in an event received from the network (an event is level
 * 1; `{"a": {"b": [1]}}` nests 3 deep). Deeper events are refused before anything recurses into
 * them: searches, comparisons and serialisation walk events recursively.
 */
export const MAX_EVENT_NESTING = 32;

/**
 * Whether `value` nests objects and arrays more than `limit` levels deep (a scalar nests 0, `{}` 1).
 * The recursion stops at the limit, so a hostile value costs at most `limit` frames, and nothing
 * is allocated: this runs for every pushed event.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (!isObjectOrArray(value)) return false;
  if (limit <= 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (nestsDeeperThan(item, limit - 1)) return true;
    return false;
  }
  for (const key in value) if (nestsDeeperThan(value[key], limit - 1)) return true;
  return false;
}

/**
 * Whether `value` is an object or an array (not null), whose members are read by key. A plain
 * `typeof` check, free on the paths that walk every event.
 */
export function isObjectOrArray(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null;
}

/** A path to a field: `["host"]` for `:host`, `["attributes", "host"]` for `[:attributes :host]`. */
export type FieldPath = readonly string[];

/** Reads a field from an event; compiled once per path so the hot path does no path parsing. */
export type FieldReader = (event: Event) => unknown;

/** Compiles a reader for `path`; a missing step or a non-object on the way reads `undefined`. */
export function fieldReader(path: FieldPath): FieldReader {
  const [first, second] = path;
  if (path.length === 1 && first !== undefined) return (event) => event[first];
  if (path.length === 2 && first !== undefined && second !== undefined) {
    return (event) => {
      const inner = event[first];
      return isObjectOrArray(inner) ? inner[second] : undefined;
    };
  }
  return (event) => {
    let value: unknown = event;
    for (const key of path) {
      if (!isObjectOrArray(value)) return undefined;
      value = value[key];
    }
    return value;
  };
}

/**
 * Returns a copy of `event` with the field at `path` (from `index` on) set to `value`, copying the
 * objects along the path so that the original event (which other branches may hold) is left
 * untouched. An empty path changes nothing.
 */
export function withField(event: Event, path: FieldPath, value: unknown, index = 0): Event {
  const key = path[index];
  if (key === undefined) return event;
  if (index === path.length - 1) return { ...event, [key]: value };
  const inner = event[key];
  const base = isPlainObject(inner) ? inner : {};
  return { ...event, [key]: withField(base, path, value, index + 1) };
}

/**
 * Whether an event is expired at clock `now` (seconds): its state is `expired`, or it has a time and
 * `now - time > ttl` strictly, ttl defaulting to {@link DEFAULT_TTL_SECONDS}.
 */
export function isExpired(event: Event, now: number): boolean {
  if (event.state === "expired") return true;
  const time = timeOf(event);
  if (time === undefined) return false;
  const ttl = typeof event.ttl === "number" ? event.ttl : DEFAULT_TTL_SECONDS;
  return now - time > ttl;
}

/**
 * Equality of JSON values as where-conditions and `changed` see it: numbers by value (1 equals 1.0),
 * arrays and objects by content.
 */
export function valuesEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isObjectOrArray(a) || !isObjectOrArray(b)) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!valuesEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  if (keysA.length !== Object.keys(b).length) return false;
  for (const key of keysA) {
    if (!Object.hasOwn(b, key) || !valuesEqual(a[key], b[key])) return false;
  }
  return true;
}

/** The rank of a value's type in {@link compareValues}: missing and null first, then numbers, strings, booleans, the rest. */
function typeRank(value: unknown): number {
  if (value === undefined || value === null) return 0;
  switch (typeof value) {
    case "number":
      return 1;
    case "string":
      return 2;
    case "boolean":
      return 3;
    default:
      return 4;
  }
}

/**
 * A total order of field values, for sorting events by a field (`coll-sort`, `ssort`): missing and
 * null first (as Clojure's `compare` puts nil first), then numbers by value, strings by UTF-16
 * code units, booleans (false first), and anything else by its JSON text. Never throws, whatever
 * the types (where Clojure's `compare` throws on mixed types).
 * @returns a negative number, 0 or a positive number, as `Array.prototype.sort` expects
 */
export function compareValues(a: unknown, b: unknown): number {
  const rankA = typeRank(a);
  const rankB = typeRank(b);
  if (rankA !== rankB) return rankA - rankB;
  if (rankA === 0) return 0;
  if (typeof a === "number" && typeof b === "number") return a - b || 0;
  if (typeof a === "string" && typeof b === "string") return a === b ? 0 : a < b ? -1 : 1;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  const textA = JSON.stringify(a) ?? "";
  const textB = JSON.stringify(b) ?? "";
  return textA === textB ? 0 : textA < textB ? -1 : 1;
}
