/**
 * The alerts' writes gathered into batches (src/healthchecks/alerts/writes.ts, store.ts) on SQLite
 * and PostgreSQL, through the real evaluator: a burst of transitions is one transaction, a read
 * right after a transition sees it, close() writes what is queued, and a batch that fails is
 * logged and written row by row without losing the other rows.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AlertEvaluator, type AlertHistoryEntry } from "../../../src/healthchecks/alerts/evaluator.js";
import { AlertStore } from "../../../src/healthchecks/alerts/store.js";
import { AlertWriteQueue, type StateWrite } from "../../../src/healthchecks/alerts/writes.js";
import { type Definition, validateDefinition } from "../../../src/healthchecks/definition.js";
import { type Database, openDatabase } from "../../../src/platform/database.js";
import { allMigrations } from "../../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { FakeNotifier } from "../../support/notifier.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };
const T0 = Date.parse("2026-11-22T10:00:00Z");
/** Long enough that only a flush (a read, close()) writes within a test. */
const NEVER_MS = 600_000;

function checks(count: number): Definition[] {
  return Array.from({ length: count }, (_, index) =>
    validateDefinition(
      "tcp",
      {
        name: `c${String(index).padStart(4, "0")}`,
        target: "127.0.0.1",
        port: 9,
        interval: "10s",
        timeout: "1s",
        alerts: [{ output: "chat", "failure-threshold": 1 }],
      },
      RULES,
      { unknownKeys: "ignore" },
    ),
  );
}

/** Every check fails once (a trigger each, `failure-threshold` 1), all in this turn. */
function failAll(evaluator: AlertEvaluator, definitions: readonly Definition[]): void {
  for (const definition of definitions) evaluator.observe({ definition }, false, "refused", T0);
}

describe.each(DATABASE_KINDS)("alert writes on $kind", ({ kind, skip }) => {
  let test: TestDatabase;
  let database: Database | undefined;
  beforeEach(async () => {
    if (!skip) test = await createTestDatabase(kind);
  });
  afterEach(async () => {
    await database?.close();
    database = undefined;
    if (!skip) await test.drop();
  });

  async function setup(definitions: readonly Definition[], flushDelayMs: number) {
    database = await openDatabase(test.url, allMigrations());
    const errors: string[] = [];
    const logger = { error: (_details: object, message: string) => void errors.push(message) };
    const store = new AlertStore(database, { logger, flushDelayMs });
    const byName = new Map(definitions.map((definition) => [definition.name, definition]));
    const notifier = new FakeNotifier(["chat"]);
    const evaluator = new AlertEvaluator({
      notifier,
      store,
      defaultAlerts: [],
      definitionOf: (name) => byName.get(name),
      url: "http://127.0.0.1:8080/status",
      logger,
      historyRetentionMs: 3_600_000,
    });
    await evaluator.load();
    return { store, evaluator, notifier, errors };
  }

  /** Rows of a table read straight from the database (not through the store, which flushes first). */
  async function count(db: Database, table: "healthcheck_alert_state" | "healthcheck_alert_history") {
    const rows = await db.kysely
      .withTables<Record<string, { n: unknown }>>()
      .selectFrom(table)
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirstOrThrow();
    return Number(rows.n);
  }

  it.skipIf(skip)(
    "writes the states of a burst of 300 transitions in one transaction, then their history rows in one more",
    async () => {
      const definitions = checks(300);
      const { store, evaluator, notifier } = await setup(definitions, 20);
      const writeBatch = vi.spyOn(store, "writeBatch");
      failAll(evaluator, definitions);
      await evaluator.settled();
      expect(notifier.sent).toHaveLength(300);
      // One batch of the 300 states; the deliveries' history rows come after the sends, a second one.
      expect(writeBatch.mock.calls.map(([batch]) => [batch.states.length, batch.history.length])).toEqual([
        [300, 0],
        [0, 300],
      ]);
      expect((await store.loadStates()).filter((state) => state.triggered)).toHaveLength(300);
      expect(await store.history({ limit: 1_000 })).toHaveLength(300);
    },
  );

  it.skipIf(skip)("answers a read right after a transition with it, before the batch's delay", async () => {
    const definitions = checks(3);
    const { store, evaluator } = await setup(definitions, NEVER_MS);
    failAll(evaluator, definitions);
    expect(await count(database as Database, "healthcheck_alert_state")).toBe(0);
    expect((await store.loadStates()).map((state) => state.check).sort()).toEqual(["c0000", "c0001", "c0002"]);
    expect((await store.downChecks()).sort()).toEqual(["c0000", "c0001", "c0002"]);
    expect((await evaluator.triggered()).map((alert) => alert.check)).toEqual(["c0000", "c0001", "c0002"]);
    const entry: AlertHistoryEntry = {
      check: "c0000",
      output: "chat",
      timeMs: T0,
      status: "triggered",
      outcome: "failed",
      reason: "x",
    };
    void store.addHistory(entry);
    expect(await store.history({ limit: 10 })).toContainEqual(entry);
  });

  it.skipIf(skip)("writes what is queued on close()", async () => {
    const definitions = checks(5);
    const { evaluator } = await setup(definitions, NEVER_MS);
    failAll(evaluator, definitions);
    await evaluator.close();
    expect(await count(database as Database, "healthcheck_alert_state")).toBe(5);
    expect(await count(database as Database, "healthcheck_alert_history")).toBe(5);
  });

  it.skipIf(skip)(
    "logs a batch that fails and writes its rows one by one, losing only the row that fails alone",
    async () => {
      const definitions = checks(4);
      const { store, evaluator, notifier, errors } = await setup(definitions, 20);
      vi.spyOn(store, "writeBatch").mockRejectedValue(new Error("disk full"));
      const writeState = store.writeState.bind(store);
      vi.spyOn(store, "writeState").mockImplementation((write: StateWrite) =>
        write.check === "c0002" ? Promise.reject(new Error("bad row")) : writeState(write),
      );
      failAll(evaluator, definitions);
      await evaluator.settled();
      expect(errors).toContain("could not write a batch of alert states and history; writing its rows one by one");
      expect(errors).toContain("could not store the state of alert c0002/chat");
      // Stored before sent: the notification still goes when its state could not be stored.
      expect(notifier.sent).toHaveLength(4);
      vi.mocked(store.writeBatch).mockRestore();
      const stored = (await store.loadStates()).map((state) => state.check).sort();
      expect(stored).toEqual(["c0000", "c0001", "c0003"]);
      expect(await store.history({ limit: 10 })).toHaveLength(4);
    },
  );
});

describe("the alert write queue", () => {
  function writer() {
    const batches: { states: StateWrite[]; history: AlertHistoryEntry[] }[] = [];
    return {
      batches,
      writeBatch: vi.fn(async (batch: { states: readonly StateWrite[]; history: readonly AlertHistoryEntry[] }) => {
        batches.push({ states: [...batch.states], history: [...batch.history] });
      }),
      writeState: vi.fn(async () => {}),
      writeHistory: vi.fn(async () => {}),
    };
  }
  const state = (check: string, triggered: boolean) => ({
    check,
    output: "chat",
    triggered,
    sinceMs: 0,
    lastDueMs: 0,
    notified: triggered,
  });

  it("keeps the last state of an alert in a batch, and writes a full batch at once", async () => {
    const target = writer();
    const queue = new AlertWriteQueue(target, { flushDelayMs: NEVER_MS, maxRows: 3 });
    void queue.saveState(state("a", true), 1);
    void queue.saveState(state("a", false), 2);
    void queue.saveState(state("b", true), 3);
    expect(queue.pending).toBe(2);
    void queue.saveState(state("c", true), 4);
    // Full at three rows: handed to the writer without waiting for the delay.
    expect(queue.pending).toBe(0);
    await queue.flush();
    expect(
      target.batches.map((batch) => batch.states.map((write) => `${write.check} ${write.state?.triggered}`)),
    ).toEqual([["a false", "b true", "c true"]]);
  });

  it("writes batches one after the other, in the order they were gathered", async () => {
    const order: string[] = [];
    let release: () => void = () => {};
    const target = writer();
    target.writeBatch.mockImplementationOnce(async () => {
      order.push("first starts");
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      order.push("first ends");
    });
    target.writeBatch.mockImplementation(async () => void order.push("second"));
    const queue = new AlertWriteQueue(target, { flushDelayMs: NEVER_MS });
    const first = queue.saveState(state("a", true), 1);
    void queue.flush();
    const second = queue.saveState(state("a", false), 2);
    const flushed = queue.flush();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual(["first starts"]);
    release();
    await Promise.all([first, second, flushed]);
    expect(order).toEqual(["first starts", "first ends", "second"]);
  });
});
