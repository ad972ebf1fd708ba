/**
 * What one Riemann message does (streams-io.md §5), without sockets: decode the frame, push its
 * events into their streams, answer its query, and build the framed reply.
 *
 * - Events are checked first: when any names a stream (attribute `stream`) that does not exist, the
 *   reply is `ok: false` naming it and none of the message's events is pushed. Otherwise they are
 *   pushed in order (an event without `stream`, or with `stream` = `default`, goes to the default
 *   streams, as a push to `/api/v1/stream/default` does), then the reply is `ok: true`.
 * - A query runs after the events of its message and answers `ok: true` with the matching events
 *   of the index of `query-stream`, or of the merged indexes of the default streams sorted by time
 *   (an event indexed by several default streams, being one object, is listed once).
 * - An undecodable frame or an invalid query answers `ok: false` with the reason; the framing is
 *   intact, so the connection goes on.
 * - A message of more than {@link EVENTS_PER_SLICE} events is handled a slice per turn of the
 *   event loop; its reply comes once the last slice went through.
 */

import { setImmediate as nextTurn } from "node:timers/promises";
import type { Predicate } from "../condition.js";
import type { RiemannSettings } from "../config.js";
import type { StreamEngine } from "../engine.js";
import { type Event, timeOf } from "../event.js";
import type { RiemannMetrics } from "../metrics.js";
import {
  type DecodedEvent,
  errorFrame,
  eventsFrame,
  fromRiemann,
  MsgReader,
  OK_FRAME,
  targetStream,
} from "./protocol.js";
import { compileQuery } from "./query.js";

/**
 * Events decoded, mapped and pushed per turn of the event loop: a larger message is handled in
 * slices, so that other connections and HTTP requests are served in between.
 */
export const EVENTS_PER_SLICE = 4096;

/** Compiled queries kept for clients that repeat theirs (dashboards polling); the memory starts over when full. */
const QUERY_CACHE_SIZE = 256;

/** Longest stream name echoed in an error (a name comes from the network). */
const ECHO_LIMIT = 128;

/** The name used for the default streams, as in the HTTP push route. */
const DEFAULT_STREAM = "default";

function quoted(text: string): string {
  return JSON.stringify(text.length > ECHO_LIMIT ? `${text.slice(0, ECHO_LIMIT)}…` : text);
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Handles the messages of every connection of one Riemann input. */
export class RiemannHandler {
  readonly #queries = new Map<string, Predicate>();

  constructor(
    readonly settings: Pick<RiemannSettings, "query-stream">,
    readonly engine: StreamEngine,
    readonly metrics: RiemannMetrics,
  ) {}

  /**
   * Handles one frame's body (the bytes after the length prefix) and returns the framed reply: at
   * once for a message of at most {@link EVENTS_PER_SLICE} events, else a promise, the message
   * being handled a slice per turn of the event loop (see {@link #handleLarge}). Never throws nor
   * rejects: every failure is an `ok: false` reply.
   */
  handle(body: Uint8Array): Buffer | Promise<Buffer> {
    const reader = new MsgReader(body);
    const events: DecodedEvent[] = [];
    let complete: boolean;
    try {
      complete = reader.read(EVENTS_PER_SLICE, events);
    } catch (error) {
      return this.#fail(`undecodable message: ${reasonOf(error)}`);
    }
    if (!complete) return this.#handleLarge(body, reader, events);
    if (events.length > 0) {
      const unknown = this.#unknownStream(events);
      if (unknown !== undefined) return this.#unknown(unknown);
      this.#push(events, Date.now() / 1000);
    }
    return this.#answer(reader.query);
  }

  /**
   * A message of more than {@link EVENTS_PER_SLICE} events, a slice per turn of the event loop, so
   * that one large frame (up to `max-frame-size`, millions of events) never holds the loop for
   * seconds. First every event is decoded to check its target stream (none of the message's events
   * may be pushed when one names an unknown stream), then the body is decoded again, slice by slice,
   * and pushed: decoding twice keeps memory to one slice of events.
   */
  async #handleLarge(body: Uint8Array, reader: MsgReader, firstSlice: DecodedEvent[]): Promise<Buffer> {
    const now = Date.now() / 1000;
    let slice = firstSlice;
    try {
      for (;;) {
        const unknown = this.#unknownStream(slice);
        if (unknown !== undefined) return this.#unknown(unknown);
        await nextTurn();
        slice = [];
        if (reader.read(EVENTS_PER_SLICE, slice)) {
          const last = this.#unknownStream(slice);
          if (last !== undefined) return this.#unknown(last);
          break;
        }
      }
    } catch (error) {
      return this.#fail(`undecodable message: ${reasonOf(error)}`);
    }
    const again = new MsgReader(body);
    for (;;) {
      slice = [];
      // The bytes decoded once already: they decode again.
      const complete = again.read(EVENTS_PER_SLICE, slice);
      this.#push(slice, now);
      if (complete) break;
      await nextTurn();
    }
    return this.#answer(again.query);
  }

  /** The reply once the message's events went through: `ok`, or the events its query found. */
  #answer(query: { readonly string: string } | null): Buffer {
    if (query === null) {
      this.metrics.message("ok");
      return OK_FRAME;
    }
    try {
      const reply = eventsFrame(this.#search(query.string));
      this.metrics.message("ok");
      return reply;
    } catch (error) {
      return this.#fail(reasonOf(error));
    }
  }

  #unknown(stream: string): Buffer {
    return this.#fail(`unknown stream ${quoted(stream)}: no event of the message was pushed`);
  }

  /**
   * The framed `ok: false` reply to what could not be read as a message (a frame over the size
   * limit, one cut short by the end of the connection), counted like any error reply.
   */
  refuse(reason: string): Buffer {
    return this.#fail(reason);
  }

  #fail(reason: string): Buffer {
    this.metrics.message("error");
    return errorFrame(reason);
  }

  /** The first target stream that does not exist, if any. */
  #unknownStream(events: readonly DecodedEvent[]): string | undefined {
    for (const source of events) {
      const stream = targetStream(source);
      if (stream !== undefined && stream !== DEFAULT_STREAM && this.engine.get(stream) === undefined) return stream;
    }
    return undefined;
  }

  /**
   * Maps and pushes the events, in order, one push per run of events with the same target.
   * @param now the time of receipt in seconds, for events without a time
   */
  #push(sources: readonly DecodedEvent[], now: number): void {
    const count = sources.length;
    if (count === 0) return;
    const events: Event[] = new Array(count);
    const targets: (string | undefined)[] = new Array(count);
    let single = true;
    let i = 0;
    for (const source of sources) {
      events[i] = fromRiemann(source, now);
      const target = targetStream(source);
      targets[i] = target === DEFAULT_STREAM ? undefined : target;
      if (targets[i] !== targets[0]) single = false;
      i++;
    }
    if (single) this.#pushTo(targets[0], events);
    else {
      let start = 0;
      for (let end = 1; end <= count; end++) {
        if (end === count || targets[end] !== targets[start]) {
          this.#pushTo(targets[start], events.slice(start, end));
          start = end;
        }
      }
    }
    this.metrics.events(count);
  }

  #pushTo(target: string | undefined, events: Event[]): void {
    if (target === undefined) this.engine.pushDefault(events);
    // Checked by #unknownStream; nothing between the check and here can remove a stream.
    else this.engine.get(target)?.push(events);
  }

  /**
   * The indexed events matching a query.
   * @throws QueryError for an invalid query; Error when `query-stream` names no stream
   */
  #search(text: string): Event[] {
    const predicate = this.#compile(text);
    const name = this.settings["query-stream"];
    if (name !== undefined) {
      const stream = this.engine.get(name);
      if (stream === undefined) throw new Error(`the query stream ${quoted(name)} does not exist`);
      return stream.index.search(predicate);
    }
    const defaults = this.engine.defaults;
    const [first] = defaults;
    if (defaults.length === 1 && first !== undefined) return first.index.search(predicate);
    // An event pushed to `default` is the same object in every default stream's index: listed once.
    const found = [...new Set(defaults.flatMap((stream) => stream.index.search(predicate)))];
    // Indexed events always have a time; the sort is stable, so ties keep each index's key order.
    return found.sort((a, b) => (timeOf(a) ?? 0) - (timeOf(b) ?? 0));
  }

  #compile(text: string): Predicate {
    let predicate = this.#queries.get(text);
    if (predicate === undefined) {
      predicate = compileQuery(text);
      if (this.#queries.size >= QUERY_CACHE_SIZE) this.#queries.clear();
      this.#queries.set(text, predicate);
    }
    return predicate;
  }
}
