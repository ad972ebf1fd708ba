/**
 * Async queues (docs/streams.md): `streams.async-queues.<name>: {size: N}` declares a bounded
 * in-memory queue that the event loop drains in order. The `async-queue` action enqueues its
 * children and the value and returns at once, so that a slow branch never delays the push; a full
 * queue drops the new entry and counts it.
 */
import type { Flow, Next } from "./action.js";

/** Entries run per turn of the event loop, so that I/O (requests, sockets) interleaves with a long backlog. */
const ENTRIES_PER_TURN = 4096;

/** What an async queue reports. */
export interface AsyncQueueObserver {
  /** An entry was dropped because the queue was full (`stream_async_queue_dropped_total{queue}`). */
  dropped(queue: string): () => void;
  /**
   * A child threw while running an entry of `stream` (counted like any action that could not apply,
   * `stream_dropped_events_total{stream,action="async-queue"}`).
   */
  failed(stream: string): () => void;
}

/** One bounded FIFO of pending runs: a ring buffer that grows by doubling up to its size. */
class AsyncQueue {
  #nexts: Array<Next | undefined> = new Array(16);
  #values: Array<Flow | undefined> = new Array(16);
  #failures: Array<(() => void) | undefined> = new Array(16);
  #head = 0;
  #length = 0;
  #scheduled = false;
  #closed = false;
  readonly #drain = () => this.run(ENTRIES_PER_TURN);

  constructor(
    /** The most entries it holds. */
    readonly size: number,
    readonly drop: () => void,
  ) {}

  /** Entries waiting. */
  get length(): number {
    return this.#length;
  }

  /** Adds a run at the tail, or drops it (counted) when the queue is full or closed. */
  push(next: Next, value: Flow, failed: () => void): void {
    if (this.#length >= this.size || this.#closed) {
      this.drop();
      return;
    }
    if (this.#length === this.#nexts.length) this.#grow();
    const slot = (this.#head + this.#length) % this.#nexts.length;
    this.#nexts[slot] = next;
    this.#values[slot] = value;
    this.#failures[slot] = failed;
    this.#length += 1;
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#drain);
    }
  }

  /**
   * Runs at most `limit` entries from the head (entries they enqueue wait for the next turn), then
   * schedules the rest for the next turn of the event loop.
   */
  run(limit: number): void {
    this.#scheduled = false;
    const count = Math.min(limit, this.#length);
    for (let i = 0; i < count; i++) {
      const slot = this.#head;
      const next = this.#nexts[slot];
      const value = this.#values[slot];
      const failed = this.#failures[slot];
      this.#nexts[slot] = undefined;
      this.#values[slot] = undefined;
      this.#failures[slot] = undefined;
      this.#head = (slot + 1) % this.#nexts.length;
      this.#length -= 1;
      // Slots from the head up to the length are always filled; the check only narrows the types.
      if (next === undefined || value === undefined || failed === undefined) continue;
      try {
        next(value);
      } catch {
        // An action must never abort the others (docs/streams.md); count what a bug let through.
        failed();
      }
    }
    if (this.#length > 0 && !this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#drain);
    }
  }

  /** Refuses new entries and drops those waiting, each counted as dropped. */
  close(): void {
    this.#closed = true;
    for (let i = this.#length; i > 0; i--) this.drop();
    this.#nexts = [];
    this.#values = [];
    this.#failures = [];
    this.#head = 0;
    this.#length = 0;
  }

  #grow(): void {
    const capacity = Math.min(this.#nexts.length * 2, Math.max(this.size, 16));
    const nexts: Array<Next | undefined> = new Array(capacity);
    const values: Array<Flow | undefined> = new Array(capacity);
    const failures: Array<(() => void) | undefined> = new Array(capacity);
    for (let i = 0; i < this.#length; i++) {
      const slot = (this.#head + i) % this.#nexts.length;
      nexts[i] = this.#nexts[slot];
      values[i] = this.#values[slot];
      failures[i] = this.#failures[slot];
    }
    this.#nexts = nexts;
    this.#values = values;
    this.#failures = failures;
    this.#head = 0;
  }
}

/** The declared async queues of a server. */
export class AsyncQueues {
  readonly #queues = new Map<string, AsyncQueue>();

  /**
   * @param sizes the most entries (events or window lists) each queue holds, by queue name
   */
  constructor(
    sizes: Readonly<Record<string, { readonly size: number }>>,
    readonly observer: AsyncQueueObserver,
  ) {
    for (const [name, { size }] of Object.entries(sizes)) {
      this.#queues.set(name, new AsyncQueue(size, observer.dropped(name)));
    }
  }

  /**
   * The enqueuer of a queue for an action of `stream`: `enqueue(next, value)` makes `next(value)`
   * run later, after what was enqueued before.
   * @throws Error when the queue is not declared (compilation checks names first)
   */
  enqueuer(name: string, stream: string): (next: Next, value: Flow) => void {
    const queue = this.#queues.get(name);
    if (queue === undefined) throw new Error(`async queue ${name} is not declared`);
    const failed = this.observer.failed(stream);
    return (next, value) => queue.push(next, value, failed);
  }

  /** Entries waiting per queue (`stream_async_queue_events{queue}`). */
  *backlog(): Iterable<readonly [string, number]> {
    for (const [name, queue] of this.#queues) yield [name, queue.length];
  }

  /**
   * Graceful stop: runs what the queues hold, and what those entries enqueue, so that it reaches
   * the outputs before they drain; then closes the queues. At most as many entries run as the
   * queues can hold together (their sizes), so that a cycle (an async queue feeding a stream that
   * feeds it again) cannot keep the stop from ending; what is left then, and what arrives later,
   * is dropped and counted in `stream_async_queue_dropped_total`.
   */
  close(): void {
    let budget = 0;
    for (const queue of this.#queues.values()) budget += queue.size;
    for (;;) {
      let ran = 0;
      for (const queue of this.#queues.values()) {
        const count = Math.min(queue.length, budget - ran);
        if (count > 0) queue.run(count);
        ran += count;
      }
      budget -= ran;
      if (ran === 0 || budget <= 0) break;
    }
    for (const queue of this.#queues.values()) queue.close();
  }
}
