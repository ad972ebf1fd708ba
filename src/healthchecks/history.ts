/**
 * The history of healthcheck results and the uptime computed from it (docs/healthchecks.md).
 *
 * Every periodic result is buffered in memory by {@link ResultHistory.record} (on the scheduler's
 * path: no await, no object per result) and written once per second in multi-row inserts
 * (storage.ts). Rows older than `healthchecks.history.retention` are pruned hourly, one bounded
 * delete at a time. With a retention of 0 nothing is recorded and the routes answer from the
 * latest result only (history-views.ts).
 *
 * Bounds: at most {@link DEFAULT_MAX_BUFFERED} results, and
 * {@link DEFAULT_MAX_BUFFERED_MESSAGE_CHARS} characters of failure messages, wait for a write
 * (beyond, results are dropped, counted in `healthcheck_history_dropped_total{reason="buffer_full"}`
 * and logged at most once a minute); a write that fails drops its rows the same way
 * (`reason="write_failed"`) and the next second's write goes on; reads are bounded by their
 * periods, limits and the retention.
 */
import type { FastifyBaseLogger } from "fastify";
import type { Database } from "../platform/database.js";
import { rfc3339 } from "../platform/time.js";
import { HistoryStore } from "./history-store.js";
import {
  DAY_MS,
  type DailyUptime,
  dayText,
  type HistoryView,
  HOUR_MS,
  type ResponseTimePoint,
  ratio,
  storedDuration,
  type Uptime,
  uptimeOfLatest,
} from "./history-views.js";
import type { HistoryDropReason, HistoryMetrics } from "./metrics.js";
import type { HealthcheckResult } from "./results.js";

/** Counts dropped history rows ({@link HistoryMetrics} of metrics.ts does). */
export interface HistoryDropCounter {
  historyDropped(reason: HistoryDropReason, rows: number): void;
}

/** Options of {@link ResultHistory}. */
export interface ResultHistoryOptions {
  /** `healthchecks.history.retention`, milliseconds; 0 keeps no history. */
  readonly retentionMs: number;
  readonly logger: FastifyBaseLogger;
  /** Where dropped rows are counted (`healthcheck_history_dropped_total`); none: only logged. */
  readonly metrics?: HistoryDropCounter;
  /** Results waiting for a write at most; default {@link DEFAULT_MAX_BUFFERED}. */
  readonly maxBuffered?: number;
  /**
   * Characters of failure messages waiting for a write at most (UTF-16 code units); default
   * {@link DEFAULT_MAX_BUFFERED_MESSAGE_CHARS}.
   */
  readonly maxBufferedMessageChars?: number;
  /** Milliseconds between two writes; default 1 000. */
  readonly flushIntervalMs?: number;
  /** Milliseconds between two prunes; default 3 600 000 (hourly). */
  readonly pruneIntervalMs?: number;
  /** Milliseconds from {@link ResultHistory.start} to the first prune; default 30 000. */
  readonly firstPruneDelayMs?: number;
  /**
   * Whether this instance prunes the history of a check; default every check. In cluster mode each
   * instance prunes the checks of the shards it owns (docs/cluster.md: the work splits, it is not
   * repeated), and only it forgets their names.
   */
  readonly prunes?: (name: string) => boolean;
}

/**
 * Results waiting for a write at most: 100 s of 10 000 checks at 10 s, so a database that stalls
 * for over a minute loses nothing, while the buffer stays around 10 MB.
 */
export const DEFAULT_MAX_BUFFERED = 100_000;

/**
 * Characters of failure messages waiting for a write at most: an http failure quotes up to 1 000
 * bytes of body, HTML-escaped, so 100 000 failing results could otherwise hold hundreds of MB.
 */
export const DEFAULT_MAX_BUFFERED_MESSAGE_CHARS = 16 * 1024 * 1024;

/** Incidents in an uptime answer at most (docs/healthchecks.md). */
export const MAX_INCIDENTS = 20;

/** Rows one delete of a prune removes at most: a few milliseconds of write lock. */
export const PRUNE_DELETE_ROWS = 5_000;

/** Checks a prune reads at once from the table of names. */
const PRUNE_CHECKS_PER_PAGE = 500;

/**
 * The `maintenance` column's mark of a heartbeat's log ping: like a maintenance result (1), every
 * uptime and incident query leaves it out, and its message is its body rather than a failure.
 */
const LOG_MARK = 2;

/** Names whose id the history keeps in memory at most before starting afresh. */
const MAX_CACHED_IDS = 200_000;

/** Days {@link ResultHistory.daily} answers at most (ten years). */
export const MAX_DAYS = 3_660;

/** Slices {@link ResultHistory.responseTimes} answers at most. */
export const MAX_SLICES = 1_000;

const MINUTE_MS = 60_000;

/** The periods of the uptime route, in milliseconds. */
const PERIODS = [
  ["1h", HOUR_MS],
  ["24h", DAY_MS],
  ["7d", 7 * DAY_MS],
  ["30d", 30 * DAY_MS],
] as const;
const PERIOD_LENGTHS = PERIODS.map(([, length]) => length);
const LONGEST_PERIOD_MS = 30 * DAY_MS;

/** Yields to the event loop, so that runs and requests due meanwhile go first. */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Logs a recurring problem at most once a minute, with how often it happened meanwhile. */
class Throttled {
  readonly #write: (details: object, message: string) => void;
  readonly #message: string;
  #lastMs = Number.NEGATIVE_INFINITY;
  #times = 0;

  constructor(write: (details: object, message: string) => void, message: string) {
    this.#write = write;
    this.#message = message;
  }

  /** Counts one occurrence; logs when the last log is a minute old. `details` is read only then. */
  report(details: () => object): void {
    this.#times++;
    const now = performance.now();
    if (now - this.#lastMs < MINUTE_MS) return;
    this.#lastMs = now;
    this.#write({ ...details(), occurrences: this.#times }, this.#message);
    this.#times = 0;
  }
}

/**
 * The results of every check over the retention, in the database (storage.ts), with the queries of
 * the history and uptime routes and of the status page.
 *
 * Several instances sharing PostgreSQL each write the results of the checks they run. Results are
 * written within a second of their execution: a read may miss the last second's results.
 */
export class ResultHistory {
  readonly #storage: HistoryStore;
  readonly #retentionMs: number;
  readonly #logger: FastifyBaseLogger;
  readonly #metrics: HistoryDropCounter | undefined;
  readonly #maxBuffered: number;
  readonly #maxMessageChars: number;
  readonly #flushIntervalMs: number;
  readonly #pruneIntervalMs: number;
  readonly #firstPruneDelayMs: number;
  readonly #prunes: (name: string) => boolean;

  // The buffer, one array per column (no object per result on the scheduler's path).
  #names: string[] = [];
  #times: number[] = [];
  #durations: number[] = [];
  #messages: (string | null)[] = [];
  #maintenance: (1 | 2 | null)[] = [];
  /** Characters of the messages in the buffer. */
  #messageChars = 0;

  /**
   * Id of each check name written lately. A prune forgets the ids it deletes; beyond
   * MAX_CACHED_IDS names the map starts afresh.
   */
  readonly #ids = new Map<string, number>();
  /** The writes and the deletion of unused names, one after the other. */
  #chain: Promise<void> = Promise.resolve();
  /** Writes queued or running. */
  #writes = 0;
  #pruning: Promise<number> | undefined;
  #flushTimer: NodeJS.Timeout | undefined;
  #pruneTimer: NodeJS.Timeout | undefined;
  #firstPruneTimer: NodeJS.Timeout | undefined;
  #closed = false;
  #dropped = 0;

  readonly #bufferFull: Throttled;
  /** What the buffer-full log says; made once, since drops happen on the scheduler's path. */
  readonly #bufferDetails = () => ({ buffered: this.#names.length, messageChars: this.#messageChars });
  readonly #writeFailed: Throttled;
  readonly #pruneFailed: Throttled;

  /**
   * @throws RangeError when an option is not a positive integer (retention: not negative)
   */
  constructor(database: Database, options: ResultHistoryOptions) {
    const positive = (value: number, name: string) => {
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
      return value;
    };
    if (!Number.isSafeInteger(options.retentionMs) || options.retentionMs < 0) {
      throw new RangeError("retentionMs must be an integer of at least 0");
    }
    this.#storage = new HistoryStore(database);
    this.#retentionMs = options.retentionMs;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#maxBuffered = positive(options.maxBuffered ?? DEFAULT_MAX_BUFFERED, "maxBuffered");
    this.#maxMessageChars = positive(
      options.maxBufferedMessageChars ?? DEFAULT_MAX_BUFFERED_MESSAGE_CHARS,
      "maxBufferedMessageChars",
    );
    this.#flushIntervalMs = positive(options.flushIntervalMs ?? 1_000, "flushIntervalMs");
    this.#pruneIntervalMs = positive(options.pruneIntervalMs ?? HOUR_MS, "pruneIntervalMs");
    this.#firstPruneDelayMs = positive(options.firstPruneDelayMs ?? 30_000, "firstPruneDelayMs");
    this.#prunes = options.prunes ?? (() => true);
    const logger = this.#logger;
    this.#bufferFull = new Throttled(
      (details, message) => logger.warn(details, message),
      "healthcheck history buffer full: results dropped",
    );
    this.#writeFailed = new Throttled(
      (details, message) => logger.error(details, message),
      "healthcheck history write failed: results dropped",
    );
    this.#pruneFailed = new Throttled(
      (details, message) => logger.error(details, message),
      "healthcheck history prune failed; it runs again at the next prune",
    );
  }

  /** Whether results are kept (a retention above 0). */
  get enabled(): boolean {
    return this.#retentionMs > 0;
  }

  /** Results waiting for the next write. */
  get buffered(): number {
    return this.#names.length;
  }

  /** Results dropped since the start (buffer full or failed write). */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Buffers one periodic result for the next write: its end (`timestamp`), success, duration
   * rounded to the millisecond, its message when it failed, and whether it came during a
   * maintenance window. Never throws, never waits: it runs
   * on the scheduler's path. Ignored with a retention of 0 and after {@link close}; dropped (counted
   * and logged) when `maxBuffered` results or `maxBufferedMessageChars` characters of messages
   * already wait.
   *
   * @param time the result's end in milliseconds since the epoch (by default read from `timestamp`)
   */
  record(name: string, result: HealthcheckResult, time: number = Date.parse(result.timestamp)): void {
    if (this.#retentionMs === 0 || this.#closed) return;
    // A log ping keeps its body although it is no failure (docs/healthchecks.md, "Heartbeat checks").
    const message = result.success && result.log !== true ? null : result.message;
    const chars = message === null ? 0 : message.length;
    if (this.#names.length >= this.#maxBuffered || this.#messageChars + chars > this.#maxMessageChars) {
      this.#drop("buffer_full", 1);
      this.#bufferFull.report(this.#bufferDetails);
      return;
    }
    // Results carry toISOString() times; a result without one would not be found by any query.
    if (!Number.isFinite(time)) return;
    this.#names.push(name);
    this.#times.push(time);
    this.#durations.push(storedDuration(result.duration));
    this.#messages.push(message);
    this.#maintenance.push(result.log === true ? LOG_MARK : result.maintenance === true ? 1 : null);
    this.#messageChars += chars;
  }

  /**
   * Starts writing every second and pruning every hour (the first prune shortly after). Nothing
   * with a retention of 0. The timers do not keep the process alive.
   */
  start(): void {
    if (this.#retentionMs === 0 || this.#closed || this.#flushTimer !== undefined) return;
    this.#flushTimer = setInterval(() => {
      // A write still running (a slow database) is not joined by another: the buffer waits.
      if (this.#writes === 0) void this.flush();
    }, this.#flushIntervalMs);
    this.#flushTimer.unref();
    this.#firstPruneTimer = setTimeout(() => void this.prune(), this.#firstPruneDelayMs);
    this.#firstPruneTimer.unref();
    this.#pruneTimer = setInterval(() => void this.prune(), this.#pruneIntervalMs);
    this.#pruneTimer.unref();
  }

  /**
   * Writes what is buffered, after the writes already queued. Never rejects: a failed write is
   * logged (at most once a minute) and its rows dropped and counted.
   */
  flush(): Promise<void> {
    this.#writes++;
    const run = this.#chain.then(() => this.#write());
    this.#chain = run.finally(() => {
      this.#writes--;
    });
    return this.#chain;
  }

  /**
   * Deletes the results older than the retention as of `nowMs`, one bounded delete at a time
   * (yielding to the event loop between them) for each check that has such results, then the names
   * no result refers to. Joins a prune already running. Never rejects: a failure is logged and the next prune starts over.
   *
   * @param nowMs milliseconds since the epoch
   * @returns the number of results deleted
   */
  prune(nowMs: number = Date.now()): Promise<number> {
    if (this.#retentionMs === 0) return Promise.resolve(0);
    this.#pruning ??= this.#prune(nowMs - this.#retentionMs).finally(() => {
      this.#pruning = undefined;
    });
    return this.#pruning;
  }

  /**
   * Results of `name`, newest first, with `sinceMs <= time <= untilMs` (milliseconds since the
   * epoch, both optional).
   *
   * @param query.limit at most this many results (1–10 000 through the route)
   * @throws Error when the database fails
   */
  async list(name: string, query: { sinceMs?: number; untilMs?: number; limit: number }): Promise<HistoryView[]> {
    if (this.#retentionMs === 0 || query.limit < 1) return [];
    const rows = await this.#storage.list(
      name,
      query.sinceMs ?? Number.MIN_SAFE_INTEGER,
      query.untilMs ?? Number.MAX_SAFE_INTEGER,
      query.limit,
    );
    return rows.map((row) => {
      const log = Number(row.maintenance) === LOG_MARK;
      const view: HistoryView = {
        timestamp: rfc3339(Number(row.time)),
        success: row.message === null || log,
        duration: Number(row.duration),
        message: row.message ?? "success",
      };
      if (log) return { ...view, log: true };
      // Absent outside maintenance windows, as in results.
      return row.maintenance === null ? view : { ...view, maintenance: true };
    });
  }

  /**
   * The uptime of `name` over the last hour, day, 7 and 30 days before `nowMs` (ratios of the kept
   * results: periods beyond the retention cover what is kept), and its newest incidents of the
   * last 30 days; results of maintenance windows count in neither.
   *
   * @param nowMs milliseconds since the epoch
   * @throws Error when the database fails
   */
  async uptime(name: string, nowMs: number): Promise<Uptime> {
    if (this.#retentionMs === 0) return uptimeOfLatest(undefined, nowMs);
    const [counts, runs] = await Promise.all([
      this.#storage.counts(name, nowMs, PERIOD_LENGTHS),
      this.#storage.failureRuns(name, nowMs - LONGEST_PERIOD_MS, nowMs, MAX_INCIDENTS),
    ]);
    const [hour, day, week, month] = counts.map(ratio);
    return {
      "1h": hour ?? null,
      "24h": day ?? null,
      "7d": week ?? null,
      "30d": month ?? null,
      incidents: runs.map((run) => ({
        start: rfc3339(run.start),
        end: run.end === null ? null : rfc3339(run.end),
        message: run.message,
      })),
    };
  }

  /**
   * The daily uptime of each of `names` over the last `days` UTC days up to the day of `nowMs`,
   * oldest first; a day without results has a null ratio (so has every day with a retention of 0).
   * Grouped by day in the database.
   *
   * @param days 1–{@link MAX_DAYS}
   * @returns one entry per distinct name, each with exactly `days` days
   * @throws RangeError when `days` is out of range; Error when the database fails
   */
  async daily(names: readonly string[], days: number, nowMs: number): Promise<Map<string, DailyUptime[]>> {
    if (!Number.isSafeInteger(days) || days < 1 || days > MAX_DAYS) {
      throw new RangeError(`days must be an integer between 1 and ${MAX_DAYS}`);
    }
    const distinct = [...new Set(names)];
    const today = Math.floor(nowMs / DAY_MS);
    const first = today - days + 1;
    const ratios = new Map(distinct.map((name) => [name, new Array<number | null>(days).fill(null)]));
    if (this.#retentionMs > 0 && distinct.length > 0) {
      for (const count of await this.#storage.daily(distinct, first * DAY_MS, nowMs)) {
        const slots = ratios.get(count.name);
        if (slots !== undefined && count.day >= first && count.day <= today) slots[count.day - first] = ratio(count);
      }
    }
    const answer = new Map<string, DailyUptime[]>();
    for (const [name, slots] of ratios) {
      answer.set(
        name,
        slots.map((value, index) => ({ day: dayText(first + index), ratio: value })),
      );
    }
    return answer;
  }

  /**
   * The average duration of the successful results of `name` in `(sinceMs, nowMs]`, split into
   * `slices` equal slices (96 by default: 15 minutes over 24 hours), oldest first; a slice without
   * successful results is left out (a gap in the chart). Failures are left out: their durations
   * are timeouts or instant refusals, not response times.
   *
   * @param slices 1–{@link MAX_SLICES}
   * @returns points whose `time` is the start of their slice (milliseconds since the epoch) and
   *   `duration` the average in milliseconds; empty when `sinceMs >= nowMs` or without history
   * @throws RangeError when `slices` is out of range; Error when the database fails
   */
  async responseTimes(name: string, sinceMs: number, nowMs: number, slices = 96): Promise<ResponseTimePoint[]> {
    if (!Number.isSafeInteger(slices) || slices < 1 || slices > MAX_SLICES) {
      throw new RangeError(`slices must be an integer between 1 and ${MAX_SLICES}`);
    }
    if (this.#retentionMs === 0 || !(sinceMs < nowMs)) return [];
    const width = Math.ceil((nowMs - sinceMs) / slices);
    const rows = await this.#storage.durations(name, sinceMs, nowMs, width);
    return rows.map((row) => ({ time: sinceMs + row.slice * width, duration: row.sum / row.count }));
  }

  /**
   * Since when the current state of `name` holds: the time (milliseconds since the epoch) of the
   * first result of the run of results with the same success as its latest result at or before
   * `nowMs`. Within the retention: a state older than the kept results holds since the oldest.
   *
   * @returns undefined without history (no kept result, or a retention of 0)
   * @throws Error when the database fails
   */
  async stateSince(name: string, nowMs: number): Promise<number | undefined> {
    if (this.#retentionMs === 0) return undefined;
    return this.#storage.stateSince(name, nowMs);
  }

  /** Stops the timers, lets a prune stop, and writes what is buffered. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#flushTimer);
    clearInterval(this.#pruneTimer);
    clearTimeout(this.#firstPruneTimer);
    await this.#pruning;
    if (this.#retentionMs > 0) await this.flush();
  }

  #drop(reason: HistoryDropReason, rows: number): void {
    this.#dropped += rows;
    this.#metrics?.historyDropped(reason, rows);
  }

  /**
   * Finds (or creates) the ids of `missing` and writes them into `checkIds` where `names` has them.
   * @throws Error when the database fails, or gives no id for a name
   */
  async #fillMissingIds(names: readonly string[], checkIds: number[], missing: Set<string>): Promise<void> {
    if (this.#ids.size + missing.size > MAX_CACHED_IDS) this.#ids.clear();
    const found = await this.#storage.checkIds([...missing]);
    for (const [name, id] of found) this.#ids.set(name, id);
    for (let index = 0; index < names.length; index++) {
      const name = names[index] ?? "";
      if (!missing.has(name)) continue;
      const id = found.get(name);
      if (id === undefined) throw new Error(`no id for healthcheck ${name}`);
      checkIds[index] = id;
    }
  }

  /** Writes the buffer: ids of new names first, then the rows. Never rejects. */
  async #write(): Promise<void> {
    const count = this.#names.length;
    if (count === 0) return;
    const names = this.#names;
    const times = this.#times;
    const durations = this.#durations;
    const messages = this.#messages;
    const maintenance = this.#maintenance;
    this.#names = [];
    this.#times = [];
    this.#durations = [];
    this.#messages = [];
    this.#maintenance = [];
    this.#messageChars = 0;
    try {
      // One lookup a row: the ids known are filled in at once, the others after one query.
      const checkIds = new Array<number>(count);
      const missing = new Set<string>();
      for (let index = 0; index < count; index++) {
        const name = names[index] ?? "";
        const id = this.#ids.get(name);
        if (id === undefined) missing.add(name);
        else checkIds[index] = id;
      }
      if (missing.size > 0) await this.#fillMissingIds(names, checkIds, missing);
      await this.#storage.insert({ checkIds, times, durations, messages, maintenance }, yieldToEventLoop);
    } catch (error) {
      this.#drop("write_failed", count);
      this.#writeFailed.report(() => ({ err: error, rows: count }));
    }
  }

  async #prune(cutoffMs: number): Promise<number> {
    let deleted = 0;
    try {
      let after = 0;
      for (;;) {
        // close() waits for the prune: stop between two statements.
        if (this.#closed) return deleted;
        const checks = await this.#storage.checkIdsAfter(after, PRUNE_CHECKS_PER_PAGE, cutoffMs);
        if (checks.length === 0) break;
        const mine = checks.filter((check) => this.#prunes(check.name));
        for (const { id, stale } of mine) {
          // Nothing older than the cutoff: no delete (rows written later are newer than it).
          let more = stale;
          while (more) {
            if (this.#closed) return deleted;
            const rows = await this.#storage.pruneCheck(id, cutoffMs, PRUNE_DELETE_ROWS);
            deleted += rows;
            await yieldToEventLoop();
            more = rows === PRUNE_DELETE_ROWS;
          }
        }
        if (mine.length > 0) await this.#forgetUnused(mine.map((check) => check.id));
        after = checks.at(-1)?.id ?? after;
      }
    } catch (error) {
      this.#pruneFailed.report(() => ({ err: error, deleted }));
    }
    return deleted;
  }

  /**
   * Deletes the names among `ids` that no result refers to any more and forgets their ids, between
   * two writes: a write never uses an id deleted meanwhile.
   */
  async #forgetUnused(ids: readonly number[]): Promise<void> {
    const step = this.#chain.then(async () => {
      const gone = new Set(await this.#storage.deleteUnusedChecks(ids));
      if (gone.size === 0) return;
      for (const [name, id] of this.#ids) if (gone.has(id)) this.#ids.delete(name);
    });
    this.#chain = step.catch(() => {});
    await step;
  }
}
