// A fresh database for a benchmark, dropped afterwards.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A fresh database of `kind`: a SQLite file in a temporary directory (`sqlite`), or a PostgreSQL
 * database made on the server of `postgresUrl` (`postgres`), with the `pg` client of the checkout
 * at `dir`. Resolves with `{ url, drop }`; `drop()` removes the directory or the database.
 */
export async function temporaryDatabase(kind, postgresUrl, dir) {
  if (kind === "sqlite") {
    const directory = mkdtempSync(join(tmpdir(), "vigie-bench-db-"));
    return {
      url: `sqlite:${join(directory, "vigie.db")}`,
      drop: async () => rmSync(directory, { recursive: true, force: true }),
    };
  }
  if (postgresUrl === undefined) throw new Error("a PostgreSQL database needs BENCH_POSTGRES_URL");
  const pg = createRequire(join(dir, "package.json"))("pg");
  const admin = async (statement) => {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  const name = `vigie_bench_${randomBytes(6).toString("hex")}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
