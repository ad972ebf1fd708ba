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
import { type JsonKind, type JsonPathItem, JsonScanError, JsonScanner, type JsonVisitor } from "./json-scan.js";
import { OtlpError, resourceAttributesOf, spanEventOf } from "./otlp.js";
import { TurnClock } from "./slices.js";

/** Bytes the scanner reads between two looks at the clock. */
const SCAN_STEP_BYTES = 8 * 1024;

/** A value of the body: its bytes, and the first bound it exceeded if any. */
interface Part {
  readonly start: number;
  readonly end: number;
  readonly exceeded: EventBound | undefined;
}

interface ScopeSpans {
  scope: Part | undefined;
  spans: Array<Part | "empty">;
  spansIsArray: boolean;
}

interface ResourceSpans {
  resource: Part | undefined;
  scopes: Array<ScopeSpans | undefined>;
  scopesIsArray: boolean;
}

/** Where the value being measured goes. */
type Target = { kind: "resource"; of: ResourceSpans } | { kind: "scope" | "span"; of: ScopeSpans };

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
    if (depth === 2) {
      this.resourceSpans[i] = kind === "object" ? { resource: undefined, scopes: [], scopesIsArray: false } : undefined;
      return undefined;
    }
    const resourceSpans = this.resourceSpans[i];
    if (resourceSpans === undefined) return undefined;
    if (depth === 3) return this.#resourceSpansPart(resourceSpans, path[2], kind);
    const j = path[3];
    if (path[2] !== "scopeSpans" || typeof j !== "number" || !resourceSpans.scopesIsArray) return undefined;
    if (depth === 4) {
      resourceSpans.scopes[j] = kind === "object" ? { scope: undefined, spans: [], spansIsArray: false } : undefined;
      return undefined;
    }
    const scopeSpans = resourceSpans.scopes[j];
    if (scopeSpans === undefined) return undefined;
    if (depth === 5) return this.#scopeSpansPart(scopeSpans, path[4], kind);
    // Depth 6: a span. One that is not an object maps as an empty one.
    if (path[4] !== "spans" || !scopeSpans.spansIsArray) return undefined;
    if (kind !== "object") {
      scopeSpans.spans.push("empty");
      return undefined;
    }
    this.#target = { kind: "span", of: scopeSpans };
    return this.#meter;
  }

  #resourceSpansPart(resourceSpans: ResourceSpans, key: JsonPathItem | undefined, kind: JsonKind) {
    if (key === "resource") {
      resourceSpans.resource = undefined;
      if (kind !== "object") return undefined;
      this.#target = { kind: "resource", of: resourceSpans };
      return this.#meter;
    }
    if (key === "scopeSpans") {
      resourceSpans.scopes = [];
      resourceSpans.scopesIsArray = kind === "array";
    }
    return undefined;
  }

  #scopeSpansPart(scopeSpans: ScopeSpans, key: JsonPathItem | undefined, kind: JsonKind) {
    if (key === "scope") {
      scopeSpans.scope = undefined;
      if (kind !== "object") return undefined;
      this.#target = { kind: "scope", of: scopeSpans };
      return this.#meter;
    }
    if (key === "spans") {
      scopeSpans.spans = [];
      scopeSpans.spansIsArray = kind === "array";
    }
    return undefined;
  }

  leave(start: number, end: number, meter: EventMeter): void {
    const part = { start, end, exceeded: meter.exceeded };
    const target = this.#target;
    if (target === undefined) return;
    if (target.kind === "resource") target.of.resource = part;
    else if (target.kind === "scope") target.of.scope = part;
    else target.of.spans.push(part);
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
  const scanner = new JsonScanner(body, 6, parts);
  const clock = new TurnClock();
  try {
    while (!scanner.step(SCAN_STEP_BYTES)) if (clock.due()) await clock.turn();
  } catch (error) {
    if (error instanceof JsonScanError) throw new OtlpError("request body is not valid JSON");
    throw error;
  }
  if (!parts.rootIsObject) throw new OtlpError("request body must be a JSON object");
  const parse = (part: Part | undefined): unknown =>
    part === undefined ? undefined : JSON.parse(body.toString("utf8", part.start, part.end));
  const refuse = (bound: EventBound, count: number) => refused.set(bound, (refused.get(bound) ?? 0) + count);
  const events: Event[] = [];
  for (const resourceSpans of parts.resourceSpans) {
    if (resourceSpans === undefined) continue;
    const resourceOver = resourceSpans.resource?.exceeded;
    const resource = resourceOver === undefined ? resourceAttributesOf(parse(resourceSpans.resource)) : {};
    for (const scopeSpans of resourceSpans.scopes) {
      if (scopeSpans === undefined) continue;
      const over = resourceOver ?? scopeSpans.scope?.exceeded;
      if (over !== undefined) {
        refuse(over, scopeSpans.spans.length);
        continue;
      }
      const scope = parse(scopeSpans.scope);
      for (const span of scopeSpans.spans) {
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
