/**
 * Waiting for a closed pool's PostgreSQL sessions to end before a test database is dropped.
 *
 * pg's `Pool.end()` resolves once its clients are asked to end, not once their sockets closed; a
 * `DROP DATABASE ... WITH (FORCE)` right after may terminate a session still closing, and pg then
 * raises the server's "terminating connection" error with no listener left (an uncaught error in
 * the test run).
 */
import pg from "pg";
import { POSTGRES_URL, type TestDatabase } from "../support/databases.js";

/** Resolves when no session is connected to the database of `url` (at most `timeoutMs`). */
export async function sessionsEnded(url: string, timeoutMs = 5_000): Promise<void> {
  if (!url.startsWith("postgres") || POSTGRES_URL === undefined) return;
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const result = await client.query("select count(*)::int as count from pg_stat_activity where datname = $1", [
        name,
      ]);
      if (result.rows[0].count === 0) return;
      await new Promise((wait) => setTimeout(wait, 20));
    }
  } finally {
    await client.end();
  }
}

/** Drops a test database once its sessions ended. */
export async function dropWhenClosed(database: TestDatabase | undefined): Promise<void> {
  if (database === undefined) return;
  await sessionsEnded(database.url);
  await database.drop();
}
