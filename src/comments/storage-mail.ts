/**
 * The comments module's SQL for e-mail links, moderation modes and spam events: comments found by
 * id alone (a signed link names the comment, not its article), the `first` moderation mode's
 * lookup, unsubscribing, and the `spam` event of a comment the honeypot refused.
 */
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Database } from "../platform/database.js";
import { InvalidError } from "../platform/errors.js";
import { CHALLENGE_ALREADY_USED } from "./challenge.js";
import { SPAM, spamMessage } from "./resources.js";
import type { CommentsDb, CommentTables } from "./storage.js";

/** A comment as the mail flows see it, e-mail address included: never returned by a route. */
export interface MailComment {
  readonly id: string;
  readonly website: string;
  readonly article: string;
  /** HTML-escaped, as stored. */
  readonly author: string;
  /** HTML-escaped, as stored. */
  readonly content: string;
  readonly approved: boolean;
  readonly spam: boolean;
  readonly parent: string | undefined;
  readonly email: string | undefined;
  readonly notifyReplies: boolean;
}

/** The queries of the mail flows. */
export class MailStore {
  readonly #db: CommentsDb;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<CommentTables>();
  }

  /** The comment `id`, whatever its article, or `undefined`. */
  async find(id: string): Promise<MailComment | undefined> {
    const row = await this.#db
      .selectFrom("comments_comment")
      .select([
        "id",
        "website",
        "article",
        "author",
        "content",
        "approved",
        "spam",
        "parent",
        "email",
        "notify_replies",
      ])
      .where("id", "=", id)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      id: row.id,
      website: row.website,
      article: row.article,
      author: row.author,
      content: row.content,
      approved: row.approved === 1,
      spam: row.spam === 1,
      parent: row.parent ?? undefined,
      email: row.email ?? undefined,
      notifyReplies: row.notify_replies === 1,
    };
  }

  /**
   * Whether `website` holds an approved comment by `author` (HTML-escaped, as stored) with the
   * e-mail address `email` (compared without regard to case): the `first` moderation mode.
   */
  async approvedBefore(website: string, author: string, email: string): Promise<boolean> {
    const row = await this.#db
      .selectFrom("comments_comment")
      .select("id")
      .where("website", "=", website)
      .where("approved", "=", 1)
      .where("author", "=", author)
      .where(sql<string>`lower(email)`, "=", email.toLowerCase())
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Approves the comment `id` if it is pending, and clears its spam flag.
   * @returns false when it was approved already or does not exist (a used approve link)
   */
  async approvePending(id: string): Promise<boolean> {
    const result = await this.#db
      .updateTable("comments_comment")
      .set({ approved: 1, spam: 0 })
      .where("id", "=", id)
      .where("approved", "=", 0)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Deletes the comment `id`; its event stays. @returns false when it does not exist (a used delete link) */
  async delete(id: string): Promise<boolean> {
    const result = await this.#db.deleteFrom("comments_comment").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Stops reply notifications to the author of `id`. @returns false when there is no such comment */
  async unsubscribe(id: string): Promise<boolean> {
    const result = await this.#db
      .updateTable("comments_comment")
      .set({ notify_replies: 0 })
      .where("id", "=", id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * Whether a comment already used the challenge of `signature` (lower-case): read before the spam
   * checks, so that replaying one solved challenge cannot make Vigie call the Akismet-compatible
   * service again and again. The insert in the storing transaction stays the authority (races).
   */
  async challengeUsed(signature: string): Promise<boolean> {
    const row = await this.#db
      .selectFrom("comments_used_challenge")
      .select("signature")
      .where("signature", "=", signature)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Writes the `spam` event of a comment refused by `signal`: the one event without a stored
   * comment; its `comment-id` is a fresh UUID that names no comment. The comment's challenge is
   * spent in the same transaction, so a robot gets one event per solved challenge, not one per
   * replay: the event log stays bounded by what it costs to solve challenges.
   * @param now milliseconds since the Unix epoch
   * @param challenge the lower-case signature and expiry (milliseconds) of the comment's challenge
   * @throws InvalidError `The challenge has already been used`
   */
  async addSpamEvent(
    website: string,
    article: string,
    signal: string,
    now: number,
    challenge: { readonly signature: string; readonly expiresAt: number },
  ): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      const used = await trx
        .insertInto("comments_used_challenge")
        .values({ signature: challenge.signature, expires_at: challenge.expiresAt })
        .onConflict((conflict) => conflict.column("signature").doNothing())
        .executeTakeFirst();
      if (Number(used.numInsertedOrUpdatedRows ?? 0) === 0) throw new InvalidError(CHALLENGE_ALREADY_USED);
      await trx
        .insertInto("comments_event")
        .values({
          id: randomUUID(),
          website,
          article,
          comment_id: randomUUID(),
          type: SPAM,
          message: spamMessage(article, signal),
          created_at: now,
        })
        .execute();
    });
  }
}
