/**
 * What the add-comment route decides between the challenge and the store (docs/comments.md,
 * "Moderation modes" and "Spam signals"): the answer time, the honeypot, and whether the comment
 * starts approved — from the website's moderation mode, the links it holds and the optional
 * Akismet-compatible check.
 */
import type { FastifyRequest } from "fastify";
import { InvalidError, RateLimitedError } from "../../platform/errors.js";
import { escapeHtml } from "../../platform/html.js";
import { checkWithAkismet } from "../akismet.js";
import { CHALLENGE_ALREADY_USED } from "../challenge.js";
import type { CommentFields } from "../comment-validation.js";
import type { CommentMetrics } from "../metrics.js";
import { answeredTooFast, countLinks, TOO_FAST } from "../spam.js";
import { type CommentStore, rateLimitMessage } from "../storage.js";
import type { MailStore } from "../storage-mail.js";
import type { Website } from "../websites.js";

/** `comments.spam` and `comments.akismet`, resolved. */
export interface SpamSettings {
  /** Whether a filled `homepage` field drops the comment. */
  readonly honeypot: boolean;
  /** Milliseconds; 0 turns the check off. */
  readonly minAnswerMs: number;
  /** More links than this hold the comment for moderation. */
  readonly maxLinks: number;
  /** The Akismet-compatible service, when configured. */
  readonly akismet?: { readonly url: string; readonly key: string } | undefined;
  /** Akismet's `blog` when the request names no origin: `http.public-url`. */
  readonly publicUrl: string;
}

/** What the checks need. */
export interface SpamCheckContext {
  readonly spam: SpamSettings;
  readonly metrics: CommentMetrics;
  readonly mailStore: MailStore;
  /** The rate limit's early answer, asked before the outside spam check. */
  readonly store: Pick<CommentStore, "retryAfter">;
}

/**
 * Refuses a challenge answered sooner than `min-answer-time` after it was issued.
 * @throws InvalidError `too fast, please retry` (400)
 */
export function checkAnswerTime(context: SpamCheckContext, fields: CommentFields, now: number): void {
  if (!answeredTooFast(fields.timestamp, now, context.spam.minAnswerMs)) return;
  context.metrics.spam("too_fast");
  throw new InvalidError(TOO_FAST);
}

/**
 * Whether the honeypot caught the comment; when it did, the challenge is spent, the `spam` event
 * written, and the caller answers as if the comment were taken (so the robot learns nothing).
 * @param challengeExpiresAt milliseconds since the Unix epoch: until when the signature is kept
 * @throws InvalidError `The challenge has already been used`, as for any comment
 */
export async function caughtByHoneypot(
  context: SpamCheckContext,
  fields: CommentFields,
  website: Website,
  article: string,
  now: number,
  challengeExpiresAt: number,
): Promise<boolean> {
  if (!context.spam.honeypot || !fields.honeypot) return false;
  await context.mailStore.addSpamEvent(website.name, article, "honeypot", now, {
    signature: fields.signature,
    expiresAt: challengeExpiresAt,
  });
  context.metrics.spam("honeypot");
  return true;
}

/** Whether a new comment starts approved, and whether a spam check held it. */
export interface Verdict {
  readonly approved: boolean;
  readonly spam: boolean;
}

/**
 * Refuses a challenge used already (before any query or call below), then gives the moderation
 * mode's answer (`none` approves, `first` approves an author already approved on
 * the website with the same name and address, `all` holds), then the spam signals, which can only
 * hold: more than `max-links` links, an Akismet `true` (asked only when the rate limit would take
 * the comment).
 * @param now milliseconds since the epoch
 * @throws InvalidError `The challenge has already been used`
 * @throws RateLimitedError before the Akismet-compatible service is asked, when the rate limit
 *   refuses the comment already
 */
export async function verdictOf(
  context: SpamCheckContext,
  request: FastifyRequest,
  website: Website,
  article: string,
  fields: CommentFields,
  now: number,
): Promise<Verdict> {
  const { spam, metrics, mailStore } = context;
  if (await mailStore.challengeUsed(fields.signature)) {
    metrics.rejected(website.name, "challenge");
    throw new InvalidError(CHALLENGE_ALREADY_USED);
  }
  let approved =
    website.moderation === "none" ||
    (website.moderation === "first" &&
      fields.email !== undefined &&
      (await mailStore.approvedBefore(website.name, escapeHtml(fields.author), fields.email)));
  if (countLinks(fields.content) > spam.maxLinks) {
    metrics.spam("links");
    approved = false;
  }
  if (spam.akismet === undefined) return { approved, spam: false };
  // The outside service is asked only for a comment the rate limit would take: a flood from one
  // address must not turn into as many requests to the service (its quota, its cost).
  const wait = await context.store.retryAfter(website.name, request.ip, now);
  if (wait !== undefined) {
    metrics.rejected(website.name, "rate_limit");
    throw new RateLimitedError(rateLimitMessage(wait), wait);
  }
  const origin = request.headers.origin;
  const blog = typeof origin === "string" && origin !== "null" ? origin : spam.publicUrl;
  const verdict = await checkWithAkismet(spam.akismet.url, spam.akismet.key, {
    blog,
    permalink: typeof request.headers.referer === "string" ? request.headers.referer : undefined,
    userIp: request.ip,
    userAgent: request.headers["user-agent"] ?? "",
    referrer: request.headers.referer ?? "",
    author: fields.author,
    authorUrl: fields.authorWebsite,
    content: fields.content,
  });
  if (verdict.kind === "unknown") {
    request.log.warn({ reason: verdict.reason }, `comments: the spam check of ${article} could not answer`);
    return { approved, spam: false };
  }
  if (verdict.kind === "ham") return { approved, spam: false };
  metrics.spam("akismet");
  return { approved: false, spam: true };
}
