/**
 * Taps (`vigie stream tap`, docs/streams.md): watching the events entering a running stream, or
 * leaving the action of a `:tap-point`, over the subscriptions of the channel hub. A tap is a hub
 * channel of its own, `tap/<stream>` or `tap/<stream>/<point>`: no channel name has a `/`, so no
 * `publish` action reaches it and the channel route cannot subscribe to it. The hub gives it its
 * bounds (a slow watcher misses events, counted in `stream_publish_dropped_total{channel}`) and
 * tells when it gains its first watcher and loses its last, which is when the stream's tap starts
 * and stops: while nobody watches, a tap costs the stream one check of an undefined field.
 */

import { NotFoundError } from "../platform/errors.js";
import type { Flow } from "./action.js";
import type { ChannelHub } from "./channels.js";
import type { StreamEngine } from "./engine.js";

const PREFIX = "tap/";

/** The hub channel of a tap: `tap/<stream>`, or `tap/<stream>/<point>` for a tap point. */
export function tapChannel(stream: string, point: string | undefined): string {
  return point === undefined ? `${PREFIX}${stream}` : `${PREFIX}${stream}/${point}`;
}

/** The stream and tap point of a tap channel; `undefined` for any other channel. */
export function parseTapChannel(channel: string): { stream: string; point: string | undefined } | undefined {
  if (!channel.startsWith(PREFIX)) return undefined;
  const rest = channel.slice(PREFIX.length);
  const slash = rest.indexOf("/");
  return slash < 0
    ? { stream: rest, point: undefined }
    : { stream: rest.slice(0, slash), point: rest.slice(slash + 1) };
}

/**
 * Connects the taps of an engine's streams to a hub's tap channels, both ways: a stream that
 * starts while its tap is watched sends at once ({@link Taps.sinkFor}, the engine's `tapSink`
 * hook), and a stream already running starts or stops sending when its tap channel gains its
 * first watcher or loses its last ({@link Taps.activity}, the hub's `onActivity`).
 */
export class Taps {
  readonly #hub: () => ChannelHub;
  readonly #engine: () => StreamEngine;

  /** Both are read when needed: the hub and the engine are made after the Taps, each needing it. */
  constructor(hub: () => ChannelHub, engine: () => StreamEngine) {
    this.#hub = hub;
    this.#engine = engine;
  }

  /** The sink of a tap while it is watched, else `undefined` (the engine's `tapSink` hook). */
  sinkFor(stream: string, point: string | undefined): ((value: Flow) => void) | undefined {
    const hub = this.#hub();
    const channel = tapChannel(stream, point);
    return hub.hasSubscribers(channel) ? hub.publisher(channel) : undefined;
  }

  /** Starts or stops a stream's tap when its channel gains its first watcher or loses its last. */
  activity(channel: string, active: boolean): void {
    const tap = parseTapChannel(channel);
    if (tap === undefined) return;
    const stream = this.#engine().get(tap.stream);
    stream?.watch(tap.point, active ? this.#hub().publisher(channel) : undefined);
  }

  /**
   * The channel to subscribe to for watching a stream's entry or one of its tap points.
   * @throws NotFoundError when there is no such stream, or no such tap point in its configuration
   */
  channelOf(stream: string, point: string | undefined): string {
    const running = this.#engine().get(stream);
    if (running === undefined) throw new NotFoundError(`stream ${stream} not found`);
    if (point !== undefined && !running.hasTapPoint(point)) {
      throw new NotFoundError(`stream ${stream} has no :tap-point ${JSON.stringify(point)}`);
    }
    return tapChannel(stream, point);
  }
}
