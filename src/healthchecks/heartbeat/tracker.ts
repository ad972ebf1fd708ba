/**
 * The state of every heartbeat this instance judges (docs/healthchecks.md, "Heartbeat checks"):
 * pings move it, missed deadlines move it, and both become results. Deadlines live in ONE min-heap
 * (heap.ts) with ONE timer armed for the earliest, whatever the number of heartbeats: 10 000
 * heartbeats at rest cost one pending timer, no polling. The clock and the timer are injectable so
 * that tests control time. Plain TypeScript: no Fastify, no SQL.
 *
 * States: `new` (never pinged; no deadline), `up`, `started` (a start without its end yet), `late`
 * (the expected time passed, within grace), `down` (grace passed without a ping, a failure ping, or
 * a start older than `max-duration`).
 */
import { rfc3339 } from "../../platform/time.js";
import { type HeapItem, MinHeap } from "../heap.js";
import { type HeartbeatRhythm, nextExpected } from "./schedule.js";

/** A heartbeat's state. */
export type HeartbeatState = "new" | "up" | "started" | "late" | "down";

/** The states, for schemas. */
export const HEARTBEAT_STATES: readonly HeartbeatState[] = ["new", "up", "started", "late", "down"];

/**
 * What a ping says: `success` (`/ping/<key>`), `start`, `fail`, `exit` with the job's exit status
 * (0 success, anything else failure) or `log` (kept in the history, no state change).
 */
export type PingSignal =
  | { readonly kind: "success" | "start" | "fail" | "log" }
  | { readonly kind: "exit"; readonly status: number };

/** One ping as the tracker applies it. */
export interface Ping {
  readonly signal: PingSignal;
  /** The `rid` query parameter, pairing a start with its end when runs overlap. */
  readonly rid?: string;
  /** The request body as text (already bounded and decoded), `""` when none. */
  readonly body: string;
  /** When it was received, milliseconds since the epoch. */
  readonly timeMs: number;
}

/** One open run: a start waiting for its end. */
export interface OpenRun {
  readonly rid?: string;
  readonly startMs: number;
}

/** What survives a restart (storage) and moves between instances, times in milliseconds since the epoch. */
export interface HeartbeatSnapshot {
  readonly state: HeartbeatState;
  readonly lastPingMs?: number;
  /** When the next ping is expected; absent for a new heartbeat. */
  readonly expectedMs?: number;
  readonly runs: readonly OpenRun[];
}

/**
 * What the tracker reports: `result` (a ping or a missed deadline: history, streams, alerts),
 * `state` (the state changed without a result: late), `log` (a log ping: history only).
 */
export interface HeartbeatEvent {
  readonly type: "result" | "state" | "log";
  readonly name: string;
  readonly success: boolean;
  readonly message: string;
  /** Milliseconds: end − start for a paired run, 0 otherwise. */
  readonly durationMs: number;
  readonly timeMs: number;
  /** The state after the event. */
  readonly state: HeartbeatState;
  /**
   * A start ping: a result in the history, but not a success that resolves an alert (a failing job
   * that starts again has not recovered yet).
   */
  readonly start: boolean;
}

/** The timer the tracker arms (Node's setTimeout by default). */
export interface TrackerTimers {
  set(callback: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

/** Options of {@link HeartbeatTracker}. */
export interface TrackerOptions {
  /** The wall clock, milliseconds since the epoch (cron schedules are wall-clock times). */
  readonly now?: () => number;
  readonly timers?: TrackerTimers;
  /** Each result, state change and log. Must not throw nor await. */
  readonly onEvent: (event: HeartbeatEvent) => void;
  /**
   * Start paused: deadlines are kept but judged only after {@link HeartbeatTracker.resume} (the
   * module restores states before its alerts are ready).
   */
  readonly paused?: boolean;
  /** Called after each change of a heartbeat's snapshot (for storage). Must not throw nor await. */
  readonly onChange?: (name: string) => void;
}

/** Open runs kept per heartbeat at most: a 33rd start forgets the oldest (a job that never ends). */
export const MAX_OPEN_RUNS = 32;

// setTimeout stores its delay in a signed 32-bit integer: a longer delay fires at once.
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

interface Entry extends HeapItem {
  readonly name: string;
  rhythm: HeartbeatRhythm;
  state: HeartbeatState;
  lastPingMs: number | undefined;
  expectedMs: number | undefined;
  runs: OpenRun[];
  /** When the heap must wake this entry up; +∞ when nothing is due. */
  deadlineMs: number;
  /** The time of the last result or log reported, milliseconds. */
  lastEventMs: number;
}

const NODE_TIMERS: TrackerTimers = {
  set: (callback, delayMs) => {
    const timer = setTimeout(callback, delayMs);
    timer.unref();
    return timer;
  },
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** The message of a success ping without a body. */
const OK = "success";

/** The heartbeats this instance judges. */
export class HeartbeatTracker {
  readonly #entries = new Map<string, Entry>();
  readonly #heap = new MinHeap<Entry>((entry) => entry.deadlineMs);
  readonly #now: () => number;
  readonly #timers: TrackerTimers;
  readonly #onEvent: (event: HeartbeatEvent) => void;
  readonly #onChange: (name: string) => void;
  #timer: unknown;
  #timerDue = Number.POSITIVE_INFINITY;
  #timersArmed = 0;
  #stopped = false;
  #paused: boolean;

  constructor(options: TrackerOptions) {
    this.#paused = options.paused ?? false;
    this.#now = options.now ?? Date.now;
    this.#timers = options.timers ?? NODE_TIMERS;
    this.#onEvent = options.onEvent;
    this.#onChange = options.onChange ?? (() => {});
  }

  /** Heartbeats tracked. */
  get size(): number {
    return this.#entries.size;
  }

  /** Counters for tests and metrics: deadlines in the heap, timers armed so far, whether one is pending. */
  get stats(): { readonly deadlines: number; readonly timersArmed: number; readonly timerPending: boolean } {
    return { deadlines: this.#heap.size, timersArmed: this.#timersArmed, timerPending: this.#timer !== undefined };
  }

  /** Whether `name` is tracked here. */
  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /** The state of `name`, or undefined when not tracked. */
  stateOf(name: string): HeartbeatState | undefined {
    return this.#entries.get(name)?.state;
  }

  /** What of `name` survives a restart, or undefined when not tracked. */
  snapshotOf(name: string): HeartbeatSnapshot | undefined {
    const entry = this.#entries.get(name);
    if (entry === undefined) return undefined;
    return {
      state: entry.state,
      ...(entry.lastPingMs === undefined ? {} : { lastPingMs: entry.lastPingMs }),
      ...(entry.expectedMs === undefined ? {} : { expectedMs: entry.expectedMs }),
      runs: [...entry.runs],
    };
  }

  /**
   * Tracks `name` with `rhythm`, or replaces the rhythm of a tracked one (its state stays; its next
   * expected time follows the new rhythm from its last ping). `snapshot` restores a stored state
   * (a restart, a shard moving here): deadlines passed meanwhile are judged at once.
   */
  track(name: string, rhythm: HeartbeatRhythm, snapshot?: HeartbeatSnapshot): void {
    if (this.#stopped) return;
    let entry = this.#entries.get(name);
    if (entry === undefined) {
      entry = {
        name,
        rhythm,
        state: snapshot?.state ?? "new",
        lastPingMs: snapshot?.lastPingMs,
        expectedMs: snapshot?.expectedMs,
        runs: snapshot === undefined ? [] : snapshot.runs.slice(-MAX_OPEN_RUNS),
        deadlineMs: Number.POSITIVE_INFINITY,
        lastEventMs: Number.NEGATIVE_INFINITY,
        heapIndex: -1,
      };
      this.#entries.set(name, entry);
    } else if (entry.rhythm !== rhythm) {
      entry.rhythm = rhythm;
      if (entry.lastPingMs !== undefined) entry.expectedMs = nextExpected(rhythm, entry.lastPingMs);
    }
    if (this.#paused) this.#place(entry);
    else this.#judge(entry, this.#now());
    this.#arm();
  }

  /** Starts judging deadlines after a paused start: those already passed at once. */
  resume(): void {
    this.#paused = false;
    this.#arm();
  }

  /** Stops tracking `name` (deleted, or its shard moved away). */
  untrack(name: string): void {
    const entry = this.#entries.get(name);
    if (entry === undefined) return;
    this.#entries.delete(name);
    this.#heap.remove(entry);
    this.#arm();
  }

  /**
   * Applies a ping to `name`. A ping that comes late (a forwarded one, after the deadline was
   * judged) still counts: it is applied at its own time.
   * @returns false when `name` is not tracked here
   */
  ping(name: string, ping: Ping): boolean {
    const entry = this.#entries.get(name);
    if (entry === undefined || this.#stopped) return false;
    if (ping.signal.kind === "log") {
      this.#emit(entry, "log", true, ping.body, 0, ping.timeMs);
      return true;
    }
    if (ping.signal.kind === "start") this.#start(entry, ping);
    else
      this.#end(
        entry,
        ping,
        ping.signal.kind === "success" || (ping.signal.kind === "exit" && ping.signal.status === 0),
      );
    this.#onChange(entry.name);
    this.#judge(entry, this.#now());
    this.#arm();
    return true;
  }

  /** Clears the timer; nothing is judged any more. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#timers.clear(this.#timer);
    this.#timer = undefined;
    this.#heap.clear();
  }

  #start(entry: Entry, ping: Ping): void {
    if (entry.runs.length >= MAX_OPEN_RUNS) entry.runs.shift();
    entry.runs.push(ping.rid === undefined ? { startMs: ping.timeMs } : { rid: ping.rid, startMs: ping.timeMs });
    entry.state = "started";
    entry.lastPingMs = Math.max(entry.lastPingMs ?? ping.timeMs, ping.timeMs);
    this.#emit(entry, "result", true, ping.body === "" ? "started" : ping.body, 0, ping.timeMs, true);
  }

  #end(entry: Entry, ping: Ping, success: boolean): void {
    const run = this.#takeRun(entry, ping.rid);
    const durationMs = run === undefined ? 0 : Math.max(0, ping.timeMs - run.startMs);
    entry.lastPingMs = Math.max(entry.lastPingMs ?? ping.timeMs, ping.timeMs);
    entry.expectedMs = nextExpected(entry.rhythm, entry.lastPingMs);
    if (success) entry.state = entry.runs.length > 0 ? "started" : "up";
    else entry.state = "down";
    const message = ping.body !== "" ? ping.body : success ? OK : failureOf(ping.signal);
    this.#emit(entry, "result", success, message, durationMs, ping.timeMs);
  }

  /** The open run an end closes: the one of its `rid`, else the latest without one (or the latest). */
  #takeRun(entry: Entry, rid: string | undefined): OpenRun | undefined {
    let index = -1;
    for (let at = entry.runs.length - 1; at >= 0; at--) {
      const run = entry.runs[at];
      if (rid === undefined ? run?.rid === undefined : run?.rid === rid) {
        index = at;
        break;
      }
    }
    if (index < 0 && rid === undefined) index = entry.runs.length - 1;
    if (index < 0) return undefined;
    return entry.runs.splice(index, 1)[0];
  }

  /**
   * Judges the deadlines of `entry` that passed by `nowMs`, then puts its next deadline in the
   * heap: the end of the oldest open run's max-duration, else the expected time (up → late), else
   * the end of the grace (late or down → a missed-deadline result).
   */
  #judge(entry: Entry, nowMs: number): void {
    const { rhythm } = entry;
    for (const run of entry.runs) {
      if (run.startMs + rhythm.maxDurationMs > nowMs) continue;
      entry.runs = entry.runs.filter((other) => other !== run);
      entry.state = "down";
      const message = `the run started at ${rfc3339(run.startMs)} did not end within max-duration (${formatMs(rhythm.maxDurationMs)})`;
      this.#emit(entry, "result", false, message, nowMs - run.startMs, nowMs);
      this.#onChange(entry.name);
      this.#judge(entry, nowMs);
      return;
    }
    const expected = entry.expectedMs;
    if (entry.runs.length === 0 && expected !== undefined) {
      if (entry.state === "up" && expected <= nowMs) {
        entry.state = "late";
        this.#emit(entry, "state", true, `late: a ping was expected at ${rfc3339(expected)}`, 0, nowMs);
        this.#onChange(entry.name);
      }
      if (entry.state !== "up" && expected + rhythm.graceMs <= nowMs) this.#missed(entry, expected, nowMs);
    }
    this.#place(entry);
  }

  /** Puts the next deadline of `entry` in the heap (or takes it out when nothing is due). */
  #place(entry: Entry): void {
    this.#heap.remove(entry);
    entry.deadlineMs = this.#deadlineOf(entry);
    if (Number.isFinite(entry.deadlineMs)) this.#heap.push(entry);
  }

  /**
   * The grace after `expected` passed without a ping: one failure result, and the next expected
   * time moves past now (a heartbeat silent for a week makes one result, not one per period).
   */
  #missed(entry: Entry, expected: number, nowMs: number): void {
    entry.state = "down";
    const since = entry.lastPingMs === undefined ? "" : `; last ping at ${rfc3339(entry.lastPingMs)}`;
    const message = `no ping: one was expected at ${rfc3339(expected)}, grace of ${formatMs(entry.rhythm.graceMs)} passed${since}`;
    this.#emit(entry, "result", false, message, 0, nowMs);
    let next = nextExpected(entry.rhythm, expected);
    const { periodMs, graceMs } = entry.rhythm;
    if (next + graceMs <= nowMs) {
      // Periods keep their phase; a schedule takes its first occurrence whose grace is still ahead.
      next =
        periodMs === undefined
          ? nextExpected(entry.rhythm, nowMs - graceMs)
          : next + Math.ceil((nowMs - graceMs - next + 1) / periodMs) * periodMs;
    }
    entry.expectedMs = next;
    this.#onChange(entry.name);
  }

  #deadlineOf(entry: Entry): number {
    if (entry.runs.length > 0) {
      let oldest = Number.POSITIVE_INFINITY;
      for (const run of entry.runs) oldest = Math.min(oldest, run.startMs);
      return oldest + entry.rhythm.maxDurationMs;
    }
    if (entry.expectedMs === undefined) return Number.POSITIVE_INFINITY;
    return entry.state === "up" ? entry.expectedMs : entry.expectedMs + entry.rhythm.graceMs;
  }

  #emit(
    entry: Entry,
    type: HeartbeatEvent["type"],
    success: boolean,
    message: string,
    durationMs: number,
    timeMs: number,
    start = false,
  ): void {
    // The history keys results by (check, millisecond): two pings within one millisecond (a start
    // and its end) are stored a millisecond apart rather than one of them dropped.
    const at = type === "state" ? timeMs : Math.max(timeMs, entry.lastEventMs + 1);
    if (type !== "state") entry.lastEventMs = at;
    this.#onEvent({ type, name: entry.name, success, message, durationMs, timeMs: at, state: entry.state, start });
  }

  /** Arms the one timer for the heap's head, unless it is armed for that time already. */
  #arm(): void {
    if (this.#stopped || this.#paused) return;
    const head = this.#heap.peek();
    const due = head?.deadlineMs ?? Number.POSITIVE_INFINITY;
    if (due === this.#timerDue && this.#timer !== undefined) return;
    if (this.#timer !== undefined) this.#timers.clear(this.#timer);
    this.#timer = undefined;
    this.#timerDue = due;
    if (!Number.isFinite(due)) return;
    const delay = Math.min(Math.max(0, due - this.#now()), MAX_TIMER_DELAY_MS);
    this.#timersArmed++;
    this.#timer = this.#timers.set(() => this.#fire(), delay);
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
    const now = this.#now();
    for (let head = this.#heap.peek(); head !== undefined && head.deadlineMs <= now; head = this.#heap.peek()) {
      this.#judge(head, now);
    }
    this.#arm();
  }
}

/** The failure message of a ping without a body. */
function failureOf(signal: PingSignal): string {
  return signal.kind === "exit" ? `the job exited with status ${signal.status}` : "the job reported a failure";
}

/** A duration in milliseconds as text: `1h`, `90s`, `1500ms`. */
export function formatMs(milliseconds: number): string {
  if (milliseconds % 3_600_000 === 0) return `${milliseconds / 3_600_000}h`;
  if (milliseconds % 60_000 === 0) return `${milliseconds / 60_000}m`;
  if (milliseconds % 1_000 === 0) return `${milliseconds / 1_000}s`;
  return `${milliseconds}ms`;
}
