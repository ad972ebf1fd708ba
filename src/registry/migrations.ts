/**
 * The registry's migrations (platform.md §3): plain column types that mean the same on SQLite and
 * PostgreSQL (BIGINT milliseconds, INTEGER 0/1 booleans).
 */
import { type Kysely, type Migration, sql } from "kysely";

/** Migrations by name, `registry-<number>-<what>`. */
export const registryMigrations: Readonly<Record<string, Migration>> = {
  "registry-0001-users-and-tokens": {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("registry_user")
        .addColumn("id", "varchar(36)", (column) => column.primaryKey())
        .addColumn("name", "varchar(64)", (column) => column.notNull().unique())
        .addColumn("description", "text", (column) => column.notNull())
        .addColumn("role", "varchar(16)", (column) => column.notNull().check(sql`role in ('admin', 'tech')`))
        .addColumn("active", "integer", (column) => column.notNull().check(sql`active in (0, 1)`))
        .addColumn("password_hash", "text", (column) => column.notNull())
        .addColumn("created_at", "bigint", (column) => column.notNull())
        .addColumn("updated_at", "bigint", (column) => column.notNull())
        .execute();

      await db.schema
        .createTable("registry_token")
        .addColumn("id", "varchar(36)", (column) => column.primaryKey())
        .addColumn("user_id", "varchar(36)", (column) =>
          column.notNull().references("registry_user.id").onDelete("cascade"),
        )
        .addColumn("name", "varchar(64)", (column) => column.notNull())
        .addColumn("hash", "char(64)", (column) => column.notNull())
        .addColumn("created_at", "bigint", (column) => column.notNull())
        .addColumn("expires_at", "bigint", (column) => column.notNull())
        .addColumn("last_used_at", "bigint")
        .addUniqueConstraint("registry_token_user_name_unique", ["user_id", "name"])
        .execute();
      // Authenticating a request is one lookup in this index (registry.md §3).
      await db.schema.createIndex("registry_token_hash_unique").on("registry_token").column("hash").unique().execute();

      await db.schema
        .createTable("registry_token_failure")
        .addColumn("key", "varchar(200)", (column) => column.notNull())
        .addColumn("at", "bigint", (column) => column.notNull())
        .execute();
      await db.schema
        .createIndex("registry_token_failure_key_at")
        .on("registry_token_failure")
        .columns(["key", "at"])
        .execute();
      // For the sweep of failures older than the window.
      await db.schema.createIndex("registry_token_failure_at").on("registry_token_failure").column("at").execute();
    },
  },
};
