/**
 * What the registry's web pages say of themselves in `GET /openapi.json` (docs/api.md). Whether
 * they need a token is `registry.cargo.auth-required`, so `security` is left out, as for the other
 * reading routes of the registry.
 */
import type { RouteDescription } from "../../../platform/openapi.js";
import { MAX_QUERY, PAGE } from "./api.js";

const HTML = { mediaType: "text/html", schema: { type: "string" } } as const;

export const LIST_PAGE: RouteDescription = {
  summary: "the crates of the registry as a web page, with a search form (HTML)",
  query: {
    q: { type: "string", maxLength: MAX_QUERY, description: "words that name, description or keywords hold" },
    page: { type: "integer", minimum: PAGE.min, maximum: PAGE.max, default: 1 },
  },
  success: HTML,
};

export const CRATE_PAGE: RouteDescription = {
  summary: "a crate as a web page: README, versions, dependencies, owners and how to use it (HTML)",
  success: HTML,
};

export const PAGES_SCRIPT: RouteDescription = {
  summary: "the registry pages' script: the sign-in of a private registry",
  success: [
    { mediaType: "text/javascript", schema: { type: "string" } },
    { status: 304, description: "not modified: If-None-Match holds the script's ETag" },
  ],
  // 404: the build did not make the script.
  errors: [404],
  security: "none",
};
