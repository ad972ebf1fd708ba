/**
 * The shapes an action compiles to. Compilation (compiler.ts) turns each node of the configuration
 * into a {@link Builder} once; building it for a stream (or for each fork of a `by`) gives the
 * {@link Next} closure that events go through. State lives in those closures, never in globals.
 */
import type { Predicate } from "./condition.js";
import type { EdnValue } from "./edn.js";
import type { Event } from "./event.js";
import { DEFAULT_EVENT_BOUNDS, type EventBounds } from "./event-bounds.js";
import type { Declarations } from "./io.js";
import type { StreamIndex } from "./stream-index.js";

/** What flows between actions: one event, or a list of events (from a window). */
export type Flow = Event | Event[];

/** Receives what an action forwards. */
export type Next = (value: Flow) => void;

/** Where `reinject` and `reaper` send events: this stream, the default streams, or a named stream. */
export type Destination =
  | { readonly kind: "self" }
  | { readonly kind: "default" }
  | { readonly kind: "stream"; readonly name: string };

/**
 * Bounds of the streams: the state a stream keeps (what goes beyond is dropped and counted in
 * `stream_dropped_events_total{stream,action}`), the events that enter them, and the answers of
 * index searches and queries.
 */
export interface StreamLimits {
  /** Keys in a stream's index (`streams.max-index-size`); an event with a new key beyond is dropped. */
  readonly indexSize: number;
  /** Forks of one `by` action (`streams.max-forks`); an event needing a new fork beyond is dropped. */
  readonly forks: number;
  /**
   * Events a time window holds (`streams.max-window-events`): fixed time windows (and sum, mean,
   * top, bottom, rate) drop events beyond; a moving time window drops its oldest event.
   */
  readonly windowEvents: number;
  /** The bounds of one event on every way in (`streams.max-event-*`). */
  readonly event: EventBounds;
  /** Events an index search or query answers at most (`streams.max-query-results`). */
  readonly queryResults: number;
  /** Bytes of an index search's or query's answer at most (`streams.max-query-bytes`). */
  readonly queryBytes: number;
}

/** The defaults of {@link StreamLimits}. */
export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  indexSize: 1_000_000,
  forks: 100_000,
  windowEvents: 1_000_000,
  event: DEFAULT_EVENT_BOUNDS,
  queryResults: 10_000,
  queryBytes: 16 * 1024 * 1024,
};

/** What one running stream offers its actions. */
export interface Runtime {
  /** The bounds of the stream's state. */
  readonly limits: StreamLimits;
  /** The stream's name (logs, metrics). */
  readonly stream: string;
  readonly index: StreamIndex;
  /** Pushes an event into another stream, the default streams or this one. */
  reinject(destination: Destination, event: Event): void;
  /** Logs an event at a level (`info`, `debug`, `error` actions). */
  log(level: "info" | "debug" | "error", value: Flow): void;
  /** Records what reaches a `tap` (only `vigie stream test` records; a server ignores taps). */
  tap(name: string, value: Flow): void;
  /**
   * The counter of events an action skipped (`stream_dropped_events_total{stream,action}`),
   * resolved once when the action is built so that counting costs one call.
   */
  dropped(action: string): () => void;
  /** The sink of a declared output (see StreamIo.output), resolved when the action is built. */
  output(name: string): (value: Flow) => void;
  /** The publisher of a channel (see StreamIo.publish), resolved when the action is built. */
  publish(channel: string): (value: Flow) => void;
  /** The enqueuer of a declared async queue (see StreamIo.asyncQueue). */
  asyncQueue(name: string): (next: Next, value: Flow) => void;
  /** False under `vigie stream test`, where `io` discards. */
  readonly runsIo: boolean;
  /**
   * The stream's per-action event counter of a slot the compiler gave a node (the graph's `in` and
   * `out`), resolved once when the action is built; `undefined` (or no method) counts nothing.
   */
  counter?(slot: number): EventCounter | undefined;
  /**
   * The slot of a tap point (`:tap-point` on an action node), resolved once when the action is
   * built; `undefined` (or no method) taps nothing.
   */
  tapPoint?(point: string): TapSlot | undefined;
}

/** What an action received or emitted since its stream started: values (an event, or a list). */
export interface EventCounter {
  count: number;
}

/**
 * Where a tapped value goes: `sink` is set while someone watches (`vigie stream tap`) and
 * `undefined` otherwise, so that a tap nobody watches costs one check of this field.
 */
export interface TapSlot {
  sink: ((value: Flow) => void) | undefined;
}

/** Builds a fresh instance of a compiled action (and its children) for a runtime. */
export type Builder = (runtime: Runtime) => Next;

/** Compiles one action from its params and its compiled children. */
export interface ActionDefinition {
  /**
   * @param params the node's `:params` (EDN), already known to be a sequence
   * @param children the compiled children
   * @param path the node's path for errors (`actions.children[0]`)
   * @param declarations the outputs and async queues the configuration declares
   * @throws CompileError when the params are invalid
   */
  compile(params: readonly EdnValue[], children: readonly Builder[], path: string, declarations: Declarations): Builder;
  /** Leaf actions refuse children. */
  readonly leaf?: boolean;
  /**
   * The action sends each value to some of its children only, or gives them different roles
   * (`split`, `exception-stream`), rather than forwarding every value to every child: what leaves
   * it is what all its children receive together, and a `:tap-point` on it taps each child's input.
   */
  readonly routes?: boolean;
}

/** Does nothing: the next of an action without children. */
export const discard: Next = () => {};

/** One Next that forwards to every child in order. */
export function fanOut(children: readonly Next[]): Next {
  const [first, second] = children;
  if (first === undefined) return discard;
  if (children.length === 1) return first;
  if (children.length === 2 && second !== undefined) {
    return (value) => {
      first(value);
      second(value);
    };
  }
  return (value) => {
    for (const child of children) child(value);
  };
}

/** Builds every child for a runtime and joins them with {@link fanOut}. */
export function buildChildren(children: readonly Builder[], runtime: Runtime): Next {
  return fanOut(children.map((child) => child(runtime)));
}

/**
 * A filter: forwards single events for which `keep` is true; a list (from a window) cannot be
 * filtered by an event condition and is counted as dropped.
 */
export function filtering(action: string, keep: Predicate, children: readonly Builder[]): Builder {
  return counting(action, children, (next, drop, _limits, counter) => (value) => {
    counter.count++;
    if (Array.isArray(value)) drop();
    else if (keep(value)) next(value);
  });
}

/**
 * A transformation of single events: `transform` returns the new event, or `undefined` when it
 * cannot apply (skipped and counted as dropped; it never aborts the push).
 */
export function transforming(
  action: string,
  children: readonly Builder[],
  transform: (event: Event) => Event | undefined,
): Builder {
  return counting(action, children, (next, drop, _limits, counter) => (value) => {
    counter.count++;
    const result = Array.isArray(value) ? undefined : transform(value);
    if (result === undefined) drop();
    else next(result);
  });
}

/**
 * Builds an action on single events that keeps state per instance: `create` receives the joined
 * children, the action's dropped-events counter and the stream's limits, and returns what each
 * event does. A list (from a window) is not an event and is counted as dropped.
 */
export function onEvents(
  action: string,
  children: readonly Builder[],
  create: (next: Next, drop: () => void, limits: StreamLimits) => (event: Event) => void,
): Builder {
  return counting(action, children, (next, drop, limits, counter) => {
    const handle = create(next, drop, limits);
    return (value) => {
      counter.count++;
      if (Array.isArray(value)) drop();
      else handle(value);
    };
  });
}

/**
 * The counter slot of the node being compiled (compiler.ts), until an action built on these
 * helpers claims it: such an action counts what it receives inside its own closure, which costs
 * one increment per value where the compiler's counting wrapper costs a call.
 */
let compilingSlot: number | undefined;

/**
 * Runs the compilation of one action node with its counter slot up for claiming.
 * @returns what `compile` returned, and whether the action claimed the slot (then it counts itself)
 */
export function compilingNode<T>(slot: number, compile: () => T): { result: T; claimed: boolean } {
  compilingSlot = slot;
  try {
    const result = compile();
    return { result, claimed: compilingSlot === undefined };
  } finally {
    compilingSlot = undefined;
  }
}

/**
 * Claims the counter slot of the node being compiled, once: the caller promises to count each value
 * the node receives in `counterOf(runtime, slot)`. `undefined` outside a compilation or once claimed.
 */
export function claimCounter(): number | undefined {
  const slot = compilingSlot;
  compilingSlot = undefined;
  return slot;
}

/** Where counts go when the runtime keeps none (an action built outside a stream, in tests). */
const UNCOUNTED: EventCounter = { count: 0 };

/** The counter of a claimed slot for a runtime, resolved once when the action is built. */
export function counterOf(runtime: Runtime, slot: number | undefined): EventCounter {
  return slot === undefined ? UNCOUNTED : (runtime.counter?.(slot) ?? UNCOUNTED);
}

/**
 * {@link withChildren} for an action that counts what it receives: it claims the node's counter
 * slot at compile time, and `create` also receives the counter to increment once per value.
 */
export function counting(
  action: string,
  children: readonly Builder[],
  create: (next: Next, drop: () => void, limits: StreamLimits, counter: EventCounter) => Next,
): Builder {
  const slot = claimCounter();
  return (runtime) =>
    create(buildChildren(children, runtime), runtime.dropped(action), runtime.limits, counterOf(runtime, slot));
}

/**
 * Builds an action that keeps state per instance: `create` receives the joined children, the
 * action's dropped-events counter and the stream's limits, and returns the instance's Next
 * (closing over its state).
 */
export function withChildren(
  action: string,
  children: readonly Builder[],
  create: (next: Next, drop: () => void, limits: StreamLimits) => Next,
): Builder {
  return (runtime) => create(buildChildren(children, runtime), runtime.dropped(action), runtime.limits);
}
