/**
 * The push route: `PUT /api/v1/stream/<name>` with `{"event": {...}}` or `{"events": [...]}`, up
 * to `streams.ingestion-body-limit` bytes.
 *
 * Every event is held to the event bounds (`streams.max-event-*`): the single event of `{"event"}`
 * beyond one is a 400 naming it; an event of `{"events"}` beyond one is dropped and counted in
 * `stream_dropped_events_total{stream,action="push",reason}`, and the others are pushed.
 *
 * The route reads its body itself, so that no request holds the event loop for long: a body of at
 * most {@link INLINE_BODY_BYTES} is parsed at once, answered as Fastify's JSON parser would
 * (which refuses `__proto__` keys, {@link hasPrototypeKeys}); a larger one is checked by a validating scanner a slice per turn of the event
 * loop, measuring each event as it reads it, then each event within the bounds is parsed on its
 * own, again a slice per turn. Either way the events are pushed a chunk at a time (slices.ts).
 * What the route answers does not depend on the path taken.
 */
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from "fastify";
import { INVALID_JSON, InvalidError } from "../../platform/errors.js";
import type { RouteDescription } from "../../platform/openapi.js";
import { described, isPlainObject } from "../../platform/validation.js";
import type { Stream, StreamEngine } from "../engine.js";
import { type Event, MAX_EVENT_NESTING, nestsDeeperThan } from "../event.js";
import {
  boundProblem,
  type EventBound,
  type EventBounds,
  EventMeter,
  exceededBound,
  type WalkReport,
} from "../event-bounds.js";
import { type JsonKind, type JsonPathItem, JsonScanner, type JsonVisitor, scanSliced } from "../json-scan.js";
import { deliverSliced, TurnClock } from "../slices.js";
import { bodyObject, guardedOptions, type NamedRoute, NOT_AN_OBJECT, streamTargets } from "./request.js";
import { MESSAGE } from "./streams-api.js";

/**
 * Bodies up to this many bytes are parsed at once: parsing 64 KiB of the worst JSON (tens of
 * thousands of tiny objects or keys) takes a few milliseconds. Larger ones are scanned in slices.
 */
export const INLINE_BODY_BYTES = 64 * 1024;

/** What the route needs. */
export interface PushRouteOptions {
  readonly engine: StreamEngine;
  /** Largest body, in bytes (`streams.ingestion-body-limit`). */
  readonly bodyLimit: number;
  readonly guard: preHandlerHookHandler | undefined;
}

/** Parses a JSON text as Fastify does (`__proto__` and `constructor.prototype` keys refused). */
type JsonParser = (text: string) => unknown;

/** The events of a push within the bounds, and how many were dropped for each bound. */
interface Accepted {
  readonly events: Event[];
  readonly refused: Map<EventBound, number>;
}

/** The events of a parsed push body, and what the walks of its events saw. */
interface Screened extends Accepted {
  /**
   * Whether the walks of the events saw every key of the body and none named `__proto__` or
   * `constructor`: then the body holds nothing {@link hasPrototypeKeys} looks for.
   */
  readonly screened: boolean;
}

const BOTH = 'request body must have "event" or "events", not both';
const NEITHER = 'request body must have "event" (an object) or "events" (an array of objects)';
const NOT_AN_ARRAY = "field events: must be an array of objects";

/** The JSON Schema of a pushed event. */
const EVENT_SCHEMA = {
  type: "object",
  description: "an event: any fields (docs/streams.md, Events); time and ttl in seconds",
  properties: {
    time: { type: ["number", "null"], description: "seconds since the epoch; the time of receipt when absent" },
    ttl: { type: ["number", "null"] },
  },
} as const;

/**
 * The shape of a push body (parsed): `{"event": {...}}` or `{"events": [...]}`, not both. Each
 * event is then checked on its own ({@link checkEvent}) and held to the bounds.
 * @throws InvalidError naming the rule the body breaks
 */
export const pushBody = described(
  (value: unknown, _path: string): { readonly event: unknown } | { readonly events: readonly unknown[] } => {
    const object = bodyObject(value);
    if (object.events !== undefined) {
      if (object.event !== undefined) throw new InvalidError(BOTH);
      if (!Array.isArray(object.events)) throw new InvalidError(NOT_AN_ARRAY);
      return { events: object.events };
    }
    if (object.event === undefined) throw new InvalidError(NEITHER);
    return { event: object.event };
  },
  {
    type: "object",
    properties: { event: EVENT_SCHEMA, events: { type: "array", items: EVENT_SCHEMA } },
    oneOf: [
      { required: ["event"], not: { required: ["events"] } },
      { required: ["events"], not: { required: ["event"] } },
    ],
  },
);

/**
 * Checks one pushed event (an object, not nested too deep, a numeric `time` and `ttl` when set)
 * and gives it the current time when it has none; nothing else is added. Events are the request's
 * own objects, so setting `time` in place is safe.
 * @param index its index in `events`, or -1 for the single `event` (messages name it: `event`,
 *   `events[3]`; the name is only built for a message)
 * @param deepest how deeply it nests, when a walk found out already (exceededBound): a shallow
 *   event is not walked again
 * @throws InvalidError naming the field and the rule
 */
function checkEvent(event: unknown, index: number, now: number, deepest = Number.POSITIVE_INFINITY): Event {
  if (!isPlainObject(event)) throw new InvalidError(`field ${eventName(index)}: must be an object`);
  if (deepest > MAX_EVENT_NESTING && nestsDeeperThan(event, MAX_EVENT_NESTING)) {
    throw new InvalidError(
      `field ${eventName(index)}: must not nest objects and arrays more than ${MAX_EVENT_NESTING} levels deep`,
    );
  }
  const time = event.time;
  if (time === undefined || time === null) event.time = now;
  else if (typeof time !== "number" || !Number.isFinite(time)) {
    throw new InvalidError(`field ${eventName(index)}.time: must be a number of seconds`);
  }
  const ttl = event.ttl;
  if (ttl !== undefined && ttl !== null && (typeof ttl !== "number" || !Number.isFinite(ttl))) {
    throw new InvalidError(`field ${eventName(index)}.ttl: must be a number of seconds`);
  }
  return event;
}

/** How messages name the event at `index` of `events`, or the single `event` (-1). */
function eventName(index: number): string {
  return index < 0 ? "event" : `events[${index}]`;
}

/** What the walk of the last event measured saw (exceededBound's out-parameter, reused). */
const walked: WalkReport = { deepest: 0, prototypeKeys: false };

/** A 400 for the single event of `{"event"}` beyond a bound. */
function overBound(bound: EventBound, bounds: EventBounds): InvalidError {
  return new InvalidError(`field event: ${boundProblem(bound, bounds)}`);
}

function count(refused: Map<EventBound, number>, bound: EventBound): void {
  refused.set(bound, (refused.get(bound) ?? 0) + 1);
}

/**
 * The events of a parsed push body, checked (see {@link checkEvent}) and held to the bounds.
 * @param now the time of receipt in seconds, for events without a time
 * @returns the events within the bounds, the drops, and whether the walks of the events screened
 *   the whole body for prototype keys ({@link Screened})
 * @throws InvalidError for a body that is not a push, an invalid event, or a single event beyond
 *   a bound (naming it)
 */
export function acceptEvents(body: unknown, now: number, bounds: EventBounds): Screened {
  const push = pushBody(body, "");
  const refused = new Map<EventBound, number>();
  // Another top-level key holds a value that no walk below looks into.
  let screened = isPlainObject(body) && onlyPushKeys(body);
  if ("events" in push) {
    const events: Event[] = [];
    const items = push.events;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (!isPlainObject(item)) throw new InvalidError(`field events[${i}]: must be an object`);
      const bound = exceededBound(item, bounds, walked);
      if (bound === undefined) {
        // An event the walk did not see whole nests too deep: checkEvent throws.
        if (walked.prototypeKeys) screened = false;
        events.push(checkEvent(item, i, now, walked.deepest));
      } else {
        screened = false; // the walk stopped at the bound
        count(refused, bound);
      }
    }
    return { events, refused, screened };
  }
  const event = push.event;
  if (!isPlainObject(event)) return { events: [checkEvent(event, -1, now)], refused, screened };
  const bound = exceededBound(event, bounds, walked);
  if (bound !== undefined) throw overBound(bound, bounds);
  if (walked.prototypeKeys) screened = false;
  return { events: [checkEvent(event, -1, now, walked.deepest)], refused, screened };
}

/** Whether a push body has no key but `event` and `events`. */
function onlyPushKeys(body: Readonly<Record<string, unknown>>): boolean {
  for (const key in body) if (key !== "events" && key !== "event") return false;
  return true;
}

/**
 * Whether some object in a parsed JSON value has an own `__proto__` key, or an own `constructor`
 * key holding an object with an own `prototype` key: what Fastify's JSON parser (secure-json-parse
 * with `protoAction` and `constructorAction` "error") refuses, so that a body parsed without it is
 * answered alike. Iterative, so that a deeply nested value cannot exhaust the stack.
 */
export function hasPrototypeKeys(value: unknown): boolean {
  const pending = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    // A parsed array has no keys but its indices.
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
      continue;
    }
    if (!isPlainObject(node)) continue;
    if (Object.hasOwn(node, "__proto__")) return true;
    if (Object.hasOwn(node, "constructor")) {
      const held = node.constructor;
      if (typeof held === "object" && held !== null && Object.hasOwn(held, "prototype")) return true;
    }
    for (const key in node) pending.push(node[key]);
  }
  return false;
}

/**
 * Reads a body of at most {@link INLINE_BODY_BYTES}, at once, answered as if Fastify's JSON parser
 * had parsed it (`parse`), without its second pass over the text: V8's parser, then the walks of
 * the events look at every key on the usual path, and only a body they did not screen whole (an
 * event dropped at a bound, another top-level key, a key they flagged, an error) is searched again.
 * @throws InvalidError as acceptEvents, or `request body is not valid JSON`
 */
function acceptInlineBody(text: string, now: number, bounds: EventBounds, parse: JsonParser): Accepted {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // Fastify's parser words the error (and skips a byte-order mark, which JSON.parse refuses).
    return acceptEvents(parse(text), now, bounds);
  }
  let accepted: Screened;
  try {
    accepted = acceptEvents(body, now, bounds);
  } catch (error) {
    // Fastify's parser would have refused the body before any check of its events.
    if (hasPrototypeKeys(body)) throw new InvalidError(INVALID_JSON);
    throw error;
  }
  if (!accepted.screened && hasPrototypeKeys(body)) throw new InvalidError(INVALID_JSON);
  return accepted;
}

/** A value of a large body the scanner measured, or found not to be an object. */
interface Region {
  readonly start: number;
  readonly end: number;
  /** The bound it exceeded, if any; "not-object" when it is not an object (not measured). */
  readonly verdict: EventBound | "not-object" | undefined;
}

/** What the scanner saw of a push body: the shape {@link acceptEvents} checks, and the events' texts. */
class PushShape implements JsonVisitor {
  rootIsObject = false;
  /** The kind of the last `event` and `events` values (JSON keeps the last of repeated keys). */
  eventKind: JsonKind | undefined;
  eventsKind: JsonKind | undefined;
  event: Region | undefined;
  elements: Region[] = [];
  readonly #meter: EventMeter;
  /** What is being measured: the single event, or an element of `events`. */
  #measuring: "event" | "element" = "event";

  constructor(bounds: EventBounds) {
    this.#meter = new EventMeter(bounds);
  }

  enter(depth: number, path: readonly JsonPathItem[], kind: JsonKind, start: number): EventMeter | undefined {
    if (depth === 0) {
      this.rootIsObject = kind === "object";
      return undefined;
    }
    const key = path[0];
    if (depth === 1) {
      if (key === "event") {
        this.eventKind = kind;
        this.event = undefined;
        this.#measuring = "event";
        return kind === "object" ? this.#meter : undefined;
      }
      if (key === "events") {
        this.eventsKind = kind;
        this.elements = [];
      }
      return undefined;
    }
    // Depth 2: the items of `events`, when it is an array (of another key's value: nothing).
    if (key !== "events" || this.eventsKind !== "array" || typeof path[1] !== "number") return undefined;
    if (kind !== "object") {
      this.elements.push({ start, end: start, verdict: "not-object" });
      return undefined;
    }
    this.#measuring = "element";
    return this.#meter;
  }

  leave(start: number, end: number, meter: EventMeter): void {
    const region = { start, end, verdict: meter.exceeded };
    if (this.#measuring === "event") this.event = region;
    else this.elements.push(region);
  }
}

/**
 * Reads a large push body: scanned a slice per turn (the whole body must be JSON), then checked as
 * {@link acceptEvents} checks a parsed one, each event within the bounds parsed on its own.
 * @throws InvalidError as acceptEvents, or `request body is not valid JSON`
 */
async function acceptLargeBody(body: Buffer, now: number, bounds: EventBounds, parse: JsonParser): Promise<Accepted> {
  const shape = new PushShape(bounds);
  const scanner = new JsonScanner(body, 2, shape);
  const clock = new TurnClock();
  if (!(await scanSliced(scanner, clock))) throw new InvalidError(INVALID_JSON);
  if (!shape.rootIsObject) throw new InvalidError(NOT_AN_OBJECT);
  const text = (region: Region) => body.toString("utf8", region.start, region.end);
  const refused = new Map<EventBound, number>();
  if (shape.eventsKind !== undefined) {
    if (shape.eventKind !== undefined) throw new InvalidError(BOTH);
    if (shape.eventsKind !== "array") throw new InvalidError(NOT_AN_ARRAY);
    const events: Event[] = [];
    for (const [i, region] of shape.elements.entries()) {
      if (region.verdict === "not-object") throw new InvalidError(`field events[${i}]: must be an object`);
      if (region.verdict !== undefined) count(refused, region.verdict);
      else events.push(checkEvent(parse(text(region)), i, now));
      if (clock.due()) await clock.turn();
    }
    return { events, refused };
  }
  if (shape.eventKind === undefined) throw new InvalidError(NEITHER);
  const region = shape.event;
  if (region === undefined) throw new InvalidError("field event: must be an object");
  if (region.verdict !== undefined && region.verdict !== "not-object") throw overBound(region.verdict, bounds);
  return { events: [checkEvent(parse(text(region)), -1, now)], refused };
}

/** Fastify's default JSON parser, which refuses `__proto__` and `constructor.prototype` keys. */
type FastifyJsonParser = ReturnType<FastifyInstance["getDefaultJsonParser"]>;

/**
 * A {@link JsonParser} for one request, with Fastify's parser.
 * @throws InvalidError `request body is not valid JSON`
 */
function requestParser(fastifyParser: FastifyJsonParser, request: FastifyRequest): JsonParser {
  return (text) => {
    let parsed: unknown;
    let failed = false;
    fastifyParser(request, text, (error, value) => {
      failed = error !== null;
      parsed = value;
    });
    if (failed) throw new InvalidError(INVALID_JSON);
    return parsed;
  };
}

/** The route's entry in `GET /openapi.json`. */
const pushEvents: RouteDescription = {
  summary: "push one event or a list of events to a stream (default: every default stream)",
  body: pushBody,
  example: { event: { host: "web1", service: "cpu", metric: 93.5 } },
  success: { schema: MESSAGE },
  // 503: in a cluster, the events cannot reach the instance owning the stream.
  errors: [503],
};

/** Registers the push route in its own context, where JSON bodies arrive as raw bytes. */
export async function pushRoute(app: FastifyInstance, options: PushRouteOptions): Promise<void> {
  const { engine, bodyLimit, guard } = options;
  const fastifyParser = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer", bodyLimit }, (_request, body, done) =>
    done(null, body),
  );

  const routeOptions = { ...guardedOptions(bodyLimit, guard), config: { openapi: pushEvents } };
  /** Counts the dropped events and delivers the others; a promise while some are on their way. */
  const deliver = (name: string, streams: () => readonly Stream[], accepted: Accepted) => {
    for (const [bound, dropped] of accepted.refused) engine.refuse(name, "push", bound, dropped);
    // In cluster mode, the answer waits until the owner of each stream has the events.
    const pending = deliverSliced(engine, streams, accepted.events);
    return pending === undefined ? OK : pending.then(() => OK);
  };
  // Not an async function: the usual push (a small body, delivered at once) is answered in the
  // handler's own call, without a promise and a turn of the microtask queue.
  app.put<NamedRoute>("/api/v1/stream/:name", routeOptions, (request) => {
    const { name } = request.params;
    const streams = streamTargets(engine, name); // an unknown stream is a 404 before the body is read
    const parse = requestParser(fastifyParser, request);
    const body = request.body;
    const now = Date.now() / 1000;
    const bounds = engine.limits.event;
    if (body instanceof Buffer && body.length > INLINE_BODY_BYTES) {
      return acceptLargeBody(body, now, bounds, parse).then((accepted) => deliver(name, streams, accepted));
    }
    const accepted =
      body instanceof Buffer
        ? acceptInlineBody(body.toString("utf8"), now, bounds, parse)
        : acceptEvents(body, now, bounds);
    return deliver(name, streams, accepted);
  });
}

/** The answer of every push that went through. */
const OK = Object.freeze({ message: "ok" });
