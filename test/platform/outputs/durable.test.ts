/**
 * Durable outputs on SQLite and PostgreSQL: the table's writes and reads, the log that buffers and
 * removes, and whole outputs that keep their queue across a stop and resume it on the next start.
 */
import pino from "pino";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase, platformMigrations } from "../../../src/platform/database.js";
import type { OutputDefinition } from "../../../src/platform/outputs/config.js";
import { DurableLog, FLUSH_EVENTS } from "../../../src/platform/outputs/durable-log.js";
import { type DurableStore, type QueueWrite, SqlDurableStore } from "../../../src/platform/outputs/durable-storage.js";
import { outputMetrics } from "../../../src/platform/outputs/metrics.js";
import { Outputs } from "../../../src/platform/outputs/outputs.js";
import { dropWhenClosed } from "../../registry/sessions.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { freePort } from "../../support/process.js";
import { acceptedNumbers as received, startReceiver } from "../../support/receiver.js";
import { until } from "../../support/until.js";

const ms = (milliseconds: number) => ({ text: `${milliseconds}ms`, milliseconds });
const silent = pino({ level: "silent" });
const range = (count: number, from = 0) => Array.from({ length: count }, (_, i) => from + i);

describe("the durable log when the database refuses writes", () => {
  /** A store that fails its first `failures` writes, and records the others. */
  function flakyStore(failures: number) {
    const writes: QueueWrite[] = [];
    let left = failures;
    const store: DurableStore = {
      load: async () => ({ events: [], removed: 0 }),
      write: async (_output, change) => {
        if (left-- > 0) throw new Error("database is locked");
        writes.push(change);
      },
    };
    return { store, writes };
  }

  it("keeps the events in memory and writes them, in order and numbered as before, once it can", async () => {
    const { store, writes } = flakyStore(1);
    const log = new DurableLog("flaky", store, 10, silent);
    await log.restore(10, () => {});
    log.append({ n: 0 });
    log.append({ n: 1 });
    // The first write fails; the next one, a second later, carries both events and a third one.
    await new Promise((wait) => setTimeout(wait, 50));
    expect(writes).toEqual([]);
    log.append({ n: 2 });
    log.acknowledge(1);
    await until(async () => (writes.length > 0 ? true : undefined), "a write", 5_000);
    expect(writes[0]).toEqual({ firstSeq: 1, events: ['{"n":0}', '{"n":1}', '{"n":2}'], removeBefore: 2 });
    expect(log.stored).toBe(2);
    await log.close();
  });

  it("is full once queue-size events wait to be written: the output drops new ones", async () => {
    const { store } = flakyStore(1_000);
    const log = new DurableLog("flaky", store, 3, silent);
    await log.restore(3, () => {});
    for (const n of range(3)) log.append({ n });
    expect(log.full).toBe(true);
    await log.close();
  });
});

describe.each(DATABASE_KINDS)("durable outputs on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let database: Database;
    let store: SqlDurableStore;
    let output = 0;
    /** A fresh output name per test: the tests share the database. */
    const nextName = () => `out-${++output}`;
    const cleanups: Array<() => Promise<void>> = [];

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      database = await openDatabase(testDatabase.url, platformMigrations);
      store = new SqlDurableStore(database.kysely);
    });
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });
    afterAll(async () => {
      await database?.close();
      await dropWhenClosed(testDatabase);
    });

    it("appends and removes in one transaction and reads back in order, per output", async () => {
      const [a, b] = [nextName(), nextName()];
      await store.write(a, { firstSeq: 1, events: ['{"n":1}', '{"n":2}', '{"n":3}'], removeBefore: 0 });
      await store.write(b, { firstSeq: 1, events: ['{"n":10}'], removeBefore: 0 });
      await store.write(a, { firstSeq: 4, events: ['{"n":4}'], removeBefore: 3 });
      expect(await store.load(a, 100)).toEqual({
        events: [
          { seq: 3, event: { n: 3 } },
          { seq: 4, event: { n: 4 } },
        ],
        removed: 0,
      });
      expect((await store.load(b, 100)).events).toEqual([{ seq: 1, event: { n: 10 } }]);
      // A write that fails (its number is taken) leaves nothing behind: neither its rows nor its removal.
      await store.write(a, { firstSeq: 5, events: ['{"n":5}'], removeBefore: 4 });
      await expect(store.write(a, { firstSeq: 5, events: ['{"n":6}', '{"n":7}'], removeBefore: 6 })).rejects.toThrow();
      expect((await store.load(a, 100)).events.map((stored) => stored.seq)).toEqual([4, 5]);
    });

    it("writes more rows than one statement carries, and drops those beyond the limit when loading", async () => {
      const name = nextName();
      const events = range(1234).map((n) => JSON.stringify({ n }));
      await store.write(name, { firstSeq: 1, events, removeBefore: 0 });
      const loaded = await store.load(name, 1000);
      expect(loaded.removed).toBe(234);
      expect(loaded.events.map((stored) => stored.event.n)).toEqual(range(1000));
      expect((await store.load(name, 5000)).events).toHaveLength(1000);
    });

    it("keeps appended events within the flush window, removes acknowledged ones and resumes numbering", async () => {
      const name = nextName();
      const log = new DurableLog(name, store, 10_000, silent);
      expect(await log.restore(10_000, () => {})).toEqual([]);
      for (const n of range(FLUSH_EVENTS + 5)) log.append({ n });
      await until(async () => (log.stored === FLUSH_EVENTS + 5 ? true : undefined), "every event written");
      log.acknowledge(3);
      await until(async () => (log.stored === FLUSH_EVENTS + 2 ? true : undefined), "3 events removed");
      log.append({ n: "last" });
      await log.close();
      const next = new DurableLog(name, store, 10_000, silent);
      const restored = await next.restore(10_000, () => {});
      expect(restored.map((event) => event.n)).toEqual([...range(FLUSH_EVENTS + 2, 3), "last"]);
      // Numbering goes on after the kept events: a new event does not collide with them.
      next.append({ n: "after" });
      next.acknowledge(1);
      await next.close();
      const third = await new DurableLog(name, store, 10_000, silent).restore(10_000, () => {});
      expect(third.map((event) => event.n)).toEqual([...range(FLUSH_EVENTS + 1, 4), "last", "after"]);
    });

    /** Outputs with one durable http output `hook` to `url`, on the shared database. */
    function outputsTo(name: string, url: string, overrides: Partial<OutputDefinition> = {}) {
      const registry = new Registry();
      const definition = {
        type: "http",
        url,
        headers: {},
        format: "json",
        "queue-size": 10_000,
        "batch-size": 10,
        "flush-interval": ms(20),
        timeout: ms(1000),
        "max-retry-time": ms(200),
        durable: true,
        ...overrides,
      } as OutputDefinition;
      const outputs: Outputs = new Outputs(
        { [name]: definition },
        {
          metrics: outputMetrics(
            registry,
            () => outputs.queued(),
            () => outputs.stored(),
          ),
          logger: silent,
          store,
        },
      );
      const metric = async (series: string): Promise<number> => {
        const line = (await registry.metrics()).split("\n").find((candidate) => candidate.startsWith(`${series} `));
        return line === undefined ? 0 : Number(line.slice(series.length + 1));
      };
      return { outputs, metric };
    }

    it("keeps what a down receiver did not take through a stop, past max-retry-time, and sends it in order on the next start", async () => {
      const name = nextName();
      const port = await freePort();
      const url = `http://127.0.0.1:${port}/in`;
      const first = outputsTo(name, url);
      await first.outputs.restore();
      const sink = first.outputs.sink(name);
      for (const n of range(25)) sink({ n });
      sink(range(25, 25).map((n) => ({ n })));
      const stored = `stream_output_durable_events{output="${name}"}`;
      await until(async () => ((await first.metric(stored)) === 50 ? true : undefined), "50 events written");
      // Longer than max-retry-time: a durable output does not give up.
      await new Promise((wait) => setTimeout(wait, 400));
      await first.outputs.drain(50);
      expect(
        await first.metric(`stream_output_events_total{output="${name}",outcome="dropped-retries-exhausted"}`),
      ).toBe(0);
      const receiver = await startReceiver(undefined, port);
      cleanups.push(() => receiver.close());
      const second = outputsTo(name, url);
      cleanups.push(() => second.outputs.drain(0));
      await second.outputs.restore();
      second.outputs.sink(name)({ n: 50 });
      await until(async () => (received(receiver).length >= 51 ? true : undefined), "51 events");
      expect(received(receiver)).toEqual(range(51));
      await until(async () => ((await second.metric(stored)) === 0 ? true : undefined), "nothing kept");
      expect((await store.load(name, 100)).events).toEqual([]);
    });

    it("drops new events once queue-size events are kept, and counts them", async () => {
      const name = nextName();
      const port = await freePort();
      const { outputs, metric } = outputsTo(name, `http://127.0.0.1:${port}/in`, { "queue-size": 5 });
      cleanups.push(() => outputs.drain(0));
      await outputs.restore();
      outputs.sink(name)(range(8).map((n) => ({ n })));
      const full = `stream_output_events_total{output="${name}",outcome="dropped-queue-full"}`;
      await until(async () => ((await metric(full)) === 3 ? true : undefined), "3 drops");
      await until(
        async () => ((await metric(`stream_output_durable_events{output="${name}"}`)) === 5 ? true : undefined),
        "5 kept",
      );
    });
  });
});
