/**
 * What one Riemann message does (docs/streams.md), without sockets: decode the frame, push its
 * events into their streams, answer its query, and build the framed reply.
 *
 * - Events are checked first: when any names a stream (attribute `stream`) that does not exist, the
 *   reply is `ok: false` naming it and none of the message's events is pushed. Otherwise they are
 *   pushed in order (an event without `stream`, or with `stream` = `default`, goes to the default
 *   streams, as a push to `/api/v1/stream/default` does), then the reply is `ok: true`.
 * - A stream removed (API, SIGHUP) after that check and before its events were pushed (a large
 *   message awaits between slices; a stream's own actions may remove streams) loses them: the reply
 *   is then `ok: false` naming the stream and how many of its events were not pushed (the others
 *   were), never `ok: true`.
 * - An event over one of the event bounds (`streams.max-event-*`) is skipped without being decoded
 *   and counted in `stream_dropped_events_total{stream="",action="riemann",reason}` once the
 *   message's events are pushed; the others go on, and the reply is `ok: true`.
 * - A query runs after the events of its message and answers `ok: true` with the matching events
 *   of the index of `query-stream`, or of the merged indexes of the default streams sorted by time
 *   (an event indexed by several default streams, being one object, is listed once). A query that
 *   matches more than `max-query-results` events, or whose reply would be larger than
 *   `streams.max-query-bytes`, answers `ok: false` naming the setting. The indexes are searched and
 *   the reply encoded a slice per turn of the event loop (query-answer.ts).
 * - An undecodable frame or an invalid query answers `ok: false` with the reason; the framing is
 *   intact, so the connection goes on.
 * - A message of more than {@link EVENTS_PER_SLICE} events is handled a slice per turn of the
 *   event loop; its reply comes once the last slice went through. After {@link RiemannHandler.stop}
 *   (the server closes) it stops at its next slice: what was not pushed is not, and it is unanswered.
 */

import { setImmediate as nextTurn } from "node:timers/promises";
import { errorMessage } from "../../platform/errors.js";
import type { Predicate } from "../condition.js";
import type { RiemannSettings } from "../config.js";
import type { Stream, StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import type { RiemannMetrics } from "../metrics.js";
import { DEFAULT_STREAM } from "../names.js";
import { type AnswerBounds, encodeAnswer, searchParts } from "../query-answer.js";
import {
  type DecodedEvent,
  EVENTS_FRAME_OVERHEAD,
  errorFrame,
  eventsFrameOf,
  fromRiemann,
  MsgReader,
  OK_FRAME,
  type RefusedEvents,
  replyEventField,
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

/** Removed streams named in one error reply; the others are counted (the reply stays short). */
const NAMED_REMOVED_STREAMS = 3;

function quoted(text: string): string {
  return JSON.stringify(text.length > ECHO_LIMIT ? `${text.slice(0, ECHO_LIMIT)}…` : text);
}

/** The events an owner answered (a JSON array of them). */
function eventsOf(answer: unknown): Event[] {
  return Array.isArray(answer) ? answer : [];
}

/** Events of a message that were not pushed because their stream was removed meanwhile, by stream. */
type Lost = Map<string, number>;

/** Acknowledgements of events forwarded to the owners of their streams (cluster mode). */
type Forwarded = Array<Promise<void>>;

/** Handles the messages of every connection of one Riemann input. */
export class RiemannHandler {
  readonly #queries = new Map<string, Predicate>();
  /** Set by {@link stop}: large messages stop at their next slice. */
  #stopping = false;

  /** The bounds of a query's reply. */
  readonly #answerBounds: AnswerBounds;

  constructor(
    readonly settings: Pick<RiemannSettings, "query-stream" | "max-query-results">,
    readonly engine: StreamEngine,
    readonly metrics: Pick<RiemannMetrics, "message" | "events">,
  ) {
    const own = settings["max-query-results"];
    this.#answerBounds = {
      results: own ?? engine.limits.queryResults,
      bytes: engine.limits.queryBytes,
      resultsSetting: own === undefined ? "streams.max-query-results" : "streams.riemann.max-query-results",
      regexAllowance: engine.limits.event.size,
      what: "query",
    };
  }

  /**
   * Stops the messages being handled in slices at their next slice, unanswered, their remaining
   * events not pushed (the server is closing: the module flushes its async queues and drains its
   * outputs next, and must not see events arrive afterwards). Messages handled at once are not
   * affected; there is no way back.
   */
  stop(): void {
    this.#stopping = true;
  }

  /**
   * Handles one frame's body (the bytes after the length prefix) and returns the framed reply: at
   * once for a message of at most {@link EVENTS_PER_SLICE} events, else a promise, the message
   * being handled a slice per turn of the event loop (see {@link #handleLarge}); the promise
   * resolves to undefined when {@link stop} interrupted it (no reply: the connection is closing).
   * Never throws nor rejects: every failure is an `ok: false` reply.
   * @param answerQueries false for a message that gets no reply (UDP): its query, if any, is not
   *   run, and the reply is {@link OK_FRAME} once its events went through
   */
  handle(body: Uint8Array, answerQueries = true): Buffer | Promise<Buffer | undefined> {
    const reader = new MsgReader(body, this.engine.limits.event);
    const events: DecodedEvent[] = [];
    let complete: boolean;
    try {
      complete = reader.read(EVENTS_PER_SLICE, events);
    } catch (error) {
      return this.#fail(`undecodable message: ${errorMessage(error)}`);
    }
    if (!complete) return this.#handleLarge(body, reader, events, answerQueries);
    const lost: Lost = new Map();
    const forwarded: Forwarded = [];
    if (events.length > 0) {
      const unknown = this.#unknownStream(events);
      if (unknown !== undefined) return this.#unknown(unknown);
      this.#push(events, Date.now() / 1000, lost, forwarded);
    }
    this.#refused(reader.refused);
    const query = answerQueries ? reader.query : null;
    if (forwarded.length > 0) return this.#afterForwarded(forwarded, () => this.#answer(query, lost));
    return this.#answer(query, lost);
  }

  /**
   * Cluster mode: the reply once the owners of the message's streams have its events (JetStream
   * acknowledged them, docs/cluster.md), or an error reply when one could not be reached.
   */
  async #afterForwarded(forwarded: Forwarded, answer: () => Buffer | Promise<Buffer>): Promise<Buffer> {
    try {
      await Promise.all(forwarded);
    } catch (error) {
      return this.#fail(errorMessage(error));
    }
    return answer();
  }

  /**
   * A message of more than {@link EVENTS_PER_SLICE} events, a slice per turn of the event loop, so
   * that one large frame (up to `max-frame-size`, millions of events) never holds the loop for
   * seconds. First every event is decoded to check its target stream (none of the message's events
   * may be pushed when one names an unknown stream), then the body is decoded again, slice by slice,
   * and pushed: decoding twice keeps memory to one slice of events. Streams may be removed during
   * the awaits: events whose stream is gone are counted, and the reply names it.
   * @returns the reply, or undefined when {@link stop} was called meanwhile (nothing more is pushed)
   */
  async #handleLarge(
    body: Uint8Array,
    reader: MsgReader,
    firstSlice: DecodedEvent[],
    answerQueries: boolean,
  ): Promise<Buffer | undefined> {
    const now = Date.now() / 1000;
    let slice = firstSlice;
    try {
      for (;;) {
        const unknown = this.#unknownStream(slice);
        if (unknown !== undefined) return this.#unknown(unknown);
        await nextTurn();
        if (this.#stopping) return undefined;
        slice = [];
        if (reader.read(EVENTS_PER_SLICE, slice)) {
          const last = this.#unknownStream(slice);
          if (last !== undefined) return this.#unknown(last);
          break;
        }
      }
    } catch (error) {
      return this.#fail(`undecodable message: ${errorMessage(error)}`);
    }
    const again = new MsgReader(body, this.engine.limits.event);
    const lost: Lost = new Map();
    const forwarded: Forwarded = [];
    for (;;) {
      slice = [];
      // The bytes decoded once already: they decode again.
      const complete = again.read(EVENTS_PER_SLICE, slice);
      this.#push(slice, now, lost, forwarded);
      if (complete) break;
      await nextTurn();
      if (this.#stopping) return undefined;
    }
    this.#refused(again.refused);
    const query = answerQueries ? again.query : null;
    if (forwarded.length > 0) return this.#afterForwarded(forwarded, () => this.#answer(query, lost));
    return this.#answer(query, lost);
  }

  /** Counts the events of a message skipped for exceeding an event bound. */
  #refused(refused: RefusedEvents): void {
    // The target of a skipped event is one of its attributes, never read: no stream label.
    for (const [bound, count] of refused) this.engine.refuse("", "riemann", bound, count);
  }

  /**
   * The reply once the message's events went through: `ok`, or the events its query found; or an
   * error when events were lost to a removed stream (the query is then not answered).
   */
  #answer(query: { readonly string: string } | null, lost: Lost): Buffer | Promise<Buffer> {
    if (lost.size > 0) return this.#fail(removedStreams(lost));
    if (query === null) {
      this.metrics.message("ok");
      return OK_FRAME;
    }
    return this.#query(query.string);
  }

  /**
   * The reply to a query: the events found in the query streams' indexes, each owner searching its
   * own in cluster mode, merged, bounded and sorted by time.
   */
  async #query(text: string): Promise<Buffer> {
    const bounds = this.#answerBounds;
    try {
      const predicate = this.#compile(text); // an invalid query fails here, without asking anyone
      const parts = this.#queryStreams().flatMap((stream) => stream.parts);
      const forwarder = this.engine.forwarder;
      const limit = bounds.results;
      // Cluster mode: each part is searched by its owner (this instance for those it runs).
      const found = await searchParts(
        parts,
        (key) => forwarder === undefined || forwarder.owns(key),
        predicate,
        bounds,
        async (key) => eventsOf(await forwarder?.ask(key, { kind: "riemann-search", query: text, limit }, bounds)),
      );
      const reply = await encodeAnswer(found, replyEventField, eventsFrameOf, () => EVENTS_FRAME_OVERHEAD, bounds);
      this.metrics.message("ok");
      return reply;
    } catch (error) {
      return this.#fail(errorMessage(error));
    }
  }

  /**
   * The streams a query searches: `query-stream`, or the default streams.
   * @throws Error when `query-stream` names no stream
   */
  #queryStreams(): readonly Stream[] {
    const name = this.settings["query-stream"];
    if (name === undefined) return this.engine.defaults;
    const stream = this.engine.get(name);
    if (stream === undefined) throw new Error(`the query stream ${quoted(name)} does not exist`);
    return [stream];
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
   * Maps and pushes the events, in order, one push per run of events with the same target, and
   * counts those pushed.
   * @param now the time of receipt in seconds, for events without a time
   * @param lost where the events of streams that no longer exist are counted, by stream
   * @param forwarded where the acknowledgements of events forwarded to other instances go
   */
  #push(sources: readonly DecodedEvent[], now: number, lost: Lost, forwarded: Forwarded): void {
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
    let pushed = 0;
    const pushRun = (target: string | undefined, run: Event[]) => {
      if (this.#pushTo(target, run, forwarded)) pushed += run.length;
      else if (target !== undefined) lost.set(target, (lost.get(target) ?? 0) + run.length);
    };
    if (single) pushRun(targets[0], events);
    else {
      let start = 0;
      for (let end = 1; end <= count; end++) {
        if (end === count || targets[end] !== targets[start]) {
          pushRun(targets[start], events.slice(start, end));
          start = end;
        }
      }
    }
    if (pushed > 0) this.metrics.events(pushed);
  }

  /**
   * Pushes a run of events to their stream (undefined: the default streams, none being fine).
   * @returns false when the named stream no longer exists: #unknownStream checked it, but a large
   *   message awaits between the check and the pushes, and a stream's actions run during pushes,
   *   so it may have been removed (API, SIGHUP) since
   */
  #pushTo(target: string | undefined, events: Event[], forwarded: Forwarded): boolean {
    let pending: Promise<void> | undefined;
    if (target === undefined) pending = this.engine.deliver(this.engine.defaults, events);
    else {
      const stream = this.engine.get(target);
      if (stream === undefined) return false;
      pending = this.engine.deliver([stream], events);
    }
    if (pending !== undefined) forwarded.push(pending);
    return true;
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

/**
 * The error of a message whose events were lost to removed streams: the first
 * {@link NAMED_REMOVED_STREAMS} streams by name, with their counts, and how many others.
 */
function removedStreams(lost: Lost): string {
  const named: string[] = [];
  for (const [stream, count] of lost) {
    if (named.length === NAMED_REMOVED_STREAMS) break;
    named.push(
      `stream ${quoted(stream)} was removed while the message was handled: ${count} of its events were not pushed`,
    );
  }
  const others = lost.size - named.length;
  if (others > 0) named.push(`and ${others} more removed stream${others === 1 ? "" : "s"}`);
  return named.join("; ");
}
