/**
 * What the I/O actions (`output`, `publish`, `async-queue`, `io`; docs/streams.md)
 * reach: the outputs and async queues the configuration declares, the WebSocket channels. The
 * server wires the real ones; `vigie stream test` wires {@link testIo}, which contacts nothing.
 */
import type { Flow, Next } from "./action.js";

/** The names a stream configuration may use; anything else is a compile error (docs/streams.md). */
export interface Declarations {
  /** The names of the declared outputs (`outputs:` and `streams.outputs`). */
  readonly outputs: ReadonlySet<string>;
  /** The names of `streams.async-queues`. */
  readonly asyncQueues: ReadonlySet<string>;
}

/** Nothing declared: a configuration using `output` or `async-queue` does not compile. */
export const NO_DECLARATIONS: Declarations = { outputs: new Set(), asyncQueues: new Set() };

/**
 * The declarations of a `streams` section (its `outputs` and `async-queues` maps) and of the
 * top-level `outputs` (`platformOutputs`, their names).
 */
export function declarationsOf(
  section: {
    readonly outputs: Readonly<Record<string, unknown>>;
    readonly "async-queues": Readonly<Record<string, unknown>>;
  },
  platformOutputs: Iterable<string>,
): Declarations {
  return {
    outputs: new Set([...platformOutputs, ...Object.keys(section.outputs)]),
    asyncQueues: new Set(Object.keys(section["async-queues"])),
  };
}

/**
 * Where the I/O actions send what reaches them. Every function is resolved once when an action is
 * built (per stream, per `by` fork), so the hot path costs one call; none blocks or awaits.
 */
export interface StreamIo {
  readonly declarations: Declarations;
  /**
   * The sink of a declared output: enqueues an event, or each event of a list, and returns at once
   * (a full queue drops and counts).
   * @param stream the stream of the action (test taps are per stream)
   */
  output(name: string, stream: string): (value: Flow) => void;
  /** The publisher of a channel: sends an event, or each event of a list, to its subscribers. */
  publish(channel: string, stream: string): (value: Flow) => void;
  /** The enqueuer of a declared async queue: `next(value)` runs later, in order, or is dropped. */
  asyncQueue(name: string, stream: string): (next: Next, value: Flow) => void;
  /** False under `vigie stream test`, where `io` discards what reaches it. */
  readonly runsIo: boolean;
}

const ignore = () => {};

/**
 * I/O for engines without a server (unit tests, benchmarks): outputs and publications go nowhere,
 * async queues run inline, `io` forwards.
 */
export function detachedIo(declarations: Declarations = NO_DECLARATIONS): StreamIo {
  return {
    declarations,
    output: () => ignore,
    publish: () => ignore,
    asyncQueue: () => (next, value) => next(value),
    runsIo: true,
  };
}

/**
 * The I/O of `vigie stream test` (docs/streams.md): `output` and `publish` record what reaches them
 * into the tap of the same name (a list as one element, as a tap does), async queues run inline,
 * `io` discards. Nothing is contacted.
 */
export function testIo(declarations: Declarations, tap: (stream: string, name: string, value: Flow) => void): StreamIo {
  return {
    declarations,
    output: (name, stream) => (value) => tap(stream, name, value),
    publish: (channel, stream) => (value) => tap(stream, channel, value),
    asyncQueue: () => (next, value) => next(value),
    runsIo: false,
  };
}
