/**
 * The public API of comments (docs/comments.md): issue a challenge, post a comment, list the
 * approved comments of an article (whole or by pages), count the approved comments of articles.
 * CORS for the website's allowed origins on all of them. The whole list is answered from a
 * per-article cache (list-cache.ts) with an entity tag; posting invalidates it. Pages and counts
 * are read from the database at each request: one indexed query of at most a few hundred rows, and
 * no second cache to keep in step with the writes.
 */
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyRequest, onErrorHookHandler } from "fastify";
import { fieldError, InvalidError, RateLimitedError } from "../../platform/errors.js";
import { escapeHtml } from "../../platform/html.js";
import type { RouteDescription } from "../../platform/openapi.js";
import { ValidationError } from "../../platform/validation.js";
import {
  ChallengeClock,
  type ChallengeSettings,
  challengeExpiresAt,
  issueChallenge,
  type Question,
  verifyChallenge,
} from "../challenge.js";
import type { CommentPublisher } from "../comment-events.js";
import { type CommentFields, commentBody, PARENT_RULE } from "../comment-validation.js";
import { type CachedList, ifNoneMatchHolds, type ListCache, listEntityTag } from "../list-cache.js";
import type { CommentMail } from "../mail.js";
import type { CommentMetrics } from "../metrics.js";
import type { Comment } from "../resources.js";
import type { CommentStore } from "../storage.js";
import type { Website, Websites } from "../websites.js";
import { type ArticleParams, corsHeaders, declaredOrigins, pathParam, preflight, type WebsiteParams } from "./cors.js";
import { CHALLENGE_API, COUNT_API, LIST_API, POST_API, preflightApi } from "./public-api.js";
import { articlesOf, pageOf } from "./query.js";
import { caughtByHoneypot, checkAnswerTime, type SpamCheckContext, type Verdict, verdictOf } from "./spam-checks.js";

/** Body limit of the add-comment route, in bytes. */
export const COMMENT_BODY_LIMIT = 64 * 1024;

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
  /** Where new comments go as stream events. */
  readonly publisher?: CommentPublisher;
  /** The spam settings and the queries of the spam and moderation checks. */
  readonly checks: SpamCheckContext;
  /** The module's mail, when `comments.email` is configured. */
  readonly mail?: CommentMail | undefined;
}

const CHALLENGE_PATH = "/api/v1/challenge/:website/:article";
const COMMENT_PATH = "/api/v1/comment/:website/:article";
const COUNT_PATH = "/api/v1/count/:website";

/** The route options every public route shares: its CORS headers and declared origins. */
type CorsOptions = {
  readonly onRequest: ReturnType<typeof corsHeaders>;
  readonly config: { readonly allowOrigin: ReturnType<typeof declaredOrigins> };
};

/** The options of a public route: CORS, and its entry in the API description (public-api.ts). */
function withApi(cors: CorsOptions, openapi: RouteDescription) {
  return { ...cors, config: { ...cors.config, openapi } };
}

/**
 * Registers `GET /api/v1/challenge/…`, `GET|POST /api/v1/comment/…`, `GET /api/v1/count/…` and
 * their `OPTIONS`.
 */
export function registerPublicRoutes(app: FastifyInstance, options: PublicRoutesOptions): void {
  const { websites } = options;
  // CORS on every public route: the headers, and the origins declared to the platform's check.
  const cors: CorsOptions = { onRequest: corsHeaders(websites), config: { allowOrigin: declaredOrigins(websites) } };
  const preflightRoute = (path: string, what: string, allow: string) =>
    app.options(path, withApi(cors, preflightApi(what)), preflight(websites, allow));
  registerChallengeRoute(app, options, cors);
  preflightRoute(CHALLENGE_PATH, "the challenges", "GET, HEAD, OPTIONS");
  registerListRoute(app, options, cors);
  preflightRoute(COMMENT_PATH, "the comments", "GET, HEAD, POST, OPTIONS");
  registerCountRoute(app, options, cors);
  preflightRoute(COUNT_PATH, "the counts", "GET, HEAD, OPTIONS");
  registerPostRoute(app, options, cors);
}

/** `GET /api/v1/challenge/<website>/<article>`: a new challenge, never cached. */
function registerChallengeRoute(app: FastifyInstance, options: PublicRoutesOptions, cors: CorsOptions): void {
  const { websites, metrics, challenge, nextQuestion } = options;
  const now = options.now ?? Date.now;
  const clock = new ChallengeClock();
  const route = withApi(cors, CHALLENGE_API);
  app.get<{ Params: ArticleParams }>(CHALLENGE_PATH, route, async (request, reply) => {
    const { website: name, article } = request.params;
    const website = websites.getWithArticle(name, article);
    const issued = issueChallenge(challenge, nextQuestion(), website.name, article, clock.next(now()));
    metrics.challengeIssued(website.name);
    // A challenge is for one visitor: no cache may hand it to another.
    reply.header("Cache-Control", "no-store");
    return issued;
  });
}

/**
 * `GET /api/v1/comment/<website>/<article>`. Without `limit` and `before`, the whole list: the JSON
 * text comes from the cache as `JSON.stringify` wrote it, the same bytes as Fastify's serialisation
 * of the array. With either, one page, read from the database; its tag is derived from its bytes as
 * the cache's is. Conditional GET and HEAD per RFC 9110 §13.1.2: a matching `If-None-Match` → 304
 * without body, with the headers a 200 would have (ETag, Cache-Control and the CORS headers set by
 * the `onRequest` hook; RFC 9110 §15.4.5). Order of checks: query parameters (400), then website
 * and article (404), as the post route checks its body first.
 */
function registerListRoute(app: FastifyInstance, options: PublicRoutesOptions, cors: CorsOptions): void {
  const { websites, store, lists } = options;
  const route = withApi(cors, LIST_API);
  app.get<{ Params: ArticleParams }>(COMMENT_PATH, route, async (request, reply) => {
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
}

/**
 * `GET /api/v1/count/<website>`: the approved comments of each requested article, 0 for those
 * without, in one query. Order of checks: query parameters (400), website (404), then each article
 * against the website's allow-list (404 `article <name> not found`, as on every route that names
 * one). `Object.fromEntries` defines own properties, so an article called `__proto__` is a key like
 * any other.
 */
function registerCountRoute(app: FastifyInstance, options: PublicRoutesOptions, cors: CorsOptions): void {
  const { websites, store } = options;
  app.get<{ Params: WebsiteParams }>(COUNT_PATH, withApi(cors, COUNT_API), async (request, reply) => {
    const articles = articlesOf(request.query);
    const website = websites.get(request.params.website);
    for (const article of articles) websites.getWithArticle(website.name, article);
    const counts = await store.countApproved(website.name, articles);
    reply.header("Cache-Control", LIST_CACHE_CONTROL);
    return Object.fromEntries(articles.map((article) => [article, counts.get(article) ?? 0]));
  });
}

/**
 * `POST /api/v1/comment/<website>/<article>`. Order of checks: fields (400), website and article
 * (404), challenge (400), answer time (400), parent (400), honeypot (201, nothing stored), challenge
 * already used (400), moderation mode and spam checks (the rate limit, 429, is read before an
 * Akismet-compatible service is asked), rate limit (429), then store.
 */
function registerPostRoute(app: FastifyInstance, options: PublicRoutesOptions, cors: CorsOptions): void {
  const { websites, metrics, challenge } = options;
  const now = options.now ?? Date.now;
  const purge = throttledPurge(options.store);
  // Bodies the parser refuses (not JSON, too large, wrong media type) are invalid comments too.
  const countRefusedBody: onErrorHookHandler = (request, _reply, error: FastifyError, done) => {
    const website = websites.find(pathParam(request, "website") ?? "");
    if (website !== undefined && error.code?.startsWith("FST_ERR_CTP_")) metrics.rejected(website.name, "invalid");
    done();
  };
  app.post<{ Params: ArticleParams }>(
    COMMENT_PATH,
    { ...withApi(cors, POST_API), onError: countRefusedBody, bodyLimit: COMMENT_BODY_LIMIT },
    async (request, reply) => {
      const { website: name, article } = request.params;
      const time = now();
      const fields = parseCounted(request.body, name, options);
      const website = websites.getWithArticle(name, article);
      const failure = verifyChallenge(challenge, fields, website.name, article, time);
      if (failure !== undefined) {
        metrics.rejected(website.name, "challenge");
        throw new InvalidError(failure);
      }
      checkAnswerTime(options.checks, fields, time);
      await checkParent(options, website, article, fields.parent);
      reply.code(201);
      const expiresAt = challengeExpiresAt(challenge, fields.timestamp);
      if (await caughtByHoneypot(options.checks, fields, website, article, time, expiresAt)) {
        return { message: "Comment added" };
      }
      const verdict = await verdictOf(options.checks, request, website, article, fields, time);
      const comment = await storeComment(options, request, website, article, fields, time, verdict);
      metrics.added(website.name);
      announce(options, website, article, fields, comment, verdict);
      await purge(time, request.log);
      return { message: "Comment added" };
    },
  );
}

/**
 * Tells of a stored comment: the stream event, the moderators' mail, and, for a reply approved at
 * once, its parent's author.
 */
function announce(
  options: PublicRoutesOptions,
  website: Website,
  article: string,
  fields: CommentFields,
  comment: Comment,
  verdict: Verdict,
): void {
  options.publisher?.publish({
    id: comment.id,
    website: website.name,
    article,
    author: fields.author,
    approved: comment.approved,
    timestamp: comment.timestamp,
  });
  const { mail } = options;
  if (mail === undefined) return;
  const { author, content } = fields;
  mail.newComment({ id: comment.id, website: website.name, article, author, content, ...verdict });
  if (comment.approved && fields.parent !== undefined) void mail.replyApproved(comment.id);
}

/**
 * The fields of a posted comment; a refused body counts as an invalid comment of its website.
 * @throws InvalidError naming the field and its rule
 */
function parseCounted(body: unknown, websiteName: string, options: PublicRoutesOptions): CommentFields {
  try {
    return commentBody(body, "");
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const known = options.websites.find(websiteName);
    if (known !== undefined) options.metrics.rejected(known.name, "invalid");
    throw fieldError(error);
  }
}

/**
 * Checks that the comment answered (`parent`) is an approved comment of the same article; a reply
 * whose parent is deleted afterwards is kept (the widget shows that parent as deleted).
 * @throws InvalidError `field parent: …` (400), counted as an invalid comment
 */
async function checkParent(
  options: PublicRoutesOptions,
  website: Website,
  article: string,
  parent: string | undefined,
): Promise<void> {
  if (parent === undefined) return;
  const answered = await options.store.get(website.name, article, parent);
  if (answered?.approved === true) return;
  options.metrics.rejected(website.name, "invalid");
  throw new InvalidError(`field parent: ${PARENT_RULE}`);
}

/**
 * Stores a comment whose challenge was verified, counting refusals, and invalidates the cached
 * list of its article.
 * @throws InvalidError when the challenge was used already; RateLimitedError (429 with `Retry-After`)
 */
async function storeComment(
  options: PublicRoutesOptions,
  request: FastifyRequest,
  website: Website,
  article: string,
  fields: CommentFields,
  time: number,
  verdict: Verdict,
): Promise<Comment> {
  const { store, lists, metrics, challenge } = options;
  let comment: Comment;
  try {
    comment = await store.add({
      website: website.name,
      article,
      author: escapeHtml(fields.author),
      authorWebsite: fields.authorWebsite,
      content: escapeHtml(fields.content),
      approved: verdict.approved,
      spam: verdict.spam,
      signature: fields.signature,
      challengeExpiresAt: challengeExpiresAt(challenge, fields.timestamp),
      clientAddress: request.ip,
      now: time,
      parent: fields.parent,
      email: fields.email,
      notifyReplies: fields.notifyReplies,
    });
  } catch (error) {
    if (error instanceof RateLimitedError) metrics.rejected(website.name, "rate_limit");
    else if (error instanceof InvalidError) metrics.rejected(website.name, "challenge");
    // Any other failure may come after the transaction was committed (a connection lost on COMMIT).
    else lists.invalidate(website.name, article);
    throw error;
  }
  // Every added comment, approved or not: only approved ones are listed, but being exact here
  // would tie the cache to the moderation rules for no gain.
  lists.invalidate(website.name, article);
  return comment;
}

/**
 * Purges expired challenges and rate-limit hits at most once per {@link PURGE_INTERVAL_MS}, after an
 * accepted comment. Housekeeping must not fail that comment: a failure is logged and forgotten.
 */
function throttledPurge(store: CommentStore): (time: number, log: FastifyBaseLogger) => Promise<void> {
  let lastPurge = 0;
  return async (time, log) => {
    if (time - lastPurge < PURGE_INTERVAL_MS) return;
    lastPurge = time;
    await store.purge(time).catch((error: unknown) => log.warn({ err: error }, "comments purge failed"));
  };
}
