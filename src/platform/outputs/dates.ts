/**
 * Limits of the dates that outputs write (`startsAt`/`endsAt` of alerts, the `-YYYY-MM-DD` suffix
 * of files): event times are numbers of seconds, and a JavaScript Date holds fewer.
 */

/**
 * The largest time, in seconds from the Unix epoch (either sign), that a JavaScript Date can
 * represent: ±8.64 × 10^15 ms (ECMAScript's TimeClip).
 */
export const MAX_DATE_SECONDS = 8.64e12;

/**
 * An event time (Unix seconds) as a decimal count of nanoseconds, the timestamps of Loki's push
 * API and InfluxDB's line protocol. Nanoseconds since 1970 pass 2^53, so the text is built from
 * the whole seconds and the fraction rounded to the microsecond (a double holds no finer fraction
 * at today's times) instead of multiplying.
 * @returns `undefined` for a time that is not finite, is negative, or is past year 2262 (the largest
 *   signed 64-bit count of nanoseconds, which both receivers use)
 */
export function nanosecondsText(time: number): string | undefined {
  if (!Number.isFinite(time) || time < 0 || time >= MAX_NANOSECOND_SECONDS) return undefined;
  let seconds = Math.floor(time);
  let micros = Math.round((time - seconds) * 1e6);
  if (micros >= 1_000_000) {
    seconds += 1;
    micros -= 1_000_000;
  }
  if (seconds === 0) return micros === 0 ? "0" : `${micros}000`;
  return `${seconds}${String(micros).padStart(6, "0")}000`;
}

/** The first second past what a signed 64-bit count of nanoseconds holds (2^63 ns, in April 2262). */
const MAX_NANOSECOND_SECONDS = 9_223_372_036;

/**
 * The UTC date of an event time (Unix seconds) as `YYYY.MM.DD`, the daily index suffix of
 * Logstash and Beats (`logs-2026.11.24`).
 * @returns `undefined` for a time outside years 0000–9999
 */
export function dottedDate(time: number): string | undefined {
  if (!Number.isFinite(time) || Math.abs(time) > MAX_DATE_SECONDS) return undefined;
  const date = new Date(time * 1000);
  const year = date.getUTCFullYear();
  if (year < 0 || year > 9999) return undefined;
  const month = String(date.getUTCMonth() + 1).padStart(2, "0");
  const day = String(date.getUTCDate()).padStart(2, "0");
  return `${String(year).padStart(4, "0")}.${month}.${day}`;
}
