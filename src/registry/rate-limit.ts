/**
 * The rate limit of failed token creations (registry.md §3): at most 10 failures per 15 minutes per
 * user name and per client address. Failures are rows in the database, not counters in memory, so
 * every instance sharing a PostgreSQL database sees the same limit (platform.md §3).
 *
 * A sliding window: a key is limited while it has `limit` failures or more within the last
 * `windowMs`. Refused attempts are not failures (nobody's password was checked), so a limited
 * key is free again `windowMs` after its `limit`-th most recent failure. Concurrent attempts may
 * check before any of them records its failure, so a burst can exceed the limit by the number of
 * attempts in flight; the next attempt is refused.
 */
import type { Database } from "../platform/database.js";
import type { RegistryDb } from "./tables.js";
import { registryDb } from "./users.js";

/** How many failures a window allows and how long it lasts. */
export interface RateLimitPolicy {
  /** Failures allowed within the window; the next attempt is refused. */
  readonly limit: number;
  /** Milliseconds. */
  readonly windowMs: number;
}

/** registry.md §3: 10 failures per 15 minutes. */
export const TOKEN_FAILURE_POLICY: RateLimitPolicy = { limit: 10, windowMs: 15 * 60_000 };

/**
 * How long a key stays limited.
 *
 * @param recent the times of the key's failures within the window, most recent first, at least
 *   the `limit` most recent ones (milliseconds since the epoch)
 * @param now milliseconds since the epoch
 * @returns whole seconds until an attempt is allowed again (at least 1, the `Retry-After` header of
 *   RFC 9110 §10.2.3), or `undefined` when an attempt is allowed now
 */
export function retryAfterSeconds(recent: readonly number[], now: number, policy: RateLimitPolicy): number | undefined {
  const oldestCounted = recent[policy.limit - 1];
  if (oldestCounted === undefined) return undefined;
  const freeAt = oldestCounted + policy.windowMs;
  if (freeAt <= now) return undefined;
  return Math.max(1, Math.ceil((freeAt - now) / 1000));
}

/** Counts failures by key in `registry_token_failure` and tells when a key is limited. */
export class FailureLimiter {
  readonly #db: RegistryDb;

  constructor(
    database: Database,
    readonly policy: RateLimitPolicy = TOKEN_FAILURE_POLICY,
  ) {
    this.#db = registryDb(database);
  }

  /**
   * Whether an attempt is refused because one of `keys` is limited.
   *
   * @param keys `user:<name>`, `address:<ip>`
   * @param now milliseconds since the epoch
   * @returns the longest wait in whole seconds among the limited keys, or `undefined` when none is
   */
  async check(keys: readonly string[], now: number): Promise<number | undefined> {
    let longest: number | undefined;
    for (const key of keys) {
      const rows = await this.#db
        .selectFrom("registry_token_failure")
        .select("at")
        .where("key", "=", key)
        .where("at", ">", now - this.policy.windowMs)
        .orderBy("at", "desc")
        .limit(this.policy.limit)
        .execute();
      const wait = retryAfterSeconds(
        rows.map((row) => row.at),
        now,
        this.policy,
      );
      if (wait !== undefined && (longest === undefined || wait > longest)) longest = wait;
    }
    return longest;
  }

  /**
   * Records one failure under each key, and forgets failures that left the window (of every key,
   * so the table stays as small as the recent failures).
   *
   * @param now milliseconds since the epoch
   */
  async record(keys: readonly string[], now: number): Promise<void> {
    await this.#db
      .insertInto("registry_token_failure")
      .values(keys.map((key) => ({ key, at: now })))
      .execute();
    await this.#db
      .deleteFrom("registry_token_failure")
      .where("at", "<=", now - this.policy.windowMs)
      .execute();
  }
}
