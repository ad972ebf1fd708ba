/**
 * The storage of comments and events (comments.md §3–6) with Kysely, the same on SQLite and
 * PostgreSQL. Adding a comment is one transaction: the single use of its challenge, the rate limit,
 * the comment and its `new-comment` event, so none of them exists without the others.
 */
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Database } from "../platform/database.js";
import { checkRateLimit, type RateLimitPolicy, rateLimitLockKey, recordRateLimitHit } from "./rate-limit.js";
import { type Comment, type CommentEvent, NEW_COMMENT, newCommentMessage } from "./resources.js";
import type { CommentsDb, CommentTable, CommentTables, EventTable } from "./tables.js";

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
}

/** How adding a comment ended. */
export type AddOutcome =
  | { readonly outcome: "added"; readonly comment: Comment }
  /** The challenge's signature was used by an accepted comment already (comments.md §4 rule 3). */
  | { readonly outcome: "challenge-used" }
  /** The client is over the rate limit; wait this many seconds. */
  | { readonly outcome: "rate-limited"; readonly retryAfterSeconds: number };

/** Thrown inside the transaction to roll it back with a refusal. */
class Refusal extends Error {
  constructor(readonly outcome: Exclude<AddOutcome, { outcome: "added" }>) {
    super(outcome.outcome);
  }
}

type CommentRow = Pick<CommentTable, "id" | "content" | "author" | "author_website" | "approved" | "created_at">;

const COMMENT_COLUMNS = ["id", "content", "author", "author_website", "approved", "created_at"] as const;
const EVENT_COLUMNS = ["id", "created_at", "article", "comment_id", "type", "message"] as const;

function toComment(row: CommentRow): Comment {
  const comment: Comment = {
    id: row.id,
    content: row.content,
    author: row.author,
    ...(row.author_website === null ? {} : { "author-website": row.author_website }),
    approved: row.approved === 1,
    timestamp: row.created_at,
  };
  return comment;
}

function toEvent(row: Pick<EventTable, (typeof EVENT_COLUMNS)[number]>): CommentEvent {
  return {
    id: row.id,
    timestamp: row.created_at,
    article: row.article,
    "comment-id": row.comment_id,
    type: row.type as typeof NEW_COMMENT,
    message: row.message,
  };
}

/** Orders by timestamp, then id by UTF-16 code units (ids are lower-case ASCII: the order of SQL). */
function byTimestampThenId(a: CommentEvent, b: CommentEvent): number {
  if (a.timestamp !== b.timestamp) return a.timestamp - b.timestamp;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
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
   * Stores a comment and its `new-comment` event in one transaction, after checking that its
   * challenge was not used and that the client is within the rate limit (in that order, comments.md
   * §5). Refusals leave nothing behind: the challenge stays usable, the attempt is not counted.
   *
   * Concurrency: on PostgreSQL the transaction first takes an advisory lock of the (website, client
   * address) pair, so concurrent posts of one client count each other even across instances; the
   * primary key of the used signature refuses a replay racing on another instance (the second insert
   * waits for the first transaction and then inserts nothing). SQLite runs the transactions of the
   * one connection one after the other.
   */
  async add(input: NewComment): Promise<AddOutcome> {
    const policy = this.#policy;
    const id = randomUUID();
    try {
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
        if (Number(used.numInsertedOrUpdatedRows ?? 0) === 0) throw new Refusal({ outcome: "challenge-used" });
        const wait = await checkRateLimit(trx, policy, input.website, input.clientAddress, input.now);
        if (wait !== undefined) throw new Refusal({ outcome: "rate-limited", retryAfterSeconds: wait });
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
    } catch (error) {
      if (error instanceof Refusal) return error.outcome;
      throw error;
    }
    return {
      outcome: "added",
      comment: toComment({
        id,
        content: input.content,
        author: input.author,
        author_website: input.authorWebsite ?? null,
        approved: input.approved ? 1 : 0,
        created_at: input.now,
      }),
    };
  }

  /**
   * The comments of an article, oldest first (timestamp, then id).
   * @param approvedOnly true for the public list, false for the admin list
   */
  async list(website: string, article: string, approvedOnly: boolean): Promise<Comment[]> {
    let query = this.#db
      .selectFrom("comments_comment")
      .select(COMMENT_COLUMNS)
      .where("website", "=", website)
      .where("article", "=", article);
    if (approvedOnly) query = query.where("approved", "=", 1);
    const rows = await query.orderBy("created_at").orderBy("id").execute();
    return rows.map(toComment);
  }

  /** One comment of an article, or `undefined` (also when it belongs to another article). */
  async get(website: string, article: string, id: string): Promise<Comment | undefined> {
    const row = await this.#db
      .selectFrom("comments_comment")
      .select(COMMENT_COLUMNS)
      .where("id", "=", id)
      .where("website", "=", website)
      .where("article", "=", article)
      .executeTakeFirst();
    return row === undefined ? undefined : toComment(row);
  }

  /** Approves a comment (idempotent). @returns false when the article has no such comment */
  async approve(website: string, article: string, id: string): Promise<boolean> {
    const result = await this.#db
      .updateTable("comments_comment")
      .set({ approved: 1 })
      .where("id", "=", id)
      .where("website", "=", website)
      .where("article", "=", article)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
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
