import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase, platformMigrations } from "../../src/platform/database.js";
import { STATUS_OF, VigieError } from "../../src/platform/errors.js";
import { registryMigrations, UserStore } from "../../src/registry/storage.js";
import { newUserBody, setsAdminOnlyField, type User, userName, userUpdateBody } from "../../src/registry/users.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { validationError } from "../support/validation.js";
import { dropWhenClosed } from "./sessions.js";

const rule = (run: () => unknown): string => validationError(run).message;

const valid = { name: "ann", description: "", password: "12345678", role: "tech", active: true };

describe("user fields", () => {
  it("accepts names of 1-64 characters of A-Z a-z 0-9 . _ -", () => {
    for (const name of ["a", "A.b_c-9", "x".repeat(64)]) expect(userName(name, "name")).toBe(name);
    expect(rule(() => userName("", "name"))).toBe("name: must not be empty");
    expect(rule(() => userName("x".repeat(65), "name"))).toBe("name: must have at most 64 characters");
    for (const name of ["a b", "é", "a/b", "a@b", "a:b"]) {
      expect(rule(() => userName(name, "name"))).toBe("name: must contain only the characters A-Z a-z 0-9 . _ -");
    }
    expect(rule(() => userName(3, "name"))).toBe("name: must be a string");
  });

  it("requires every field of a new user and names the one that breaks a rule", () => {
    expect(newUserBody({ ...valid, extra: true }, "")).toEqual(valid);
    for (const field of ["name", "description", "password", "role", "active"]) {
      const body: Record<string, unknown> = { ...valid };
      delete body[field];
      expect(rule(() => newUserBody(body, ""))).toBe(`${field}: is required`);
    }
    expect(rule(() => newUserBody({ ...valid, description: "x".repeat(1001) }, ""))).toBe(
      "description: must have at most 1000 characters",
    );
    expect(newUserBody({ ...valid, description: "x".repeat(1000) }, "").description).toHaveLength(1000);
    expect(rule(() => newUserBody({ ...valid, password: "1234567" }, ""))).toBe(
      "password: must have at least 8 characters",
    );
    expect(rule(() => newUserBody({ ...valid, password: "x".repeat(1025) }, ""))).toBe(
      "password: must have at most 1024 characters",
    );
    expect(newUserBody({ ...valid, password: "x".repeat(1024) }, "").password).toHaveLength(1024);
    expect(rule(() => newUserBody({ ...valid, role: "root" }, ""))).toBe("role: must be one of admin, tech");
    expect(rule(() => newUserBody({ ...valid, active: "true" }, ""))).toBe("active: must be true or false");
  });

  it("needs at least one field in an update and ignores name", () => {
    expect(userUpdateBody({ description: "x", name: "renamed" }, "")).toEqual({ description: "x" });
    expect(userUpdateBody({ active: false, role: "admin" }, "")).toEqual({ active: false, role: "admin" });
    expect(rule(() => userUpdateBody({}, ""))).toBe("must contain at least one of description, password, role, active");
    expect(rule(() => userUpdateBody({ name: "renamed" }, ""))).toBe(
      "must contain at least one of description, password, role, active",
    );
    expect(rule(() => userUpdateBody({ password: "short" }, ""))).toBe("password: must have at least 8 characters");
  });

  it("tells when a body sets a field only admins may change", () => {
    expect(setsAdminOnlyField({ role: "tech" })).toBe(true);
    expect(setsAdminOnlyField({ active: true })).toBe(true);
    expect(setsAdminOnlyField({ description: "x", password: "12345678" })).toBe(false);
    // Whatever the value: permission comes before validation (docs/registry.md).
    expect(setsAdminOnlyField({ role: null })).toBe(true);
    expect(setsAdminOnlyField({ active: "garbage" })).toBe(true);
    expect(setsAdminOnlyField("role")).toBe(false);
  });
});

async function statusOf(promise: Promise<unknown>): Promise<number | "ok"> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (error instanceof VigieError) return STATUS_OF[error.code];
    throw error;
  }
}

describe.each(DATABASE_KINDS)("user storage on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let database: Database;
    let store: UserStore;
    const migrations = { ...platformMigrations, ...registryMigrations };

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      database = await openDatabase(testDatabase.url, migrations);
      store = new UserStore(database);
    });
    afterAll(async () => {
      await database?.close();
      await dropWhenClosed(testDatabase);
    });

    const user = (name: string, role: "admin" | "tech", active = true) => ({
      name,
      description: `${name}'s account`,
      role,
      active,
      passwordHash: "$argon2id$not-a-real-hash",
    });

    it("creates users with UUID v4 ids, refuses a taken name, lists them sorted by name", async () => {
      const created: User = await store.create(user("zed", "tech"), 1);
      expect(created.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      await store.create(user("Bea", "admin"), 2);
      await store.create(user("_x", "tech"), 3);
      await store.create(user("al", "tech", false), 4);
      await expect(store.create(user("zed", "admin"), 5)).rejects.toThrow("user zed already exists");
      expect(await store.createIfAbsent(user("zed", "admin"), 5)).toBeUndefined();
      const names = (await store.list()).map((entry) => entry.name);
      expect(names).toEqual(["Bea", "_x", "al", "zed"]);
      expect(await store.find("al")).toMatchObject({ name: "al", active: false, role: "tech" });
      expect(await store.find("AL")).toBeUndefined();
      expect((await store.findCredentials("al"))?.passwordHash).toBe("$argon2id$not-a-real-hash");
      // Reopening runs no migration twice.
      const again = await openDatabase(testDatabase.url, migrations);
      await again.close();
    });

    it("keeps one active admin when two admins are deactivated at the same time", async () => {
      await store.create(user("admin-a", "admin"), 1);
      // Bea (admin, from the first test) and admin-a are the active admins: deactivate both at once.
      // On PostgreSQL through two pools, as two instances would. SQLite has one connection per
      // process (a second one in the same process would block the event loop on its busy timeout).
      const second = kind === "postgres" ? await openDatabase(testDatabase.url, migrations) : undefined;
      try {
        const other = second === undefined ? store : new UserStore(second);
        const results = await Promise.all([
          statusOf(store.update("Bea", { active: false }, 10)),
          statusOf(other.update("admin-a", { role: "tech" }, 10)),
        ]);
        expect(results.sort()).toEqual([409, "ok"].sort());
        const admins = (await store.list()).filter((entry) => entry.role === "admin" && entry.active);
        expect(admins).toHaveLength(1);
        // And deleting the remaining one is refused too.
        await expect(store.delete((admins[0] as User).name)).rejects.toThrow("at least one active admin must remain");
      } finally {
        await second?.close();
      }
    });
  });
});
