/**
 * The browser side of comments: `GET /comments/widget.js` (the script a static
 * site embeds), `GET /comments/admin` (the moderation page), `GET /comments/admin.js` and
 * `GET /comments/admin.css` (its script and style). All public: the files hold no data, and the API
 * calls the page makes need a token. No CORS: a `<script src>` needs none.
 *
 * Every answer carries a strong `ETag` (a 304 to a matching `If-None-Match`, RFC 9110 §13.1.2),
 * `X-Content-Type-Options: nosniff`, and is sent gzip-compressed to clients that accept it. The
 * widget may be kept an hour by browsers and proxies (it is loaded by every page of every site);
 * the page, its script and its style are revalidated at each use, so that an upgrade shows at once.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { NotFoundError } from "../../platform/errors.js";
import type { RouteDescription } from "../../platform/openapi.js";
import {
  ADMIN_PAGE_CSP,
  ADMIN_PAGE_PATH,
  ADMIN_SCRIPT_PATH,
  ADMIN_STYLE_PATH,
  renderAdminPage,
} from "../admin-page.js";
import { acceptsGzip, type CommentAssets, loadCommentAssets, type StaticAsset, staticAsset } from "../assets.js";
import { ifNoneMatchHolds } from "../list-cache.js";
import { ADMIN_PAGE_API, ADMIN_SCRIPT_API, ADMIN_STYLE_API, WIDGET_API } from "./assets-api.js";

/** Where the widget is served. */
export const WIDGET_PATH = "/comments/widget.js";

/** The widget's `Cache-Control`: an hour in any cache, then fetched again. */
export const WIDGET_CACHE_CONTROL = "public, max-age=3600";

/** The `Cache-Control` of the moderation page and its files: revalidated at each use (RFC 9111 §5.2.2.4). */
export const ADMIN_CACHE_CONTROL = "no-cache";

/** Headers of the moderation page only. */
const PAGE_HEADERS = { "content-security-policy": ADMIN_PAGE_CSP, "referrer-policy": "no-referrer" } as const;

/**
 * Sends `asset` (or 304): gzip when it exists and the client accepts it, each encoding with its own
 * tag, and `Vary: Accept-Encoding` whenever the encoding depends on the request.
 */
function serve(request: FastifyRequest, reply: FastifyReply, asset: StaticAsset, cacheControl: string): FastifyReply {
  const encoded = asset.gzip !== undefined && acceptsGzip(request.headers["accept-encoding"]) ? asset.gzip : undefined;
  const chosen = encoded ?? asset.identity;
  reply.headers({ "cache-control": cacheControl, etag: chosen.etag, "x-content-type-options": "nosniff" });
  if (asset.gzip !== undefined) reply.header("vary", "Accept-Encoding");
  if (ifNoneMatchHolds(request.headers["if-none-match"], chosen.etag)) return reply.code(304).send();
  if (encoded !== undefined) reply.header("content-encoding", "gzip");
  return reply.type(asset.type).send(chosen.body);
}

/** Options of {@link registerAssetRoutes}. */
export interface AssetRoutesOptions {
  /** The built files; default: read from `dist/comments/browser/` ({@link loadCommentAssets}). */
  readonly assets?: CommentAssets;
}

/**
 * Registers the routes of the widget and the moderation page. Reads the built files once; each
 * one missing (the sources run without `npm run build`) logs one warning here, and its route
 * answers 404 `<path> is not built`.
 *
 * @throws Error when a built file exists but cannot be read
 */
export async function registerAssetRoutes(app: FastifyInstance, options: AssetRoutesOptions = {}): Promise<void> {
  const assets = options.assets ?? (await loadCommentAssets());
  const files: ReadonlyArray<readonly [string, StaticAsset | undefined, string, RouteDescription]> = [
    [WIDGET_PATH, assets.widget, WIDGET_CACHE_CONTROL, WIDGET_API],
    [ADMIN_SCRIPT_PATH, assets.adminScript, ADMIN_CACHE_CONTROL, ADMIN_SCRIPT_API],
    [ADMIN_STYLE_PATH, assets.adminStyle, ADMIN_CACHE_CONTROL, ADMIN_STYLE_API],
  ];
  for (const [path, asset, cacheControl, openapi] of files) {
    if (asset === undefined) app.log.warn(`${path} is not built (npm run build): it answers 404`);
    app.get(path, { config: { openapi } }, async (request, reply) => {
      if (asset === undefined) throw new NotFoundError(`${path} is not built`);
      return serve(request, reply, asset, cacheControl);
    });
  }

  const page = staticAsset(
    renderAdminPage({ script: assets.adminScript !== undefined, style: assets.adminStyle !== undefined }),
    "text/html; charset=utf-8",
  );
  app.get(ADMIN_PAGE_PATH, { config: { openapi: ADMIN_PAGE_API } }, async (request, reply) => {
    reply.headers(PAGE_HEADERS);
    return serve(request, reply, page, ADMIN_CACHE_CONTROL);
  });
}
