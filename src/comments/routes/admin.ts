/**
 * The admin API of comments: read, approve and delete comments, read and clear the
 * event log of a website. Every route needs the comments admin token or a registry token of an
 * active admin user; none sends CORS headers. The admin routes read the database
 * directly, never the cache of the public list (every change is visible at once);
 * each write invalidates that cache for its article. `GET /api/admin/comment/<website>` lists a
 * website's comments across its articles by pages, newest first, for the moderation page;
 * `GET /api/admin/website` lists the websites it moderates.
 */
import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import { NotFoundError } from "../../platform/errors.js";
import type { RouteDescription } from "../../platform/openapi.js";
import type { ListCache } from "../list-cache.js";
import { commentIdOf } from "../resources.js";
import type { CommentStore } from "../storage.js";
import type { Websites } from "../websites.js";
import {
  APPROVE_API,
  ARTICLE_COMMENTS_API,
  COMMENT_API,
  DELETE_ARTICLE_API,
  DELETE_COMMENT_API,
  DELETE_EVENTS_API,
  EVENTS_API,
  WEBSITE_COMMENTS_API,
  WEBSITES_API,
} from "./admin-api.js";
import type { ArticleParams, WebsiteParams } from "./cors.js";
import { approvedOf, pageOf } from "./query.js";

/** What the admin routes need. */
export interface AdminRoutesOptions {
  readonly websites: Websites;
  readonly store: CommentStore;
  /** The cache of the public list, invalidated by every write of a comment. */
  readonly lists: ListCache;
  /** The guard of every admin route (auth before any other check, so nothing leaks to strangers). */
  readonly guard: preHandlerHookHandler;
  /** Told the id of a comment that moved from pending to approved (reply notifications). */
  readonly onApproved?: (id: string) => void;
}

/** Websites `GET /api/admin/website` lists at most in open mode. */
const MAX_LISTED_WEBSITES = 1000;

/** The comments of an article, one comment, the event log of a website. */
const ARTICLE = "/api/admin/comment/:website/:article";
const COMMENT = `${ARTICLE}/:id`;
const EVENTS = "/api/admin/event/:website";

interface CommentParams extends ArticleParams {
  id: string;
}

function commentNotFound(id: string): NotFoundError {
  return new NotFoundError(`comment ${id} not found`);
}

/** Registers the admin routes of comments under `/api/admin/` (docs/api.md). */
export function registerAdminRoutes(app: FastifyInstance, options: AdminRoutesOptions): void {
  const { websites, store, lists, guard } = options;
  /** The options of an admin route: the guard, and its entry in the API description (admin-api.ts). */
  const route = (openapi: RouteDescription) => ({ preHandler: guard, config: { openapi } });

  /**
   * Runs a write of an article's comments, then invalidates the article's public list, also when
   * the write failed (it may have been committed before the failure).
   */
  const writing = async <T>(website: string, article: string, write: () => Promise<T>): Promise<T> => {
    try {
      return await write();
    } finally {
      lists.invalidate(website, article);
    }
  };

  /** The website, article and stored id of a comment path. @throws NotFoundError */
  const locate = (params: CommentParams): { website: string; article: string; id: string } => {
    const website = websites.getWithArticle(params.website, params.article).name;
    const id = commentIdOf(params.id);
    if (id === undefined) throw commentNotFound(params.id);
    return { website, article: params.article, id };
  };

  // The websites to moderate (the moderation page lists the pending comments of each): the
  // configured ones, or in open mode those that hold comments. Also how the page checks a token.
  app.get("/api/admin/website", route(WEBSITES_API), async (_request, reply) => {
    reply.header("Cache-Control", "no-store");
    return { websites: websites.names ?? (await store.websitesWithComments(MAX_LISTED_WEBSITES)) };
  });

  // Query parameters (400) before the website (404), as on the public routes; the guard runs first.
  app.get<{ Params: WebsiteParams }>(
    "/api/admin/comment/:website",
    route(WEBSITE_COMMENTS_API),
    async (request, reply) => {
      const approved = approvedOf(request.query);
      const page = pageOf(request.query, true);
      const comments = await store.websitePage(websites.get(request.params.website).name, approved, page);
      // Pending comments are for the moderator's eyes: no copy kept by the browser (it reads afresh).
      reply.header("Cache-Control", "no-store");
      return comments;
    },
  );

  app.get<{ Params: ArticleParams }>(ARTICLE, route(ARTICLE_COMMENTS_API), async (request) => {
    const { website, article } = request.params;
    return store.list(websites.getWithArticle(website, article).name, article, false);
  });

  app.delete<{ Params: ArticleParams }>(ARTICLE, route(DELETE_ARTICLE_API), async (request) => {
    const website = websites.getWithArticle(request.params.website, request.params.article).name;
    const article = request.params.article;
    await writing(website, article, () => store.deleteAll(website, article));
    return { message: "Comments deleted" };
  });

  app.get<{ Params: CommentParams }>(COMMENT, route(COMMENT_API), async (request) => {
    const { website, article, id } = locate(request.params);
    const comment = await store.get(website, article, id);
    if (comment === undefined) throw commentNotFound(request.params.id);
    return comment;
  });

  app.post<{ Params: CommentParams }>(COMMENT, route(APPROVE_API), async (request) => {
    const { website, article, id } = locate(request.params);
    const approved = await writing(website, article, () => store.approve(website, article, id));
    if (approved === "missing") throw commentNotFound(request.params.id);
    if (approved === "approved") options.onApproved?.(id);
    return { message: "Comment approved" };
  });

  app.delete<{ Params: CommentParams }>(COMMENT, route(DELETE_COMMENT_API), async (request) => {
    const { website, article, id } = locate(request.params);
    const deleted = await writing(website, article, () => store.delete(website, article, id));
    if (!deleted) throw commentNotFound(request.params.id);
    return { message: "Comment deleted" };
  });

  app.get<{ Params: WebsiteParams }>(EVENTS, route(EVENTS_API), async (request) => {
    return store.events(websites.get(request.params.website).name);
  });

  app.delete<{ Params: WebsiteParams }>(EVENTS, route(DELETE_EVENTS_API), async (request) => {
    return store.deleteEvents(websites.get(request.params.website).name);
  });
}
