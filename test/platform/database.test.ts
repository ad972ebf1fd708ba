import { type Kysely, sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type Database,
  openDatabase,
  platformMigrations,
  sqlitePath,
  valuesList,
} from "../../src/platform/database.js";
import { getOrCreateSetting, readSetting } from "../../src/platform/settings.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";

const widgets = {
  "test-0001-widgets": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable("widgets")
        .addColumn("id", "integer", (column) => column.primaryKey())
        .execute();
    },
  },
};

async function tableNames(database: Database): Promise<string[]> {
  const query =
    database.dialect === "sqlite"
      ? sql<{ name: string }>`select name from sqlite_master where type = 'table'`
      : sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = 'public'`;
  return (await query.execute(database.kysely)).rows.map((row) => row.name).sort();
}

describe("sqlitePath", () => {
  it("reads relative, absolute and in-memory URLs", () => {
    expect(sqlitePath("sqlite:./data/vigie.db")).toBe("./data/vigie.db");
    expect(sqlitePath("sqlite:/var/lib/vigie.db")).toBe("/var/lib/vigie.db");
    expect(sqlitePath("sqlite:///var/lib/vigie.db")).toBe("/var/lib/vigie.db");
    expect(sqlitePath("sqlite::memory:")).toBe(":memory:");
  });
});

describe("valuesList", () => {
  it("writes the VALUES groups of a multi-row INSERT in each dialect's placeholders", () => {
    expect(valuesList(1, 3, "sqlite")).toBe("(?, ?, ?)");
    expect(valuesList(2, 2, "sqlite")).toBe("(?, ?), (?, ?)");
    expect(valuesList(1, 3, "postgres")).toBe("($1, $2, $3)");
    expect(valuesList(3, 2, "postgres")).toBe("($1, $2), ($3, $4), ($5, $6)");
  });
});

describe.each(DATABASE_KINDS)("database on $kind", ({ kind, skip }) => {
  let test: TestDatabase;
  const open: Database[] = [];
  const openTracked = async (migrations = platformMigrations) => {
    const database = await openDatabase(test.url, migrations);
    open.push(database);
    return database;
  };

  beforeEach(async () => {
    if (skip) return;
    test = await createTestDatabase(kind);
  });
  afterEach(async () => {
    for (const database of open.splice(0)) await database.close().catch(() => {});
    if (!skip) await test.drop();
  });

  it.skipIf(skip)("runs migrations once, recording them; a second start is a no-op", async () => {
    const first = await openTracked({ ...platformMigrations, ...widgets });
    expect(first.dialect).toBe(kind);
    expect(await tableNames(first)).toEqual(
      expect.arrayContaining(["settings", "vigie_migration", "vigie_migration_lock", "widgets"]),
    );
    await first.kysely.insertInto("settings").values({ key: "k", value: "v" }).execute();
    await first.close();
    const second = await openTracked({ ...platformMigrations, ...widgets });
    const recorded = await second.kysely
      .withTables<{ vigie_migration: { name: string } }>()
      .selectFrom("vigie_migration")
      .select("name")
      .orderBy("name")
      .execute();
    expect(recorded.map((row) => row.name)).toEqual([
      "platform-0001-settings",
      "platform-0002-cluster",
      "platform-0003-output-queue",
      "platform-0004-stream-partition-leases",
      "test-0001-widgets",
    ]);
    expect(await readSetting(second, "k")).toBe("v");
  });

  it.skipIf(skip)("rolls back every migration of a run when one fails", async () => {
    const failing = {
      ...platformMigrations,
      ...widgets,
      "test-0002-broken": {
        async up(db: Kysely<unknown>) {
          await sql`this is not sql`.execute(db);
        },
      },
    };
    await expect(openDatabase(test.url, failing)).rejects.toThrow(/migration test-0002-broken failed/);
    const database = await openTracked();
    const tables = await tableNames(database);
    expect(tables).not.toContain("widgets");
    expect(tables).toContain("settings");
  });

  it.skipIf(skip)("answers pings while open and fails them once closed", async () => {
    const database = await openTracked();
    await expect(database.ping()).resolves.toBeUndefined();
    await database.close();
    await expect(database.ping()).rejects.toThrow();
  });

  it.skipIf(skip)("keeps one generated setting even when two instances race to create it", async () => {
    const a = await openTracked();
    const b = await openTracked();
    const generate = (value: string) => () => value;
    const [first, second] = await Promise.all([
      getOrCreateSetting(a, "secret", generate("from-a")),
      getOrCreateSetting(b, "secret", generate("from-b")),
    ]);
    expect(first.value).toBe(second.value);
    expect([first.created, second.created].filter(Boolean)).toHaveLength(1);
    const again = await getOrCreateSetting(a, "secret", generate("later"));
    expect(again).toEqual({ value: first.value, created: false });
  });

  it.skipIf(skip || kind !== "sqlite")("uses WAL journaling and a busy timeout on SQLite files", async () => {
    const database = await openTracked();
    const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(database.kysely);
    expect(mode.rows[0]?.journal_mode).toBe("wal");
    const timeout = await sql<{ timeout: number }>`pragma busy_timeout`.execute(database.kysely);
    expect(timeout.rows[0]?.timeout).toBe(5000);
  });
});
