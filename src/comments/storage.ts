/**
 * The comments module's storage: its tables and the SQL of the API, the same on SQLite and
 * PostgreSQL (the migrations are in storage-migrations.ts, the import's and export's SQL in
 * storage-import.ts). Timestamps are BIGINT milliseconds
 * since the Unix epoch; booleans are INTEGER 0/1 so that both databases store and return the same
 * values. Adding a comment is one transaction: the single use of its challenge, the rate limit, the
 * comment and its `new-comment` event, so none of them exists without the others.
 */

import { createHash, randomUUID } from "node:crypto";
import { type Kysely, type SelectQueryBuilder, sql } from "kysely";
import type { Database, PlatformTables } from "../platform/database.js";
import { InvalidError, RateLimitedError } from "../platform/errors.js";
import { type RateLimitPolicy, retryAfterSeconds } from "../platform/rate-limit.js";
import { CHALLENGE_ALREADY_USED } from "./challenge.js";
import { type Comment, type CommentEvent, type CommentEventType, NEW_COMMENT, newCommentMessage } from "./resources.js";

export { commentsMigrations } from "./storage-migrations.js";

/** One comment: `comments_comment`. */
export interface CommentTable {
  /** UUID v4, lower-case. */
  id: string;
  website: string;
  article: string;
  /** HTML-escaped. */
  author: string;
  /** As given, or null. */
  author_website: string | null;
  /** HTML-escaped. */
  content: string;
  /** 1 approved, 0 waiting for moderation. */
  approved: number;
  /** Milliseconds since the epoch; the `timestamp` of the API. */
  created_at: number;
  /** The id of the comment this one answers, or null; that comment may have been deleted since. */
  parent: string | null;
  /** The commenter's e-mail address, or null: never returned by a route nor put in an event. */
  email: string | null;
  /** 1 when the commenter asked to be told of replies. */
  notify_replies: number;
  /** 1 when a spam check held the comment (pending until approved). */
  spam: number;
  /** Where an imported comment came from (`disqus` …), or null for a posted one. */
  source: string | null;
  /** The comment's id in its source, or null. */
  source_id: string | null;
}

/** One entry of a website's event log: `comments_event`. Kept when its comment is deleted. */
export interface EventTable {
  /** UUID v4. */
  id: string;
  website: string;
  article: string;
  comment_id: string;
  /** `new-comment`, or `spam` (a comment refused by the honeypot, not stored). */
  type: string;
  message: string;
  /** Milliseconds since the epoch. */
  created_at: number;
}

/**
 * A signature of an accepted comment's challenge: `comments_used_challenge`.
 * The primary key makes a replay fail even between instances sharing PostgreSQL.
 */
export interface UsedChallengeTable {
  /** 64 lower-case hex digits. */
  signature: string;
  /** Milliseconds since the epoch when the challenge expires; the row may be purged after it. */
  expires_at: number;
}

/**
 * One accepted comment as the rate limit counts it: `comments_rate_limit_hit`.
 * Separate from the comments so that deleting spam does not give its sender a fresh allowance, and
 * so that client addresses are kept only for the length of the window.
 */
export interface RateLimitHitTable {
  website: string;
  /** The client address (`request.ip`). */
  client_address: string;
  /** Milliseconds since the epoch. */
  at: number;
}

/** The comments module's tables by name (a type, not an interface: `withTables` needs an index signature). */
export type CommentTables = {
  comments_comment: CommentTable;
  comments_event: EventTable;
  comments_used_challenge: UsedChallengeTable;
  comments_rate_limit_hit: RateLimitHitTable;
};

/** A Kysely instance (or transaction) that knows the platform's and the comments module's tables. */
export type CommentsDb = Kysely<PlatformTables & CommentTables>;

/**
 * The PostgreSQL advisory-lock key of a (website, client address) pair: the first 8 bytes of a
 * SHA-256, as a signed 64-bit decimal (the argument type of `pg_advisory_xact_lock(bigint)`).
 * Collisions only make two unrelated clients wait for each other's transaction.
 */
export function rateLimitLockKey(website: string, clientAddress: string): string {
  return createHash("sha256")
    .update(`comments-rate-limit\n${website}\n${clientAddress}`)
    .digest()
    .readBigInt64BE(0)
    .toString();
}

/**
 * Whether one more comment is refused for this key; to be called inside the storing transaction,
 * after taking the key's lock on PostgreSQL, so that concurrent posts count each other.
 *
 * @param now milliseconds since the epoch
 * @returns seconds to wait (see {@link retryAfterSeconds}), or `undefined` when allowed
 */
async function checkRateLimit(
  db: CommentsDb,
  policy: RateLimitPolicy,
  website: string,
  clientAddress: string,
  now: number,
): Promise<number | undefined> {
  // Only the `limit`-th most recent hit matters: one row read from the index whatever the limit,
  // rather than every hit of the window.
  const row = await db
    .selectFrom("comments_rate_limit_hit")
    .select("at")
    .where("website", "=", website)
    .where("client_address", "=", clientAddress)
    .where("at", ">", now - policy.windowMs)
    .orderBy("at", "desc")
    .limit(1)
    .offset(policy.limit - 1)
    .executeTakeFirst();
  return retryAfterSeconds(row?.at, now, policy);
}

/** The message of a comment refused by the rate limit. */
export function rateLimitMessage(retryAfterSeconds: number): string {
  return `too many comments from this address; retry in ${retryAfterSeconds} s`;
}

/**
 * Records one accepted comment for this key.
 * @param now milliseconds since the epoch
 */
async function recordRateLimitHit(db: CommentsDb, website: string, clientAddress: string, now: number): Promise<void> {
  await db.insertInto("comments_rate_limit_hit").values({ website, client_address: clientAddress, at: now }).execute();
}

/** A comment to store; author and content already HTML-escaped. */
export interface NewComment {
  readonly website: string;
  readonly article: string;
  readonly author: string;
  readonly authorWebsite: string | undefined;
  readonly content: string;
  readonly approved: boolean;
  /** The lower-case signature of the comment's challenge, remembered until `challengeExpiresAt`. */
  readonly signature: string;
  /** Milliseconds since the epoch. */
  readonly challengeExpiresAt: number;
  /** The client address the rate limit counts (`request.ip`). Stored only in the rate-limit table. */
  readonly clientAddress: string;
  /** Milliseconds since the epoch: the comment's timestamp. */
  readonly now: number;
  /** The id of an approved comment of the same article that this one answers (checked by the caller). */
  readonly parent?: string | undefined;
  /** The commenter's e-mail address, stored only. */
  readonly email?: string | undefined;
  /** Whether the commenter asked to be told of replies. */
  readonly notifyReplies?: boolean | undefined;
  /** Whether a spam check held it (then `approved` is false). */
  readonly spam?: boolean | undefined;
}

/** The columns of a comment that routes return: never the e-mail address nor the import identity. */
export const COMMENT_COLUMNS = [
  "id",
  "content",
  "author",
  "author_website",
  "approved",
  "created_at",
  "parent",
] as const;

/** The columns of admin answers: those of {@link COMMENT_COLUMNS} and the spam flag. */
export const ADMIN_COMMENT_COLUMNS = [...COMMENT_COLUMNS, "spam"] as const;

/** A row of {@link COMMENT_COLUMNS}, with `spam` in admin queries. */
export type CommentRow = Pick<CommentTable, (typeof COMMENT_COLUMNS)[number]> & { spam?: number };
const EVENT_COLUMNS = ["id", "created_at", "article", "comment_id", "type", "message"] as const;

/** The API's comment of a row: `author-website` and `parent` only when set. */
export function toComment(row: CommentRow): Comment {
  const comment: Comment = {
    id: row.id,
    content: row.content,
    author: row.author,
    ...(row.author_website === null ? {} : { "author-website": row.author_website }),
    approved: row.approved === 1,
    timestamp: row.created_at,
    ...(row.parent === null ? {} : { parent: row.parent }),
    ...(row.spam === 1 ? { spam: true as const } : {}),
  };
  return comment;
}

function toEvent(row: Pick<EventTable, (typeof EVENT_COLUMNS)[number]>): CommentEvent {
  return {
    id: row.id,
    timestamp: row.created_at,
    article: row.article,
    "comment-id": row.comment_id,
    type: row.type as CommentEventType,
    message: row.message,
  };
}

/** Orders by timestamp, then id by UTF-16 code units (ids are lower-case ASCII: the order of SQL). */
function byTimestampThenId(a: CommentEvent, b: CommentEvent): number {
  if (a.timestamp !== b.timestamp) return a.timestamp - b.timestamp;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Most comments a page may hold, and the default of the admin list's page. */
export const PAGE_LIMIT_MAX = 100;

/**
 * Most comments a page holds beyond its limit so as to end on a whole millisecond (see
 * {@link CommentStore.articlePage}). Reaching it takes more than this many comments of one article
 * (or website) created within the same millisecond, each with its own solved challenge.
 */
export const PAGE_TIE_MAX = 100;

/** Which comments a page holds: the `limit` newest created strictly before `before`. */
export interface PageRequest {
  /** 1 to {@link PAGE_LIMIT_MAX}. */
  readonly limit: number;
  /** Milliseconds since the epoch, exclusive; `undefined`: up to the newest comment. */
  readonly before: number | undefined;
}

/** A comment with the article it belongs to (the admin list of a website). */
export type ArticleComment = Comment & { readonly article: string };

/**
 * The timestamp of the `limit`-th newest comment of `scope` (a subquery; NULL when it holds fewer):
 * a page holds every comment of its scope from that timestamp on, so it never ends inside a
 * millisecond.
 */
function pageBoundary(
  scope: SelectQueryBuilder<PlatformTables & CommentTables, "comments_comment", object>,
  limit: number,
) {
  return scope
    .select("created_at")
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(1)
    .offset(limit - 1);
}

/** Comments, events and the memory of challenges and rate limits, in the database. */
export class CommentStore {
  readonly #db: CommentsDb;
  readonly #postgres: boolean;

  readonly #policy: RateLimitPolicy;

  /** @param policy the rate limit {@link add} enforces (`comments.rate-limit`) */
  constructor(database: Database, policy: RateLimitPolicy) {
    this.#db = database.kysely.withTables<CommentTables>();
    this.#postgres = database.dialect === "postgres";
    this.#policy = policy;
  }

  /**
   * The rate limit's answer for one more comment from this address, read outside any transaction:
   * a cheap refusal before costly work (an outside spam check). {@link add} checks again inside its
   * transaction, which alone decides.
   * @param now milliseconds since the epoch
   * @returns seconds to wait (see {@link retryAfterSeconds}), or `undefined` when allowed
   */
  retryAfter(website: string, clientAddress: string, now: number): Promise<number | undefined> {
    return checkRateLimit(this.#db, this.#policy, website, clientAddress, now);
  }

  /**
   * Stores a comment and its `new-comment` event in one transaction, after checking that its
   * challenge was not used and that the client is within the rate limit, in that order. Refusals
   * leave nothing behind: the challenge stays usable, the attempt is not counted.
   *
   * Concurrency: on PostgreSQL the transaction first takes an advisory lock of the (website, client
   * address) pair, so concurrent posts of one client count each other even across instances; the
   * primary key of the used signature refuses a replay racing on another instance (the second insert
   * waits for the first transaction and then inserts nothing). SQLite runs the transactions of the
   * one connection one after the other.
   *
   * @returns the comment as stored
   * @throws InvalidError `The challenge has already been used`
   * @throws RateLimitedError `too many comments from this address; retry in <n> s`, with the seconds
   *   to wait (see {@link retryAfterSeconds})
   */
  async add(input: NewComment): Promise<Comment> {
    const policy = this.#policy;
    const id = randomUUID();
    // A refusal is thrown inside the transaction, which rolls it back.
    await this.#db.transaction().execute(async (trx) => {
      if (this.#postgres) {
        const key = rateLimitLockKey(input.website, input.clientAddress);
        await sql`select pg_advisory_xact_lock(${key}::bigint)`.execute(trx);
      }
      const used = await trx
        .insertInto("comments_used_challenge")
        .values({ signature: input.signature, expires_at: input.challengeExpiresAt })
        .onConflict((conflict) => conflict.column("signature").doNothing())
        .executeTakeFirst();
      if (Number(used.numInsertedOrUpdatedRows ?? 0) === 0) throw new InvalidError(CHALLENGE_ALREADY_USED);
      const wait = await checkRateLimit(trx, policy, input.website, input.clientAddress, input.now);
      if (wait !== undefined) throw new RateLimitedError(rateLimitMessage(wait), wait);
      await recordRateLimitHit(trx, input.website, input.clientAddress, input.now);
      await trx
        .insertInto("comments_comment")
        .values({
          id,
          website: input.website,
          article: input.article,
          author: input.author,
          author_website: input.authorWebsite ?? null,
          content: input.content,
          approved: input.approved ? 1 : 0,
          created_at: input.now,
          parent: input.parent ?? null,
          email: input.email ?? null,
          notify_replies: input.notifyReplies === true ? 1 : 0,
          spam: input.spam === true ? 1 : 0,
        })
        .execute();
      await trx
        .insertInto("comments_event")
        .values({
          id: randomUUID(),
          website: input.website,
          article: input.article,
          comment_id: id,
          type: NEW_COMMENT,
          message: newCommentMessage(id, input.article),
          created_at: input.now,
        })
        .execute();
    });
    return toComment({
      id,
      content: input.content,
      author: input.author,
      author_website: input.authorWebsite ?? null,
      approved: input.approved ? 1 : 0,
      created_at: input.now,
      parent: input.parent ?? null,
      spam: input.spam === true ? 1 : 0,
    });
  }

  /**
   * The comments of an article, oldest first (timestamp, then id).
   * @param approvedOnly true for the public list, false for the admin list
   */
  async list(website: string, article: string, approvedOnly: boolean): Promise<Comment[]> {
    let query = this.#db
      .selectFrom("comments_comment")
      .select(approvedOnly ? COMMENT_COLUMNS : ADMIN_COMMENT_COLUMNS)
      .where("website", "=", website)
      .where("article", "=", article);
    if (approvedOnly) query = query.where("approved", "=", 1);
    const rows = await query.orderBy("created_at").orderBy("id").execute();
    return rows.map(toComment);
  }

  /**
   * One page of the approved comments of an article, returned oldest first: the `limit` newest
   * comments created strictly before `before`, plus those that share the timestamp of the oldest of
   * them (at most {@link PAGE_TIE_MAX} more). A page thus never ends inside a millisecond, and the
   * next older page, asked with `before` = the timestamp of this page's first comment, neither
   * repeats nor skips a comment.
   */
  async articlePage(website: string, article: string, page: PageRequest): Promise<Comment[]> {
    const scope = () => {
      let query = this.#db
        .selectFrom("comments_comment")
        .where("website", "=", website)
        .where("article", "=", article)
        .where("approved", "=", 1);
      if (page.before !== undefined) query = query.where("created_at", "<", page.before);
      return query;
    };
    const rows = await scope()
      .select(COMMENT_COLUMNS)
      .where("created_at", ">=", (eb) => eb.fn.coalesce(pageBoundary(scope(), page.limit), eb.lit(0)))
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(page.limit + PAGE_TIE_MAX)
      .execute();
    return rows.reverse().map(toComment);
  }

  /**
   * One page of the comments of a website across its articles, newest first (timestamp, then id,
   * both descending), each with its article: the `limit` newest created strictly before `before`,
   * plus those that share the timestamp of the oldest of them (at most {@link PAGE_TIE_MAX} more),
   * as {@link articlePage}. The next older page: `before` = the timestamp of this page's last comment.
   *
   * @param approved only approved (true) or only pending (false) comments; `undefined`: both
   */
  async websitePage(website: string, approved: boolean | undefined, page: PageRequest): Promise<ArticleComment[]> {
    const scope = () => {
      let query = this.#db.selectFrom("comments_comment").where("website", "=", website);
      if (approved !== undefined) query = query.where("approved", "=", approved ? 1 : 0);
      if (page.before !== undefined) query = query.where("created_at", "<", page.before);
      return query;
    };
    const rows = await scope()
      .select([...ADMIN_COMMENT_COLUMNS, "article"])
      .where("created_at", ">=", (eb) => eb.fn.coalesce(pageBoundary(scope(), page.limit), eb.lit(0)))
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(page.limit + PAGE_TIE_MAX)
      .execute();
    return rows.map((row) => ({ ...toComment(row), article: row.article }));
  }

  /**
   * The websites that hold at least one comment, sorted by code point, at most `limit` of them: what the
   * moderation page lists in open mode, where any well-formed name is a website.
   * The website column leads the comments' index, so this is an index scan, not a table scan.
   */
  async websitesWithComments(limit: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom("comments_comment")
      .select("website")
      .distinct()
      .orderBy("website")
      .limit(limit)
      .execute();
    // Sorted again by code point: the database's collation may order punctuation otherwise.
    return rows.map((row) => row.website).sort();
  }

  /**
   * How many approved comments each article has, in one query. Articles without any are absent
   * from the map (the caller answers 0 for them).
   *
   * @param articles article names, without duplicates; empty: no query
   */
  async countApproved(website: string, articles: readonly string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    if (articles.length === 0) return counts;
    const rows = await this.#db
      .selectFrom("comments_comment")
      .select((eb) => ["article", eb.fn.countAll().as("count")])
      .where("website", "=", website)
      .where("approved", "=", 1)
      .where("article", "in", articles)
      .groupBy("article")
      .execute();
    // count(*) is a bigint on PostgreSQL (read as a number by the platform) and an integer on SQLite.
    for (const row of rows) counts.set(row.article, Number(row.count));
    return counts;
  }

  /** One comment of an article as admins see it, or `undefined` (also when it belongs to another article). */
  async get(website: string, article: string, id: string): Promise<Comment | undefined> {
    const row = await this.#db
      .selectFrom("comments_comment")
      .select(ADMIN_COMMENT_COLUMNS)
      .where("id", "=", id)
      .where("website", "=", website)
      .where("article", "=", article)
      .executeTakeFirst();
    return row === undefined ? undefined : toComment(row);
  }

  /**
   * Approves a comment (idempotent) and clears its spam flag.
   * @returns `missing` when the article has no such comment, `approved` when it was pending,
   *   `unchanged` when it was approved already (so a reply is announced once)
   */
  async approve(website: string, article: string, id: string): Promise<"missing" | "approved" | "unchanged"> {
    const result = await this.#db
      .updateTable("comments_comment")
      .set({ approved: 1, spam: 0 })
      .where("id", "=", id)
      .where("website", "=", website)
      .where("article", "=", article)
      .where("approved", "=", 0)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) > 0) return "approved";
    return (await this.get(website, article, id)) === undefined ? "missing" : "unchanged";
  }

  /** Deletes a comment; its event stays in the log. @returns false when the article has no such comment */
  async delete(website: string, article: string, id: string): Promise<boolean> {
    const result = await this.#db
      .deleteFrom("comments_comment")
      .where("id", "=", id)
      .where("website", "=", website)
      .where("article", "=", article)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Deletes every comment of an article. @returns how many were deleted */
  async deleteAll(website: string, article: string): Promise<number> {
    const result = await this.#db
      .deleteFrom("comments_comment")
      .where("website", "=", website)
      .where("article", "=", article)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** The events of a website, oldest first (timestamp, then id). */
  async events(website: string): Promise<CommentEvent[]> {
    const rows = await this.#db
      .selectFrom("comments_event")
      .select(EVENT_COLUMNS)
      .where("website", "=", website)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(toEvent);
  }

  /**
   * Deletes every event of a website and returns them, oldest first. One `DELETE ... RETURNING`
   * statement: an event written concurrently is either returned and deleted, or neither.
   */
  async deleteEvents(website: string): Promise<CommentEvent[]> {
    const rows = await this.#db
      .deleteFrom("comments_event")
      .where("website", "=", website)
      .returning(EVENT_COLUMNS)
      .execute();
    return rows.map(toEvent).sort(byTimestampThenId);
  }

  /**
   * SQLite's `PRAGMA data_version`: a number that changes when another connection, so another
   * process (`vigie comments import`), commits to the database file; `undefined` on PostgreSQL.
   */
  async dataVersion(): Promise<number | undefined> {
    if (this.#postgres) return undefined;
    const { rows } = await sql<{ data_version: number }>`pragma data_version`.execute(this.#db);
    return rows[0]?.data_version;
  }

  /**
   * Forgets what no longer matters: used signatures whose challenge expired, rate-limit hits older
   * than the rate-limit window.
   * @param now milliseconds since the epoch
   */
  async purge(now: number): Promise<void> {
    await this.#db.deleteFrom("comments_used_challenge").where("expires_at", "<", now).execute();
    await this.#db
      .deleteFrom("comments_rate_limit_hit")
      .where("at", "<=", now - this.#policy.windowMs)
      .execute();
  }
}
