/**
 * Large OTLP/JSON trace bodies, read without holding the event loop: the body is checked by the
 * validating scanner (json-scan.ts) a slice per turn, which finds each resource, scope and span
 * and measures it on the way; then each one within a generous first bound is parsed on its own and
 * mapped as otlp.ts maps a parsed request, and each span's event is held to the event bounds
 * exactly. The events are those {@link decodeJsonTraces} gives for the same text.
 *
 * The first bound is looser than the event bounds (OTLP/JSON spells each attribute as
 * `{"key": …, "value": {"stringValue": …}}`, three keys for one field): it only keeps a span of a
 * million attributes from being parsed; the exact check is on the event.
 */
import type { Event } from "./event.js";
import { type EventBound, type EventBounds, EventMeter, exceededBound } from "./event-bounds.js";
import { type JsonKind, type JsonPathItem, JsonScanner, type JsonVisitor, scanSliced } from "./json-scan.js";
import { OtlpError, resourceAttributesOf, spanEventOf } from "./otlp.js";
import { TurnClock } from "./slices.js";

/** A value of the body: its bytes, and the first bound it exceeded if any. */
interface Part {
  readonly start: number;
  readonly end: number;
  readonly exceeded: EventBound | undefined;
}

/**
 * An object of the request with one measured part and a list: `resource` and `scopeSpans` of a
 * `ResourceSpans`, `scope` and `spans` of a `ScopeSpans`.
 */
interface Level<Item> {
  head: Part | undefined;
  items: Item[];
  /** Whether the list is an array (another value in its place is ignored, as the mapping does). */
  itemsIsArray: boolean;
}

/** A span that is not an object maps as an empty one. */
type ScopeSpans = Level<Part | "empty">;
type ResourceSpans = Level<ScopeSpans | undefined>;

/** Where the value being measured goes: the head of a level, or the spans of a ScopeSpans. */
type Target = { kind: "head"; of: Level<unknown> } | { kind: "span"; of: ScopeSpans };

/** The keys of a level's head and list. */
const RESOURCE_SPANS_KEYS = { head: "resource", items: "scopeSpans" } as const;
const SCOPE_SPANS_KEYS = { head: "scope", items: "spans" } as const;

/**
 * An item of a list starts: an object is a new level, anything else is ignored.
 * @returns undefined: a level is not measured as a whole
 */
function startLevel<Item>(list: Array<Level<Item> | undefined>, index: number, kind: JsonKind): undefined {
  list[index] = kind === "object" ? { head: undefined, items: [], itemsIsArray: false } : undefined;
  return undefined;
}

/**
 * Collects the parts of a request as the scanner visits them: `resourceSpans[i].resource`,
 * `resourceSpans[i].scopeSpans[j].scope` and `…spans[k]`. A repeated key keeps its last value,
 * as JSON.parse does; what is not where the mapping looks (an object in place of an array) is
 * ignored, as the mapping ignores it.
 */
class RequestParts implements JsonVisitor {
  rootIsObject = false;
  resourceSpans: Array<ResourceSpans | undefined> = [];
  #resourceSpansIsArray = false;
  #target: Target | undefined;
  readonly #meter: EventMeter;

  constructor(bounds: EventBounds) {
    this.#meter = new EventMeter(bounds);
  }

  enter(depth: number, path: readonly JsonPathItem[], kind: JsonKind): EventMeter | undefined {
    if (depth === 0) {
      this.rootIsObject = kind === "object";
      return undefined;
    }
    if (path[0] !== "resourceSpans") return undefined;
    if (depth === 1) {
      this.#resourceSpansIsArray = kind === "array";
      this.resourceSpans = [];
      return undefined;
    }
    const i = path[1];
    if (typeof i !== "number" || !this.#resourceSpansIsArray) return undefined;
    if (depth === 2) return startLevel(this.resourceSpans, i, kind);
    const resourceSpans = this.resourceSpans[i];
    if (resourceSpans === undefined) return undefined;
    if (depth === 3) return this.#levelPart(resourceSpans, RESOURCE_SPANS_KEYS, path[2], kind);
    const j = path[3];
    if (path[2] !== "scopeSpans" || typeof j !== "number" || !resourceSpans.itemsIsArray) return undefined;
    if (depth === 4) return startLevel(resourceSpans.items, j, kind);
    const scopeSpans = resourceSpans.items[j];
    if (scopeSpans === undefined) return undefined;
    if (depth === 5) return this.#levelPart(scopeSpans, SCOPE_SPANS_KEYS, path[4], kind);
    // Depth 6: a span. One that is not an object maps as an empty one.
    if (path[4] !== "spans" || !scopeSpans.itemsIsArray) return undefined;
    if (kind !== "object") {
      scopeSpans.items.push("empty");
      return undefined;
    }
    this.#target = { kind: "span", of: scopeSpans };
    return this.#meter;
  }

  /** A member of a level starts: its head is measured, its list starts over. */
  #levelPart(
    level: Level<unknown>,
    keys: { readonly head: string; readonly items: string },
    key: JsonPathItem | undefined,
    kind: JsonKind,
  ): EventMeter | undefined {
    if (key === keys.head) {
      level.head = undefined;
      if (kind !== "object") return undefined;
      this.#target = { kind: "head", of: level };
      return this.#meter;
    }
    if (key === keys.items) {
      level.items = [];
      level.itemsIsArray = kind === "array";
    }
    return undefined;
  }

  leave(start: number, end: number, meter: EventMeter): void {
    const part = { start, end, exceeded: meter.exceeded };
    const target = this.#target;
    if (target === undefined) return;
    if (target.kind === "head") target.of.head = part;
    else target.of.items.push(part);
  }
}

/**
 * Decodes a large OTLP/JSON request into one event per span, a slice per turn of the event loop.
 * @param refused where spans over an event bound are counted, by bound
 * @throws OtlpError when the text is not JSON, not a request object, or holds an invalid span
 */
export async function decodeLargeJsonTraces(
  body: Buffer,
  bounds: EventBounds,
  refused: Map<EventBound, number>,
): Promise<Event[]> {
  // Loose enough for any span the event bounds accept, tight enough to keep parsing cheap.
  const first: EventBounds = {
    fields: 4 * bounds.fields + 64,
    tags: Number.POSITIVE_INFINITY,
    string: bounds.string,
    size: 4 * bounds.size,
  };
  const parts = new RequestParts(first);
  const clock = new TurnClock();
  if (!(await scanSliced(new JsonScanner(body, 6, parts), clock))) {
    throw new OtlpError("request body is not valid JSON");
  }
  if (!parts.rootIsObject) throw new OtlpError("request body must be a JSON object");
  const parse = (part: Part | undefined): unknown =>
    part === undefined ? undefined : JSON.parse(body.toString("utf8", part.start, part.end));
  const refuse = (bound: EventBound, count: number) => refused.set(bound, (refused.get(bound) ?? 0) + count);
  const events: Event[] = [];
  for (const resourceSpans of parts.resourceSpans) {
    if (resourceSpans === undefined) continue;
    const resourceOver = resourceSpans.head?.exceeded;
    const resource = resourceOver === undefined ? resourceAttributesOf(parse(resourceSpans.head)) : {};
    for (const scopeSpans of resourceSpans.items) {
      if (scopeSpans === undefined) continue;
      const over = resourceOver ?? scopeSpans.head?.exceeded;
      if (over !== undefined) {
        refuse(over, scopeSpans.items.length);
        continue;
      }
      const scope = parse(scopeSpans.head);
      for (const span of scopeSpans.items) {
        if (span !== "empty" && span.exceeded !== undefined) refuse(span.exceeded, 1);
        else {
          const event = spanEventOf(span === "empty" ? {} : parse(span), resource, scope);
          const bound = exceededBound(event, bounds);
          if (bound === undefined) events.push(event);
          else refuse(bound, 1);
        }
        if (clock.due()) await clock.turn();
      }
    }
  }
  return events;
}
