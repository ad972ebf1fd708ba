/**
 * The bounds of executions (docs/healthchecks.md). Every running execution registers its timeout in
 * a {@link DeadlineQueue}: one heap and one timer for all of them, whatever their number, rather
 * than a timer per run (at thousands of runs per second, arming and clearing a timer per run costs
 * more than the queue's bookkeeping). The http executor registers its exchanges directly (http.ts);
 * the tcp, dns, tls and command executors go through {@link startDeadline}, an abort signal that
 * fires when the timeout elapses or when the module stops, whichever comes first.
 */
import { type HeapItem, MinHeap } from "./heap.js";

/**
 * The granularity of a {@link DeadlineQueue}, in milliseconds: the timeouts that end within the
 * same slot of this length expire together, at the end of the slot. An execution thus fails at
 * its timeout or up to this much later (plus the event loop's own delay), never earlier.
 */
export const DEADLINE_TICK_MS = 10;

// setTimeout stores its delay in a signed 32-bit integer: a longer delay fires at once.
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** Something that expires: an entry of a {@link DeadlineQueue}. */
export interface Expiring extends HeapItem {
  /** When it expires, on the queue's clock ({@link DeadlineQueue.now}), in milliseconds. */
  expiresAt: number;
  /** Called once when `expiresAt` has passed, unless removed before. Must not throw. */
  expire(): void;
}

/** The timer functions a {@link DeadlineQueue} uses: the global ones by default; tests count them. */
export interface DeadlineTimers {
  setTimeout(callback: () => void, milliseconds: number): NodeJS.Timeout;
  clearTimeout(timer: NodeJS.Timeout): void;
}

/** Options of a {@link DeadlineQueue}. */
export interface DeadlineQueueOptions {
  /** A monotonic clock in milliseconds; default `performance.now`. */
  readonly now?: () => number;
  /** Default: the global `setTimeout` and `clearTimeout`, looked up at each call. */
  readonly timers?: DeadlineTimers;
}

const GLOBAL_TIMERS: DeadlineTimers = {
  setTimeout: (callback, milliseconds) => setTimeout(callback, milliseconds),
  clearTimeout: (timer) => clearTimeout(timer),
};

/**
 * Expires items when their time has passed, with one timer for all of them, armed at the end of
 * the {@link DEADLINE_TICK_MS} slot of the earliest. Removing an item does not touch the timer: a
 * timer that finds nothing due re-arms for the new earliest (executions mostly end long before
 * their timeout, so the timer rarely moves). The timer never keeps the process alive.
 */
export class DeadlineQueue {
  readonly #heap = new MinHeap<Expiring>((item) => item.expiresAt);
  readonly #now: () => number;
  readonly #timers: DeadlineTimers;
  #timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires (clock time); +∞ when none is armed. */
  #timerDue = Number.POSITIVE_INFINITY;

  constructor(options: DeadlineQueueOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#timers = options.timers ?? GLOBAL_TIMERS;
  }

  /** The queue's clock, in milliseconds: `expiresAt` counts on it. */
  now(): number {
    return this.#now();
  }

  /** Number of items waiting. */
  get size(): number {
    return this.#heap.size;
  }

  /** Adds an item that is not in the queue (its `expiresAt` set). O(log n). */
  add(item: Expiring): void {
    this.#heap.push(item);
    if (this.#heap.peek() === item) this.#arm();
  }

  /** Removes an item; false when it is not in the queue (expired or removed already). O(log n). */
  remove(item: Expiring): boolean {
    return this.#heap.remove(item);
  }

  /** Forgets every item without expiring them and disarms the timer. */
  clear(): void {
    this.#heap.clear();
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
  }

  #arm(): void {
    const head = this.#heap.peek();
    if (head === undefined) return;
    const due = Math.ceil(head.expiresAt / DEADLINE_TICK_MS) * DEADLINE_TICK_MS;
    if (this.#timer !== undefined && due >= this.#timerDue) return;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    const now = this.#now();
    const delay = Math.min(Math.max(0, Math.ceil(due - now)), MAX_TIMER_DELAY_MS);
    this.#timerDue = due;
    this.#timer = this.#timers.setTimeout(() => this.#fire(), delay);
    // An execution in flight must not keep a stopping process alive.
    this.#timer.unref?.();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
    const now = this.#now();
    try {
      for (let head = this.#heap.peek(); head !== undefined && head.expiresAt <= now; head = this.#heap.peek()) {
        this.#heap.pop();
        head.expire();
      }
    } finally {
      this.#arm();
    }
  }
}

/** The queue of {@link startDeadline}'s executions and of the http executor's by default. */
export const SHARED_DEADLINES = new DeadlineQueue();

/** A running bound; call {@link Deadline.clear} once the execution is over. */
export interface Deadline {
  /** Aborted at the timeout or when `stop` aborts. */
  readonly signal: AbortSignal;
  /** True when the timeout (not a stop) aborted the signal. */
  timedOut(): boolean;
  /** Calls `listener` once when the signal aborts, or at once when it already has. */
  onAbort(listener: () => void): void;
  /** Removes the timeout from its queue and the listeners. */
  clear(): void;
}

/** The reason of an abort caused by the timeout. */
export class TimeoutError extends Error {
  constructor(milliseconds: number) {
    super(`timeout after ${milliseconds}ms`);
    this.name = "TimeoutError";
  }
}

/**
 * Starts a deadline: its signal aborts with a {@link TimeoutError} once `milliseconds` have passed
 * (up to {@link DEADLINE_TICK_MS} later, never earlier), or with the reason of `stop`.
 *
 * @param milliseconds the timeout of the execution
 * @param stop aborted when the module stops (its executions are abandoned)
 * @param queue where the timeout waits; default {@link SHARED_DEADLINES}
 */
export function startDeadline(
  milliseconds: number,
  stop?: AbortSignal,
  queue: DeadlineQueue = SHARED_DEADLINES,
): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const entry: Expiring = {
    expiresAt: queue.now() + milliseconds,
    heapIndex: -1,
    expire: () => {
      timedOut = true;
      controller.abort(new TimeoutError(milliseconds));
    },
  };
  queue.add(entry);
  const onStop = () => controller.abort(stop?.reason);
  if (stop?.aborted) onStop();
  else stop?.addEventListener("abort", onStop, { once: true });
  const listeners: Array<() => void> = [];
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    onAbort: (listener) => {
      if (controller.signal.aborted) {
        listener();
        return;
      }
      listeners.push(listener);
      controller.signal.addEventListener("abort", listener, { once: true });
    },
    clear: () => {
      queue.remove(entry);
      stop?.removeEventListener("abort", onStop);
      for (const listener of listeners) controller.signal.removeEventListener("abort", listener);
    },
  };
}
