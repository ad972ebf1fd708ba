/**
 * Events between modules: a module that produces events for the streams
 * (healthcheck results, new comments) depends on {@link EventSink}, never on the streams module.
 * `src/server.ts` hands every module one {@link EventRouter}; the streams module connects its
 * engine to it, and without the streams module every event is dropped and counted.
 */
import type { Counter } from "prom-client";

/** An event: a JSON object with a free schema (docs/streams.md); times are Unix seconds. */
export type SinkEvent = Record<string, unknown>;

/** Where a producer hands events, without knowing whether the streams module runs. */
export interface EventSink {
  /**
   * Hands events to the named stream, or to every `:default true` stream for "default". Never
   * throws and never awaits: an unknown stream is counted in
   * `vigie_event_sink_dropped_total{stream}` and logged at most once a minute per name.
   */
  push(stream: string, events: readonly SinkEvent[]): void;
}

/**
 * What the streams module connects: delivers events to a stream (or to the default streams for
 * "default", none being fine) and returns true, or returns false when no stream has that name.
 */
export type EventReceiver = (stream: string, events: readonly SinkEvent[]) => boolean;

/** What the router logs (a pino logger fits). */
export interface EventRouterLogger {
  warn(details: object, message: string): void;
}

/** Milliseconds between two log lines about the same unknown stream. */
const LOG_INTERVAL_MS = 60_000;

/** Stream names remembered for the log's rate limit; the memory starts over when full (a bound). */
const LOGGED_NAMES = 1024;

/** The event sink of one server: producers push, the streams module receives. */
export class EventRouter implements EventSink {
  #receiver: EventReceiver | undefined;
  #loggedAt = new Map<string, number>();
  readonly #dropped: (stream: string, count: number) => void;

  /**
   * @param dropped `vigie_event_sink_dropped_total{stream}` (events, not pushes)
   * @param logger where unknown streams are reported, once a minute per name
   * @param now a clock in milliseconds (tests)
   */
  constructor(
    dropped: Counter<"stream">,
    readonly logger: EventRouterLogger,
    readonly now: () => number = Date.now,
  ) {
    this.#dropped = (stream, count) => dropped.inc({ stream }, count);
  }

  /** Connects the streams engine (the streams module does, at start-up). */
  connect(receiver: EventReceiver): void {
    this.#receiver = receiver;
  }

  push(stream: string, events: readonly SinkEvent[]): void {
    if (events.length === 0) return;
    let delivered = false;
    try {
      delivered = this.#receiver?.(stream, events) ?? false;
    } catch {
      // A producer must never fail because of a stream: counted as dropped.
    }
    if (delivered) return;
    this.#dropped(stream, events.length);
    const now = this.now();
    const last = this.#loggedAt.get(stream);
    if (last !== undefined && now - last < LOG_INTERVAL_MS) return;
    if (this.#loggedAt.size >= LOGGED_NAMES) this.#loggedAt = new Map();
    this.#loggedAt.set(stream, now);
    this.logger.warn(
      { stream, events: events.length },
      this.#receiver === undefined
        ? `events for stream ${stream} dropped: the streams module is not enabled`
        : `events for stream ${stream} dropped: no stream has that name`,
    );
  }
}
