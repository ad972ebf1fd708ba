/**
 * Migrations are written as SQL DDL that SQLite and PostgreSQL both run as written: the types
 * `varchar(n)`, `char(n)`, `text`, `integer` and `bigint` (SQLite reads them by affinity; PostgreSQL
 * counts varchar lengths in characters), `check`, `references … on delete`, named `constraint`s and
 * plain indexes. The rare difference (an identity column, `timestamptz`, `alter column`) is chosen
 * with `migrationDialect` in the migration. Statements run through Kysely, in the migration's
 * transaction.
 */
import { type Kysely, sql } from "kysely";

/** Runs `statements` in order on `db` (a migration's connection). */
export async function runDdl(db: Kysely<unknown>, statements: readonly string[]): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
