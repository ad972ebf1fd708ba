/**
 * The one delivery model of every output type (docs/outputs.md): a bounded queue per output,
 * batches that leave when full or `flush-interval` after their first event, one batch in flight at a
 * time (order kept), retries with backoff on network errors, timeouts, 5xx and 429 until
 * `max-retry-time`, no retry on other refusals, and a graceful drain. What differs between types
 * (how a batch is encoded, where it goes) is a {@link Transport}.
 *
 * The push path ({@link OutputQueue.sink}) only stores the event: encoding, sending, timers and
 * logging all happen later, on the event loop, once per batch.
 */
import type { FastifyBaseLogger } from "fastify";
import { Attempts } from "./attempt.js";
import { DeadlineTimer } from "./deadline-timer.js";
import type { Event, Flow } from "./event.js";
import type { OutputMetrics } from "./metrics.js";
import { backoffDelay } from "./retry.js";

/**
 * Of a unit's events, those that one attempt settled for good while others are tried again: a
 * bulk API (Elasticsearch's `_bulk`) answers per document. The unit's payload then carries only the
 * events left (the transport trims it).
 */
export interface PartlySettled {
  readonly sent: number;
  readonly rejected: number;
}

/** How one attempt at sending a unit ended. */
export type AttemptResult =
  /**
   * Accepted (a 2xx answer, a completed write); `rejected` of the unit's events were refused for
   * good all the same (a bulk API's answer per document), for `reason`.
   */
  | { readonly kind: "sent"; readonly rejected?: number; readonly reason?: string }
  /** Worth another try: network error, timeout, 5xx, 429, write error; `settled` events ended already. */
  | {
      readonly kind: "retry";
      readonly reason: string;
      readonly retryAfterMs?: number;
      readonly settled?: PartlySettled;
    }
  /** Refused for good (a 4xx other than 429): not retried. `answer` is the start of the answer. */
  | { readonly kind: "rejected"; readonly reason: string; readonly answer: string };

/** The outcome of a successful attempt, shared (it carries nothing). */
export const SENT: AttemptResult = Object.freeze({ kind: "sent" });

/** One request (or one file write) of a batch, and how many of the batch's events it carries. */
export interface Unit<P> {
  readonly payload: P;
  readonly events: number;
}

/** A batch turned into what goes out: units sent in order, and the events no unit can carry. */
export interface Encoded<P> {
  readonly units: readonly Unit<P>[];
  /** Events of the batch that this output type cannot send (counted `dropped-rejected`). */
  readonly rejected: number;
}

/** What an output type provides to the delivery model: how a batch is encoded, how a unit leaves. */
export interface Transport<P> {
  /**
   * Turns a batch into units; called once per batch, before its first try. Every event of the
   * batch is either in a unit or counted in `rejected`. An exception drops the whole batch as
   * rejected (logged).
   */
  encode(batch: readonly Event[]): Encoded<P>;
  /**
   * Sends one unit. Resolves with the outcome; a rejection counts as a retryable failure (network
   * error). `signal` aborts when the attempt timed out or the output stops.
   */
  send(payload: P, signal: AbortSignal): Promise<AttemptResult>;
  /** Releases connections; `force` aborts whatever is still in flight. */
  close(force: boolean): Promise<void>;
}

/** The common settings of an output (docs/outputs.md), durations in milliseconds. */
export interface DeliverySettings {
  /** Events held at most: waiting ones plus the batch in flight. */
  readonly queueSize: number;
  /** Events per batch at most. */
  readonly batchSize: number;
  /** How long a batch waits for more events after its first one, in milliseconds. */
  readonly flushIntervalMs: number;
  /** Deadline of one attempt (request or write), in milliseconds. */
  readonly timeoutMs: number;
  /** How long a batch is retried after its first try before it is dropped, in milliseconds. */
  readonly maxRetryTimeMs: number;
}

/** What a queue reports to. */
export interface DeliveryOptions {
  readonly metrics: OutputMetrics;
  readonly logger: FastifyBaseLogger;
  /** Numbers in [0, 1) for the backoff's jitter; `Math.random` by default (tests fix it). */
  readonly random?: () => number;
  /**
   * Told how the events `batch[start]` to `batch[end - 1]` ended: `delivered`, or `failed` with the
   * reason (refused, not accepted within `max-retry-time`, not encodable). Units carry a batch's
   * events in order, so a unit is a range of its batch; a batch of which the transport could not
   * send some events is not reported (which events those were is unknown), and a unit taken in part
   * ({@link PartlySettled}) is reported as a whole with its last outcome.
   */
  readonly settled?: Settled;
  /**
   * Keeps the queue on disk (`durable: true`): told of every event taken, and of every batch that
   * ended, whatever its outcome; closed by {@link OutputQueue.stop}, which then leaves what was not
   * sent where it is instead of dropping it.
   */
  readonly log?: QueueLog;
}

/** Where a durable queue keeps its events (durable-log.ts). */
export interface QueueLog {
  /** An event was taken (hot path: must only store it). */
  append(event: Event): void;
  /** Whether the log cannot take more events for now (they are dropped, counted `dropped-queue-full`). */
  readonly full: boolean;
  /** The `count` oldest events not yet acknowledged ended (sent, refused or given up). */
  acknowledge(count: number): void;
  /** Writes what is buffered; resolves once nothing is left to write (or writing failed). */
  close(): Promise<void>;
}

/** See {@link DeliveryOptions.settled}. */
export type Settled = (
  batch: readonly Event[],
  start: number,
  end: number,
  outcome: "delivered" | "failed",
  reason?: string,
) => void;

/** A batch ready to leave: its units, and the batch itself when each unit is a range of it in order. */
interface Ready<P> {
  readonly units: readonly Unit<P>[];
  readonly batch: readonly Event[] | undefined;
  /** Events of the batch, whatever became of them. */
  readonly events: number;
}

/** At most one failure log line per output per this many milliseconds (the rest are counted). */
export const LOG_INTERVAL_MS = 60_000;

/** The largest open batch allocated in advance, in events (a larger `batch-size` grows as it fills). */
const PREALLOCATED_EVENTS = 4096;

/** Bytes of a refusing answer that are logged (docs/outputs.md). */
export const ANSWER_SNIPPET_BYTES = 200;

/**
 * The queue and sender of one output. `sink` enqueues; batches leave one after the other through
 * the transport; {@link beginDrain}, {@link idle} and {@link stop} implement the graceful stop.
 */
export class OutputQueue<P> {
  readonly #name: string;
  readonly #transport: Transport<P>;
  readonly #settings: DeliverySettings;
  readonly #logger: FastifyBaseLogger;
  readonly #random: () => number;
  readonly #sent: (count: number) => void;
  readonly #droppedFull: (count: number) => void;
  readonly #rejected: (count: number) => void;
  readonly #exhausted: (count: number) => void;
  readonly #retried: () => void;
  readonly #attempts: Attempts<P>;
  readonly #onSettled: Settled | undefined;
  readonly #log: QueueLog | undefined;

  /** Events held: those of the open batch, of the closed batches waiting, and of the one in flight. */
  #size = 0;
  /** How many events may be held: `queue-size`, 0 once the drain began. */
  #limit: number;
  readonly #batchSize: number;
  /** The batch that events are appended to, allocated for a full batch so that appending never grows it. */
  #open: Event[];
  /** Events in the open batch. */
  #count = 0;
  /** Drops not yet added to the counter: it is fed once per turn of the event loop, not per event. */
  #unreportedDrops = 0;
  #dropReportScheduled = false;
  /** When the open batch got its first event (performance.now() milliseconds). */
  #openedAt = 0;
  /** Closes the open batch once it is `flush-interval` old. */
  readonly #timer = new DeadlineTimer(
    () => (this.#count === 0 || this.#stopped ? undefined : this.#openedAt + this.#settings.flushIntervalMs),
    () => this.#closeOpen(),
  );
  /** Closed batches, oldest first, waiting for the one in flight to end. */
  #pending: Event[][] = [];
  #pumping = false;
  /** Set by {@link stop}: what is left has been counted; the sender gives up. */
  #stopped = false;
  /** Cuts short the attempt or the backoff in progress (set while one runs). */
  #interrupt: (() => void) | undefined;
  #whenIdle: (() => void) | undefined;
  /** Failure logs: when the last one was written (performance.now() ms), and how many were skipped since. */
  #loggedAt = Number.NEGATIVE_INFINITY;
  #unlogged = 0;

  constructor(name: string, transport: Transport<P>, settings: DeliverySettings, options: DeliveryOptions) {
    this.#name = name;
    this.#transport = transport;
    this.#settings = settings;
    this.#logger = options.logger;
    this.#random = options.random ?? Math.random;
    this.#onSettled = options.settled;
    this.#log = options.log;
    const { metrics } = options;
    this.#sent = metrics.events(name, "sent");
    this.#droppedFull = metrics.events(name, "dropped-queue-full");
    this.#rejected = metrics.events(name, "dropped-rejected");
    this.#exhausted = metrics.events(name, "dropped-retries-exhausted");
    this.#retried = metrics.retries(name);
    this.#attempts = new Attempts(transport, settings.timeoutMs, metrics.requestDuration(name), errorReason);
    this.#limit = settings.queueSize;
    this.#batchSize = settings.batchSize;
    this.#open = this.#freshBatch();
    this.sink = this.#log === undefined ? this.#sinkWithoutLog : this.#sinkWithLog;
  }

  /** Events held (waiting plus the batch in flight), for `stream_output_queue_events`. */
  get size(): number {
    return this.#size;
  }

  /**
   * Enqueues an event, or each event of a list, and returns at once. An event that does not fit
   * (queue full, or the output stopping) is dropped and counted `dropped-queue-full`.
   */
  readonly sink: (value: Flow) => void;

  /** The sink of a queue without a log: called per event on the push path, it skips the log checks. */
  readonly #sinkWithoutLog = (value: Flow): void => {
    if (Array.isArray(value)) this.#acceptEach(value);
    else if (!this.#enqueue(value)) this.#dropped(1);
  };

  /** The sink of a durable queue: each event taken is also appended to the log. */
  readonly #sinkWithLog = (value: Flow): void => {
    if (Array.isArray(value)) this.#acceptEach(value);
    else if (!this.#accept(value)) this.#dropped(1);
  };

  #acceptEach(events: readonly Event[]): void {
    let dropped = 0;
    for (const event of events) if (!this.#accept(event)) dropped += 1;
    if (dropped > 0) this.#dropped(dropped);
  }

  /** Enqueues one event; `false` (counted `dropped-queue-full`) when it does not fit. */
  offer(event: Event): boolean {
    if (this.#accept(event)) return true;
    this.#dropped(1);
    return false;
  }

  /**
   * Enqueues events read back from the queue's log (at start-up, or a JetStream message), oldest
   * first, without writing them again, and lets them leave without waiting for `flush-interval`:
   * they waited already. Those beyond `queue-size` are not taken.
   */
  restore(events: readonly Event[]): void {
    for (const event of events) if (!this.#enqueue(event)) break;
    if (this.#count > 0) this.#closeOpen();
  }

  #accept(event: Event): boolean {
    if (this.#log?.full === true || !this.#enqueue(event)) return false;
    this.#log?.append(event);
    return true;
  }

  #enqueue(event: Event): boolean {
    if (this.#size >= this.#limit) return false;
    this.#size += 1;
    const count = this.#count;
    this.#open[count] = event;
    this.#count = count + 1;
    if (count === 0) {
      this.#openedAt = performance.now();
      this.#timer.ensure(this.#settings.flushIntervalMs);
    }
    if (count + 1 >= this.#batchSize) this.#closeOpen();
    return true;
  }

  /** A new open batch: room for a full batch, up to {@link PREALLOCATED_EVENTS} (larger ones grow). */
  #freshBatch(): Event[] {
    return new Array<Event>(Math.min(this.#batchSize, PREALLOCATED_EVENTS));
  }

  /** Counts drops of a full queue; a prom-client increment costs more than the enqueue itself. */
  #dropped(count: number): void {
    this.#unreportedDrops += count;
    if (this.#dropReportScheduled) return;
    this.#dropReportScheduled = true;
    setImmediate(this.#reportDrops);
  }

  readonly #reportDrops = (): void => {
    this.#dropReportScheduled = false;
    const count = this.#unreportedDrops;
    this.#unreportedDrops = 0;
    if (count > 0) this.#droppedFull(count);
  };

  #closeOpen(): void {
    const batch = this.#open;
    if (batch.length !== this.#count) batch.length = this.#count;
    this.#pending.push(batch);
    this.#open = this.#freshBatch();
    this.#count = 0;
    if (!this.#pumping) {
      this.#pumping = true;
      // Encoding and sending start on the next turn of the event loop, never inside a push.
      setImmediate(this.#pump);
    }
  }

  /**
   * Sends the closed batches one after the other. While a batch is on the wire, the next one is
   * encoded, so that encoding overlaps the receiver's work instead of adding to it; it is still
   * sent only once the previous one ended.
   */
  readonly #pump = async (): Promise<void> => {
    try {
      let encoded = this.#encodeNext();
      while (encoded !== undefined && !this.#stopped) {
        const delivering = this.#deliverAndAcknowledge(encoded);
        let next: Ready<P> | undefined;
        if (this.#pending.length > 0) {
          // One turn later, so that the request's bytes are written before the encoding runs.
          await new Promise((resolve) => setImmediate(resolve));
          next = this.#encodeNext();
        }
        await delivering;
        encoded = next ?? this.#encodeNext();
      }
    } catch (error) {
      // Nothing above is expected to throw; a bug must not become an unhandled rejection.
      this.#logger.error({ output: this.#name, err: error }, `output ${this.#name}: the sender failed`);
    } finally {
      this.#pumping = false;
    }
  };

  /**
   * Takes the oldest closed batch and encodes it; the events it cannot carry are counted rejected.
   * @returns its units (perhaps none), or `undefined` when no batch is waiting
   */
  #encodeNext(): Ready<P> | undefined {
    const batch = this.#stopped ? undefined : this.#pending.shift();
    if (batch === undefined) return undefined;
    let encoded: Encoded<P>;
    try {
      encoded = this.#transport.encode(batch);
    } catch (error) {
      this.#settle(batch.length, this.#rejected);
      this.#onSettled?.(batch, 0, batch.length, "failed", `could not encode: ${errorReason(error)}`);
      this.#logFailure("error", { reason: errorReason(error) }, `could not encode a batch of ${batch.length} events`);
      return { units: [], batch: undefined, events: batch.length };
    }
    if (encoded.rejected > 0) {
      this.#settle(encoded.rejected, this.#rejected);
      this.#logFailure("warn", {}, `${encoded.rejected} events cannot be sent by this output type; dropped`);
      return { units: encoded.units, batch: undefined, events: batch.length };
    }
    return { units: encoded.units, batch, events: batch.length };
  }

  /**
   * Delivers a batch, then tells the log that it ended: as a whole, so that a crash in the middle
   * of a batch sends it again (at least once) rather than losing its last units.
   */
  async #deliverAndAcknowledge(ready: Ready<P>): Promise<void> {
    await this.#deliver(ready);
    if (!this.#stopped) this.#log?.acknowledge(ready.events);
  }

  /** Sends the units of one batch in order, each retried before the next, all within max-retry-time. */
  async #deliver({ units, batch }: Ready<P>): Promise<void> {
    const firstTry = performance.now();
    let start = 0;
    for (const [index, unit] of units.entries()) {
      const end = start + unit.events;
      // Events of the unit not settled yet: all of them, unless an attempt settled some (PartlySettled).
      let unsettled = unit.events;
      for (let retry = 1; ; retry++) {
        const result = await this.#attempt(unit.payload);
        if (result === undefined || this.#stopped) return; // stop() counted what was left
        if (result.kind === "sent") {
          if (result.rejected !== undefined) unsettled -= this.#refusedInPart(result.rejected, result.reason);
          this.#settle(unsettled, this.#sent);
          if (batch !== undefined) this.#onSettled?.(batch, start, end, "delivered");
          break;
        }
        if (result.kind === "rejected") {
          this.#settle(unsettled, this.#rejected);
          if (batch !== undefined) this.#onSettled?.(batch, start, end, "failed", `refused: ${result.reason}`);
          this.#logFailure(
            "warn",
            { reason: result.reason, answer: result.answer },
            `the receiver refused ${unsettled} events (${result.reason}); dropped without retry`,
          );
          break;
        }
        if (result.settled !== undefined) {
          this.#settle(result.settled.sent, this.#sent);
          unsettled -= result.settled.sent + this.#refusedInPart(result.settled.rejected, result.reason);
        }
        const remaining = this.#settings.maxRetryTimeMs - (performance.now() - firstTry);
        const retryAfter = result.retryAfterMs;
        // A receiver that asks to wait past the deadline will not take the batch in time.
        if (remaining <= 0 || (retryAfter !== undefined && retryAfter > remaining)) {
          let left = unsettled;
          for (const rest of units.slice(index + 1)) left += rest.events;
          this.#settle(left, this.#exhausted);
          if (batch !== undefined) {
            const reason = `not accepted within max-retry-time: ${result.reason}`;
            this.#onSettled?.(batch, start, start + left, "failed", reason);
          }
          this.#logFailure(
            "error",
            { reason: result.reason },
            `${left} events were not accepted within max-retry-time (${this.#settings.maxRetryTimeMs} ms; last failure: ${result.reason}); dropped`,
          );
          return;
        }
        this.#retried();
        this.#logFailure("warn", { reason: result.reason }, `sending failed (${result.reason}); retrying`);
        // The last wait is cut at the deadline, so the receiver gets a last chance before the drop.
        await this.#sleep(Math.min(Math.max(backoffDelay(retry, this.#random), retryAfter ?? 0), remaining));
        if (this.#stopped) return;
      }
      start = end;
    }
  }

  /** Counts the events of a unit that an attempt refused while taking others; returns their count. */
  #refusedInPart(count: number, reason = "refused"): number {
    if (count <= 0) return 0;
    this.#settle(count, this.#rejected);
    this.#logFailure("warn", { reason }, `the receiver refused ${count} events of a batch (${reason}); dropped`);
    return count;
  }

  /** One try of one unit ({@link Attempts.run}); `undefined` when {@link stop} cut it short. */
  #attempt(payload: P): Promise<AttemptResult | undefined> {
    this.#interrupt = this.#interruptAttempt;
    return this.#attempts.run(payload);
  }

  readonly #interruptAttempt = (): void => {
    this.#interrupt = undefined;
    this.#attempts.interrupt();
  };

  #sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#interrupt = undefined;
        resolve();
      }, milliseconds);
      timer.unref();
      this.#interrupt = () => {
        clearTimeout(timer);
        this.#interrupt = undefined;
        resolve();
      };
    });
  }

  /** Counts `count` events as having ended with `outcome` and takes them off the queue. */
  #settle(count: number, outcome: (count: number) => void): void {
    if (this.#stopped || count === 0) return;
    this.#size -= count;
    outcome(count);
    if (this.#size === 0) this.#whenIdle?.();
  }

  /** Logs a failure unless one was logged less than a minute ago (then it is only counted). */
  #logFailure(level: "warn" | "error", fields: Record<string, unknown>, message: string): void {
    const now = performance.now();
    if (now - this.#loggedAt < LOG_INTERVAL_MS) {
      this.#unlogged += 1;
      return;
    }
    this.#loggedAt = now;
    const unlogged = this.#unlogged;
    this.#unlogged = 0;
    this.#logger[level](
      { output: this.#name, ...fields, ...(unlogged > 0 ? { "failures-not-logged": unlogged } : {}) },
      `output ${this.#name}: ${message}`,
    );
  }

  /** Graceful stop, first step: refuses new events and sends the open batch without waiting. */
  beginDrain(): void {
    this.#limit = 0;
    if (this.#count > 0) this.#closeOpen();
  }

  /** Resolves once every event held has been sent or dropped. */
  idle(): Promise<void> {
    if (this.#size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.#whenIdle;
      this.#whenIdle = () => {
        this.#whenIdle = undefined;
        previous?.();
        resolve();
      };
    });
  }

  /**
   * Graceful stop, last step: whatever is still held is dropped and counted
   * `dropped-retries-exhausted`, the attempt or backoff in progress is cut short, and the
   * transport's connections are closed (forcibly when something was still in flight).
   */
  async stop(): Promise<void> {
    this.#limit = 0;
    this.#reportDrops();
    const left = this.#size;
    if (left > 0 && this.#log !== undefined) {
      this.#logger.info(
        { output: this.#name, events: left },
        `output ${this.#name}: ${left} events kept for the next start`,
      );
    } else if (left > 0) {
      this.#exhausted(left);
      this.#logFailure("error", {}, `the graceful stop dropped ${left} events that were not sent in time`);
    }
    this.#size = 0;
    this.#stopped = true;
    this.#open = [];
    this.#count = 0;
    this.#pending = [];
    this.#timer.stop();
    this.#interrupt?.();
    this.#attempts.close();
    this.#whenIdle?.();
    await Promise.all([this.#transport.close(left > 0), this.#log?.close()]);
  }
}

/**
 * A short, secret-free description of an error: its code (`ECONNREFUSED`, `UND_ERR_SOCKET`) or its
 * class name. Messages are left out: they may quote a URL, whose path or user info can hold a token.
 */
export function errorReason(error: unknown): string {
  if (error instanceof Error) {
    const code = "code" in error && typeof error.code === "string" ? error.code : undefined;
    return code === undefined ? error.name : `${error.name} ${code}`;
  }
  return "unknown error";
}
