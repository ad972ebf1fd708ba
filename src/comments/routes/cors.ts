/**
 * CORS for the public routes of the comments API: pages of a website's
 * `allowed-origins` (any origin in open mode) may call the challenge, list and post routes from the
 * browser. The decision itself is {@link allowedOrigin}; this file puts it into Fastify hooks. Two
 * small hooks rather than @fastify/cors, because the allowed origins depend on the `<website>` path
 * segment and the admin routes must send no CORS header at all.
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from "fastify";
import { ForbiddenError } from "../../platform/errors.js";
import { allowedOrigin, type Websites } from "../websites.js";

/** The methods a pre-flight allows. */
export const CORS_METHODS = "GET, POST";
/** The request headers a pre-flight allows. */
export const CORS_HEADERS = "Content-Type";
/**
 * How long, in seconds, a browser may cache a pre-flight answer: short enough that a change of
 * `allowed-origins` is seen within the hour (browsers cap it at 2 h or 24 h anyway).
 */
export const PREFLIGHT_MAX_AGE_SECONDS = 3600;

/** The path parameters of the public routes of an article. */
export interface ArticleParams {
  website: string;
  article: string;
}

/** The path parameters of the public routes of a whole website (the count route). */
export interface WebsiteParams {
  website: string;
}

/** A path parameter of a request (`website`, `article`), or `undefined` when its path has none. */
export function pathParam(request: FastifyRequest, name: string): string | undefined {
  const params: unknown = request.params;
  if (typeof params !== "object" || params === null) return undefined;
  const value: unknown = Reflect.get(params, name);
  return typeof value === "string" ? value : undefined;
}

/**
 * An onRequest hook for a public route: always `Vary: Origin` (answers differ by origin, caches
 * must know), and `Access-Control-Allow-Origin` plus `Access-Control-Expose-Headers: Retry-After`
 * when the website exists and allows the request's origin. Set before the handler runs, so error
 * answers (400, 404, 429) are readable by the page too.
 */
export function corsHeaders(websites: Websites): onRequestHookHandler {
  return (request, reply, done) => {
    reply.header("Vary", "Origin");
    const name = pathParam(request, "website");
    const website = name === undefined ? undefined : websites.find(name);
    const origin = website === undefined ? undefined : allowedOrigin(website, request.headers.origin);
    if (origin !== undefined) {
      reply.header("Access-Control-Allow-Origin", origin);
      reply.header("Access-Control-Expose-Headers", "Retry-After");
    }
    done();
  };
}

/**
 * The `allowOrigin` route option of the platform's origin check: a public route
 * declares CORS for the origins its website allows, so that a cross-origin POST
 * from one of them is not refused with 403. A website that does not exist declares none.
 */
export function declaredOrigins(websites: Websites): (request: FastifyRequest, origin: string) => boolean {
  return (request, origin) => {
    const name = pathParam(request, "website");
    const website = name === undefined ? undefined : websites.find(name);
    return website !== undefined && allowedOrigin(website, origin) !== undefined;
  };
}

/**
 * The handler of `OPTIONS` on a public path. A pre-flight from an allowed origin → 204 with the
 * allowed methods and headers (the origin header comes from {@link corsHeaders}); from another
 * origin → 403 without CORS headers, so the browser blocks the request and the developer sees
 * why in the network panel. Without `Origin` (not a pre-flight) → 204 with `Allow`. An unknown
 * website or article → 404 like every other route; on a path without `:article` (the count route)
 * only the website is checked.
 *
 * @param allow the `Allow` header: the methods of the path (`GET, HEAD, POST, OPTIONS`)
 */
export function preflight(websites: Websites, allow: string) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const name = pathParam(request, "website") ?? "";
    const article = pathParam(request, "article");
    // A path without `:article` (the count route) names a website only.
    const website = article === undefined ? websites.get(name) : websites.getWithArticle(name, article);
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== "") {
      if (allowedOrigin(website, origin) === undefined) {
        throw new ForbiddenError(`origin ${origin} is not allowed for website ${website.name}`);
      }
      reply.header("Access-Control-Allow-Methods", CORS_METHODS);
      reply.header("Access-Control-Allow-Headers", CORS_HEADERS);
      reply.header("Access-Control-Max-Age", String(PREFLIGHT_MAX_AGE_SECONDS));
    }
    reply.header("Allow", allow);
    reply.code(204).send();
  };
}
