/**
 * The history of results (docs/healthchecks.md) on SQLite and PostgreSQL: batched writes, the
 * buffer's bound, failed writes, pruning by retention, retention 0, and every query (list, uptime
 * and incidents, daily, response times, state since). One database per kind for the file; each
 * test uses check names of its own.
 */
import { Kysely, sql } from "kysely";
import pino from "pino";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import {
  MAX_INCIDENTS,
  PRUNE_DELETE_ROWS,
  ResultHistory,
  type ResultHistoryOptions,
} from "../../src/healthchecks/history.js";
import { HISTORY_INSERT_ROWS, HistoryStore, SQLITE_CHUNK_ROWS } from "../../src/healthchecks/history-store.js";
import { listLatest, uptimeOfLatest } from "../../src/healthchecks/history-views.js";
import { HistoryMetrics } from "../../src/healthchecks/metrics.js";
import type { HealthcheckResult } from "../../src/healthchecks/results.js";
import { type HealthcheckTables, healthcheckMigrations } from "../../src/healthchecks/storage.js";
import { type Database, openDatabase, platformMigrations } from "../../src/platform/database.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** A fixed "now" for the queries: 2026-03-10T12:00:00.000Z. */
const NOW = Date.parse("2026-03-10T12:00:00.000Z");
const iso = (milliseconds: number) => new Date(milliseconds).toISOString();

/** A periodic result of `name` that ended at `time` (milliseconds). */
function result(name: string, time: number, success: boolean, fields: { duration?: number; message?: string } = {}) {
  const value: HealthcheckResult = {
    name,
    configuration: { name, kind: "tcp", source: "api" },
    success,
    timestamp: iso(time),
    message: success ? "success" : (fields.message ?? `failed at ${iso(time)}`),
    duration: fields.duration ?? 12.4,
  };
  return value;
}

function silentLogger() {
  const logger = pino({ level: "silent" });
  return {
    logger,
    warn: vi.spyOn(logger, "warn"),
    error: vi.spyOn(logger, "error"),
  };
}

let counter = 0;
/** A check name no other test uses. */
const unique = (label: string) => `${label}-${++counter}`;

describe.each(DATABASE_KINDS)("healthcheck history on $kind", ({ kind, skip }) => {
  let test: TestDatabase;
  let database: Database;
  const histories: ResultHistory[] = [];

  beforeAll(async () => {
    if (skip) return;
    test = await createTestDatabase(kind);
    database = await openDatabase(test.url, { ...platformMigrations, ...healthcheckMigrations });
  });
  afterEach(async () => {
    vi.useRealTimers();
    vi.restoreAllMocks();
    for (const history of histories.splice(0)) await history.close();
  });
  afterAll(async () => {
    if (skip) return;
    await database.close();
    await test.drop();
  });

  function history(options: Partial<ResultHistoryOptions> = {}): ResultHistory {
    const created = new ResultHistory(database, {
      retentionMs: 40 * DAY,
      logger: pino({ level: "silent" }),
      ...options,
    });
    histories.push(created);
    return created;
  }

  /** Records `results` and writes them. */
  async function seed(target: ResultHistory, results: readonly HealthcheckResult[]): Promise<void> {
    for (const value of results) target.record(value.name, value);
    await target.flush();
  }

  describe("writes", () => {
    it.skipIf(skip)("buffers results and writes them once per second, in one transaction per 2 000 rows", async () => {
      vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
      const inserts = vi.spyOn(HistoryStore.prototype, "insert");
      // A transaction: on PostgreSQL one multi-row statement through Kysely; on SQLite prepared
      // statements on the connection that Kysely lends, once per transaction.
      const statements =
        kind === "sqlite" ? vi.spyOn(Kysely.prototype, "connection") : vi.spyOn(Kysely.prototype, "executeQuery");
      const writer = history();
      writer.start();
      const names = Array.from({ length: 500 }, () => unique("batch"));
      // 2 500 results: more than one statement's worth, in one write.
      for (let round = 0; round < 5; round++) {
        for (const name of names) writer.record(name, result(name, NOW - HOUR + round * 10_000, true));
      }
      expect(writer.buffered).toBe(2_500);
      await vi.advanceTimersByTimeAsync(999);
      expect(inserts).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(1);
      await writer.flush();
      expect(inserts).toHaveBeenCalledTimes(1);
      expect(statements).toHaveBeenCalledTimes(Math.ceil(2_500 / HISTORY_INSERT_ROWS));
      expect(writer.buffered).toBe(0);
      expect(await writer.list(names[7] as string, { limit: 10 })).toHaveLength(5);

      // Nothing buffered: no statement at all; then the next second's results in one more insert.
      await vi.advanceTimersByTimeAsync(1_000);
      expect(inserts).toHaveBeenCalledTimes(1);
      for (const name of names.slice(0, 10)) writer.record(name, result(name, NOW - MINUTE, false));
      await vi.advanceTimersByTimeAsync(1_000);
      await writer.flush();
      expect(inserts).toHaveBeenCalledTimes(2);
      expect(statements).toHaveBeenCalledTimes(Math.ceil(2_500 / HISTORY_INSERT_ROWS) + 1);
    });

    it.skipIf(skip)("bounds the buffer: drops beyond it, counts the drops, logs at most once a minute", async () => {
      const { logger, warn } = silentLogger();
      const registry = new Registry();
      const writer = history({ logger, maxBuffered: 10, metrics: new HistoryMetrics(registry) });
      const name = unique("bounded");
      for (let index = 0; index < 15; index++) writer.record(name, result(name, NOW - index * 1_000, true));
      expect(writer.buffered).toBe(10);
      expect(writer.dropped).toBe(5);
      const text = await registry.metrics();
      expect(text).toContain('healthcheck_history_dropped_total{reason="buffer_full"} 5');
      expect(text).toContain('healthcheck_history_dropped_total{reason="write_failed"} 0');
      expect(warn).toHaveBeenCalledTimes(1);
      await writer.flush();
      expect(await writer.list(name, { limit: 100 })).toHaveLength(10);
    });

    it.skipIf(skip)("bounds the characters of buffered failure messages", async () => {
      const writer = history({ maxBufferedMessageChars: 20 });
      const name = unique("long");
      writer.record(name, result(name, NOW - 3_000, false, { message: "x".repeat(15) }));
      writer.record(name, result(name, NOW - 2_000, false, { message: "y".repeat(15) }));
      // A success has no message to keep: it still fits.
      writer.record(name, result(name, NOW - 1_000, true));
      expect(writer.buffered).toBe(2);
      expect(writer.dropped).toBe(1);
      await writer.flush();
      // Written: the room is free again.
      writer.record(name, result(name, NOW, false, { message: "z".repeat(15) }));
      await writer.flush();
      expect((await writer.list(name, { limit: 10 })).map((view) => view.message)).toEqual([
        "z".repeat(15),
        "success",
        "x".repeat(15),
      ]);
    });

    it.skipIf(skip)("drops the rows of a failed write, logs it, and writes the next second", async () => {
      const { logger, error } = silentLogger();
      const dropped: Array<[string, number]> = [];
      const writer = history({ logger, metrics: { historyDropped: (reason, rows) => dropped.push([reason, rows]) } });
      vi.spyOn(HistoryStore.prototype, "insert").mockRejectedValueOnce(new Error("disk full"));
      const name = unique("failing");
      await seed(writer, [result(name, NOW - 2_000, true), result(name, NOW - 1_000, true)]);
      expect(error).toHaveBeenCalledTimes(1);
      expect(dropped).toEqual([["write_failed", 2]]);
      expect(writer.dropped).toBe(2);
      await seed(writer, [result(name, NOW, false)]);
      expect((await writer.list(name, { limit: 10 })).map((view) => view.timestamp)).toEqual([iso(NOW)]);
      // A second failure within the minute is counted, not logged again.
      vi.spyOn(HistoryStore.prototype, "insert").mockRejectedValueOnce(new Error("disk full"));
      await seed(writer, [result(name, NOW + 1_000, true)]);
      expect(error).toHaveBeenCalledTimes(1);
      expect(writer.dropped).toBe(3);
    });

    it.skipIf(skip)("writes what is buffered when closed, and records nothing after", async () => {
      const writer = new ResultHistory(database, { retentionMs: 40 * DAY, logger: pino({ level: "silent" }) });
      writer.start();
      const name = unique("closing");
      writer.record(name, result(name, NOW, true));
      await writer.close();
      writer.record(name, result(name, NOW + 1_000, true));
      expect(writer.buffered).toBe(0);
      const reader = history();
      expect(await reader.list(name, { limit: 10 })).toHaveLength(1);
    });
  });

  describe("the store's inserts", () => {
    /** `count` rows of one new check, a millisecond apart, with every kind of value. */
    async function rowsOf(count: number) {
      const store = new HistoryStore(database);
      const name = unique("rows");
      const id = (await store.checkIds([name])).get(name) as number;
      const times = Array.from({ length: count }, (_, index) => NOW - DAY + index);
      const rows = {
        checkIds: times.map(() => id),
        times,
        durations: times.map((_, index) => index % 1_000),
        messages: times.map((_, index) => (index % 7 === 0 ? `failed ${index}` : null)),
        maintenance: times.map((_, index) => ([null, 1, 2] as const)[index % 3] ?? null),
      };
      return { store, id, rows };
    }

    async function stored(id: number) {
      const { rows } = await sql<{
        time: number;
        duration: number;
        message: string | null;
        maintenance: number | null;
      }>`
        select time, duration, message, maintenance from healthcheck_history where check_id = ${id}
        order by time`.execute(database.kysely);
      return rows.map((row) => ({
        time: Number(row.time),
        duration: Number(row.duration),
        message: row.message,
        maintenance: row.maintenance === null ? null : Number(row.maintenance),
      }));
    }

    // Around every prepared size on SQLite and the rows of a transaction, and a few sums of them.
    const counts = [...SQLITE_CHUNK_ROWS, HISTORY_INSERT_ROWS].flatMap((size) => [size - 1, size, size + 1]);
    it.skipIf(skip).each([...new Set([...counts, 1_000, 4_523])].filter((count) => count > 0))(
      "writes %i rows exactly as given",
      async (count) => {
        const { store, id, rows } = await rowsOf(count);
        await store.insert(rows);
        expect(await stored(id)).toEqual(
          rows.times.map((time, index) => ({
            time,
            duration: rows.durations[index],
            message: rows.messages[index],
            maintenance: rows.maintenance[index],
          })),
        );
      },
    );

    it.skipIf(skip)("keeps the first of two rows of one check and millisecond, within and across writes", async () => {
      const { store, id, rows } = await rowsOf(3);
      const twice = { ...rows, times: [NOW, NOW, NOW + 1], messages: ["first", "second", null] };
      await store.insert(twice);
      await store.insert({ ...twice, messages: ["third", "fourth", "fifth"] });
      expect((await stored(id)).map((row) => row.message)).toEqual(["first", null]);
    });

    it.skipIf(skip)("keeps the transactions before a failed one, and nothing of the failed one", async () => {
      const count = HISTORY_INSERT_ROWS + 600;
      const { store, id, rows } = await rowsOf(count);
      const between = vi.fn(async () => {});
      // A time beyond 64 bits fails the second transaction on both databases (a bind error on
      // SQLite, out of range on PostgreSQL).
      const times: (number | bigint)[] = [...rows.times];
      times[HISTORY_INSERT_ROWS + 300] = 2n ** 64n;
      await expect(store.insert({ ...rows, times: times as number[] }, between)).rejects.toThrow();
      expect(between).toHaveBeenCalledTimes(1);
      expect(await stored(id)).toHaveLength(HISTORY_INSERT_ROWS);
      // The statements stay usable after the rollback.
      await store.insert(rows);
      expect(await stored(id)).toHaveLength(count);
    });
  });

  describe("retention", () => {
    it.skipIf(skip)("prunes the results older than the retention, and only those", async () => {
      const writer = history({ retentionMs: HOUR });
      const [a, b] = [unique("prune"), unique("prune")];
      await seed(writer, [
        result(a, NOW - 3 * HOUR, false),
        result(a, NOW - 2 * HOUR, true),
        result(a, NOW - HOUR - 1, true),
        result(a, NOW - HOUR, true),
        result(a, NOW - 30 * MINUTE, true),
        result(b, NOW - 5 * HOUR, true),
        result(b, NOW - MINUTE, true),
      ]);
      expect(await writer.prune(NOW)).toBeGreaterThanOrEqual(4);
      expect((await writer.list(a, { limit: 10 })).map((view) => view.timestamp)).toEqual([
        iso(NOW - 30 * MINUTE),
        iso(NOW - HOUR),
      ]);
      expect((await writer.list(b, { limit: 10 })).map((view) => view.timestamp)).toEqual([iso(NOW - MINUTE)]);
    });

    it.skipIf(skip)(
      "prunes only the checks it is told to (its shards, in a cluster), and forgets only their names",
      async () => {
        const [mine, theirs] = [unique("mine"), unique("theirs")];
        const writer = history({ retentionMs: HOUR, prunes: (name) => name === mine });
        await seed(writer, [
          result(mine, NOW - 3 * HOUR, true),
          result(mine, NOW - MINUTE, true),
          result(theirs, NOW - 3 * HOUR, true),
          result(theirs, NOW - MINUTE, true),
        ]);
        await writer.prune(NOW);
        expect(await writer.list(mine, { limit: 10 })).toHaveLength(1);
        expect(await writer.list(theirs, { limit: 10 })).toHaveLength(2);
      },
    );

    it.skipIf(skip)("prunes in bounded deletes", async () => {
      const writer = history({ retentionMs: HOUR });
      const name = unique("huge");
      const old = Array.from({ length: 2 * PRUNE_DELETE_ROWS + 10 }, (_, index) =>
        result(name, NOW - 10 * DAY + index * 1_000, true),
      );
      await seed(writer, [...old, result(name, NOW, true)]);
      const deletes = vi.spyOn(HistoryStore.prototype, "pruneCheck");
      await writer.prune(NOW);
      const counts = await Promise.all(deletes.mock.results.map((call) => call.value));
      expect(Math.max(...counts)).toBe(PRUNE_DELETE_ROWS);
      expect(counts.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(old.length);
      expect(await writer.list(name, { limit: 100 })).toHaveLength(1);
    });

    it.skipIf(skip)("deletes only for the checks with results older than the retention", async () => {
      const writer = history({ retentionMs: HOUR });
      const [old, fresh] = [unique("old"), unique("fresh")];
      await seed(writer, [result(old, NOW - 2 * HOUR, true), result(old, NOW, true), result(fresh, NOW, true)]);
      const ids = await database.kysely
        .withTables<HealthcheckTables>()
        .selectFrom("healthcheck_history_check")
        .select(["id", "name"])
        .where("name", "in", [old, fresh])
        .execute();
      const idOf = (name: string) => Number(ids.find((row) => row.name === name)?.id);
      const deletes = vi.spyOn(HistoryStore.prototype, "pruneCheck");
      expect(await writer.prune(NOW)).toBeGreaterThanOrEqual(1);
      const pruned = deletes.mock.calls.map(([id]) => id);
      expect(pruned).toContain(idOf(old));
      expect(pruned).not.toContain(idOf(fresh));
      expect(await writer.list(old, { limit: 10 })).toHaveLength(1);
      expect(await writer.list(fresh, { limit: 10 })).toHaveLength(1);
    });

    it.skipIf(skip)("keeps writing the names it knew when its cache of ids starts afresh", async () => {
      const writer = history({ maxBuffered: 200_000 });
      // 200 000 names fill the cache; the next write brings two more, so it starts afresh.
      const known = Array.from({ length: 200_000 }, () => unique("cached"));
      await seed(
        writer,
        known.map((name) => result(name, NOW - HOUR, true)),
      );
      const fresh = [unique("after"), unique("after")];
      await seed(
        writer,
        [known[0] ?? "", ...fresh].map((name) => result(name, NOW, true)),
      );
      expect(writer.dropped).toBe(0);
      expect(await writer.list(known[0] ?? "", { limit: 10 })).toHaveLength(2);
      for (const name of fresh) expect(await writer.list(name, { limit: 10 })).toHaveLength(1);
    });

    it.skipIf(skip)("forgets the names no result refers to, and records them again later", async () => {
      const writer = history({ retentionMs: HOUR });
      const name = unique("gone");
      await seed(writer, [result(name, NOW - 2 * HOUR, true)]);
      const names = () =>
        database.kysely
          .withTables<HealthcheckTables>()
          .selectFrom("healthcheck_history_check")
          .select("name")
          .where("name", "=", name)
          .execute();
      expect(await names()).toHaveLength(1);
      await writer.prune(NOW);
      expect(await names()).toEqual([]);
      await seed(writer, [result(name, NOW, true)]);
      expect(await writer.list(name, { limit: 10 })).toHaveLength(1);
    });

    it.skipIf(skip)("with a retention of 0, records nothing and answers without history", async () => {
      const { logger } = silentLogger();
      const writer = history({ retentionMs: 0, logger });
      expect(writer.enabled).toBe(false);
      const name = unique("none");
      writer.record(name, result(name, NOW, true));
      expect(writer.buffered).toBe(0);
      writer.start();
      await writer.flush();
      expect(await writer.list(name, { limit: 10 })).toEqual([]);
      expect(await writer.uptime(name, NOW)).toEqual({
        "1h": null,
        "24h": null,
        "7d": null,
        "30d": null,
        incidents: [],
      });
      expect(await writer.stateSince(name, NOW)).toBeUndefined();
      expect(await writer.responseTimes(name, NOW - DAY, NOW)).toEqual([]);
      expect((await writer.daily([name], 2, NOW)).get(name)).toEqual([
        { day: "2026-03-09", ratio: null },
        { day: "2026-03-10", ratio: null },
      ]);
      expect(await writer.prune(NOW)).toBe(0);
    });
  });

  describe("queries", () => {
    it.skipIf(skip)("lists newest first, within since and until (inclusive), up to the limit", async () => {
      const writer = history();
      const name = unique("list");
      await seed(writer, [
        result(name, NOW - 3_000, true, { duration: 1.4 }),
        result(name, NOW - 1_000, false, { duration: 2_000.6, message: "HTTP request failed: status 500" }),
        result(name, NOW - 2_000, true, { duration: 0.2 }),
        result(unique("other"), NOW - 1_500, true),
      ]);
      expect(await writer.list(name, { limit: 100 })).toEqual([
        { timestamp: iso(NOW - 1_000), success: false, duration: 2_001, message: "HTTP request failed: status 500" },
        { timestamp: iso(NOW - 2_000), success: true, duration: 0, message: "success" },
        { timestamp: iso(NOW - 3_000), success: true, duration: 1, message: "success" },
      ]);
      const times = async (query: { sinceMs?: number; untilMs?: number; limit: number }) =>
        (await writer.list(name, query)).map((view) => view.timestamp);
      expect(await times({ sinceMs: NOW - 2_000, limit: 100 })).toEqual([iso(NOW - 1_000), iso(NOW - 2_000)]);
      expect(await times({ untilMs: NOW - 2_000, limit: 100 })).toEqual([iso(NOW - 2_000), iso(NOW - 3_000)]);
      expect(await times({ sinceMs: NOW - 2_000, untilMs: NOW - 2_000, limit: 100 })).toEqual([iso(NOW - 2_000)]);
      expect(await times({ limit: 2 })).toEqual([iso(NOW - 1_000), iso(NOW - 2_000)]);
      expect(await writer.list(unique("unknown"), { limit: 100 })).toEqual([]);
    });

    it.skipIf(skip)("computes uptime ratios per period, null for a period without results", async () => {
      const writer = history();
      const name = unique("uptime");
      await seed(writer, [
        // Last hour: 3 successes, 1 failure.
        result(name, NOW - 10 * MINUTE, true),
        result(name, NOW - 20 * MINUTE, true),
        result(name, NOW, true),
        result(name, NOW - 59 * MINUTE, false),
        // Last day: 4 more failures (8 results, 3 successes).
        ...[2, 3, 4, 5].map((hours) => result(name, NOW - hours * HOUR, false)),
        // Last 7 days: 2 more successes (10 results, 5 successes); 30 days: 10 more successes.
        result(name, NOW - 2 * DAY, true),
        result(name, NOW - 7 * DAY + 1, true),
        ...Array.from({ length: 10 }, (_, index) => result(name, NOW - 8 * DAY - index * HOUR, true)),
        // Outside every period: exactly 30 days old, and after now.
        result(name, NOW - 30 * DAY, false),
        result(name, NOW + 1, false),
      ]);
      const uptime = await writer.uptime(name, NOW);
      expect(uptime["1h"]).toBe(0.75);
      expect(uptime["24h"]).toBe(3 / 8);
      expect(uptime["7d"]).toBe(5 / 10);
      expect(uptime["30d"]).toBe(15 / 20);

      const quiet = unique("quiet");
      await seed(writer, [result(quiet, NOW - 3 * DAY, false)]);
      expect(await writer.uptime(quiet, NOW)).toEqual({
        "1h": null,
        "24h": null,
        "7d": 0,
        "30d": 0,
        incidents: [{ start: iso(NOW - 3 * DAY), end: null, message: `failed at ${iso(NOW - 3 * DAY)}` }],
      });
      expect(await writer.uptime(unique("never"), NOW)).toEqual({
        "1h": null,
        "24h": null,
        "7d": null,
        "30d": null,
        incidents: [],
      });
    });

    it.skipIf(skip)("finds incidents: runs of failures, newest first, ongoing ones without an end", async () => {
      const writer = history();
      const name = unique("incidents");
      const at = (minutes: number) => NOW - 100 * MINUTE + minutes * MINUTE;
      const fail = (minutes: number, message: string) => result(name, at(minutes), false, { message });
      await seed(writer, [
        fail(0, "first run starts"),
        fail(1, "first run goes on"),
        result(name, at(2), true),
        result(name, at(3), true),
        fail(4, "second run"),
        result(name, at(5), true),
        fail(6, "third run, ongoing"),
        fail(7, "still failing"),
      ]);
      expect((await writer.uptime(name, NOW)).incidents).toEqual([
        { start: iso(at(6)), end: null, message: "third run, ongoing" },
        { start: iso(at(4)), end: iso(at(5)), message: "second run" },
        { start: iso(at(0)), end: iso(at(2)), message: "first run starts" },
      ]);
      // As seen at an earlier time, the third run has not started and the second is ongoing.
      expect((await writer.uptime(name, at(4))).incidents).toEqual([
        { start: iso(at(4)), end: null, message: "second run" },
        { start: iso(at(0)), end: iso(at(2)), message: "first run starts" },
      ]);
    });

    it.skipIf(skip)(`keeps the ${MAX_INCIDENTS} newest incidents`, async () => {
      const writer = history();
      const name = unique("many");
      const results: HealthcheckResult[] = [];
      for (let run = 0; run < 25; run++) {
        results.push(result(name, NOW - DAY + run * 2 * MINUTE, false, { message: `run ${run}` }));
        results.push(result(name, NOW - DAY + run * 2 * MINUTE + MINUTE, true));
      }
      await seed(writer, results);
      const { incidents } = await writer.uptime(name, NOW);
      expect(incidents).toHaveLength(MAX_INCIDENTS);
      expect(incidents[0]).toEqual({
        start: iso(NOW - DAY + 24 * 2 * MINUTE),
        end: iso(NOW - DAY + 24 * 2 * MINUTE + MINUTE),
        message: "run 24",
      });
      expect(incidents.at(-1)?.message).toBe("run 5");
    });

    it.skipIf(skip)("groups daily uptime by UTC day, null for days without results", async () => {
      const writer = history();
      const [name, other, never] = [unique("daily"), unique("daily"), unique("daily")];
      const today = Date.parse("2026-03-10T00:00:00.000Z");
      await seed(writer, [
        // The last millisecond of March 8 and the first of March 9 fall on different days.
        result(name, today - DAY - 1, false),
        result(name, today - DAY, true),
        result(name, today - DAY + HOUR, true),
        result(name, today - DAY + 2 * HOUR, true),
        result(name, today - DAY + 3 * HOUR, false),
        result(name, today, true),
        result(name, NOW, false),
        // Before the first day asked for, and after now: left out.
        result(name, today - 3 * DAY, false),
        result(name, NOW + 1, false),
        result(other, today - DAY - HOUR, true),
      ]);
      const daily = await writer.daily([name, other, never, name], 3, NOW);
      expect([...daily.keys()]).toEqual([name, other, never]);
      expect(daily.get(name)).toEqual([
        { day: "2026-03-08", ratio: 0 },
        { day: "2026-03-09", ratio: 0.75 },
        { day: "2026-03-10", ratio: 0.5 },
      ]);
      expect(daily.get(other)).toEqual([
        { day: "2026-03-08", ratio: 1 },
        { day: "2026-03-09", ratio: null },
        { day: "2026-03-10", ratio: null },
      ]);
      expect(daily.get(never)?.map((day) => day.ratio)).toEqual([null, null, null]);
      await expect(writer.daily([name], 0, NOW)).rejects.toThrow(RangeError);
      await expect(writer.daily([name], 1.5, NOW)).rejects.toThrow(RangeError);
    });

    it.skipIf(skip)("averages the response times of successes per slice of time", async () => {
      const writer = history();
      const name = unique("times");
      const since = NOW - DAY;
      const slice = 15 * MINUTE;
      await seed(writer, [
        // At `since` itself: before the first slice.
        result(name, since, true, { duration: 1_000 }),
        result(name, since + 1, true, { duration: 10 }),
        result(name, since + slice, true, { duration: 20 }),
        result(name, since + slice + 1, true, { duration: 40 }),
        result(name, since + slice + 2, false, { duration: 5_000 }),
        result(name, NOW, true, { duration: 7 }),
      ]);
      expect(await writer.responseTimes(name, since, NOW)).toEqual([
        { time: since, duration: 15 },
        { time: since + slice, duration: 40 },
        { time: since + 95 * slice, duration: 7 },
      ]);
      expect(await writer.responseTimes(name, since, NOW, 1)).toEqual([
        { time: since, duration: (10 + 20 + 40 + 7) / 4 },
      ]);
      expect(await writer.responseTimes(name, NOW, NOW)).toEqual([]);
      await expect(writer.responseTimes(name, since, NOW, 0)).rejects.toThrow(RangeError);
    });

    it.skipIf(skip)("tells since when the current state holds", async () => {
      const writer = history();
      const name = unique("state");
      const at = (minutes: number) => NOW - 60 * MINUTE + minutes * MINUTE;
      expect(await writer.stateSince(name, NOW)).toBeUndefined();
      await seed(writer, [result(name, at(0), true), result(name, at(1), true)]);
      expect(await writer.stateSince(name, NOW)).toBe(at(0));
      await seed(writer, [result(name, at(2), false), result(name, at(3), false), result(name, at(4), true)]);
      expect(await writer.stateSince(name, NOW)).toBe(at(4));
      expect(await writer.stateSince(name, at(3))).toBe(at(2));
      expect(await writer.stateSince(name, at(1))).toBe(at(0));
      expect(await writer.stateSince(name, at(0) - 1)).toBeUndefined();
    });
  });

  it.skipIf(skip)("stores a result in under 100 bytes, index included", async () => {
    // 100 checks each writing 400 results (2% failures), interleaved as the scheduler writes
    // them, so that the pages split as in production. Measured as the growth of the table, since
    // the other tests of the file pruned rows whose space only a vacuum gives back.
    const before = await historySize(database);
    const writer = history();
    const names = Array.from({ length: 100 }, () => unique("size"));
    for (let round = 0; round < 400; round++) {
      names.forEach((name, index) => {
        const failed = (round + index) % 50 === 0;
        writer.record(
          name,
          result(name, NOW - DAY + round * 10_000 + index, !failed, {
            duration: 1 + ((round * 7 + index) % 300),
            message: "HTTP request failed: connect ECONNREFUSED 127.0.0.1:9999",
          }),
        );
      });
      if (round % 10 === 9) await writer.flush();
    }
    const after = await historySize(database);
    const rows = after.rows - before.rows;
    const perRow = (after.bytes - before.bytes) / rows;
    console.info(
      `${kind}: ${rows} history rows took ${after.bytes - before.bytes} bytes: ${perRow.toFixed(1)} bytes per row (${after.detail})`,
    );
    expect(rows).toBe(40_000);
    expect(perRow).toBeLessThan(100);
  });
});

/**
 * Rows of `healthcheck_history` and the bytes of its table and primary key (SQLite: one B-tree;
 * PostgreSQL: heap, index, free-space and visibility maps). The table of names is per check, not
 * per result, and left out.
 */
async function historySize(database: Database): Promise<{ rows: number; bytes: number; detail: string }> {
  const db = database.kysely.withTables<HealthcheckTables>();
  const counted = await db
    .selectFrom("healthcheck_history")
    .select((eb) => eb.fn.countAll<number>().as("rows"))
    .executeTakeFirstOrThrow();
  if (database.dialect === "sqlite") {
    const size = await sql<{ bytes: number; pages: number }>`
      select sum(pgsize) as bytes, count(*) as pages from dbstat where name = 'healthcheck_history'`.execute(db);
    const bytes = Number(size.rows[0]?.bytes);
    return { rows: Number(counted.rows), bytes, detail: `${size.rows[0]?.pages} pages` };
  }
  const size = await sql<{ total: number; heap: number; indexes: number }>`
    select pg_total_relation_size('healthcheck_history') as total, pg_relation_size('healthcheck_history') as heap,
      pg_indexes_size('healthcheck_history') as indexes`.execute(db);
  const row = size.rows[0];
  return { rows: Number(counted.rows), bytes: Number(row?.total), detail: `heap ${row?.heap}, index ${row?.indexes}` };
}

describe("history without a database (retention 0)", () => {
  const latest = result("web", NOW - 10 * MINUTE, false, { message: "refused", duration: 3.6 });

  it("lists the latest result when it matches the query", () => {
    expect(listLatest(latest, { limit: 100 })).toEqual([
      { timestamp: iso(NOW - 10 * MINUTE), success: false, duration: 4, message: "refused" },
    ]);
    expect(listLatest(latest, { sinceMs: NOW - 5 * MINUTE, limit: 100 })).toEqual([]);
    expect(listLatest(latest, { untilMs: NOW - 20 * MINUTE, limit: 100 })).toEqual([]);
    expect(listLatest(undefined, { limit: 100 })).toEqual([]);
  });

  it("computes the uptime of the latest result alone", () => {
    expect(uptimeOfLatest(latest, NOW)).toEqual({ "1h": 0, "24h": 0, "7d": 0, "30d": 0, incidents: [] });
    expect(uptimeOfLatest(result("web", NOW - 2 * HOUR, true), NOW)).toEqual({
      "1h": null,
      "24h": 1,
      "7d": 1,
      "30d": 1,
      incidents: [],
    });
    expect(uptimeOfLatest(undefined, NOW)).toEqual({ "1h": null, "24h": null, "7d": null, "30d": null, incidents: [] });
  });
});
