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
 * second asked is kept: healthchecks stamp about 1 000 results a second (10 000 checks at 10 s), and
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

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+ -])(\d{2}):(\d{2}))$/;

/**
 * Milliseconds since the epoch of an RFC 3339 date-time (RFC 3339 §5.6: `2026-11-22T10:15:02Z`,
 * `2026-11-22T11:15:02.123+01:00`; `T` and `Z` in either case; fractions beyond the millisecond
 * truncated; a leap second `:60` read as the next minute's start). A space stands for the `+` of
 * an offset, since an unencoded `+` in a query string arrives as one.
 *
 * @returns undefined when `text` is not one, or names a day that does not exist
 */
export function parseRfc3339(text: string): number | undefined {
  const match = RFC3339.exec(text);
  if (match === null) return undefined;
  const [, year, month, day, hour, minute, second, fraction, sign, offsetHour, offsetMinute] = match;
  const numbers = [year, month, day, hour, minute, second].map(Number);
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0] = numbers;
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 60) return undefined;
  if (Number(offsetHour) > 23 || Number(offsetMinute) > 59) return undefined;
  const offset = sign === undefined ? 0 : (sign === "-" ? -1 : 1) * (Number(offsetHour) * 60 + Number(offsetMinute));
  // setUTCFullYear rather than Date.UTC, which reads years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  // February 30 rolls over into March: refused.
  if (date.getUTCDate() !== d) return undefined;
  date.setUTCHours(h, mi, s, Number((fraction ?? "").padEnd(3, "0").slice(0, 3)));
  return date.getTime() - offset * 60_000;
}
