/**
 * The challenge against spam: an arithmetic question (or one of a configured list),
 * signed with HMAC-SHA256 so that nothing is stored when it is issued and the answer never leaves the
 * server. Plain functions of their inputs (the clock and the random source are parameters); the
 * single-use rule needs the database and lives in storage.ts.
 */
import { createHmac, randomInt } from "node:crypto";
import { constantTimeEqual } from "../platform/auth.js";

/** The answer to a verification whose timestamp is older than the TTL. */
export const CHALLENGE_EXPIRED = "The challenge has expired";

/** The answer to a wrong answer, a forged signature or a timestamp in the future. */
export const BAD_CHALLENGE_RESPONSE = "Bad challenge response";

/** The answer to a signature already used by an accepted comment. */
export const CHALLENGE_ALREADY_USED = "The challenge has already been used";

/** How far in the future a timestamp may be, in milliseconds, for clocks of instances that disagree. */
export const MAX_CLOCK_SKEW_MS = 60_000;

/** The operators of a math question. */
const OPERATORS = ["+", "-", "*"] as const;

/** The operands of a math question are drawn uniformly in 0 to this value inclusive. */
const MAX_OPERAND = 11;

/** A question and its expected answer; the answer is compared trimmed and lower-cased. */
export interface Question {
  readonly question: string;
  readonly answer: string;
}

/**
 * Draws a whole number uniformly in `[0, max)`. Defaults to `crypto.randomInt`; tests pass their own.
 */
export type Draw = (max: number) => number;

const secureDraw: Draw = (max) => randomInt(max);

/**
 * A math question: two integers drawn uniformly in 0–11 and an operator among `+`, `-`, `*`, read
 * `what is the result of: 7 + 3`; the answer is the decimal result, negative for some subtractions.
 */
export function mathQuestion(draw: Draw = secureDraw): Question {
  const left = draw(MAX_OPERAND + 1);
  const operator = OPERATORS[draw(OPERATORS.length)] as (typeof OPERATORS)[number];
  const right = draw(MAX_OPERAND + 1);
  const result = operator === "+" ? left + right : operator === "-" ? left - right : left * right;
  return { question: `what is the result of: ${left} ${operator} ${right}`, answer: String(result) };
}

/**
 * One question of a configured list, drawn uniformly.
 * @throws Error when the list is empty (the configuration refuses that)
 */
export function listQuestion(questions: readonly Question[], draw: Draw = secureDraw): Question {
  if (questions.length === 0) throw new Error("no question configured");
  return questions[draw(questions.length)] as Question;
}

/** How an answer is compared: trimmed and lower-cased. */
export function normalizeAnswer(answer: string): string {
  return answer.trim().toLowerCase();
}

/**
 * The signature of a challenge: lower-case hex HMAC-SHA256, keyed with `secret`,
 * of the UTF-8 text of the JSON array `[timestamp, answer, website, article]` exactly as
 * `JSON.stringify` writes it, e.g. `[1700000000000,"10","blog","my-post"]`. A JSON array rather
 * than the parts joined with `-`: names may contain `-`, and `blog`/`my-post` must not sign the same
 * text as `blog-my`/`post`.
 *
 * @param timestamp milliseconds since the Unix epoch, written as a JSON number
 * @param answer the answer as it will be compared (already normalised, see {@link normalizeAnswer})
 * @returns 64 lower-case hex digits
 */
export function challengeSignature(
  secret: string,
  timestamp: number,
  answer: string,
  website: string,
  article: string,
): string {
  return createHmac("sha256", secret)
    .update(JSON.stringify([timestamp, answer, website, article]))
    .digest("hex");
}

/** What `GET /api/v1/challenge/<website>/<article>` answers. */
export interface IssuedChallenge {
  /** Milliseconds since the Unix epoch, the time of issue. */
  readonly timestamp: number;
  readonly question: string;
  /** 64 lower-case hex digits. */
  readonly signature: string;
}

/** The challenge part of a posted comment (comment-validation.ts checked its form). */
export interface ChallengeResponse {
  /** Milliseconds since the Unix epoch, as received with the challenge. */
  readonly timestamp: number;
  /** The visitor's answer, as typed. */
  readonly answer: string;
  /** The signature received with the challenge, lower-case hex. */
  readonly signature: string;
}

/** What issuing and verifying need besides the question. */
export interface ChallengeSettings {
  /** The HMAC key (`comments.challenge.secret`, or the generated one). */
  readonly secret: string;
  /** Lifetime of a challenge in milliseconds (`comments.challenge.ttl`). */
  readonly ttlMs: number;
}

/**
 * How far, in milliseconds, {@link ChallengeClock} may run ahead of the clock before it starts again
 * from the clock: well within the minute of allowed skew, so its timestamps are never refused.
 */
export const MAX_CLOCK_LEAD_MS = 10_000;

/**
 * Timestamps of issued challenges, strictly increasing within one process. The signed text has no
 * nonce, so two challenges of one article issued in the same millisecond with the
 * same answer would share their signature, and the second visitor would be told the challenge was
 * already used. One millisecond apart they differ. Under a burst of more than 1000 challenges a
 * second the timestamps run ahead of the clock, which the minute of allowed skew absorbs. They never
 * run more than {@link MAX_CLOCK_LEAD_MS} ahead: after a long burst, or when the system clock is set
 * back, the clock starts again from `now`, since a timestamp more than a minute ahead would be
 * refused (`Bad challenge response`) and every challenge issued until the clock caught up would fail.
 */
export class ChallengeClock {
  #last = 0;

  /**
   * The timestamp of the next challenge.
   * @param now milliseconds since the Unix epoch
   * @returns `now`, or one more than the previous timestamp when that is later and at most
   *   {@link MAX_CLOCK_LEAD_MS} ahead of `now`
   */
  next(now: number): number {
    const following = this.#last + 1;
    this.#last = following > now && following - now <= MAX_CLOCK_LEAD_MS ? following : now;
    return this.#last;
  }
}

/**
 * Signs `question` for an article.
 * @param now milliseconds since the Unix epoch, the timestamp of the challenge
 */
export function issueChallenge(
  settings: ChallengeSettings,
  question: Question,
  website: string,
  article: string,
  now: number,
): IssuedChallenge {
  const answer = normalizeAnswer(question.answer);
  return {
    timestamp: now,
    question: question.question,
    signature: challengeSignature(settings.secret, now, answer, website, article),
  };
}

/**
 * Checks the first two rules of a challenge, in their order: the timestamp (older than the TTL
 * → expired; more than one minute ahead → bad), then the signature against the HMAC of the answer
 * trimmed and lower-cased for this website and article (constant-time). The third rule, single use,
 * is checked when the comment is stored.
 *
 * @param now milliseconds since the Unix epoch
 * @returns `undefined` when the response is right, else the message of the 400 answer
 */
export function verifyChallenge(
  settings: ChallengeSettings,
  response: ChallengeResponse,
  website: string,
  article: string,
  now: number,
): typeof CHALLENGE_EXPIRED | typeof BAD_CHALLENGE_RESPONSE | undefined {
  if (now - response.timestamp > settings.ttlMs) return CHALLENGE_EXPIRED;
  if (response.timestamp - now > MAX_CLOCK_SKEW_MS) return BAD_CHALLENGE_RESPONSE;
  const expected = challengeSignature(
    settings.secret,
    response.timestamp,
    normalizeAnswer(response.answer),
    website,
    article,
  );
  return constantTimeEqual(response.signature.toLowerCase(), expected) ? undefined : BAD_CHALLENGE_RESPONSE;
}

/**
 * Until when a used signature must be remembered: the instant its challenge
 * expires, in milliseconds since the Unix epoch. After it, rule 1 refuses the challenge anyway.
 */
export function challengeExpiresAt(settings: ChallengeSettings, timestamp: number): number {
  return timestamp + settings.ttlMs;
}
