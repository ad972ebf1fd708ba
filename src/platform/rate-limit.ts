/**
 * Sliding-window rate limits, as the comments module (accepted comments per client address and
 * website) and the registry (failed token creations) apply them: at most `limit` hits per key within
 * the last `windowMs`. The hits themselves live in each module's database table, so that instances
 * sharing PostgreSQL enforce one limit, not one each; this file holds the policy and the arithmetic
 * of `Retry-After`.
 */

/** How many hits a window allows and how long it lasts. */
export interface RateLimitPolicy {
  /** Hits allowed within the window; the next attempt is refused. */
  readonly limit: number;
  /** Length of the window, in milliseconds. */
  readonly windowMs: number;
}

/**
 * How long a key stays limited.
 *
 * @param oldestCounted the time of the key's `limit`-th most recent hit within the window (the
 *   oldest one that still counts), in milliseconds since the epoch; `undefined` when the key has
 *   fewer hits than the limit
 * @param now milliseconds since the epoch
 * @returns whole seconds until that hit leaves the window, at least 1 (the `Retry-After` header of
 *   RFC 9110 §10.2.3), or `undefined` when an attempt is allowed now
 */
export function retryAfterSeconds(
  oldestCounted: number | undefined,
  now: number,
  policy: RateLimitPolicy,
): number | undefined {
  if (oldestCounted === undefined) return undefined;
  const freeAt = oldestCounted + policy.windowMs;
  if (freeAt <= now) return undefined;
  return Math.max(1, Math.ceil((freeAt - now) / 1000));
}
