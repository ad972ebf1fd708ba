/**
 * Databases for storage tests: SQLite always, PostgreSQL when `VIGIE_TEST_POSTGRES_URL` is set. Each
 * test database is new (a temporary SQLite file, or a PostgreSQL database of its own) and dropped by
 * `drop()`, so test files never see each other's data.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { temporaryDirectory } from "./temporary.js";

/** The URL of the PostgreSQL server for tests, or undefined to skip PostgreSQL tests. */
export const POSTGRES_URL = process.env.VIGIE_TEST_POSTGRES_URL || undefined;

/** The database kinds storage tests run on; use with `describe.each` and `skipIf`. */
export const DATABASE_KINDS = [
  { kind: "sqlite", skip: false },
  { kind: "postgres", skip: POSTGRES_URL === undefined },
] as const;

/** A fresh database for one test file. */
export interface TestDatabase {
  readonly url: string;
  /** Removes the database (and its files). */
  drop(): Promise<void>;
}

/** Creates a fresh, empty database of `kind`. */
export async function createTestDatabase(kind: "sqlite" | "postgres"): Promise<TestDatabase> {
  if (kind === "sqlite") {
    const directory = temporaryDirectory("vigie-test-");
    return {
      url: `sqlite:${join(directory, "vigie.db")}`,
      drop: async () => rmSync(directory, { recursive: true, force: true }),
    };
  }
  if (POSTGRES_URL === undefined) throw new Error("VIGIE_TEST_POSTGRES_URL is not set");
  const name = `vigie_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
