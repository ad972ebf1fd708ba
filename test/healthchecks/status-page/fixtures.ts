/**
 * Fixtures of the status page tests: checks, their latest results and a fake history in which
 * every day and slice is known.
 */
import type { DailyUptime, ResponseTimePoint, Uptime } from "../../../src/healthchecks/history-views.js";
import {
  lastDays,
  type StatusCandidate,
  type StatusHistory,
  type StatusSources,
} from "../../../src/healthchecks/status-page/data.js";

export const NOW = Date.parse("2026-05-10T12:00:00.000Z");
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export function check(name: string, labels?: Record<string, string>, description = ""): StatusCandidate {
  return {
    definition: { name, description, ...(labels === undefined ? {} : { labels }) },
    ...(labels ? { labels } : {}),
  };
}

/** A latest result, message included (the page must not show it). */
export function result(name: string, success: boolean, message = "success") {
  return { name, success, timestamp: new Date(NOW - 5_000).toISOString(), message, duration: 12 };
}

/** A history where every check was up 99.5% of each day, and answers 20 ms every 10 minutes. */
export function fakeHistory(overrides: Partial<StatusHistory> = {}): StatusHistory {
  return {
    uptime: async (): Promise<Uptime> => ({ "1h": 1, "24h": 0.995, "7d": 0.999, "30d": 1, incidents: [] }),
    daily: async (names, days, nowMs) =>
      new Map<string, DailyUptime[]>(
        names.map((name) => [name, lastDays(days, nowMs).map((day) => ({ day, ratio: 0.995 }))]),
      ),
    responseTimes: async (_name, sinceMs, nowMs): Promise<ResponseTimePoint[]> => {
      const points: ResponseTimePoint[] = [];
      for (let time = sinceMs + 600_000; time <= nowMs; time += 600_000) points.push({ time, duration: 20 });
      return points;
    },
    stateSince: async (_name, nowMs) => nowMs - 3 * HOUR - 5 * 60_000,
    ...overrides,
  };
}

export function sources(overrides: Partial<StatusSources> = {}): StatusSources {
  const checks = [
    check("api", { group: "Back end", team: "web" }, "The public API"),
    check("db", { group: "Back end" }),
    check("website", { group: "Front end", team: "web" }, "What visitors see"),
    check("batch"),
  ];
  const results = new Map([
    ["api", result("api", false, "HTTP request failed: status 500")],
    ["website", result("website", true)],
    ["batch", result("batch", true)],
  ]);
  return {
    title: "Acme",
    selectors: [],
    checks: () => checks,
    results: { get: (name) => results.get(name) },
    history: fakeHistory(),
    retentionMs: 90 * DAY,
    ...overrides,
  };
}
