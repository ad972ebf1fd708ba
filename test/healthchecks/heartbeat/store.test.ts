/**
 * The heartbeats' store (src/healthchecks/heartbeat/store.ts) on SQLite and PostgreSQL, cluster
 * mode's waiting pings (docs/cluster.md): a taken ping leaves the table only in the transaction
 * that writes the state counting it; a failed take (an error, a killed owner) leaves every ping for
 * the next taker; pings given back stay; two takers never both get a ping.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HeartbeatStore, type HeartbeatStore as Store } from "../../../src/healthchecks/heartbeat/store.js";
import { healthcheckMigrations } from "../../../src/healthchecks/storage.js";
import { type Database, openDatabase, platformMigrations } from "../../../src/platform/database.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";

const UP = { state: "up" as const, lastPingMs: 1_000, expectedMs: 61_000, runs: [] };
const DOWN = { state: "down" as const, lastPingMs: 2_000, expectedMs: 62_000, runs: [] };

describe.each(DATABASE_KINDS)("heartbeat store on $kind", ({ kind, skip }) => {
  let test: TestDatabase;
  let database: Database;
  let store: Store;
  beforeEach(async () => {
    if (skip) return;
    test = await createTestDatabase(kind);
    database = await openDatabase(test.url, { ...platformMigrations, ...healthcheckMigrations });
    store = new HeartbeatStore(database);
  });
  afterEach(async () => {
    if (skip) return;
    await database.close().catch(() => {});
    await test.drop();
  });

  it.skipIf(skip)("deletes taken pings with the state that counts them, in one transaction", async () => {
    await store.saveSnapshots([["job", UP]], 1_000);
    await store.addPing("job", { kind: "fail" }, undefined, "disk full", 2_000);
    await store.addPing("other", { kind: "success" }, "r1", "", 2_100);
    await store.addPing("job", { kind: "exit", status: 3 }, undefined, "", 2_200);
    // The applier fails (an owner killed, a bug): nothing is deleted, the state is unchanged.
    await expect(
      store.takePings(["job"], () => {
        throw new Error("killed");
      }),
    ).rejects.toThrow("killed");
    expect((await store.snapshots(["job"])).get("job")).toEqual(UP);
    let seen: string[] = [];
    const applied = await store.takePings(["job", "other"], (pings) => {
      seen = pings.map((ping) => `${ping.name}:${ping.body}:${ping.timeMs}`);
      // `other` moved away meanwhile: given back.
      return { snapshots: [["job", DOWN]], kept: pings.filter((ping) => ping.name === "other"), nowMs: 3_000 };
    });
    expect(applied).toBe(2);
    expect(seen).toEqual(["job:disk full:2000", "other::2100", "job::2200"]);
    expect((await store.snapshots(["job"])).get("job")).toEqual(DOWN);
    // The given-back ping is still there, intact; the applied ones are gone.
    const again = await store.takePings(["job", "other"], () => ({ snapshots: [], kept: [], nowMs: 4_000 }));
    expect(again).toBe(1);
    const none = await store.takePings(["job", "other"], () => ({ snapshots: [], kept: [], nowMs: 5_000 }));
    expect(none).toBe(0);
  });

  it.skipIf(skip)("gives a ping to one of two concurrent takers", async () => {
    for (let index = 0; index < 20; index++) await store.addPing("job", { kind: "success" }, undefined, "", index);
    // PostgreSQL: two instances, two connections (cluster mode); SQLite has a single instance.
    const second =
      kind === "sqlite" ? undefined : await openDatabase(test.url, { ...platformMigrations, ...healthcheckMigrations });
    const other = second === undefined ? store : new HeartbeatStore(second);
    const taken: number[] = [];
    const take = (from: Store) =>
      from.takePings(["job"], (pings) => {
        taken.push(...pings.map((ping) => ping.id));
        return { snapshots: [["job", UP]], kept: [], nowMs: 1 };
      });
    await Promise.all([take(store), take(other), take(store), take(other)]);
    expect(taken).toHaveLength(20);
    expect(new Set(taken).size).toBe(20);
    await second?.close();
  });
});
