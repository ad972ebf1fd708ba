/**
 * The on-disk side of a durable output's queue (docs/outputs.md, "Durable outputs"). The push path
 * only appends the event to a buffer in memory; every {@link FLUSH_INTERVAL_MS} milliseconds (or at
 * once when {@link FLUSH_EVENTS} are waiting) one write stores the buffered events and removes the
 * settled ones, in one transaction. An event is kept from the end of the write that stored it;
 * it is removed once its batch ended (sent, refused, or given up), so that a restart, or a crash,
 * resumes from the oldest event not acknowledged: delivery is at least once, in order.
 *
 * Events are numbered per output from the first one kept; the numbers of the events held are
 * contiguous (`[removed, next)`), so that removing the `count` oldest is one range delete.
 */
import type { FastifyBaseLogger } from "fastify";
import type { QueueLog } from "./delivery.js";
import type { DurableStore } from "./durable-storage.js";
import type { Event } from "./event.js";

/** Longest time an accepted event waits in memory before it is written, in milliseconds. */
export const FLUSH_INTERVAL_MS = 5;

/** Events buffered that start a write without waiting for {@link FLUSH_INTERVAL_MS}. */
export const FLUSH_EVENTS = 1000;

/** Delay before a failed write is tried again, in milliseconds. */
const RETRY_WRITE_MS = 1000;

/** The queue log of one durable output, on a {@link DurableStore}. */
export class DurableLog implements QueueLog {
  readonly #output: string;
  readonly #store: DurableStore;
  readonly #logger: FastifyBaseLogger;
  /** `queue-size`: events buffered at most while the database refuses writes. */
  readonly #limit: number;
  /** Events taken and not yet written, oldest first. */
  #buffer: Event[] = [];
  /** The number the next written event gets. */
  #nextSeq = 1;
  /** Events numbered below this are removed from the store (or are being removed). */
  #removedBefore = 1;
  /** Events numbered below this ended and may be removed. */
  #acknowledgedBefore = 1;
  #scheduled = false;
  /** A write is due on the next turn of the event loop (the buffer filled up). */
  #immediate = false;
  #timer: NodeJS.Timeout | undefined;
  /** The write in progress, if any. */
  #writing: Promise<void> | undefined;
  #closed = false;
  /** When the last write failure was logged (performance.now() ms): at most one line a minute. */
  #failureLoggedAt = Number.NEGATIVE_INFINITY;

  /** @param limit `queue-size`: while writes fail, at most this many events wait in memory ({@link full}) */
  constructor(output: string, store: DurableStore, limit: number, logger: FastifyBaseLogger) {
    this.#output = output;
    this.#store = store;
    this.#limit = limit;
    this.#logger = logger;
  }

  /** Whether the buffer is full (the database refused writes for a while): new events are dropped. */
  get full(): boolean {
    return this.#buffer.length >= this.#limit;
  }

  /** Events kept in the store: written and not yet removed (for `stream_output_durable_events`). */
  get stored(): number {
    return this.#nextSeq - this.#removedBefore;
  }

  /**
   * Reads the events kept by the previous run, oldest first, at most `limit` (the others are
   * removed, counted by `dropped`); numbering continues after them. Call once, before any append.
   * @throws the database's error
   */
  async restore(limit: number, dropped: (count: number) => void): Promise<Event[]> {
    const { events, removed } = await this.#store.load(this.#output, limit);
    if (removed > 0) {
      dropped(removed);
      this.#logger.warn(
        { output: this.#output, events: removed },
        `output ${this.#output}: ${removed} kept events beyond queue-size were dropped`,
      );
    }
    const first = events[0]?.seq;
    if (first !== undefined) {
      this.#removedBefore = first;
      this.#acknowledgedBefore = first;
      this.#nextSeq = (events.at(-1)?.seq ?? first) + 1;
    }
    return events.map((stored) => stored.event);
  }

  append(event: Event): void {
    this.#buffer.push(event);
    if (this.#buffer.length >= FLUSH_EVENTS) this.#flushSoon();
    else if (!this.#scheduled) this.#schedule();
  }

  acknowledge(count: number): void {
    this.#acknowledgedBefore += count;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    this.#timer = setTimeout(this.#flush, FLUSH_INTERVAL_MS);
    this.#timer.unref();
  }

  /** A write on the next turn of the event loop, once (a write in progress is followed by another). */
  #flushSoon(): void {
    if (this.#immediate || this.#closed || this.#writing !== undefined) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#scheduled = true;
    this.#immediate = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    this.#immediate = false;
    this.#timer = undefined;
    if (this.#closed) return; // close() writes the rest itself
    // One write at a time, in order: a removal never runs before the write of what it removes.
    if (this.#writing !== undefined) return;
    if (this.#buffer.length === 0 && this.#acknowledgedBefore === this.#removedBefore) return;
    this.#writing = this.#write().finally(() => {
      this.#writing = undefined;
      if (this.#buffer.length > 0 || this.#acknowledgedBefore > this.#removedBefore) this.#schedule();
    });
  };

  async #write(): Promise<void> {
    const events = this.#buffer;
    this.#buffer = [];
    const firstSeq = this.#nextSeq;
    const removeBefore = this.#acknowledgedBefore;
    try {
      const encoded = events.map((event) => JSON.stringify(event));
      await this.#store.write(this.#output, {
        firstSeq,
        events: encoded,
        removeBefore: removeBefore > this.#removedBefore ? removeBefore : 0,
      });
      this.#nextSeq = firstSeq + events.length;
      this.#removedBefore = removeBefore;
    } catch (error) {
      // Kept in memory and written with the next ones: still delivered, but lost on a crash until then.
      this.#buffer = events.concat(this.#buffer);
      this.#logWriteFailure(error);
      if (!this.#closed) await new Promise((resolve) => setTimeout(resolve, RETRY_WRITE_MS).unref());
    }
  }

  #logWriteFailure(error: unknown): void {
    const now = performance.now();
    if (now - this.#failureLoggedAt < 60_000) return;
    this.#failureLoggedAt = now;
    this.#logger.error(
      { output: this.#output, err: error },
      `output ${this.#output}: could not write its queue to the database; retrying`,
    );
  }

  /**
   * Writes what is buffered and removes what ended, then takes no more writes. A write that fails
   * then is not retried: its events were never kept (logged).
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#writing;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#scheduled = false;
    if (this.#buffer.length > 0 || this.#acknowledgedBefore > this.#removedBefore) await this.#write();
  }
}
