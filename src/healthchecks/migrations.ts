/**
 * The healthchecks module's migrations (platform.md §3): the definitions of checks created through
 * the API (healthchecks.md §7), in column types that mean the same on SQLite and PostgreSQL.
 */
import type { Kysely, Migration } from "kysely";

/** Migrations by name, `healthchecks-<number>-<what>`. */
export const healthcheckMigrations: Readonly<Record<string, Migration>> = {
  "healthchecks-0001-definitions": {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("healthcheck_definition")
        // 255 characters at most (healthchecks.md §1); varchar counts characters on PostgreSQL.
        .addColumn("name", "varchar(255)", (column) => column.primaryKey())
        .addColumn("kind", "varchar(16)", (column) => column.notNull())
        // The definition as the API returns it, without `source`, as JSON text.
        .addColumn("definition", "text", (column) => column.notNull())
        .addColumn("created_at", "bigint", (column) => column.notNull())
        .addColumn("updated_at", "bigint", (column) => column.notNull())
        .execute();
    },
  },
};
