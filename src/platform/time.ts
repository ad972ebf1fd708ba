/**
 * Times as the APIs write them: RFC 3339 in UTC with milliseconds, as
 * `Date.prototype.toISOString` spells them (`2026-11-22T10:15:02.123Z`).
 */

/** The second whose text {@link rfc3339} keeps, and that text up to its decimal point. */
let cachedSecond = Number.NaN;
let cachedPrefix = "";

/**
 * The RFC 3339 UTC form of a time in milliseconds since the epoch, identical to
 * `new Date(milliseconds).toISOString()` (fractions of a millisecond dropped). The text of the last
 * second asked is kept: healthchecks stamp about 1 000 results a second (healthchecks.md §8), and
 * building a Date and its text for each costs ten times more.
 *
 * @throws RangeError for a time that is not finite or out of the Date range, as toISOString
 */
export function rfc3339(milliseconds: number): string {
  const whole = Math.trunc(milliseconds);
  const second = Math.floor(whole / 1000);
  if (second !== cachedSecond) {
    const text = new Date(second * 1000).toISOString();
    // `.000Z` ends every whole second, whatever the length of the year.
    cachedPrefix = text.slice(0, -4);
    cachedSecond = second;
  }
  const fraction = whole - second * 1000;
  return `${cachedPrefix}${fraction < 10 ? "00" : fraction < 100 ? "0" : ""}${fraction}Z`;
}
