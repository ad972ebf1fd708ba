/**
 * The comments module's migrations, `comments-<number>-<what>`, the same DDL on SQLite and
 * PostgreSQL (storage.ts holds the queries).
 */
import type { Migration } from "kysely";
import { runDdl } from "../platform/ddl.js";

/** Migrations by name, `comments-<number>-<what>`. */
export const commentsMigrations: Readonly<Record<string, Migration>> = {
  "comments-0001-comments-events-challenges": {
    up: (db) =>
      runDdl(db, [
        // author: escaped text can be up to six times longer than the 100 characters posted.
        `create table comments_comment (id varchar(36) primary key, website varchar(64) not null,
          article varchar(200) not null, author text not null, author_website varchar(200), content text not null,
          approved integer not null check (approved in (0, 1)), created_at bigint not null)`,
        // Listing an article is one range scan in this index, already in the order of the answer.
        "create index comments_comment_article on comments_comment (website, article, created_at, id)",
        `create table comments_event (id varchar(36) primary key, website varchar(64) not null,
          article varchar(200) not null, comment_id varchar(36) not null, type varchar(32) not null,
          message text not null, created_at bigint not null)`,
        "create index comments_event_website on comments_event (website, created_at, id)",
        "create table comments_used_challenge (signature char(64) primary key, expires_at bigint not null)",
        // For the purge of expired signatures.
        "create index comments_used_challenge_expires_at on comments_used_challenge (expires_at)",
        // client_address is text: behind a proxy it comes from X-Forwarded-For, in no guaranteed form.
        `create table comments_rate_limit_hit (website varchar(64) not null, client_address text not null,
          at bigint not null)`,
        "create index comments_rate_limit_hit_key_at on comments_rate_limit_hit (website, client_address, at)",
        // For the purge of hits older than the window.
        "create index comments_rate_limit_hit_at on comments_rate_limit_hit (at)",
      ]),
  },
  // The moderation page lists a website's comments across its articles, newest first: without
  // these, each page would read and sort every comment of the website.
  "comments-0002-website-pages": {
    up: (db) =>
      runDdl(db, [
        // Pending (or approved) comments of a website: `approved = 0` is what the page asks most.
        "create index comments_comment_website_approved on comments_comment (website, approved, created_at, id)",
        // Every comment of a website, approved or not.
        "create index comments_comment_website on comments_comment (website, created_at, id)",
      ]),
  },
  // Replies, the commenter's e-mail address and import identity. No foreign key on `parent`: a
  // deleted comment keeps its replies, whose parent then shows as deleted. No index on `parent`
  // either: a thread is rebuilt from the article's list (one range scan of the article index).
  "comments-0003-replies-email-import": {
    up: (db) =>
      runDdl(db, [
        "alter table comments_comment add column parent varchar(36)",
        // At most 254 characters (RFC 5321 §4.5.3.1.3 path limit less its angle brackets).
        "alter table comments_comment add column email varchar(254)",
        "alter table comments_comment add column notify_replies integer not null default 0 check (notify_replies in (0, 1))",
        // Where an imported comment came from (`disqus`, `wordpress` …) and its id there; null for
        // comments posted through the API. Unique per website: a second import adds nothing.
        "alter table comments_comment add column source varchar(32)",
        "alter table comments_comment add column source_id varchar(255)",
        "create unique index comments_comment_source on comments_comment (website, source, source_id)",
      ]),
  },
  // Comments a spam check held (an Akismet-compatible service): pending, and listed apart on the
  // moderation page. Approving one clears the flag.
  "comments-0004-spam": {
    up: (db) =>
      runDdl(db, ["alter table comments_comment add column spam integer not null default 0 check (spam in (0, 1))"]),
  },
};
