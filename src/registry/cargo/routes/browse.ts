/**
 * Browsing the registry under `/api/v1/registry/crates` (docs/cargo.md): the crates a page at a
 * time, and one crate with its versions and owners. Vigie's error format.
 */
import type { FastifyInstance } from "fastify";
import { queryInteger, queryOf } from "../../../platform/query.js";
import { BROWSE_CRATE, BROWSE_LIST, BROWSE_PER_PAGE, PAGE, PER_PAGE } from "./api.js";
import { type CargoContext, highest } from "./context.js";

/** Registers `GET /api/v1/registry/crates` (`?page=`, `?per_page=`) and `GET /api/v1/registry/crates/:name`. */
export function registerBrowsing(app: FastifyInstance, context: CargoContext): void {
  const { authRequired, authenticate, findCrate, store } = context;

  app.get("/api/v1/registry/crates", { config: { openapi: BROWSE_LIST } }, async (request) => {
    await authenticate(request, authRequired);
    const query = queryOf(request.query);
    const page = queryInteger(query, "page", PAGE) ?? 1;
    const perPage = queryInteger(query, "per_page", PER_PAGE) ?? BROWSE_PER_PAGE;
    const found = await store.search([], perPage, (page - 1) * perPage);
    const live = await store.liveVersions(found.crates.map((crate) => crate.id));
    return {
      crates: found.crates.map((crate) => ({
        name: crate.name,
        "max-version": highest(live.get(crate.id) ?? []) ?? null,
        description: crate.description,
      })),
      total: found.total,
      page,
      "per-page": perPage,
    };
  });

  const crateRoute = { config: { openapi: BROWSE_CRATE } };
  app.get<{ Params: { name: string } }>("/api/v1/registry/crates/:name", crateRoute, async (request) => {
    await authenticate(request, authRequired);
    const crate = await findCrate(request.params.name);
    const [versions, owners] = await Promise.all([store.versions(crate.id), store.owners(crate.id)]);
    return {
      name: crate.name,
      "max-version": highest(versions.filter((version) => !version.yanked).map((version) => version.vers)) ?? null,
      downloads: versions.reduce((sum, version) => sum + version.downloads, 0),
      owners: owners.map((owner) => ({ name: owner.login, description: owner.name })),
      versions: versions.map((version) => ({
        version: version.vers,
        yanked: version.yanked,
        "published-at": new Date(version.publishedAt).toISOString(),
        "published-by": version.publishedBy,
        downloads: version.downloads,
        size: version.size,
        checksum: version.cksum,
        ...version.metadata,
      })),
    };
  });
}
