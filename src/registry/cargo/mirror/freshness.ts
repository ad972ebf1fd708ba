/**
 * When a mirrored index file is asked of the upstream again, and what its answer does to the copy
 * kept (HTTP caching, RFC 9111 §4.3: a conditional request with the validators the upstream gave,
 * `ETag` for `If-None-Match` and `Last-Modified` for `If-Modified-Since`). Plain data, no I/O.
 */

/** What the mirror knows of one upstream index file besides its bytes. */
export interface Validators {
  /** The upstream's `ETag`, as sent. */
  readonly upstreamEtag?: string | undefined;
  /** The upstream's `Last-Modified`, as sent (an HTTP date). */
  readonly upstreamLastModified?: string | undefined;
  /** When the upstream last confirmed these bytes (a 200 or a 304), milliseconds since the epoch. */
  readonly fetchedAt: number;
}

/**
 * Whether a copy confirmed at `fetchedAt` must be revalidated before it is served: once `maxAgeMs`
 * have passed (`registry.cargo.mirror.max-age`). A clock that went back also revalidates.
 */
export function isStale(copy: Validators, now: number, maxAgeMs: number): boolean {
  const age = now - copy.fetchedAt;
  return age < 0 || age >= maxAgeMs;
}

/**
 * The headers of a conditional request for a copy (RFC 9110 §13.1): `If-None-Match` with its ETag
 * and `If-Modified-Since` with its Last-Modified, each when the upstream gave it; none without a copy.
 */
export function conditionalHeaders(copy: Validators | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (copy?.upstreamEtag !== undefined) headers["if-none-match"] = copy.upstreamEtag;
  if (copy?.upstreamLastModified !== undefined) headers["if-modified-since"] = copy.upstreamLastModified;
  return headers;
}

/**
 * What an upstream answer means for the copy:
 * - `replace`: new bytes (200);
 * - `confirm`: the copy is current (304 to a conditional request), kept for another max-age;
 * - `gone`: the file no longer exists (404, 410), the copy is dropped;
 * - `failed`: anything else (5xx, 429, a 304 without a copy …): the copy, if any, is served stale.
 */
export type UpstreamVerdict = "replace" | "confirm" | "gone" | "failed";

/** The verdict of an upstream status for a request made with or without a copy. */
export function verdictOf(status: number, hadCopy: boolean): UpstreamVerdict {
  if (status === 200) return "replace";
  if (status === 304) return hadCopy ? "confirm" : "failed";
  if (status === 404 || status === 410) return "gone";
  return "failed";
}

/** How long a copy is served stale without asking the upstream again after a failure, in ms. */
export const RETRY_AFTER_FAILURE_MS = 5_000;
