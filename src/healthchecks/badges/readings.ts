/**
 * The values badges show, read from the latest results and the history: a check's state (read at
 * each request), its uptime per window and its mean response time over 24 hours (read from the
 * history at most once per {@link DEFAULT_HISTORY_CACHE_MS} per check, since badges are public and
 * each reading costs queries). Plain TypeScript without Fastify or SQL.
 */
import type { ResultHistory } from "../history.js";
import { DAY_MS, uptimeOfLatest } from "../history-views.js";
import type { HealthcheckResult } from "../results.js";
import type { Badge } from "./svg.js";
import { type BadgeSubject, responseTimeBadge, statusBadge, uptimeBadge } from "./values.js";

/** How long one reading of a check's history serves its badges, in milliseconds. */
export const DEFAULT_HISTORY_CACHE_MS = 10_000;

/** Checks whose history readings are kept at once; the oldest reading goes first beyond. */
export const MAX_CACHED_CHECKS = 1_000;

/** The latest results as badges read them (a `ResultStore` fits). */
export interface BadgeResults {
  get(name: string): HealthcheckResult | undefined;
}

/** The part of the history badges read (a `ResultHistory` fits). */
export type BadgeHistory = Pick<ResultHistory, "enabled" | "uptime" | "responseTimes">;

/** What the history says of one check: its uptime per window and its mean response time. */
interface HistoryReading {
  readonly uptime: Readonly<Record<"1h" | "24h" | "7d" | "30d", number | null>>;
  /** Mean duration of the successful results of the last 24 hours, milliseconds; null without any. */
  readonly responseMs: number | null;
}

/**
 * The mean duration of the latest result when no history is kept (retention 0): that of a
 * successful result of the last 24 hours, else null.
 */
function latestResponseMs(latest: HealthcheckResult | undefined, nowMs: number): number | null {
  if (latest === undefined || !latest.success) return null;
  const time = Date.parse(latest.timestamp);
  return time > nowMs - DAY_MS && time <= nowMs ? latest.duration : null;
}

/** Reads badge values; one instance serves every badge route. */
export class BadgeReadings {
  readonly #results: BadgeResults;
  readonly #history: BadgeHistory;
  readonly #ttlMs: number;
  readonly #maxChecks: number;
  /** Readings by check name, oldest first (a Map keeps insertion order). */
  readonly #cache = new Map<string, { readonly atMs: number; readonly value: Promise<HistoryReading> }>();

  constructor(options: {
    results: BadgeResults;
    history: BadgeHistory;
    /** Default {@link DEFAULT_HISTORY_CACHE_MS}. */
    historyCacheMs?: number;
    /** Default {@link MAX_CACHED_CHECKS}. */
    maxCachedChecks?: number;
  }) {
    this.#results = options.results;
    this.#history = options.history;
    this.#ttlMs = options.historyCacheMs ?? DEFAULT_HISTORY_CACHE_MS;
    this.#maxChecks = options.maxCachedChecks ?? MAX_CACHED_CHECKS;
  }

  /**
   * The badge of `subject` for the check `name` at `nowMs` (milliseconds since the epoch). The
   * caller has checked that the check has badges.
   *
   * @throws Error when the history cannot be read (the database is down)
   */
  async badge(name: string, subject: BadgeSubject, nowMs: number): Promise<Badge> {
    switch (subject.kind) {
      case "status":
        return statusBadge(name, this.#results.get(name)?.success);
      case "uptime":
        return uptimeBadge(name, subject.window, (await this.#reading(name, nowMs)).uptime[subject.window]);
      case "response-time":
        return responseTimeBadge(name, (await this.#reading(name, nowMs)).responseMs);
    }
  }

  /** The history reading of `name`, cached; concurrent callers share one, a failed one is forgotten. */
  #reading(name: string, nowMs: number): Promise<HistoryReading> {
    const cached = this.#cache.get(name);
    if (cached !== undefined && nowMs - cached.atMs < this.#ttlMs && nowMs >= cached.atMs) return cached.value;
    this.#cache.delete(name);
    while (this.#cache.size >= this.#maxChecks) {
      const oldest = this.#cache.keys().next();
      if (oldest.done === true) break;
      this.#cache.delete(oldest.value);
    }
    const entry = { atMs: nowMs, value: this.#read(name, nowMs) };
    this.#cache.set(name, entry);
    entry.value.catch(() => {
      if (this.#cache.get(name) === entry) this.#cache.delete(name);
    });
    return entry.value;
  }

  /** Reads the uptime and the mean response time of `name` (from the latest result without history). */
  async #read(name: string, nowMs: number): Promise<HistoryReading> {
    const history = this.#history;
    if (!history.enabled) {
      const latest = this.#results.get(name);
      const { incidents: _incidents, ...uptime } = uptimeOfLatest(latest, nowMs);
      return { uptime, responseMs: latestResponseMs(latest, nowMs) };
    }
    // One slice over the whole day: the mean of every successful result in it.
    const [{ incidents: _incidents, ...uptime }, [mean]] = await Promise.all([
      history.uptime(name, nowMs),
      history.responseTimes(name, nowMs - DAY_MS, nowMs, 1),
    ]);
    return { uptime, responseMs: mean === undefined ? null : mean.duration };
  }
}
