/**
 * The spam signals of posted comments (docs/comments.md, "Spam signals"), without I/O: the honeypot
 * (read by comment-validation.ts), the time taken to answer the challenge, and the links counted in
 * the text. The Akismet-compatible check is in akismet.ts.
 */

/** The signals, as `comments_spam_total{signal}` names them. */
export type SpamSignal = "honeypot" | "too_fast" | "links" | "akismet";

/** The refusal of a challenge answered sooner than `spam.min-answer-time` after it was issued. */
export const TOO_FAST = "too fast, please retry";

/** A link as counted: a word starting with `http://`, `https://` or `www.` (any case). */
const LINK = /(?:^|[^\p{L}\p{N}_])(?:https?:\/\/|www\.)\S/giu;

/**
 * How many links `text` holds: the words that start with `http://`, `https://` or `www.`, wherever
 * they stand (`see:https://a` counts; `awww.x` does not). `https://www.x` counts once.
 */
export function countLinks(text: string): number {
  let count = 0;
  LINK.lastIndex = 0;
  while (LINK.exec(text) !== null) count++;
  return count;
}

/**
 * Whether a challenge issued at `issuedAt` was answered too soon at `now` (both milliseconds since
 * the Unix epoch); a `minAnswerMs` of 0 turns the check off.
 */
export function answeredTooFast(issuedAt: number, now: number, minAnswerMs: number): boolean {
  return minAnswerMs > 0 && now - issuedAt < minAnswerMs;
}
