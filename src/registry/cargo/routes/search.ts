/** `cargo search`: crates whose name, description or keywords hold every word of the query. */
import type { FastifyInstance } from "fastify";
import { queryError, queryInteger, queryOf, queryString } from "../../../platform/query.js";
import { MAX_QUERY, PER_PAGE, SEARCH, SEARCH_PER_PAGE } from "./api.js";
import { type CargoContext, highest } from "./context.js";

/** The rule of the `q` parameter. */
const Q_RULE = `must be one string of at most ${MAX_QUERY} characters`;

/** Registers `GET /` (`?q=`, `?per_page=`) on Cargo's web API. */
export function registerSearch(cargo: FastifyInstance, context: CargoContext): void {
  const { authRequired, authenticate, store } = context;
  cargo.get("/", { config: { openapi: SEARCH } }, async (request) => {
    await authenticate(request, authRequired);
    const query = queryOf(request.query);
    const perPage = queryInteger(query, "per_page", PER_PAGE) ?? SEARCH_PER_PAGE;
    const q = queryString(query, "q", Q_RULE) ?? "";
    if (q.length > MAX_QUERY) throw queryError("q", Q_RULE);
    // cargo joins the words of `cargo search a b` with `+` before percent-encoding the query.
    const words = q.split(/[\s+]+/).filter((word) => word !== "");
    const found = await store.search(words.slice(0, 20), perPage);
    const live = await store.liveVersions(found.crates.map((crate) => crate.id));
    return {
      crates: found.crates.map((crate) => ({
        name: crate.name,
        // crates.io's answer for a crate whose every version is yanked.
        max_version: highest(live.get(crate.id) ?? []) ?? "0.0.0",
        description: crate.description,
      })),
      meta: { total: found.total },
    };
  });
}
