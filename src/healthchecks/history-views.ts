/**
 * What the history and uptime routes and the status page answer with, and the answers without
 * stored history (retention 0), made from the latest result alone.
 */
import { rfc3339 } from "../platform/time.js";
import type { HistoryCount } from "./history-store.js";
import type { HealthcheckResult } from "./results.js";

/** A stored result as the history route returns it. */
export interface HistoryView {
  /** End of the execution, RFC 3339 UTC with milliseconds. */
  readonly timestamp: string;
  readonly success: boolean;
  /** Execution time, whole milliseconds (rounded when stored). */
  readonly duration: number;
  /** `success`, or the (redacted) failure message. */
  readonly message: string;
  /** Present (true) for a result of a maintenance window, which uptime leaves out. */
  readonly maintenance?: true;
  /** Present (true) for a heartbeat's log ping: its body, not a result; uptime leaves it out. */
  readonly log?: true;
}

/**
 * A run of consecutive failures. `start` is the time of its first failure and `message` that
 * failure's message (what went wrong first, rather than how it looked at the end); `end` is the
 * time of the success that ended it, null while it goes on. RFC 3339 UTC with milliseconds.
 */
export interface Incident {
  readonly start: string;
  readonly end: string | null;
  readonly message: string;
}

/**
 * The uptime route's answer: per period ending now, successful ÷ all results (null when the period
 * has none), and the newest `MAX_INCIDENTS` (history.ts) incidents of the last 30 days, newest first.
 */
export interface Uptime {
  readonly "1h": number | null;
  readonly "24h": number | null;
  readonly "7d": number | null;
  readonly "30d": number | null;
  readonly incidents: readonly Incident[];
}

/** The uptime of one UTC day. */
export interface DailyUptime {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  /** Successful ÷ all results of the day; null for a day without results. */
  readonly ratio: number | null;
}

/** Average response time of a slice of time. */
export interface ResponseTimePoint {
  /** Start of the slice, milliseconds since the epoch. */
  readonly time: number;
  /** Average duration of the slice's successful results, milliseconds. */
  readonly duration: number;
}

/** An hour, in milliseconds. */
export const HOUR_MS = 3_600_000;
/** A day, in milliseconds. */
export const DAY_MS = 86_400_000;

/** Successful ÷ all results; null without results. */
export function ratio({ total, successes }: HistoryCount): number | null {
  return total === 0 ? null : successes / total;
}

/** Stored durations are whole milliseconds, at most the largest INTEGER of both databases. */
export function storedDuration(milliseconds: number): number {
  return Math.min(2_147_483_647, Math.max(0, Math.round(milliseconds)));
}

/** `YYYY-MM-DD` of a UTC day counted from the epoch. */
export function dayText(day: number): string {
  return rfc3339(day * DAY_MS).slice(0, 10);
}

/**
 * What `GET /result/<name>/history` answers when no history is kept (retention 0): the latest
 * result, when there is one that matches the query.
 */
export function listLatest(
  latest: HealthcheckResult | undefined,
  query: { sinceMs?: number; untilMs?: number; limit: number },
): HistoryView[] {
  if (latest === undefined || query.limit < 1) return [];
  const time = Date.parse(latest.timestamp);
  if (query.sinceMs !== undefined && time < query.sinceMs) return [];
  if (query.untilMs !== undefined && time > query.untilMs) return [];
  const view: HistoryView = {
    timestamp: latest.timestamp,
    success: latest.success,
    duration: storedDuration(latest.duration),
    message: latest.message,
  };
  return [latest.maintenance === true ? { ...view, maintenance: true } : view];
}

/**
 * What `GET /result/<name>/uptime` answers when no history is kept (retention 0): each period that
 * holds the latest result has the ratio of that one result (1 or 0), the others null (all of them
 * for a result of a maintenance window, which does not count); no incidents.
 */
export function uptimeOfLatest(latest: HealthcheckResult | undefined, nowMs: number): Uptime {
  const time = latest === undefined || latest.maintenance === true ? Number.NaN : Date.parse(latest.timestamp);
  const of = (length: number): number | null =>
    latest !== undefined && time > nowMs - length && time <= nowMs ? (latest.success ? 1 : 0) : null;
  return { "1h": of(HOUR_MS), "24h": of(DAY_MS), "7d": of(7 * DAY_MS), "30d": of(30 * DAY_MS), incidents: [] };
}
