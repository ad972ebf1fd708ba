/**
 * The scheduler of periodic healthchecks (docs/healthchecks.md): the next runs grouped by
 * {@link TICK_MS} slot of their time (slots.ts) and one `setTimeout` for the earliest, whatever the
 * number of checks; bounded concurrency
 * with a FIFO queue; fixed-rate runs anchored to the first run, skipping the ticks a long run
 * overlapped (no overlap, no burst).
 *
 * Runs are started in batches, at most one wake every {@link TICK_MS}: with 10 000 checks at 10 s,
 * about 1 000 runs are due every second, and a wake per run would cost more CPU than the runs'
 * own bookkeeping (each wake of the event loop costs tens of microseconds). A run is never started
 * before it is due.
 */
import { SlotQueue } from "./slots.js";

/**
 * The longest delay before the first run of a check, in milliseconds: first runs are spread over
 * [0, min(interval, 60 s)) (docs/healthchecks.md).
 */
export const FIRST_RUN_WINDOW_MS = 60_000;

/**
 * Where a key first runs within its first window, as a fraction in [0, 1): a hash of the key
 * (FNV-1a, then MurmurHash3's finaliser so that names differing in their last characters land far
 * apart), so the spread is even over many checks and stable across restarts and instances
 * (docs/healthchecks.md: 10 000 checks at 10 s make about 1 000 runs in every second, not bursts).
 */
export function spreadOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index++) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) / 2 ** 32;
}

/**
 * The shortest time between two wakes of the scheduler that start runs, in milliseconds: at most
 * 100 wakes a second. A run due less than this after the previous wake waits for the next one, so
 * it starts up to this much late (plus the event loop's own delay); a run due this long or more
 * after the previous wake (the first one after a quiet spell) starts on time (docs/healthchecks.md).
 */
export const TICK_MS = 10;

// setTimeout stores its delay in a signed 32-bit integer: a longer delay fires at once.
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * One run of a scheduled check. It either returns a promise, whose settling ends the run, or returns
 * nothing and calls `done` once when the run ends (`done(error)` when it failed), possibly before it
 * returns: the periodic checks take that form, which costs no promise per run (about 1 000 runs a
 * second with 10 000 checks at 10 s, docs/benchmarks.md). A rejection, a thrown error or an error
 * given to `done` is reported to `onError` and does not stop the schedule.
 */
export type Task = (done: (error?: unknown) => void) => Promise<void> | undefined;

/** Options of a {@link Scheduler}. */
export interface SchedulerOptions {
  /** Most runs in flight at once (`healthchecks.max-concurrency`); later ones wait in a queue. */
  readonly maxConcurrency: number;
  /**
   * Called as each run starts with how late it starts compared with its schedule, in milliseconds
   * (queueing included).
   */
  readonly onLateness?: (milliseconds: number) => void;
  /** Called when a task rejects. */
  readonly onError?: (key: string, error: unknown) => void;
  /** A monotonic clock in milliseconds; default `performance.now`. */
  readonly now?: () => number;
  /** Where a key first runs within its first window, in [0, 1); default {@link spreadOf}. */
  readonly spread?: (key: string) => number;
  /**
   * Milliseconds before a key's first run, replacing the spread of the first window: cluster mode
   * passes {@link wallClockPhaseDelay}.
   */
  readonly firstRunDelay?: (key: string, intervalMs: number) => number;
}

/**
 * Cluster mode (docs/cluster.md): the delay until the next time `t` with `t ≡ phase (mod
 * interval)` on the wall clock, the phase being {@link spreadOf} the key times the interval. Every
 * instance computes the same times for a check, so when a check moves to another instance it
 * keeps its rhythm: it neither runs twice within an interval nor skips one (clocks agreeing within
 * a fraction of the interval, as NTP keeps them). The spread over the interval stays even.
 *
 * @param nowMs the wall clock, milliseconds since the epoch
 */
export function wallClockPhaseDelay(key: string, intervalMs: number, nowMs: number = Date.now()): number {
  const phase = spreadOf(key) * intervalMs;
  const delay = (phase - (nowMs % intervalMs)) % intervalMs;
  return delay < 0 ? delay + intervalMs : delay;
}

interface Entry {
  readonly key: string;
  readonly intervalMs: number;
  readonly task: Task;
  /** Time of the first run; every later run is due at `anchor + k × interval`. */
  readonly anchor: number;
  /** When the next run is due. */
  next: number;
  state: "waiting" | "queued" | "running";
  removed: boolean;
  /**
   * What ends a run, made once per entry, not per run: `done` is given to the task, the other two
   * follow its promise. Each ends only a run in flight, so a second call changes nothing.
   */
  readonly done: (error?: unknown) => void;
  readonly finished: () => void;
  readonly failed: (error: unknown) => void;
}

/** Runs tasks periodically. */
export class Scheduler {
  readonly #entries = new Map<string, Entry>();
  readonly #due = new SlotQueue<Entry>((entry) => entry.next, TICK_MS);
  /** The runs a wake takes from {@link Scheduler.#due}, reused from wake to wake. */
  readonly #taken: Entry[] = [];
  #queue: Entry[] = [];
  #queueHead = 0;
  #running = 0;
  #timer: NodeJS.Timeout | undefined;
  /**
   * The wake the armed timer is for (clock time; it fires at the next whole millisecond after);
   * +∞ when none is armed.
   */
  #timerWake = Number.POSITIVE_INFINITY;
  /** When the timer last fired and started runs (clock time); −∞ before the first. */
  #lastWake = Number.NEGATIVE_INFINITY;
  #stopped = false;
  readonly #maxConcurrency: number;
  readonly #now: () => number;
  readonly #spread: (key: string) => number;
  readonly #firstRunDelay: ((key: string, intervalMs: number) => number) | undefined;
  readonly #onLateness: (milliseconds: number) => void;
  readonly #onError: (key: string, error: unknown) => void;

  constructor(options: SchedulerOptions) {
    if (!Number.isInteger(options.maxConcurrency) || options.maxConcurrency < 1) {
      throw new RangeError("maxConcurrency must be a positive integer");
    }
    this.#maxConcurrency = options.maxConcurrency;
    this.#now = options.now ?? (() => performance.now());
    this.#spread = options.spread ?? spreadOf;
    this.#firstRunDelay = options.firstRunDelay;
    this.#onLateness = options.onLateness ?? (() => {});
    this.#onError = options.onError ?? (() => {});
  }

  /** Number of scheduled keys. */
  get size(): number {
    return this.#entries.size;
  }

  /** Number of runs in flight. */
  get running(): number {
    return this.#running;
  }

  /** Number of runs waiting for a free slot. */
  get queued(): number {
    let count = 0;
    for (let index = this.#queueHead; index < this.#queue.length; index++) {
      if (this.#queue[index]?.removed === false) count++;
    }
    return count;
  }

  /** Whether `key` is scheduled. */
  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** When the next run of `key` is due (clock milliseconds), or `undefined`. */
  nextRun(key: string): number | undefined {
    return this.#entries.get(key)?.next;
  }

  /**
   * Schedules `task` every `intervalMs` milliseconds under `key`, replacing what `key` had (a run
   * of the old task in flight finishes on its own). The first run comes after a delay in
   * [0, min(interval, 60 s)) derived from the key ({@link spreadOf}); like every run, it may start
   * up to {@link TICK_MS} late when another wake just happened.
   *
   * @throws Error when the scheduler is stopped
   */
  add(key: string, intervalMs: number, task: Task): void {
    if (this.#stopped) throw new Error("the scheduler is stopped");
    if (!(intervalMs > 0)) throw new RangeError("intervalMs must be positive");
    this.remove(key);
    const delay =
      this.#firstRunDelay?.(key, intervalMs) ?? this.#spread(key) * Math.min(intervalMs, FIRST_RUN_WINDOW_MS);
    const first = this.#now() + delay;
    const entry: Entry = {
      key,
      intervalMs,
      task,
      anchor: first,
      next: first,
      state: "waiting",
      removed: false,
      done: (error) => (error === undefined ? entry.finished() : entry.failed(error)),
      finished: () => {
        if (entry.state === "running") this.#finish(entry);
      },
      failed: (error) => {
        if (entry.state !== "running") return;
        this.#onError(key, error);
        this.#finish(entry);
      },
    };
    this.#entries.set(key, entry);
    this.#due.push(entry);
    this.#arm();
  }

  /** Unschedules `key`; a run in flight finishes but is not rescheduled. False when unknown. */
  remove(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    entry.removed = true;
    this.#entries.delete(key);
    if (entry.state === "waiting") this.#due.remove(entry);
    if (this.#due.size === 0) this.#disarm();
    return true;
  }

  /** Unschedules everything; runs in flight finish on their own. Later calls to `add` throw. */
  stop(): void {
    this.#stopped = true;
    this.#disarm();
    for (const entry of this.#entries.values()) entry.removed = true;
    this.#entries.clear();
    this.#due.clear();
    this.#queue = [];
    this.#queueHead = 0;
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerWake = Number.POSITIVE_INFINITY;
  }

  /**
   * Makes the one timer fire when the earliest run is due, but not sooner than {@link TICK_MS}
   * after the last wake that started runs (re-armed only when it must move earlier).
   */
  #arm(): void {
    const earliest = this.#due.earliest();
    if (earliest === Number.POSITIVE_INFINITY) {
      this.#disarm();
      return;
    }
    const wake = Math.max(earliest, this.#lastWake + TICK_MS);
    // Compared with the wake the timer is for, not with its rounded-up delay: the end of every run
    // asks again for the same wake, which must not re-arm the timer each time (1 000 runs a second
    // with 10 000 checks at 10 s).
    if (this.#timer !== undefined && wake >= this.#timerWake) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const now = this.#now();
    // Rounded up: setTimeout counts whole milliseconds, and a run must not start before it is due.
    const delay = Math.min(Math.max(0, Math.ceil(wake - now)), MAX_TIMER_DELAY_MS);
    this.#timerWake = wake;
    this.#timer = setTimeout(() => this.#fire(), delay);
    // The server, not the schedule, keeps the process alive.
    this.#timer.unref();
  }

  /** Starts (or queues) every run due by now, together: one wake for all of them. */
  #fire(): void {
    this.#timer = undefined;
    this.#timerWake = Number.POSITIVE_INFINITY;
    const now = this.#now();
    // A timer that fired before the head was due (the timer's and the clock's milliseconds may
    // differ by a fraction) starts nothing and does not count as a wake: the head is not delayed.
    if (this.#due.earliest() <= now) this.#lastWake = now;
    const taken = this.#taken;
    this.#due.takeDue(now, taken);
    for (const entry of taken) {
      // An earlier run of this wake may have removed it (a task is arbitrary code).
      if (entry.removed) continue;
      if (this.#running < this.#maxConcurrency) {
        this.#start(entry, now);
      } else {
        entry.state = "queued";
        this.#queue.push(entry);
      }
    }
    taken.length = 0;
    this.#arm();
  }

  #start(entry: Entry, now: number): void {
    this.#running++;
    entry.state = "running";
    this.#onLateness(Math.max(0, now - entry.next));
    let run: Promise<void> | undefined;
    try {
      run = entry.task(entry.done);
    } catch (error) {
      // A task that throws after calling `done` still has its error reported.
      if (entry.state === "running") entry.failed(error);
      else this.#onError(entry.key, error);
      return;
    }
    run?.then(entry.finished, entry.failed);
  }

  #finish(entry: Entry): void {
    this.#running--;
    entry.state = "waiting";
    const now = this.#now();
    if (!entry.removed) {
      // Fixed rate: the next tick after the one that ran; ticks that passed while it ran are skipped.
      let next = entry.next + entry.intervalMs;
      if (next < now) next = entry.anchor + Math.ceil((now - entry.anchor) / entry.intervalMs) * entry.intervalMs;
      entry.next = next;
      this.#due.push(entry);
    }
    this.#drain(now);
    this.#arm();
  }

  #drain(now: number): void {
    while (this.#running < this.#maxConcurrency && this.#queueHead < this.#queue.length) {
      const entry = this.#queue[this.#queueHead++];
      if (entry !== undefined && !entry.removed) this.#start(entry, now);
    }
    // Forget the consumed part of the queue once it dominates the array.
    if (this.#queueHead > 1024 && this.#queueHead * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#queueHead);
      this.#queueHead = 0;
    }
  }
}
