/**
 * The comments module's migrations (platform.md §3): plain column types that mean the same on
 * SQLite and PostgreSQL (BIGINT milliseconds, INTEGER 0/1 booleans).
 */
import { type Kysely, type Migration, sql } from "kysely";

/** Migrations by name, `comments-<number>-<what>`. */
export const commentsMigrations: Readonly<Record<string, Migration>> = {
  "comments-0001-comments-events-challenges": {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("comments_comment")
        .addColumn("id", "varchar(36)", (column) => column.primaryKey())
        .addColumn("website", "varchar(64)", (column) => column.notNull())
        .addColumn("article", "varchar(200)", (column) => column.notNull())
        // Escaped text can be up to six times longer than the 100 or 10 000 characters posted.
        .addColumn("author", "text", (column) => column.notNull())
        .addColumn("author_website", "varchar(200)")
        .addColumn("content", "text", (column) => column.notNull())
        .addColumn("approved", "integer", (column) => column.notNull().check(sql`approved in (0, 1)`))
        .addColumn("created_at", "bigint", (column) => column.notNull())
        .execute();
      // Listing an article is one range scan in this index, already in the order of the answer.
      await db.schema
        .createIndex("comments_comment_article")
        .on("comments_comment")
        .columns(["website", "article", "created_at", "id"])
        .execute();

      await db.schema
        .createTable("comments_event")
        .addColumn("id", "varchar(36)", (column) => column.primaryKey())
        .addColumn("website", "varchar(64)", (column) => column.notNull())
        .addColumn("article", "varchar(200)", (column) => column.notNull())
        .addColumn("comment_id", "varchar(36)", (column) => column.notNull())
        .addColumn("type", "varchar(32)", (column) => column.notNull())
        .addColumn("message", "text", (column) => column.notNull())
        .addColumn("created_at", "bigint", (column) => column.notNull())
        .execute();
      await db.schema
        .createIndex("comments_event_website")
        .on("comments_event")
        .columns(["website", "created_at", "id"])
        .execute();

      await db.schema
        .createTable("comments_used_challenge")
        .addColumn("signature", "char(64)", (column) => column.primaryKey())
        .addColumn("expires_at", "bigint", (column) => column.notNull())
        .execute();
      // For the purge of expired signatures.
      await db.schema
        .createIndex("comments_used_challenge_expires_at")
        .on("comments_used_challenge")
        .column("expires_at")
        .execute();

      await db.schema
        .createTable("comments_rate_limit_hit")
        .addColumn("website", "varchar(64)", (column) => column.notNull())
        // Text: behind a proxy the address comes from X-Forwarded-For and has no guaranteed form.
        .addColumn("client_address", "text", (column) => column.notNull())
        .addColumn("at", "bigint", (column) => column.notNull())
        .execute();
      await db.schema
        .createIndex("comments_rate_limit_hit_key_at")
        .on("comments_rate_limit_hit")
        .columns(["website", "client_address", "at"])
        .execute();
      // For the purge of hits older than the window.
      await db.schema.createIndex("comments_rate_limit_hit_at").on("comments_rate_limit_hit").column("at").execute();
    },
  },
};
