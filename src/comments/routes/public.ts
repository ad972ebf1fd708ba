/**
 * The public API of comments (comments.md §4–5, §9): issue a challenge, post a comment, list the
 * approved comments of an article (whole or by pages), count the approved comments of articles.
 * CORS for the website's allowed origins on all of them. The whole list is answered from a
 * per-article cache (list-cache.ts) with an entity tag; posting invalidates it. Pages and counts
 * are read from the database at each request: one indexed query of at most a few hundred rows, and
 * no second cache to keep in step with the writes.
 */
import type { FastifyError, FastifyInstance, onErrorHookHandler } from "fastify";
import { fieldError, HttpError } from "../../platform/errors.js";
import { escapeHtml } from "../../platform/html.js";
import { ValidationError } from "../../platform/validation.js";
import {
  CHALLENGE_ALREADY_USED,
  ChallengeClock,
  type ChallengeSettings,
  challengeExpiresAt,
  issueChallenge,
  type Question,
  verifyChallenge,
} from "../challenge.js";
import type { CommentPublisher } from "../comment-events.js";
import { parseCommentFields } from "../comment-validation.js";
import { type CachedList, ifNoneMatchHolds, type ListCache, listEntityTag } from "../list-cache.js";
import type { CommentMetrics } from "../metrics.js";
import type { AddOutcome, CommentStore } from "../storage.js";
import type { Websites } from "../websites.js";
import { type ArticleParams, corsHeaders, declaredOrigins, preflight, type WebsiteParams } from "./cors.js";
import { articlesOf, pageOf } from "./query.js";

/** Body limit of the add-comment route, in bytes (comments.md §5). */
export const COMMENT_BODY_LIMIT = 64 * 1024;

/** The message of a 429 answer (comments.md §5). */
export function rateLimitMessage(retryAfterSeconds: number): string {
  return `too many comments from this address; retry in ${retryAfterSeconds} s`;
}

/**
 * The `Cache-Control` of the list (RFC 9111 §5.2.2.4): a browser or proxy may keep the list but must
 * revalidate it on every use, so an approved comment shows on the next page load; with the `ETag`
 * the revalidation is a 304 without body.
 */
export const LIST_CACHE_CONTROL = "no-cache";

/** At most one purge of expired challenges and rate-limit hits per this many milliseconds. */
const PURGE_INTERVAL_MS = 60_000;

/** What the public routes need. */
export interface PublicRoutesOptions {
  readonly websites: Websites;
  readonly store: CommentStore;
  /** The cache of approved lists; the add-comment route invalidates it. */
  readonly lists: ListCache;
  readonly metrics: CommentMetrics;
  readonly challenge: ChallengeSettings;
  /** Draws the question of a new challenge. */
  readonly nextQuestion: () => Question;
  /** The clock, milliseconds since the Unix epoch. */
  readonly now?: () => number;
  /** Where new comments go as stream events (comments.md §11). */
  readonly publisher?: CommentPublisher;
}

/**
 * Registers `GET /api/v1/challenge/…`, `GET|POST /api/v1/comment/…`, `GET /api/v1/count/…` and
 * their `OPTIONS`.
 */
export function registerPublicRoutes(app: FastifyInstance, options: PublicRoutesOptions): void {
  const { websites, store, lists, metrics, challenge, nextQuestion } = options;
  const now = options.now ?? Date.now;
  // CORS on every public route: the headers, and the origins declared to the platform's check.
  const cors = { onRequest: corsHeaders(websites), config: { allowOrigin: declaredOrigins(websites) } };
  const clock = new ChallengeClock();
  let lastPurge = 0;

  app.get<{ Params: ArticleParams }>("/api/v1/challenge/:website/:article", cors, async (request, reply) => {
    const { website: name, article } = request.params;
    const website = websites.getWithArticle(name, article);
    const issued = issueChallenge(challenge, nextQuestion(), website.name, article, clock.next(now()));
    metrics.challengeIssued(website.name);
    // A challenge is for one visitor: no cache may hand it to another.
    reply.header("Cache-Control", "no-store");
    return issued;
  });
  app.options("/api/v1/challenge/:website/:article", cors, preflight(websites, "GET, HEAD, OPTIONS"));

  // Without `limit` and `before`, the whole list: the JSON text comes from the cache as
  // `JSON.stringify` wrote it, the same bytes as Fastify's serialisation of the array. With either,
  // one page (comments.md §9), read from the database; its tag is derived from its bytes as the
  // cache's is. Conditional GET and HEAD per RFC 9110 §13.1.2: a matching `If-None-Match` → 304
  // without body, with the headers a 200 would have (ETag, Cache-Control and the CORS headers set by
  // the `onRequest` hook; RFC 9110 §15.4.5). Order of checks: query parameters (400), then website
  // and article (404), as the post route checks its body first.
  app.get<{ Params: ArticleParams }>("/api/v1/comment/:website/:article", cors, async (request, reply) => {
    const { website: name, article } = request.params;
    const page = pageOf(request.query, false);
    const website = websites.getWithArticle(name, article);
    let list: CachedList;
    if (page === undefined) {
      list = await lists.load(website.name, article, () => store.list(website.name, article, true));
    } else {
      const body = JSON.stringify(await store.articlePage(website.name, article, page));
      list = { body, etag: listEntityTag(body) };
    }
    reply.header("ETag", list.etag);
    reply.header("Cache-Control", LIST_CACHE_CONTROL);
    if (ifNoneMatchHolds(request.headers["if-none-match"], list.etag)) return reply.code(304).send();
    reply.type("application/json; charset=utf-8");
    return list.body;
  });
  app.options("/api/v1/comment/:website/:article", cors, preflight(websites, "GET, HEAD, POST, OPTIONS"));

  // The approved comments of each requested article, 0 for those without (comments.md §9), in one
  // query. Order of checks: query parameters (400), website (404), then each article against the
  // website's allow-list (404 `article <name> not found`, as on every route that names one, §2).
  // `Object.fromEntries` defines own properties, so an article called `__proto__` is a key like
  // any other.
  app.get<{ Params: WebsiteParams }>("/api/v1/count/:website", cors, async (request, reply) => {
    const articles = articlesOf(request.query);
    const website = websites.get(request.params.website);
    for (const article of articles) websites.getWithArticle(website.name, article);
    const counts = await store.countApproved(website.name, articles);
    reply.header("Cache-Control", LIST_CACHE_CONTROL);
    return Object.fromEntries(articles.map((article) => [article, counts.get(article) ?? 0]));
  });
  app.options("/api/v1/count/:website", cors, preflight(websites, "GET, HEAD, OPTIONS"));

  // Bodies the parser refuses (not JSON, too large, wrong media type) are invalid comments too.
  const countRefusedBody: onErrorHookHandler = (request, _reply, error: FastifyError, done) => {
    const website = websites.find((request.params as ArticleParams).website);
    if (website !== undefined && error.code?.startsWith("FST_ERR_CTP_")) metrics.rejected(website.name, "invalid");
    done();
  };

  app.post<{ Params: ArticleParams }>(
    "/api/v1/comment/:website/:article",
    { ...cors, onError: countRefusedBody, bodyLimit: COMMENT_BODY_LIMIT },
    async (request, reply) => {
      const { website: name, article } = request.params;
      const time = now();
      // Order of checks (comments.md §5): fields (400), website and article (404), challenge (400),
      // rate limit (429), then store.
      let fields: ReturnType<typeof parseCommentFields>;
      try {
        fields = parseCommentFields(request.body);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        const known = websites.find(name);
        if (known !== undefined) metrics.rejected(known.name, "invalid");
        throw fieldError(error);
      }
      const website = websites.getWithArticle(name, article);
      const failure = verifyChallenge(challenge, fields, website.name, article, time);
      if (failure !== undefined) {
        metrics.rejected(website.name, "challenge");
        throw new HttpError(400, failure);
      }
      let result: AddOutcome;
      try {
        result = await store.add({
          website: website.name,
          article,
          author: escapeHtml(fields.author),
          authorWebsite: fields.authorWebsite,
          content: escapeHtml(fields.content),
          approved: website.autoApprove,
          signature: fields.signature,
          challengeExpiresAt: challengeExpiresAt(challenge, fields.timestamp),
          clientAddress: request.ip,
          now: time,
        });
      } catch (error) {
        // The transaction may have been committed before the failure (a connection lost on COMMIT).
        lists.invalidate(website.name, article);
        throw error;
      }
      // Every added comment, approved or not: only approved ones are listed, but being exact here
      // would tie the cache to the moderation rules for no gain.
      if (result.outcome === "added") lists.invalidate(website.name, article);
      if (result.outcome === "challenge-used") {
        metrics.rejected(website.name, "challenge");
        throw new HttpError(400, CHALLENGE_ALREADY_USED);
      }
      if (result.outcome === "rate-limited") {
        metrics.rejected(website.name, "rate_limit");
        const seconds = result.retryAfterSeconds;
        throw new HttpError(429, rateLimitMessage(seconds), { "Retry-After": String(seconds) });
      }
      metrics.added(website.name);
      options.publisher?.publish({
        id: result.comment.id,
        website: website.name,
        article,
        author: fields.author,
        approved: result.comment.approved,
        timestamp: result.comment.timestamp,
      });
      if (time - lastPurge >= PURGE_INTERVAL_MS) {
        lastPurge = time;
        // Housekeeping must not fail an accepted comment: log and go on.
        await store.purge(time).catch((error: unknown) => request.log.warn({ err: error }, "comments purge failed"));
      }
      reply.code(201);
      return { message: "Comment added" };
    },
  );
}
