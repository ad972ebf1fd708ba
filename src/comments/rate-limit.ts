/**
 * The rate limit of comments (comments.md §5): at most `rate-limit.comments` accepted comments per
 * client address and website within a sliding window of `rate-limit.per`. Hits are rows in the
 * database, not counters in memory, so instances sharing a PostgreSQL database enforce one limit
 * (platform.md §3). Storage checks and records a hit inside the transaction that stores the comment.
 */
import { createHash } from "node:crypto";
import type { CommentsDb } from "./tables.js";

/** How many comments a window allows and how long it lasts. */
export interface RateLimitPolicy {
  /** Accepted comments allowed within the window; the next one is refused. */
  readonly limit: number;
  /** Milliseconds. */
  readonly windowMs: number;
}

/** The message of a 429 answer. */
export function rateLimitMessage(retryAfterSeconds: number): string {
  return `too many comments from this address; retry in ${retryAfterSeconds} s`;
}

/**
 * How long a client must wait.
 *
 * @param oldestCounted the time of the `limit`-th most recent hit of the key within the window,
 *   the oldest one that counts (milliseconds since the epoch)
 * @param now milliseconds since the epoch
 * @returns whole seconds until that hit leaves the window (at least 1, the `Retry-After` header of
 *   RFC 9110 §10.2.3), or `undefined` when it has left already and a comment is allowed now
 */
export function retryAfterSeconds(oldestCounted: number, now: number, policy: RateLimitPolicy): number | undefined {
  const freeAt = oldestCounted + policy.windowMs;
  if (freeAt <= now) return undefined;
  return Math.max(1, Math.ceil((freeAt - now) / 1000));
}

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
export async function checkRateLimit(
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
  return row === undefined ? undefined : retryAfterSeconds(row.at, now, policy);
}

/**
 * Records one accepted comment for this key.
 * @param now milliseconds since the epoch
 */
export async function recordRateLimitHit(
  db: CommentsDb,
  website: string,
  clientAddress: string,
  now: number,
): Promise<void> {
  await db.insertInto("comments_rate_limit_hit").values({ website, client_address: clientAddress, at: now }).execute();
}
