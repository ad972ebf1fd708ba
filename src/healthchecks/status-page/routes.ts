/**
 * The public status pages (docs/healthchecks.md): for each page, `GET /status` or
 * `GET /status/<slug>` (HTML, complete without JavaScript), `<page>/data` (the same data as JSON,
 * which the page's script reads to refresh itself) and `<page>/feed.atom` (its incidents and
 * maintenance windows, RFC 4287); and `GET /status/status.js` (that script). No token: index.ts
 * registers them outside the API guard, and only when a page is configured.
 *
 * They show the selected checks' names, descriptions, states, uptime and response times, nothing
 * else (status-data.ts reads nothing else), under a Content-Security-Policy that lets the page
 * reach only its own origin.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import { ConfigError, configErrorMessage } from "../../platform/config.js";
import { NotFoundError } from "../../platform/errors.js";
import { queryInteger, queryOf } from "../../platform/query.js";
import { ValidationError } from "../../platform/validation.js";
import type { Catalog } from "../catalog.js";
import type { ResultHistory } from "../history.js";
import type { Incident } from "../incidents/index.js";
import type { ResultStore } from "../results.js";
import { assembleStatus, type CheckHistory, readHistories, type StatusSources, type StatusWindows } from "./data.js";
import { ATOM_MEDIA_TYPE, renderFeed } from "./feed.js";
import { STATUS_CSP, STATUS_SCRIPT_PATH, statusPageRenderer } from "./html.js";
import { pagePath, type StatusPageSettings } from "./pages.js";
import { pageDescription, STATUS_DATA_ROUTE, STATUS_FEED_ROUTE, STATUS_SCRIPT_ROUTE } from "./routes-api.js";
import { loadStatusScript } from "./script.js";
import { parseSelector, selectChecks, unmatchedReason } from "./selectors.js";

/** How often the page refreshes itself when its URL does not say: 30 s (docs/healthchecks.md). */
export const DEFAULT_REFRESH_MS = 30_000;

/** How long one computation of the page's answers serves every request, in milliseconds. */
export const DEFAULT_CACHE_MS = 1_000;

/**
 * How long one reading of the history serves the page, in milliseconds: the reading costs a few
 * queries per check, the page is public, and uptime figures move slowly.
 */
export const DEFAULT_HISTORY_CACHE_MS = 10_000;

/** Bounds of the `refresh` query parameter, in seconds. */
const MIN_REFRESH_S = 1;
const MAX_REFRESH_S = 3_600;
const REFRESH_RULE = `must be an integer number of seconds between ${MIN_REFRESH_S} and ${MAX_REFRESH_S}`;

/** What the status routes work with. */
export interface StatusRoutesOptions {
  readonly catalog: Catalog;
  readonly results: ResultStore;
  /** Cluster mode: brings the results of checks other instances run up to date (at most 1 s old). */
  readonly freshen?: () => Promise<void>;
  readonly history: ResultHistory;
  /** The pages: `healthchecks.status-pages`, or the one of `healthchecks.status-page` (pages.ts). */
  readonly pages: readonly StatusPageSettings[];
  /** `healthchecks.history.retention`, in milliseconds (0: no history, no bar, no chart). */
  readonly retentionMs: number;
  /** The maintenance windows the page lists (ongoing, and within 7 days); none without it. */
  readonly calendar?: StatusWindows;
  /** The incidents each page shows, read from the database; none without it. */
  readonly incidents?: PageIncidentSource;
  /** `http.public-url`, for the absolute links of the Atom feeds; default `http://localhost`. */
  readonly publicUrl?: string;
  /**
   * How often the page refreshes itself, in milliseconds; default {@link DEFAULT_REFRESH_MS}. A
   * view's `?refresh=<seconds>` (1 to 3600) overrides it, for a wall screen or a browser test.
   */
  readonly refreshMs?: number;
  /**
   * How long one computation of the answers serves every request, in milliseconds; default
   * {@link DEFAULT_CACHE_MS}: states and incidents are at most this old. The page is public:
   * however many requests come, it is rendered at most once per this delay.
   */
  readonly cacheMs?: number;
  /**
   * How long the history read for the page serves, in milliseconds; default
   * {@link DEFAULT_HISTORY_CACHE_MS}. It is read again sooner when the selected checks change.
   * Uptime, bars and charts are at most this old; states do not wait for it.
   */
  readonly historyCacheMs?: number;
}

/** Where a page reads its incidents (incidents/index.ts `Incidents` fits). */
export interface PageIncidentSource {
  /** The open incidents of the page `slug` and those resolved within 14 days. */
  forPage(slug: string, nowMs: number): Promise<Incident[]>;
}

/**
 * Checks at start-up that each selector of each page selects at least one registered check (a
 * configuration-file check or a stored API check). An empty list selects every check and passes.
 * Later, checks come and go without error: the selectors are evaluated again at each render.
 *
 * @throws ValidationError `healthchecks.status-pages[0].checks[1]: selects no healthcheck: no check
 *   has the label team=web`, or `... no check is named website`
 */
export function checkStatusSelectors(pages: readonly StatusPageSettings[], catalog: Catalog): void {
  // Listing sorts every check: not done for a server without status pages (most of them).
  if (pages.length === 0) return;
  const checks = catalog.list();
  for (const page of pages) {
    page.checks.forEach((text, index) => {
      const reason = unmatchedReason(parseSelector(text), checks);
      if (reason !== undefined) throw new ValidationError(`${page.key}.checks[${index}]`, reason, text);
    });
  }
}

/**
 * At start-up: {@link checkStatusSelectors}, its refusal a configuration error (`vigie serve` exits
 * with code 2) after `catalog` is stopped.
 *
 * @throws ConfigError `invalid configuration: healthchecks.status-page.checks[1]: selects no
 *   healthcheck: ...`
 */
export function checkStatusPage(pages: readonly StatusPageSettings[], catalog: Catalog): void {
  try {
    checkStatusSelectors(pages, catalog);
  } catch (error) {
    catalog.stop();
    if (error instanceof ValidationError) throw new ConfigError(configErrorMessage(error));
    throw error;
  }
}

/**
 * A value computed at most once per `ttlMs`, or again when its key changes; concurrent callers
 * share one computation, and a failed one is forgotten.
 */
class Expiring<T> {
  #entry: { readonly atMs: number; readonly key: string; readonly value: Promise<T> } | undefined;

  constructor(private readonly ttlMs: number) {}

  get(key: string, nowMs: number, compute: () => Promise<T>): Promise<T> {
    const entry = this.#entry;
    if (entry !== undefined && entry.key === key && nowMs - entry.atMs < this.ttlMs) return entry.value;
    const value = compute();
    const fresh = { atMs: nowMs, key, value };
    this.#entry = fresh;
    value.catch(() => {
      if (this.#entry === fresh) this.#entry = undefined;
    });
    return value;
  }
}

/** The answers of one moment: the data as JSON, the page for any refresh interval, the feed. */
interface Snapshot {
  readonly json: string;
  readonly page: (refreshMs: number) => string;
  readonly feed: () => string;
}

/**
 * The refresh interval a view asks for with `?refresh=<seconds>`, in milliseconds.
 * @throws InvalidError `query parameter refresh: must be an integer number of seconds between 1 and 3600`
 */
function refreshOf(query: unknown, fallbackMs: number): number {
  const bounds = { min: MIN_REFRESH_S, max: MAX_REFRESH_S, rule: REFRESH_RULE };
  const seconds = queryInteger(queryOf(query), "refresh", bounds);
  return seconds === undefined ? fallbackMs : seconds * 1_000;
}

/** Headers of every status answer: revalidated at each use, never sniffed, no referrer sent on. */
function publicHeaders(reply: FastifyReply): FastifyReply {
  return reply.headers({
    "cache-control": "no-cache",
    "content-security-policy": STATUS_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  });
}

/** The answers of one page, each computed at most once per `cacheMs` (`options.cacheMs`). */
function pageSnapshots(
  options: StatusRoutesOptions,
  page: StatusPageSettings,
  script: boolean,
): () => Promise<Snapshot> {
  const path = pagePath(page.slug);
  const sources: StatusSources = {
    title: page.title,
    description: page.description,
    selectors: page.checks.map(parseSelector),
    checks: () => options.catalog.list(),
    results: options.results,
    history: options.history,
    retentionMs: options.retentionMs,
    ...(options.calendar === undefined ? {} : { maintenance: options.calendar }),
  };
  const feedPage = { title: page.title, description: page.description, url: `${publicUrlOf(options)}${path}` };
  const snapshots = new Expiring<Snapshot>(options.cacheMs ?? DEFAULT_CACHE_MS);
  const histories = new Expiring<Map<string, CheckHistory>>(options.historyCacheMs ?? DEFAULT_HISTORY_CACHE_MS);
  return () => {
    const nowMs = Date.now();
    return snapshots.get("", nowMs, async () => {
      await options.freshen?.();
      // The selectors are evaluated at each computation: checks come and go (API, SIGHUP).
      const selected = selectChecks(sources.selectors, sources.checks());
      const names = selected.map((check) => check.definition.name);
      // Names hold no control character: joined by a newline, they make an unambiguous key.
      const [read, incidents] = await Promise.all([
        histories.get(names.join("\n"), nowMs, () => readHistories(sources, names, nowMs)),
        options.incidents?.forPage(page.slug, nowMs) ?? [],
      ]);
      const data = assembleStatus(sources, selected, read, nowMs, incidents);
      let feed: string | undefined;
      return {
        json: JSON.stringify(data),
        page: statusPageRenderer(data, { script, path }),
        feed: () => {
          feed ??= renderFeed(feedPage, incidents, data.maintenance, new Set(names), nowMs);
          return feed;
        },
      };
    });
  };
}

/** `http.public-url` without its trailing slash. */
function publicUrlOf(options: StatusRoutesOptions): string {
  return (options.publicUrl ?? "http://localhost").replace(/\/$/, "");
}

/** Registers `<page>`, `<page>/data` and `<page>/feed.atom` of one page on `app`. */
function registerPageRoutes(
  app: FastifyInstance,
  options: StatusRoutesOptions,
  page: StatusPageSettings,
  script: boolean,
): void {
  const path = pagePath(page.slug);
  const defaultRefreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
  const snapshot = pageSnapshots(options, page, script);
  const description = {
    ...pageDescription(MIN_REFRESH_S, MAX_REFRESH_S),
    summary: `the public status page "${page.title}" (HTML, complete without JavaScript)`,
  };

  app.get(path, { config: { openapi: description } }, async (request, reply) => {
    const refreshMs = refreshOf(request.query, defaultRefreshMs);
    const { page: render } = await snapshot();
    return publicHeaders(reply).type("text/html; charset=utf-8").send(render(refreshMs));
  });

  app.get(`${path}/data`, { config: { openapi: STATUS_DATA_ROUTE } }, async (_request, reply) => {
    const { json } = await snapshot();
    return publicHeaders(reply).type("application/json; charset=utf-8").send(json);
  });

  app.get(`${path}/feed.atom`, { config: { openapi: STATUS_FEED_ROUTE } }, async (_request, reply) => {
    const { feed } = await snapshot();
    return publicHeaders(reply).type(ATOM_MEDIA_TYPE).send(feed());
  });
}

/**
 * Registers the routes of every page of `options.pages` on `app` (public: no guard) and the
 * script they share, `GET /status/status.js`. Reads the built script once; without it (the sources
 * run without `npm run build`) the pages are served without their script, which logs one warning
 * here, and the script's route answers 404.
 */
export async function registerStatusRoutes(app: FastifyInstance, options: StatusRoutesOptions): Promise<void> {
  const script = await loadStatusScript();
  if (script === undefined) {
    app.log.warn("the status page's script is not built (npm run build): the page will not refresh by itself");
  }
  for (const page of options.pages) registerPageRoutes(app, options, page, script !== undefined);

  app.get(STATUS_SCRIPT_PATH, { config: { openapi: STATUS_SCRIPT_ROUTE } }, async (request, reply) => {
    if (script === undefined) throw new NotFoundError("the status page script is not built");
    publicHeaders(reply).header("etag", script.etag);
    if (request.headers["if-none-match"] === script.etag) return reply.code(304).send();
    return reply.type("text/javascript; charset=utf-8").send(script.source);
  });
}

/**
 * Registers the routes of {@link registerStatusRoutes} in a plugin of their own, outside the API
 * guard, when there is a page; nothing otherwise.
 */
export async function registerStatusPage(app: FastifyInstance, options: StatusRoutesOptions): Promise<void> {
  if (options.pages.length === 0) return;
  await app.register(async (page) => registerStatusRoutes(page, options));
}
