/**
 * The public badges of healthchecks (docs/healthchecks.md): `GET /badge/<name>/status.svg`,
 * `/badge/<name>/uptime/<1h|24h|7d|30d>.svg`, `/badge/<name>/response-time.svg`, and the same paths
 * ending `.json` in shields.io's endpoint format. No token (a README's image cannot send one):
 * index.ts registers them outside the API guard. Only the checks the status page shows, or those
 * labelled `public: "true"`, have badges; any other name answers the 404 of an unknown one, so that
 * a badge does not tell which private checks exist.
 *
 * Answers are cacheable for a minute and carry a strong ETag of their body; `If-None-Match` holding
 * it answers 304 without a body (RFC 9110 §13.1.2 and RFC 9110 §15.4.5).
 */
import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { NotFoundError } from "../../platform/errors.js";
import { parseSelector, type SelectableCheck } from "../status-page/selectors.js";
import { type BadgeHistory, BadgeReadings, type BadgeResults } from "./readings.js";
import { BADGE_FORMATS, type BadgeFormat, badgeDescription } from "./routes-api.js";
import { renderBadgeSvg } from "./svg.js";
import { BADGE_SUBJECTS, type BadgePage, hasBadge, shieldsEndpoint, subjectPath } from "./values.js";

/** How long clients and proxies may keep a badge, in seconds. */
export const BADGE_MAX_AGE_S = 60;

/** The media type of each format. */
const MEDIA_TYPES: Readonly<Record<BadgeFormat, string>> = {
  svg: "image/svg+xml; charset=utf-8",
  json: "application/json; charset=utf-8",
};

/** What the badge routes work with. */
export interface BadgeRoutesOptions {
  /** The registered checks by name (a `Catalog` fits). */
  readonly catalog: { get(name: string): SelectableCheck | undefined };
  readonly results: BadgeResults;
  readonly history: BadgeHistory;
  /** Cluster mode: brings the results of checks other instances run up to date (at most 1 s old). */
  readonly freshen?: () => Promise<void>;
  /** The selectors of each status page: the checks any page shows have badges. */
  readonly pages: readonly { readonly checks: readonly string[] }[];
  /** How long a reading of a check's history serves its badges, in milliseconds (readings.ts). */
  readonly historyCacheMs?: number;
}

/** The 404 of a name without badges, the same whether the check exists or not. */
function noBadge(name: string): NotFoundError {
  return new NotFoundError(`no badge for healthcheck ${name}`);
}

/** A strong entity tag of `body`: a quoted, truncated SHA-256 (RFC 9110 §8.8.3). */
export function entityTag(body: string): string {
  return `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
}

/**
 * Whether an `If-None-Match` header value matches `etag`: `*`, or a list holding it, compared
 * weakly as RFC 9110 §13.1.2 says (`W/"x"` matches `"x"`).
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(",").some((candidate) => {
    const tag = candidate.trim();
    return tag === "*" || (tag.startsWith("W/") ? tag.slice(2) : tag) === etag;
  });
}

/** Sends `body` with the cache headers, or 304 without it when the request already holds it. */
function sendCacheable(request: FastifyRequest, reply: FastifyReply, format: BadgeFormat, body: string): FastifyReply {
  const etag = entityTag(body);
  reply.headers({
    "cache-control": `public, max-age=${BADGE_MAX_AGE_S}`,
    etag,
    "x-content-type-options": "nosniff",
    // The image opened on its own runs and fetches nothing.
    "content-security-policy": "default-src 'none'",
  });
  if (noneMatch(request.headers["if-none-match"], etag)) return reply.code(304).send();
  return reply.type(MEDIA_TYPES[format]).send(body);
}

/**
 * Registers the badge routes on `app` (public: no guard), each subject of {@link BADGE_SUBJECTS}
 * in each format of {@link BADGE_FORMATS}. A window other than those has no route (the usual 404).
 */
export async function registerBadgeRoutes(app: FastifyInstance, options: BadgeRoutesOptions): Promise<void> {
  const { catalog } = options;
  const page: BadgePage[] = options.pages.map((shown) => ({
    enabled: true,
    selectors: shown.checks.map(parseSelector),
  }));
  const readings = new BadgeReadings({
    results: options.results,
    history: options.history,
    ...(options.historyCacheMs === undefined ? {} : { historyCacheMs: options.historyCacheMs }),
  });
  const freshen = options.freshen ?? (async () => {});
  await app.register(async (badges) => {
    for (const subject of BADGE_SUBJECTS) {
      for (const format of BADGE_FORMATS) {
        const url = `/badge/:name/${subjectPath(subject)}.${format}`;
        const route = { config: { openapi: badgeDescription(subject, format) } };
        badges.get<{ Params: { name: string } }>(url, route, async (request, reply) => {
          const { name } = request.params;
          const check = catalog.get(name);
          if (check === undefined || !hasBadge(check, page)) throw noBadge(name);
          await freshen();
          const badge = await readings.badge(name, subject, Date.now());
          const body = format === "svg" ? renderBadgeSvg(badge) : JSON.stringify(shieldsEndpoint(badge));
          return sendCacheable(request, reply, format, body);
        });
      }
    }
  });
}
