import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase, platformMigrations } from "../../src/platform/database.js";
import { FailureLimiter, registryDb, registryMigrations, TOKEN_FAILURE_POLICY } from "../../src/registry/storage.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { dropWhenClosed } from "./sessions.js";

const MINUTE = 60_000;

describe.each(DATABASE_KINDS)("failure limiter on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let database: Database;

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      database = await openDatabase(testDatabase.url, { ...platformMigrations, ...registryMigrations });
    });
    afterAll(async () => {
      await database?.close();
      await dropWhenClosed(testDatabase);
    });

    it("limits a key after 10 failures within 15 minutes, shared by every limiter on the database", async () => {
      expect(TOKEN_FAILURE_POLICY).toEqual({ limit: 10, windowMs: 15 * MINUTE });
      const first = new FailureLimiter(database);
      const second = new FailureLimiter(database);
      const start = 5_000_000_000;
      const keys = ["user:ann", "address:10.0.0.1"];
      for (let index = 0; index < 9; index += 1) {
        await (index % 2 === 0 ? first : second).record(keys, start + index * 1000);
      }
      expect(await first.check(keys, start + 9000)).toBeUndefined();
      await second.record(["user:ann"], start + 9000);
      expect(await first.check(keys, start + 10_000)).toBe(15 * 60 - 10);
      expect(await first.check(["user:ann"], start + 10_000)).toBe(15 * 60 - 10);
      // The address has 9 failures only.
      expect(await second.check(["address:10.0.0.1"], start + 10_000)).toBeUndefined();
      expect(await second.check(["user:bob"], start + 10_000)).toBeUndefined();
      // Free once the 10th most recent failure is 15 minutes old.
      expect(await first.check(keys, start + 15 * MINUTE - 1)).toBe(1);
      expect(await first.check(keys, start + 15 * MINUTE)).toBeUndefined();
    });

    it("forgets failures that left the window", async () => {
      const limiter = new FailureLimiter(database);
      const later = 9_000_000_000;
      await limiter.record(["user:carl"], later);
      const rows = await registryDb(database).selectFrom("registry_token_failure").select(["key", "at"]).execute();
      expect(rows).toEqual([{ key: "user:carl", at: later }]);
    });
  });
});
