/**
 * Large OTLP/JSON metrics and logs bodies, read without holding the event loop: the validating
 * scanner (json-scan.ts) checks the body a slice per turn and measures each value a mapping reads
 * (a resource, a scope, a metric's name, a data point, a log record); then each value within a
 * first bound is parsed on its own and set in a skeleton of the request, which the OTLP/JSON
 * mapping reads as it would the parsed body. A value over the first bound is replaced by an
 * {@link OverBound}: the mapping drops every item it applies to.
 *
 * The first bound is looser than the event bounds (OTLP/JSON spells each attribute with three
 * keys): it only keeps a value of a million attributes from being parsed; the exact check is on
 * each event. Repeated keys keep their last value, as JSON.parse does.
 */

import { isPlainObject } from "../platform/validation.js";
import { type EventBound, type EventBounds, EventMeter } from "./event-bounds.js";
import { type JsonKind, type JsonPathItem, JsonScanner, type JsonVisitor, scanSliced } from "./json-scan.js";
import { type Json, OtlpError } from "./otlp.js";
import { TurnClock } from "./slices.js";

/** A value of the request too large to parse: every item it applies to is over `bound`. */
export class OverBound {
  constructor(readonly bound: EventBound) {}
}

/** The first bound over which a value of `values` is, if any. */
export function overBoundOf(...values: unknown[]): EventBound | undefined {
  for (const value of values) if (value instanceof OverBound) return value.bound;
  return undefined;
}

/**
 * A step of a path pattern: a key, one of several keys, or any index of an array (`INDEX`). Keys
 * are only ever those listed, so that no key of the body (`__proto__`) is set in the skeleton.
 */
export type PatternStep = string | readonly string[] | typeof INDEX;

/** Any index of an array. */
export const INDEX = Symbol("index");

/** The paths of the values a mapping reads, each measured and parsed on its own. */
export type Patterns = ReadonlyArray<readonly PatternStep[]>;

function stepMatches(step: PatternStep | undefined, item: JsonPathItem | undefined): boolean {
  if (step === INDEX) return typeof item === "number";
  if (typeof item !== "string") return false;
  return typeof step === "string" ? step === item : step?.includes(item) === true;
}

/** How `path` relates to the patterns: a value to parse, a container on the way to one, or neither. */
function matchOf(patterns: Patterns, path: readonly JsonPathItem[]): "value" | "container" | undefined {
  let container = false;
  for (const pattern of patterns) {
    if (path.length > pattern.length) continue;
    let matches = true;
    for (let i = 0; i < path.length && matches; i++) matches = stepMatches(pattern[i], path[i]);
    if (!matches) continue;
    if (path.length === pattern.length) return "value";
    container = true;
  }
  return container ? "container" : undefined;
}

/** Sets `value` at `path` of `root`, whose containers on the way were set before. */
function setAt(root: Json, path: readonly JsonPathItem[], value: unknown): void {
  let node: unknown = root;
  for (const [i, item] of path.entries()) {
    const last = i === path.length - 1;
    if (Array.isArray(node) && typeof item === "number") {
      if (last) node[item] = value;
      else node = node[item];
    } else if (isPlainObject(node) && typeof item === "string") {
      if (last) node[item] = value;
      else node = node[item];
    } else return;
  }
}

/** Builds the skeleton as the scanner visits the body. */
class Skeleton implements JsonVisitor {
  readonly root: Json = {};
  rootIsObject = false;
  readonly #patterns: Patterns;
  readonly #meter: EventMeter;
  readonly #body: Buffer;
  #path: readonly JsonPathItem[] = [];

  constructor(body: Buffer, patterns: Patterns, bounds: EventBounds) {
    this.#body = body;
    this.#patterns = patterns;
    this.#meter = new EventMeter(bounds);
  }

  enter(depth: number, path: readonly JsonPathItem[], kind: JsonKind): EventMeter | undefined {
    if (depth === 0) {
      this.rootIsObject = kind === "object";
      return undefined;
    }
    const match = matchOf(this.#patterns, path);
    if (match === "value") {
      this.#path = [...path];
      return this.#meter;
    }
    // A container on the way starts over (a repeated key keeps its last value); a value of another
    // kind in its place reads as the mapping reads it: as nothing.
    if (match === "container") setAt(this.root, path, kind === "object" ? {} : kind === "array" ? [] : null);
    return undefined;
  }

  leave(start: number, end: number, meter: EventMeter): void {
    const value =
      meter.exceeded === undefined
        ? JSON.parse(this.#body.toString("utf8", start, end))
        : new OverBound(meter.exceeded);
    setAt(this.root, this.#path, value);
  }
}

/**
 * Scans a large OTLP/JSON body a slice per turn and returns the skeleton of the request: the
 * values at `patterns` parsed (or an {@link OverBound}), in their containers.
 * @throws OtlpError when the text is not JSON or not an object
 */
export async function jsonSkeleton(body: Buffer, patterns: Patterns, bounds: EventBounds): Promise<Json> {
  // Loose enough for any item the event bounds accept, tight enough to keep parsing cheap.
  const first: EventBounds = {
    fields: 4 * bounds.fields + 64,
    tags: Number.POSITIVE_INFINITY,
    string: bounds.string,
    size: 4 * bounds.size,
  };
  const skeleton = new Skeleton(body, patterns, first);
  const maxDepth = Math.max(...patterns.map((pattern) => pattern.length));
  if (!(await scanSliced(new JsonScanner(body, maxDepth, skeleton), new TurnClock()))) {
    throw new OtlpError("request body is not valid JSON");
  }
  if (!skeleton.rootIsObject) throw new OtlpError("request body must be a JSON object");
  return skeleton.root;
}
