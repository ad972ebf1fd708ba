/**
 * The retry policy of outputs (docs/outputs.md): exponential backoff from 100 ms doubling up to
 * 30 s with jitter (up to a quarter more, never over 30 s), and the `Retry-After` answer header
 * (RFC 9110 §10.2.3), which a receiver uses to say when it wants the next try.
 */

/** The first backoff, in milliseconds (docs/outputs.md). */
export const FIRST_BACKOFF_MS = 100;

/** The largest backoff, in milliseconds (docs/outputs.md). */
export const MAX_BACKOFF_MS = 30_000;

/** The jitter added to a step, as a fraction of it: a wait is in [step, (1 + JITTER) × step). */
export const JITTER = 0.25;

/**
 * How long to wait before retry number `retry` (1 for the first retry), in milliseconds: the step,
 * 100 ms × 2^(retry − 1) capped at 30 s, plus up to a quarter of it at random, the whole never over
 * 30 s. The first retry thus waits 100–125 ms and late ones 30 s, as documented. The jitter only
 * lengthens waits, never retrying sooner than the documented step; it spreads outputs that failed
 * together over the early retries, and the offsets it made stay once every wait is the capped 30 s.
 * @param random a source of numbers in [0, 1), `Math.random` outside tests
 */
export function backoffDelay(retry: number, random: () => number = Math.random): number {
  // 2^19 × 100 ms is already far beyond the cap; stopping there keeps the power finite.
  const step = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.min(Math.max(retry - 1, 0), 19));
  return Math.min(MAX_BACKOFF_MS, step * (1 + JITTER * random()));
}

/** The start of the three forms of HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, rfc850 and asctime. */
const HTTP_DATE_START = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*[, ]/;

/**
 * The wait a `Retry-After` header asks for, in milliseconds (RFC 9110 §10.2.3): either a number of
 * seconds or an HTTP-date, from which `nowMs` (milliseconds since the Unix epoch) is subtracted; a
 * date in the past means no wait.
 * @param value the header as undici gives it (a repeated header comes as a list: the first counts)
 * @returns `undefined` when the header is absent or is neither form
 */
export function parseRetryAfter(value: string | readonly string[] | undefined, nowMs: number): number | undefined {
  const text = (typeof value === "string" ? value : value?.[0])?.trim();
  if (text === undefined || text === "") return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Date.parse alone would take "-5" or "1.5" for dates: an HTTP-date starts with a day name.
  if (!HTTP_DATE_START.test(text)) return undefined;
  // asctime() dates carry no zone, but HTTP-dates are always in GMT.
  const date = Date.parse(/GMT$/.test(text) ? text : `${text} GMT`);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
