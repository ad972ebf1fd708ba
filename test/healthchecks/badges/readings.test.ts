/**
 * The values badges read (src/healthchecks/badges/readings.ts): the state from the latest result,
 * uptime and mean response time from the history read once per check and cache period (shared by
 * concurrent requests, forgotten on failure, bounded in checks), and from the latest result alone
 * without history.
 */
import { describe, expect, it } from "vitest";
import { type BadgeHistory, BadgeReadings } from "../../../src/healthchecks/badges/readings.js";
import type { ResponseTimePoint, Uptime } from "../../../src/healthchecks/history-views.js";
import type { HealthcheckResult } from "../../../src/healthchecks/results.js";

const NOW = Date.parse("2026-05-10T12:00:00.000Z");
const HOUR = 3_600_000;

function result(name: string, fields: Partial<HealthcheckResult> = {}): HealthcheckResult {
  return {
    name,
    configuration: { name, kind: "tcp", source: "api" },
    success: true,
    timestamp: new Date(NOW - 5_000).toISOString(),
    message: "success",
    duration: 42,
    ...fields,
  };
}

/** A history whose answers are counted; `fail` makes the next reading fail. */
function countingHistory(enabled = true) {
  const calls = { uptime: 0, responseTimes: [] as [number, number, number | undefined][] };
  const state = { fail: false };
  const history: BadgeHistory = {
    enabled,
    uptime: async (): Promise<Uptime> => {
      calls.uptime += 1;
      if (state.fail) throw new Error("database down");
      return { "1h": 1, "24h": 0.9995, "7d": 0.991, "30d": null, incidents: [] };
    },
    responseTimes: async (_name, sinceMs, nowMs, slices): Promise<ResponseTimePoint[]> => {
      calls.responseTimes.push([sinceMs, nowMs, slices]);
      return [{ time: sinceMs, duration: 153.4 }];
    },
  };
  return { history, calls, state };
}

describe("badge readings", () => {
  const results = new Map([
    ["up", result("up")],
    ["down", result("down", { success: false, message: "refused" })],
  ]);
  const latest = { get: (name: string) => results.get(name) };

  it("reads the state from the latest result at each call", async () => {
    const { history, calls } = countingHistory();
    const readings = new BadgeReadings({ results: latest, history });
    expect(await readings.badge("up", { kind: "status" }, NOW)).toMatchObject({ message: "up" });
    expect(await readings.badge("down", { kind: "status" }, NOW)).toMatchObject({ message: "down" });
    expect(await readings.badge("new", { kind: "status" }, NOW)).toMatchObject({ message: "unknown" });
    expect(calls.uptime).toBe(0);
  });

  it("reads uptime and the mean response time of the last 24 hours from the history, once per period", async () => {
    const { history, calls } = countingHistory();
    const readings = new BadgeReadings({ results: latest, history, historyCacheMs: 10_000 });
    const [hour, day, week, month, response] = await Promise.all([
      readings.badge("up", { kind: "uptime", window: "1h" }, NOW),
      readings.badge("up", { kind: "uptime", window: "24h" }, NOW),
      readings.badge("up", { kind: "uptime", window: "7d" }, NOW),
      readings.badge("up", { kind: "uptime", window: "30d" }, NOW),
      readings.badge("up", { kind: "response-time" }, NOW),
    ]);
    expect([hour, day, week, month, response].map((badge) => [badge?.message, badge?.color])).toEqual([
      ["100%", "brightgreen"],
      ["99.95%", "brightgreen"],
      ["99.1%", "green"],
      ["no data", "lightgrey"],
      ["153 ms", "brightgreen"],
    ]);
    expect(calls.uptime).toBe(1);
    // One slice: the mean of the whole day.
    expect(calls.responseTimes).toEqual([[NOW - 24 * HOUR, NOW, 1]]);
    await readings.badge("up", { kind: "uptime", window: "1h" }, NOW + 9_999);
    expect(calls.uptime).toBe(1);
    await readings.badge("up", { kind: "uptime", window: "1h" }, NOW + 10_000);
    expect(calls.uptime).toBe(2);
    await readings.badge("down", { kind: "uptime", window: "1h" }, NOW + 10_000);
    expect(calls.uptime).toBe(3);
  });

  it("forgets a failed reading: the next request reads again", async () => {
    const { history, calls, state } = countingHistory();
    const readings = new BadgeReadings({ results: latest, history });
    state.fail = true;
    await expect(readings.badge("up", { kind: "uptime", window: "24h" }, NOW)).rejects.toThrow("database down");
    state.fail = false;
    expect(await readings.badge("up", { kind: "uptime", window: "24h" }, NOW)).toMatchObject({ message: "99.95%" });
    expect(calls.uptime).toBe(2);
  });

  it("keeps the readings of at most maxCachedChecks checks, dropping the oldest", async () => {
    const { history, calls } = countingHistory();
    const readings = new BadgeReadings({ results: latest, history, maxCachedChecks: 2 });
    for (const name of ["a", "b", "c"]) await readings.badge(name, { kind: "uptime", window: "1h" }, NOW);
    expect(calls.uptime).toBe(3);
    await readings.badge("c", { kind: "uptime", window: "1h" }, NOW);
    await readings.badge("b", { kind: "uptime", window: "1h" }, NOW);
    expect(calls.uptime).toBe(3);
    await readings.badge("a", { kind: "uptime", window: "1h" }, NOW);
    expect(calls.uptime).toBe(4);
  });

  it("without history (retention 0), answers from the latest result alone", async () => {
    const { history, calls } = countingHistory(false);
    const maintenance = result("maintenance", { success: false, maintenance: true });
    const old = result("old", { timestamp: new Date(NOW - 2 * 24 * HOUR).toISOString() });
    const only = new Map([...results, ["maintenance", maintenance], ["old", old]]);
    const readings = new BadgeReadings({ results: { get: (name) => only.get(name) }, history });
    const read = (name: string, window: "1h" | "24h" | "7d") =>
      readings.badge(name, { kind: "uptime", window }, NOW).then((badge) => badge.message);
    expect(await read("up", "1h")).toBe("100%");
    expect(await read("down", "24h")).toBe("0%");
    expect(await read("old", "24h")).toBe("no data");
    expect(await read("old", "7d")).toBe("100%");
    // A result of a maintenance window counts in no uptime.
    expect(await read("maintenance", "1h")).toBe("no data");
    const response = (name: string) =>
      readings.badge(name, { kind: "response-time" }, NOW).then((badge) => badge.message);
    expect(await response("up")).toBe("42 ms");
    // Failures and results older than 24 hours have no response time.
    expect(await response("down")).toBe("no data");
    expect(await response("old")).toBe("no data");
    expect(await response("new")).toBe("no data");
    expect(calls.uptime).toBe(0);
    expect(calls.responseTimes).toEqual([]);
  });
});
