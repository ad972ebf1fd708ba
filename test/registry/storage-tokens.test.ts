/**
 * The storage of tokens (docs/registry.md) on SQLite and PostgreSQL: only the SHA-256 of a token is
 * stored, in a unique index that authentication looks up; names are unique per user; a user's
 * tokens go with it; `last_used_at` moves at most once a minute whatever the callers.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase, platformMigrations } from "../../src/platform/database.js";
import { registryDb, registryMigrations, TokenStore, UserStore } from "../../src/registry/storage.js";
import { DAY_MS, hashToken, tokenView } from "../../src/registry/tokens.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { dropWhenClosed, sessionsEnded } from "./sessions.js";

describe.each(DATABASE_KINDS)("token storage on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let database: Database;
    let users: UserStore;
    let tokens: TokenStore;

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      database = await openDatabase(testDatabase.url, { ...platformMigrations, ...registryMigrations });
      users = new UserStore(database);
      tokens = new TokenStore(database);
    });
    afterAll(async () => {
      await database?.close();
      await dropWhenClosed(testDatabase);
    });

    const user = (name: string) =>
      users.create({ name, description: "", role: "tech", active: true, passwordHash: "$argon2id$not-a-real-hash" }, 1);

    it("stores only the SHA-256 of a token, and finds the token and its user by it", async () => {
      const ann = await user("ann");
      const { token, stored } = await tokens.create(ann.id, "ci", 30, 1_000);
      expect(stored).toMatchObject({ userId: ann.id, name: "ci", createdAt: 1_000, lastUsedAt: null });
      expect(stored.expiresAt).toBe(1_000 + 30 * DAY_MS);

      const rows = await registryDb(database).selectFrom("registry_token").selectAll().execute();
      expect(rows).toHaveLength(1);
      expect(rows[0]?.hash).toBe(hashToken(token));
      // Neither the token nor its random part is stored anywhere in the row.
      const text = JSON.stringify(rows);
      expect(text).not.toContain(token);
      expect(text).not.toContain(token.slice("vigie_".length));

      expect(await tokens.findOwner(hashToken(token))).toEqual({
        tokenId: stored.id,
        expiresAt: stored.expiresAt,
        lastUsedAt: null,
        userId: ann.id,
        userName: "ann",
        role: "tech",
        active: true,
      });
      expect(await tokens.findOwner(hashToken(`${token}x`))).toBeUndefined();
    });

    it("keeps the hash in a unique index that the lookup uses", async () => {
      const indexes =
        kind === "sqlite"
          ? await sql<{ name: string; sql: string | null }>`
              select name, sql from sqlite_master where type = 'index' and tbl_name = 'registry_token'`.execute(
              database.kysely,
            )
          : await sql<{ name: string; sql: string }>`
              select indexname as name, indexdef as sql from pg_indexes where tablename = 'registry_token'`.execute(
              database.kysely,
            );
      const hashIndex = indexes.rows.find((row) => row.name === "registry_token_hash_unique");
      expect(hashIndex?.sql).toMatch(/create unique index/i);
      expect(hashIndex?.sql).toMatch(/\(\s*"?hash"?\s*\)/i);
      if (kind === "sqlite") {
        const plan = await sql<{ detail: string }>`
          explain query plan select t.id from registry_token t join registry_user u on u.id = t.user_id
          where t.hash = ${"0".repeat(64)}`.execute(database.kysely);
        expect(plan.rows.map((row) => row.detail).join("\n")).toMatch(/USING INDEX registry_token_hash_unique/);
      }
      // Two tokens with the same hash cannot exist.
      const bea = await user("bea");
      const { stored } = await tokens.create(bea.id, "one", 1, 1);
      const row = await registryDb(database)
        .selectFrom("registry_token")
        .select("hash")
        .where("id", "=", stored.id)
        .executeTakeFirstOrThrow();
      await expect(
        registryDb(database)
          .insertInto("registry_token")
          .values({
            id: "00000000-0000-4000-8000-000000000000",
            user_id: bea.id,
            name: "two",
            hash: row.hash,
            created_at: 1,
            expires_at: 2,
            last_used_at: null,
          })
          .execute(),
      ).rejects.toThrow();
    });

    it("keeps names unique per user, lists by name, deletes by name", async () => {
      const carl = await user("carl");
      const dora = await user("dora");
      await tokens.create(carl.id, "zeta", 1, 1);
      await tokens.create(carl.id, "alpha", 1, 1);
      await expect(tokens.create(carl.id, "zeta", 1, 1)).rejects.toThrow("token zeta already exists");
      await tokens.create(dora.id, "zeta", 1, 1);
      expect((await tokens.list(carl.id)).map((token) => token.name)).toEqual(["alpha", "zeta"]);
      expect((await tokens.list(dora.id)).map((token) => token.name)).toEqual(["zeta"]);
      await expect(tokens.delete(carl.id, "nope")).rejects.toThrow("token nope not found");
      expect((await tokens.delete(carl.id, "zeta")).name).toBe("zeta");
      expect((await tokens.list(carl.id)).map((token) => token.name)).toEqual(["alpha"]);
      expect((await tokens.list(dora.id)).map((token) => token.name)).toEqual(["zeta"]);
    });

    it("deletes a user's tokens with the user", async () => {
      const eve = await user("eve");
      const { token } = await tokens.create(eve.id, "ci", 1, 1);
      await users.delete("eve");
      expect(await tokens.findOwner(hashToken(token))).toBeUndefined();
      const left = await registryDb(database)
        .selectFrom("registry_token")
        .select("id")
        .where("user_id", "=", eve.id)
        .execute();
      expect(left).toEqual([]);
    });

    it("stores scopes and crates as JSON arrays, null when absent, and reads them in the same lookup", async () => {
      const gil = await user("gil");
      const { token, stored } = await tokens.create(gil.id, "cargo", 1, 1, {
        scopes: ["publish-new", "yank"],
        crates: ["acme-*", "Serde"],
      });
      expect(stored).toMatchObject({ scopes: ["publish-new", "yank"], crates: ["acme-*", "Serde"] });
      const onlyCrates = await tokens.create(gil.id, "crates", 1, 1, { crates: ["x"] });
      const plain = await tokens.create(gil.id, "plain", 1, 1);
      const rows = await registryDb(database)
        .selectFrom("registry_token")
        .select(["name", "scopes", "crates"])
        .where("user_id", "=", gil.id)
        .orderBy("name")
        .execute();
      expect(rows).toEqual([
        { name: "cargo", scopes: '["publish-new","yank"]', crates: '["acme-*","Serde"]' },
        { name: "crates", scopes: null, crates: '["x"]' },
        { name: "plain", scopes: null, crates: null },
      ]);
      const owner = await tokens.findOwner(hashToken(token));
      expect(owner).toMatchObject({ userName: "gil", scopes: ["publish-new", "yank"], crates: ["acme-*", "Serde"] });
      expect(Object.isFrozen(owner?.scopes)).toBe(true);
      expect(await tokens.findOwner(hashToken(onlyCrates.token))).toMatchObject({ scopes: undefined, crates: ["x"] });
      const unscoped = await tokens.findOwner(hashToken(plain.token));
      expect(unscoped?.scopes).toBeUndefined();
      expect(unscoped?.crates).toBeUndefined();
      const listed = await tokens.list(gil.id);
      expect(listed.map((item) => [item.name, item.scopes, item.crates])).toEqual([
        ["cargo", ["publish-new", "yank"], ["acme-*", "Serde"]],
        ["crates", undefined, ["x"]],
        ["plain", undefined, undefined],
      ]);
      expect((await tokens.delete(gil.id, "cargo")).scopes).toEqual(["publish-new", "yank"]);
    });

    it("refuses to read a limit column that is not a JSON array of strings", async () => {
      const hal = await user("hal");
      const { token, stored } = await tokens.create(hal.id, "ci", 1, 1);
      await registryDb(database)
        .updateTable("registry_token")
        .set({ scopes: '{"yank": true}' })
        .where("id", "=", stored.id)
        .execute();
      await expect(tokens.findOwner(hashToken(token))).rejects.toThrow(
        'registry_token.scopes is not a JSON array of strings: {"yank": true}',
      );
      await registryDb(database)
        .updateTable("registry_token")
        .set({ scopes: null, crates: "[1]" })
        .where("id", "=", stored.id)
        .execute();
      await expect(tokens.list(hal.id)).rejects.toThrow("registry_token.crates is not a JSON array of strings: [1]");
    });

    it("moves last_used_at at most once a minute, never backwards", async () => {
      const fay = await user("fay");
      const { token, stored } = await tokens.create(fay.id, "ci", 1, 1);
      const lastUsed = async () => (await tokens.findOwner(hashToken(token)))?.lastUsedAt;
      await tokens.touch(stored.id, 100_000);
      expect(await lastUsed()).toBe(100_000);
      // Another instance, with its own throttle, writes within the minute: nothing changes.
      await tokens.touch(stored.id, 159_999);
      expect(await lastUsed()).toBe(100_000);
      // A clock behind: nothing changes.
      await tokens.touch(stored.id, 40_000);
      expect(await lastUsed()).toBe(100_000);
      await tokens.touch(stored.id, 160_000);
      expect(await lastUsed()).toBe(160_000);
    });
  });
});

describe.each(DATABASE_KINDS)("migration registry-0003-token-scopes on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
    });
    afterAll(async () => {
      await dropWhenClosed(testDatabase);
    });

    it("keeps the tokens of an existing database, unscoped, and stores scopes afterwards", async () => {
      const before = Object.fromEntries(
        Object.entries(registryMigrations).filter(([name]) => name < "registry-0003-token-scopes"),
      );
      const old = await openDatabase(testDatabase.url, { ...platformMigrations, ...before });
      const ann = await new UserStore(old).create(
        { name: "ann", description: "", role: "tech", active: true, passwordHash: "$argon2id$not-a-real-hash" },
        1,
      );
      // The schema of registry-0002: no scopes or crates columns yet.
      const token = "vigie_old-token-of-the-previous-schema-000000000000";
      await sql`insert into registry_token (id, user_id, name, hash, created_at, expires_at, last_used_at)
        values ('00000000-0000-4000-8000-000000000001', ${ann.id}, 'laptop', ${hashToken(token)}, 1, ${DAY_MS}, 5)`.execute(
        old.kysely,
      );
      await old.close();
      await sessionsEnded(testDatabase.url);

      const database = await openDatabase(testDatabase.url, { ...platformMigrations, ...registryMigrations });
      try {
        const tokens = new TokenStore(database);
        const owner = await tokens.findOwner(hashToken(token));
        expect(owner).toMatchObject({
          tokenId: "00000000-0000-4000-8000-000000000001",
          userName: "ann",
          lastUsedAt: 5,
        });
        expect(owner?.scopes).toBeUndefined();
        expect(owner?.crates).toBeUndefined();
        const [listed] = await tokens.list(ann.id);
        expect(listed && tokenView(listed)).toEqual({
          id: "00000000-0000-4000-8000-000000000001",
          name: "laptop",
          "created-at": "1970-01-01T00:00:00.001Z",
          "expires-at": "1970-01-02T00:00:00.000Z",
          "last-used-at": "1970-01-01T00:00:00.005Z",
        });
        const scoped = await tokens.create(ann.id, "cargo", 1, 1, { scopes: ["yank"] });
        expect(await tokens.findOwner(hashToken(scoped.token))).toMatchObject({ scopes: ["yank"], crates: undefined });
      } finally {
        await database.close();
      }
    });
  });
});
