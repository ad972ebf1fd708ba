import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase, platformMigrations } from "../../src/platform/database.js";
import { createRegistryModule } from "../../src/registry/index.js";
import {
  failureKey,
  SIGN_IN_LIMITS,
  SignInLimiter,
  signInLimitsOf,
  signInSection,
} from "../../src/registry/sign-in-limit.js";
import { FailureLimiter, registryDb, registryMigrations } from "../../src/registry/storage.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { startTestServer } from "../support/server.js";
import { dropWhenClosed } from "./sessions.js";

const MINUTE = 60_000;
const POLICY = SIGN_IN_LIMITS.user;

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
      expect(SIGN_IN_LIMITS).toEqual({
        address: { limit: 10, windowMs: 15 * MINUTE },
        user: { limit: 10, windowMs: 15 * MINUTE },
        userAddress: { limit: 1, windowMs: 15 * MINUTE },
      });
      const first = new FailureLimiter(database, 15 * MINUTE);
      const second = new FailureLimiter(database, 15 * MINUTE);
      const start = 5_000_000_000;
      const keys = ["user:ann", "address:10.0.0.1"];
      for (let index = 0; index < 9; index += 1) {
        await (index % 2 === 0 ? first : second).record(keys, start + index * 1000);
      }
      expect(await first.wait("user:ann", POLICY, start + 9000)).toBeUndefined();
      await second.record(["user:ann"], start + 9000);
      expect(await first.wait("user:ann", POLICY, start + 10_000)).toBe(15 * 60 - 10);
      // The address has 9 failures only.
      expect(await second.wait("address:10.0.0.1", POLICY, start + 10_000)).toBeUndefined();
      expect(await second.wait("user:bob", POLICY, start + 10_000)).toBeUndefined();
      // Free once the 10th most recent failure is 15 minutes old.
      expect(await first.wait("user:ann", POLICY, start + 15 * MINUTE - 1)).toBe(1);
      expect(await first.wait("user:ann", POLICY, start + 15 * MINUTE)).toBeUndefined();
    });

    it("refuses an address after 10 failures, but a user under guessing only from addresses that failed for it", async () => {
      const limiter = new SignInLimiter(new FailureLimiter(database, 15 * MINUTE));
      const start = 6_000_000_000;
      for (let index = 0; index < 10; index += 1) await limiter.failed("dora", `10.1.0.${index}`, start + index);
      // Each of those addresses failed once for dora: refused until that failure is 15 minutes old.
      expect(await limiter.refusal("dora", "10.1.0.3", start + 1000)).toBe(15 * 60 - 1);
      // A fresh address is checked, and so is any address for another user.
      expect(await limiter.refusal("dora", "10.1.1.1", start + 1000)).toBeUndefined();
      expect(await limiter.refusal("erin", "10.1.0.3", start + 1000)).toBeUndefined();
      // The fresh address fails once: refused for dora too, until dora's 10th most recent failure
      // (at start + 1) leaves the window, which comes before this address's own (at start + 2000).
      await limiter.failed("dora", "10.1.1.1", start + 2000);
      expect(await limiter.refusal("dora", "10.1.1.1", start + 3000)).toBe(Math.ceil((15 * MINUTE + 1 - 3000) / 1000));
      // Below 10 failures for the user, an address that failed is still checked.
      expect(await limiter.refusal("erin", "10.1.2.1", start)).toBeUndefined();
      await limiter.failed("erin", "10.1.2.1", start);
      expect(await limiter.refusal("erin", "10.1.2.1", start + 1)).toBeUndefined();
      // The per-address limit counts every user.
      for (let index = 0; index < 9; index += 1) await limiter.failed(`user${index}`, "10.1.3.1", start + index);
      expect(await limiter.refusal("frank", "10.1.3.1", start + 100)).toBeUndefined();
      await limiter.failed("user9", "10.1.3.1", start + 10);
      expect(await limiter.refusal("frank", "10.1.3.1", start + 100)).toBe(15 * 60);
    });

    it("hashes a key longer than the column (an address from X-Forwarded-For may be any string)", async () => {
      expect(failureKey("address:10.0.0.1")).toBe("address:10.0.0.1");
      const long = failureKey(`address:${"x".repeat(500)}`);
      expect(long).toMatch(/^sha256:[0-9a-f]{64}$/);
      const limiter = new SignInLimiter(new FailureLimiter(database, 15 * MINUTE));
      await limiter.failed("gina", "y".repeat(500), 7_000_000_000);
    });

    it("forgets failures that left the window", async () => {
      const limiter = new FailureLimiter(database, 15 * MINUTE);
      const later = 9_000_000_000;
      await limiter.record(["user:carl"], later);
      const rows = await registryDb(database).selectFrom("registry_token_failure").select(["key", "at"]).execute();
      expect(rows).toEqual([{ key: "user:carl", at: later }]);
    });
  });
});

describe("registry.sign-in", () => {
  it("defaults to 10 per address, 10 per user, 1 per user and address, over 15 minutes", () => {
    expect(signInLimitsOf(signInSection(undefined, "registry.sign-in"))).toEqual(SIGN_IN_LIMITS);
    expect(() => signInSection({ "failures-per-user": 0 }, "registry.sign-in")).toThrow(
      "registry.sign-in.failures-per-user: must be an integer between 1 and 1000000",
    );
    expect(() => signInSection({ window: "10ms" }, "registry.sign-in")).toThrow(
      "registry.sign-in.window: must be at least 1000ms",
    );
  });

  it("is enforced on the server with the configured numbers", async () => {
    const server = await startTestServer({
      modules: [
        createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password-1" } }),
      ],
      config: { registry: { "sign-in": { "failures-per-address": 2, window: "1m" } } },
    });
    try {
      const attempt = (password: string) =>
        server.app.inject({
          method: "POST",
          url: "/api/v1/registry/token",
          headers: { "content-type": "application/json" },
          remoteAddress: "192.0.2.50",
          payload: JSON.stringify({ name: "t", user: "root", password }),
        });
      expect((await attempt("wrong-password-1")).statusCode).toBe(401);
      expect((await attempt("wrong-password-2")).statusCode).toBe(401);
      const refused = await attempt("root-password-1");
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(60);
    } finally {
      await server.close();
    }
  });
});
