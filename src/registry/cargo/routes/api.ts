/**
 * What the Cargo registry's routes say of themselves in `GET /openapi.json` (docs/api.md,
 * docs/cargo.md). The answers' schemas are written here and checked against real answers by
 * test/registry/openapi.test.ts; the query parameters' bounds are the ones the routes read them
 * with. Reading routes leave `security` out: whether they need a token is
 * `registry.cargo.auth-required`.
 */

import type { RouteDescription } from "../../../platform/openapi.js";
import type { IntegerOptions } from "../../../platform/query.js";
import type { JsonSchema } from "../../../platform/validation.js";
import { OK_SCHEMA, TIME_SCHEMA } from "../../routes-api.js";
import { ownersBody } from "../owners.js";

/** `?page=` of the browsing list. */
export const PAGE: IntegerOptions = { min: 1, max: 1_000_000 };
/** `?per_page=` of the browsing list and of a search. */
export const PER_PAGE: IntegerOptions = { min: 1, max: 100 };
/** The default `per_page` of the browsing list and of a search. */
export const BROWSE_PER_PAGE = 50;
export const SEARCH_PER_PAGE = 10;
/** The longest `?q=` of a search. */
export const MAX_QUERY = 1000;

/** The JSON Schema of an integer query parameter read with `options`. */
function integerParameter(options: IntegerOptions, fallback: number): JsonSchema {
  return { type: "integer", minimum: options.min, maximum: options.max, default: fallback };
}

const HTTP_URL: JsonSchema = { type: "string", pattern: "^https?://" };
const TEXT_OR_NULL: JsonSchema = { type: ["string", "null"] };
const STRINGS: JsonSchema = { type: "array", items: { type: "string" } };

/** One object of the listed properties, all required unless named in `optional`. */
function closed(properties: Record<string, JsonSchema>, optional: readonly string[] = []): JsonSchema {
  const required = Object.keys(properties).filter((key) => !optional.includes(key));
  return { type: "object", properties, required, additionalProperties: false };
}

/** The metadata of a version kept from its publish, shown when browsing it. */
const VERSION_METADATA = {
  description: TEXT_OR_NULL,
  keywords: STRINGS,
  categories: STRINGS,
  license: TEXT_OR_NULL,
  repository: TEXT_OR_NULL,
  documentation: TEXT_OR_NULL,
  homepage: TEXT_OR_NULL,
  readme: TEXT_OR_NULL,
};

const VERSION = closed(
  {
    version: { type: "string" },
    yanked: { type: "boolean" },
    "published-at": TIME_SCHEMA,
    "published-by": TEXT_OR_NULL,
    downloads: { type: "integer", minimum: 0 },
    size: { type: "integer", minimum: 0 },
    checksum: { type: "string", pattern: "^[0-9a-f]{64}$" },
    ...VERSION_METADATA,
  },
  Object.keys(VERSION_METADATA),
);

export const INDEX_CONFIG: RouteDescription = {
  summary: "the sparse index's config.json: where cargo downloads and publishes",
  success: {
    schema: closed(
      {
        dl: HTTP_URL,
        api: HTTP_URL,
        "auth-required": { const: true },
      },
      ["auth-required"],
    ),
  },
};

export const INDEX_FILE: RouteDescription = {
  summary: "the index file of a crate: one JSON line per version (ETag, Last-Modified, gzip)",
  success: [
    {
      mediaType: "text/plain",
      schema: {
        type: "string",
        description: "one JSON object per line, one line per version, in Cargo's index format",
      },
    },
    { status: 304, description: "not modified: If-None-Match or If-Modified-Since holds" },
  ],
};

export const BROWSE_LIST: RouteDescription = {
  summary: "list the crates, a page at a time, with their highest version",
  query: { page: integerParameter(PAGE, 1), per_page: integerParameter(PER_PAGE, BROWSE_PER_PAGE) },
  success: {
    schema: closed({
      crates: {
        type: "array",
        items: closed({ name: { type: "string" }, "max-version": TEXT_OR_NULL, description: { type: "string" } }),
      },
      total: { type: "integer", minimum: 0 },
      page: { type: "integer", minimum: 1 },
      "per-page": { type: "integer", minimum: 1 },
    }),
  },
};

export const BROWSE_CRATE: RouteDescription = {
  summary: "one crate with its owners and every version (yanked ones too)",
  success: {
    schema: closed({
      name: { type: "string" },
      "max-version": TEXT_OR_NULL,
      downloads: { type: "integer", minimum: 0 },
      owners: { type: "array", items: closed({ name: { type: "string" }, description: { type: "string" } }) },
      versions: { type: "array", items: VERSION },
    }),
  },
};

export const LOGIN_PAGE: RouteDescription = {
  summary: "Cargo's login_url: a page telling how to create a token for cargo",
  success: { mediaType: "text/html", schema: { type: "string" } },
  security: "none",
};

export const PUBLISH: RouteDescription = {
  summary: "cargo publish: a new version of a crate",
  body: {
    mediaType: "application/octet-stream",
    schema: {
      type: "string",
      contentMediaType: "application/octet-stream",
      description:
        "a 32-bit little-endian length, the metadata JSON, a 32-bit little-endian length, the .crate (a gzipped tar)",
    },
  },
  success: {
    schema: closed({
      warnings: closed({ invalid_categories: STRINGS, invalid_badges: STRINGS, other: STRINGS }),
    }),
  },
  // 409: the version exists, or another request is publishing it.
  errors: [409],
  security: "registry-token",
};

export const YANK: RouteDescription = {
  summary: "cargo yank: hide a version from new resolutions (owner)",
  success: { schema: OK_SCHEMA },
  security: "registry-token",
};

export const UNYANK: RouteDescription = {
  summary: "cargo yank --undo: show a yanked version again (owner)",
  success: { schema: OK_SCHEMA },
  security: "registry-token",
};

export const LIST_OWNERS: RouteDescription = {
  summary: "cargo owner --list: the owners of a crate",
  success: {
    schema: closed({
      users: {
        type: "array",
        items: closed({ id: { type: "integer", minimum: 1 }, login: { type: "string" }, name: { type: "string" } }),
      },
    }),
  },
};

const OWNERS_CHANGED = closed({ ok: { const: true }, msg: { type: "string" } });

export const ADD_OWNERS: RouteDescription = {
  summary: "cargo owner --add: make users owners of a crate (owner)",
  body: ownersBody,
  example: { users: ["alice"] },
  success: { schema: OWNERS_CHANGED },
  security: "registry-token",
};

export const REMOVE_OWNERS: RouteDescription = {
  summary: "cargo owner --remove: remove owners of a crate (owner; one owner remains)",
  body: ownersBody,
  example: { users: ["alice"] },
  success: { schema: OWNERS_CHANGED },
  errors: [409],
  security: "registry-token",
};

export const SEARCH: RouteDescription = {
  summary: "cargo search: crates whose name, description or keywords hold every word",
  query: {
    q: { type: "string", maxLength: MAX_QUERY },
    per_page: integerParameter(PER_PAGE, SEARCH_PER_PAGE),
  },
  success: {
    schema: closed({
      crates: {
        type: "array",
        items: closed({ name: { type: "string" }, max_version: { type: "string" }, description: { type: "string" } }),
      },
      meta: closed({ total: { type: "integer", minimum: 0 } }),
    }),
  },
};

export const DOWNLOAD: RouteDescription = {
  summary: "the .crate of a version, yanked or not (counted in the version's downloads)",
  success: {
    mediaType: "application/gzip",
    schema: { type: "string", contentMediaType: "application/gzip", description: "the .crate: a gzipped tar" },
  },
};

export const MIRROR_CONFIG: RouteDescription = {
  summary: "the mirror's config.json: cargo downloads through the mirror",
  success: { schema: closed({ dl: HTTP_URL, "auth-required": { const: true } }, ["auth-required"]) },
};

export const MIRROR_INDEX_FILE: RouteDescription = {
  summary:
    "the upstream's index file of a crate, cached and revalidated after max-age (ETag, Last-Modified, gzip; Warning when stale)",
  success: INDEX_FILE.success,
  // 503: the upstream cannot answer and the file is not cached.
  errors: [503],
};

export const MIRROR_DOWNLOAD: RouteDescription = {
  summary: "the .crate of an upstream version, downloaded once, checked against the index's checksum, then cached",
  success: DOWNLOAD.success,
  // 503: the upstream cannot answer, or its file does not match the index's checksum.
  errors: [503],
};
