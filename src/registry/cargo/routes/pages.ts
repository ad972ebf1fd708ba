/**
 * The registry's web pages (docs/cargo.md, "Web pages"): `GET /registry` (the crates, with a
 * search form), `GET /registry/<crate>` (README, versions, dependencies, owners, how to use it)
 * and `GET /registry/registry.js` (the script a private registry's sign-in needs). Rendered on the
 * server: a public registry's pages work without JavaScript.
 *
 * With `auth-required`, a request without a valid token gets the sign-in frame (401); its script
 * signs in, then asks for the same URL again with the token and shows the answer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { NotFoundError, VigieError } from "../../../platform/errors.js";
import { queryError, queryInteger, queryOf, queryString } from "../../../platform/query.js";
import { cratePage, shownVersion } from "../pages/data.js";
import { PAGES_CSP, PAGES_SCRIPT_PATH, pageHtml } from "../pages/layout.js";
import { renderReadme } from "../pages/readme.js";
import type { PagesScript } from "../pages/script.js";
import { crateView, listView, notFoundView, signInView } from "../pages/view.js";
import type { CratePageStore } from "../storage-pages.js";
import { MAX_QUERY, PAGE } from "./api.js";
import { type CargoContext, highest } from "./context.js";
import { CRATE_PAGE, LIST_PAGE, PAGES_SCRIPT } from "./pages-api.js";

/** Crates on one page of the list. */
export const LIST_PAGE_SIZE = 50;

/** Versions listed on a crate page, newest first; the browsing API lists them all. */
export const PAGE_VERSIONS = 50;

/** Rendered READMEs kept in memory, by version (a version's README never changes). */
const README_CACHE_SIZE = 64;

const Q_RULE = `must be one string of at most ${MAX_QUERY} characters`;

/** What the pages need besides the Cargo context. */
export interface PagesOptions {
  readonly pages: CratePageStore;
  /** The built script, or undefined (not built). */
  readonly script: PagesScript | undefined;
}

/** A bounded memory of rendered READMEs: the oldest entry goes when full. */
class ReadmeCache {
  readonly #entries = new Map<number, string | null>();

  get(versionId: number, markdown: () => string | null): string | null {
    const known = this.#entries.get(versionId);
    if (known !== undefined) return known;
    const source = markdown();
    const html = source === null || source.trim() === "" ? null : renderReadme(source);
    if (this.#entries.size >= README_CACHE_SIZE) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(versionId, html);
    return html;
  }
}

/** Registers the pages on `app`. */
export function registerPages(app: FastifyInstance, context: CargoContext, options: PagesOptions): void {
  const { authRequired, store } = context;
  const { pages, script } = options;
  const readmes = new ReadmeCache();
  const send = (reply: FastifyReply, status: number, title: string, main: string, attributes?: string) =>
    reply
      .code(status)
      .headers({
        // A private registry's pages are for the signed-in user only: never kept by a cache.
        "cache-control": authRequired ? "no-store" : "no-cache",
        "content-security-policy": PAGES_CSP,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
      })
      .type("text/html; charset=utf-8")
      .send(pageHtml({ title, main, script: authRequired, mainAttributes: attributes }));

  /** True when the request may see the pages; else the sign-in frame is sent. */
  const admitted = async (request: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    if (!authRequired) return true;
    try {
      await context.authenticate(request, true);
      return true;
    } catch (error) {
      if (!(error instanceof VigieError)) throw error;
      if (error.code !== "VIGIE_ERR_UNAUTHORIZED" && error.code !== "VIGIE_ERR_FORBIDDEN") throw error;
      const status = error.code === "VIGIE_ERR_FORBIDDEN" ? 403 : 401;
      reply.header("www-authenticate", 'Bearer realm="vigie registry"');
      send(reply, status, "Sign in: crates", signInView(), ` data-signin="${status}"`);
      return false;
    }
  };

  app.get("/registry", { config: { openapi: LIST_PAGE } }, async (request, reply) => {
    const query = queryOf(request.query);
    const q = (queryString(query, "q", Q_RULE) ?? "").trim();
    if (q.length > MAX_QUERY) throw queryError("q", Q_RULE);
    const page = queryInteger(query, "page", PAGE) ?? 1;
    if (!(await admitted(request, reply))) return reply;
    const words = q.split(/\s+/).filter((word) => word !== "");
    const found = await store.search(words.slice(0, 20), LIST_PAGE_SIZE, (page - 1) * LIST_PAGE_SIZE);
    const live = await store.liveVersions(found.crates.map((crate) => crate.id));
    const crates = found.crates.map((crate) => ({
      name: crate.name,
      maxVersion: highest(live.get(crate.id) ?? []) ?? null,
      description: crate.description,
    }));
    const main = listView({ query: q, page, perPage: LIST_PAGE_SIZE, total: found.total, crates });
    return send(reply, 200, q === "" ? "Crates" : `Crates: ${q}`, main);
  });

  app.get(PAGES_SCRIPT_PATH, { config: { openapi: PAGES_SCRIPT } }, async (request, reply) => {
    if (script === undefined) throw new NotFoundError("the registry pages' script is not built");
    reply.headers({ "cache-control": "no-cache", "x-content-type-options": "nosniff", etag: script.etag });
    if (request.headers["if-none-match"] === script.etag) return reply.code(304).send();
    return reply.type("text/javascript; charset=utf-8").send(script.source);
  });

  app.get<{ Params: { name: string } }>(
    "/registry/:name",
    { config: { openapi: CRATE_PAGE } },
    async (request, reply) => {
      if (!(await admitted(request, reply))) return reply;
      const page = await crateAnswer(context, pages, readmes, request.params.name);
      return send(reply, page.status, page.title, page.main);
    },
  );
}

/** A page's status, title and content. */
interface PageAnswer {
  readonly status: number;
  readonly title: string;
  readonly main: string;
}

/**
 * The crate page of a path segment: 404 with a page when no crate has that name (whatever its
 * case and `-`/`_`) or it has no version.
 */
async function crateAnswer(
  context: CargoContext,
  pages: CratePageStore,
  readmes: ReadmeCache,
  name: string,
): Promise<PageAnswer> {
  const notFound = (message: string) => ({ status: 404, title: "Not found: crates", main: notFoundView(message) });
  let crate: Awaited<ReturnType<CargoContext["findCrate"]>>;
  try {
    crate = await context.findCrate(name);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    return notFound(error.message);
  }
  const [versions, owners] = await Promise.all([pages.summaries(crate.id), context.store.owners(crate.id)]);
  const shown = shownVersion(versions);
  const detail = shown === undefined ? undefined : await pages.detail(shown.id);
  if (shown === undefined || detail === undefined) return notFound(`crate ${crate.name} has no version`);
  const readme = detail.metadata.readme;
  const data = cratePage({
    name: crate.name,
    versions: versions.slice(-PAGE_VERSIONS),
    shown,
    metadata: detail.metadata,
    indexLine: detail.indexLine,
    readmeHtml: readmes.get(shown.id, () => (typeof readme === "string" ? readme : null)),
    owners,
    publicUrl: context.publicUrl,
  });
  const main = crateView({
    ...data,
    downloads: versions.reduce((sum, version) => sum + version.downloads, 0),
    olderVersions: Math.max(0, versions.length - PAGE_VERSIONS),
  });
  return { status: 200, title: `${crate.name}: crates`, main };
}
