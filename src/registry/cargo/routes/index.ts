/**
 * The Cargo registry's routes (docs/cargo.md), one file per role: the sparse index, Cargo's web API
 * (publish, yank, owners, search, download), browsing under `/api/v1/registry/crates`, `GET /me`, and
 * the web pages under `/registry`.
 */
import type { FastifyInstance } from "fastify";
import { registerBrowsing } from "./browse.js";
import { type CargoRoutesOptions, cargoContext } from "./context.js";
import { registerLoginPage } from "./me.js";
import { type PagesOptions, registerPages } from "./pages.js";
import { registerSparseIndex } from "./sparse-index.js";
import { registerWebApi } from "./web-api.js";

export type { CargoRoutesOptions } from "./context.js";

/** Registers every route of the Cargo registry. */
export function registerCargoRoutes(app: FastifyInstance, options: CargoRoutesOptions, pages: PagesOptions): void {
  const context = cargoContext(options);
  registerPages(app, context, pages);
  registerSparseIndex(app, context);
  registerBrowsing(app, context);
  registerLoginPage(app, options.publicUrl);
  registerWebApi(app, context);
}
