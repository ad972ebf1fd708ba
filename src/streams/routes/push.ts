/**
 * The push route: `PUT /api/v1/stream/<name>` with `{"event": {...}}` or `{"events": [...]}`, up
 * to `streams.ingestion-body-limit` bytes.
 *
 * Every event is held to the event bounds (`streams.max-event-*`): the single event of `{"event"}`
 * beyond one is a 400 naming it; an event of `{"events"}` beyond one is dropped and counted in
 * `stream_dropped_events_total{stream,action="push",reason}`, and the others are pushed.
 *
 * The route reads its body itself, so that no request holds the event loop for long: a body of at
 * most {@link INLINE_BODY_BYTES} is parsed at once (Fastify's JSON parser, which refuses
 * `__proto__` keys); a larger one is checked by a validating scanner a slice per turn of the event
 * loop, measuring each event as it reads it, then each event within the bounds is parsed on its
 * own, again a slice per turn. Either way the events are pushed a chunk at a time (slices.ts).
 * What the route answers does not depend on the path taken.
 */
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from "fastify";
import { INVALID_JSON, InvalidError } from "../../platform/errors.js";
import type { RouteDescription } from "../../platform/openapi.js";
import { described, isPlainObject } from "../../platform/validation.js";
import type { StreamEngine } from "../engine.js";
import { type Event, MAX_EVENT_NESTING, nestsDeeperThan } from "../event.js";
import { boundProblem, type EventBound, type EventBounds, EventMeter, exceededBound } from "../event-bounds.js";
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
 * @param where how messages name it: `event`, `events[3]`
 * @param deepest how deeply it nests, when a walk found out already (exceededBound): a shallow
 *   event is not walked again
 * @throws InvalidError naming the field and the rule
 */
function checkEvent(event: unknown, where: string, now: number, deepest = Number.POSITIVE_INFINITY): Event {
  if (!isPlainObject(event)) throw new InvalidError(`field ${where}: must be an object`);
  if (deepest > MAX_EVENT_NESTING && nestsDeeperThan(event, MAX_EVENT_NESTING)) {
    throw new InvalidError(
      `field ${where}: must not nest objects and arrays more than ${MAX_EVENT_NESTING} levels deep`,
    );
  }
  const time = event.time;
  if (time === undefined || time === null) event.time = now;
  else if (typeof time !== "number" || !Number.isFinite(time)) {
    throw new InvalidError(`field ${where}.time: must be a number of seconds`);
  }
  const ttl = event.ttl;
  if (ttl !== undefined && ttl !== null && (typeof ttl !== "number" || !Number.isFinite(ttl))) {
    throw new InvalidError(`field ${where}.ttl: must be a number of seconds`);
  }
  return event;
}

/** How deeply the last event measured nests (exceededBound's out-parameter, reused). */
const walked = { deepest: 0 };

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
 * @throws InvalidError for a body that is not a push, an invalid event, or a single event beyond
 *   a bound (naming it)
 */
export function acceptEvents(body: unknown, now: number, bounds: EventBounds): Accepted {
  const push = pushBody(body, "");
  const refused = new Map<EventBound, number>();
  if ("events" in push) {
    const events: Event[] = [];
    const items = push.events;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (!isPlainObject(item)) throw new InvalidError(`field events[${i}]: must be an object`);
      const bound = exceededBound(item, bounds, walked);
      if (bound === undefined) events.push(checkEvent(item, `events[${i}]`, now, walked.deepest));
      else count(refused, bound);
    }
    return { events, refused };
  }
  const event = push.event;
  if (isPlainObject(event)) {
    const bound = exceededBound(event, bounds);
    if (bound !== undefined) throw overBound(bound, bounds);
  }
  return { events: [checkEvent(event, "event", now)], refused };
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
      else events.push(checkEvent(parse(text(region)), `events[${i}]`, now));
      if (clock.due()) await clock.turn();
    }
    return { events, refused };
  }
  if (shape.eventKind === undefined) throw new InvalidError(NEITHER);
  const region = shape.event;
  if (region === undefined) throw new InvalidError("field event: must be an object");
  if (region.verdict !== undefined && region.verdict !== "not-object") throw overBound(region.verdict, bounds);
  return { events: [checkEvent(parse(text(region)), "event", now)], refused };
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
  app.put<NamedRoute>("/api/v1/stream/:name", routeOptions, async (request) => {
    const { name } = request.params;
    const streams = streamTargets(engine, name); // an unknown stream is a 404 before the body is read
    const parse = requestParser(fastifyParser, request);
    const body = request.body;
    const now = Date.now() / 1000;
    const bounds = engine.limits.event;
    const accepted =
      body instanceof Buffer && body.length > INLINE_BODY_BYTES
        ? await acceptLargeBody(body, now, bounds, parse)
        : acceptEvents(body instanceof Buffer ? parse(body.toString("utf8")) : body, now, bounds);
    for (const [bound, dropped] of accepted.refused) engine.refuse(name, "push", bound, dropped);
    // In cluster mode, the answer waits until the owner of each stream has the events.
    const pending = deliverSliced(engine, streams, accepted.events);
    if (pending !== undefined) await pending;
    return { message: "ok" };
  });
}
