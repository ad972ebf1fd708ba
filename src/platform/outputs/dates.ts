/**
 * Limits of the dates that outputs write (`startsAt`/`endsAt` of alerts, the `-YYYY-MM-DD` suffix
 * of files): event times are numbers of seconds, and a JavaScript Date holds fewer.
 */

/**
 * The largest time, in seconds from the Unix epoch (either sign), that a JavaScript Date can
 * represent: ±8.64 × 10^15 ms (ECMAScript's TimeClip).
 */
export const MAX_DATE_SECONDS = 8.64e12;
