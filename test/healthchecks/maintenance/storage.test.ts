/**
 * Maintenance on SQLite and PostgreSQL: the stored API windows (src/healthchecks/maintenance/
 * storage.ts), shared by two servers over one database, and the history's `maintenance` column:
 * marked rows listed as such, left out of the uptime ratios, the daily bars and the incidents.
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ResultHistory } from "../../../src/healthchecks/history.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { MaintenanceStore } from "../../../src/healthchecks/maintenance/storage.js";
import type { HealthcheckResult } from "../../../src/healthchecks/results.js";
import { healthcheckMigrations } from "../../../src/healthchecks/storage.js";
import { type Database, openDatabase, platformMigrations } from "../../../src/platform/database.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { startTestServer } from "../../support/server.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const NOW = Date.parse("2026-03-10T12:00:00.000Z");
const iso = (milliseconds: number) => new Date(milliseconds).toISOString();

function result(name: string, time: number, success: boolean, maintenance = false): HealthcheckResult {
  return {
    name,
    configuration: { name, kind: "tcp", source: "api" },
    success,
    timestamp: iso(time),
    message: success ? "success" : `failed at ${iso(time)}`,
    duration: 3,
    ...(maintenance ? { maintenance: true } : {}),
  };
}

describe.each(DATABASE_KINDS)("maintenance storage on $kind", ({ kind, skip }) => {
  let test: TestDatabase;
  let database: Database;
  beforeAll(async () => {
    if (skip) return;
    test = await createTestDatabase(kind);
    database = await openDatabase(test.url, { ...platformMigrations, ...healthcheckMigrations });
  });
  afterAll(async () => {
    if (skip) return;
    await database.close();
    await test.drop();
  });

  it.skipIf(skip)("stores API windows: one per name, listed until they end, deleted", async () => {
    const store = new MaintenanceStore(database);
    const window = { name: "upgrade", checks: ["db", "team=web"], startMs: NOW, endMs: NOW + HOUR };
    expect(await store.insert(window, NOW)).toBe(true);
    expect(await store.insert({ ...window, checks: ["other"] }, NOW)).toBe(false);
    expect(await store.insert({ name: "past", checks: ["a"], startMs: NOW - 2 * HOUR, endMs: NOW - HOUR }, NOW)).toBe(
      true,
    );
    expect(await store.list(NOW)).toEqual([window]);
    expect(await store.count(NOW)).toBe(1);
    // At its end, a window is over.
    expect(await store.list(NOW + HOUR)).toEqual([]);
    expect(await store.deleteEnded(NOW)).toBe(1);
    expect(await store.delete("upgrade")).toBe(true);
    expect(await store.delete("upgrade")).toBe(false);
    expect(await store.list(0)).toEqual([]);
  });

  it.skipIf(skip)("marks history rows, and leaves them out of uptime, daily bars and incidents", async () => {
    const history = new ResultHistory(database, { retentionMs: 40 * DAY, logger: pino({ level: "silent" }) });
    const name = "maintained";
    const at = (minutes: number) => NOW - 50 * MINUTE + minutes * MINUTE;
    const results = [
      result(name, at(0), true),
      result(name, at(1), false),
      // A window: failures and a success that count for nothing.
      result(name, at(2), false, true),
      result(name, at(3), true, true),
      result(name, at(4), false, true),
      result(name, at(5), false),
      result(name, at(6), true),
    ];
    for (const entry of results) history.record(name, entry);
    await history.flush();

    const listed = await history.list(name, { limit: 10 });
    expect(listed.map((row) => row.maintenance ?? false)).toEqual([false, false, true, true, true, false, false]);
    expect(listed[2]).toEqual({
      timestamp: iso(at(4)),
      success: false,
      duration: 3,
      message: `failed at ${iso(at(4))}`,
      maintenance: true,
    });

    // 4 results count: 2 successes.
    const uptime = await history.uptime(name, NOW);
    expect(uptime).toMatchObject({ "1h": 0.5, "24h": 0.5 });
    // One incident, from the first failure to the success after the window: the window's success
    // does not end it.
    expect(uptime.incidents).toEqual([{ start: iso(at(1)), end: iso(at(6)), message: `failed at ${iso(at(1))}` }]);
    const daily = await history.daily([name], 1, NOW);
    expect(daily.get(name)).toEqual([{ day: "2026-03-10", ratio: 0.5 }]);

    // Only results of a window: no figure at all.
    history.record("only-maintenance", result("only-maintenance", at(1), false, true));
    await history.flush();
    expect(await history.uptime("only-maintenance", NOW)).toEqual({
      "1h": null,
      "24h": null,
      "7d": null,
      "30d": null,
      incidents: [],
    });
    await history.close();
  });

  it.skipIf(skip)("shares API windows between servers over the same database", async () => {
    const start = async () =>
      startTestServer({ modules: [healthchecksModule], config: { database: { url: test.url } } });
    const first = await start();
    const second = await start();
    try {
      const body = { name: "shared", checks: ["db"], start: iso(Date.now()), end: iso(Date.now() + HOUR) };
      expect((await first.app.inject({ method: "POST", url: "/maintenance", payload: body })).statusCode).toBe(201);
      const listed = await second.app.inject({ method: "GET", url: "/maintenance" });
      expect(listed.json()).toMatchObject([{ name: "shared", source: "api", ongoing: true }]);
      // The name is taken for every server.
      expect((await second.app.inject({ method: "POST", url: "/maintenance", payload: body })).statusCode).toBe(409);
      expect((await second.app.inject({ method: "DELETE", url: "/maintenance/shared" })).statusCode).toBe(200);
      expect((await first.app.inject({ method: "GET", url: "/maintenance" })).json()).toEqual([]);
    } finally {
      await first.close();
      await second.close();
    }
    // A restart finds what the API stored.
    const third = await start();
    try {
      const body = { name: "kept", checks: ["db"], start: iso(Date.now() + HOUR), end: iso(Date.now() + 2 * HOUR) };
      expect((await third.app.inject({ method: "POST", url: "/maintenance", payload: body })).statusCode).toBe(201);
    } finally {
      await third.close();
    }
    const fourth = await start();
    try {
      expect((await fourth.app.inject({ method: "GET", url: "/maintenance" })).json()).toMatchObject([
        { name: "kept", ongoing: false },
      ]);
    } finally {
      await fourth.close();
    }
  });
});
