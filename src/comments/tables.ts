/**
 * The comments module's tables, as Kysely sees them. Timestamps are BIGINT milliseconds since the
 * Unix epoch; booleans are INTEGER 0/1 so SQLite and PostgreSQL store and return the same values.
 */
import type { Kysely } from "kysely";
import type { PlatformTables } from "../platform/database.js";

/** One comment: `comments_comment`. */
export interface CommentTable {
  /** UUID v4, lower-case. */
  id: string;
  website: string;
  article: string;
  /** HTML-escaped (comments.md §5). */
  author: string;
  /** As given, or null. */
  author_website: string | null;
  /** HTML-escaped (comments.md §5). */
  content: string;
  /** 1 approved, 0 waiting for moderation. */
  approved: number;
  /** Milliseconds since the epoch; the `timestamp` of the API. */
  created_at: number;
}

/** One entry of a website's event log: `comments_event`. Kept when its comment is deleted. */
export interface EventTable {
  /** UUID v4. */
  id: string;
  website: string;
  article: string;
  comment_id: string;
  /** `new-comment`, the only type so far. */
  type: string;
  message: string;
  /** Milliseconds since the epoch. */
  created_at: number;
}

/**
 * A signature of an accepted comment's challenge: `comments_used_challenge` (comments.md §4 rule 3).
 * The primary key makes a replay fail even between instances sharing PostgreSQL.
 */
export interface UsedChallengeTable {
  /** 64 lower-case hex digits. */
  signature: string;
  /** Milliseconds since the epoch when the challenge expires; the row may be purged after it. */
  expires_at: number;
}

/**
 * One accepted comment as the rate limit counts it: `comments_rate_limit_hit` (comments.md §5).
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
