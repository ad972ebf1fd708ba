/**
 * The query parameters of the comments API (docs/comments.md): `limit` and `before` of the paged
 * lists, `approved` of the admin list of a website, `article` of the count route. Read through the
 * platform's query helpers, so a broken rule is a 400 naming the parameter and the rule:
 * `query parameter limit: must be an integer between 1 and 100`. Unknown parameters are ignored.
 */
import { queryBoolean, queryError, queryInteger, queryOf, queryString, queryValues } from "../../platform/query.js";
import type { JsonSchema } from "../../platform/validation.js";
import { PAGE_LIMIT_MAX, type PageRequest } from "../storage.js";
import { ARTICLE_NAME, ARTICLE_NAME_RULE } from "../websites.js";

/** The page size when `before` comes without `limit`, and of the admin list. */
export const DEFAULT_PAGE_LIMIT = 50;

/** Most `article` parameters of one count request. */
export const COUNT_ARTICLES_MAX = 100;

/** The rule of `limit`. */
export const LIMIT_RULE = `must be an integer between 1 and ${PAGE_LIMIT_MAX}`;
/** The rule of `before`. */
export const BEFORE_RULE = "must be an integer number of milliseconds";
/** The rule of `approved`. */
export const APPROVED_RULE = "must be true or false";

/** The schemas of the paging parameters {@link pageOf} reads, for the API description. */
export const PAGE_QUERY: Readonly<Record<string, JsonSchema>> = {
  limit: { type: "integer", minimum: 1, maximum: PAGE_LIMIT_MAX, description: "comments per page" },
  before: {
    type: "integer",
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: "only comments created before this time (milliseconds since the epoch)",
  },
};

/** The schema of the `approved` parameter {@link approvedOf} reads. */
export const APPROVED_QUERY: JsonSchema = { type: "boolean", description: "only approved (true) or pending (false)" };

/** The schema of the `article` parameters {@link articlesOf} reads: given 1 to 100 times. */
export const ARTICLES_QUERY: JsonSchema = {
  type: "array",
  items: { type: "string", pattern: ARTICLE_NAME.source },
  minItems: 1,
  maxItems: COUNT_ARTICLES_MAX,
};

/**
 * The paging parameters of a list, `limit` (1 to 100) and `before` (milliseconds since the epoch,
 * exclusive; at most 2^53 − 1, past which the number read would not be the one written).
 *
 * @param paged whether the list is always paged (the admin list); otherwise `undefined` is returned
 *   when neither parameter is given, for the unpaged public list
 * @returns the page, with `limit` {@link DEFAULT_PAGE_LIMIT} when absent
 * @throws InvalidError `query parameter limit: must be an integer between 1 and 100`, or
 *   `query parameter before: must be an integer number of milliseconds`
 */
export function pageOf(raw: unknown, paged: true): PageRequest;
export function pageOf(raw: unknown, paged: false): PageRequest | undefined;
export function pageOf(raw: unknown, paged: boolean): PageRequest | undefined {
  const query = queryOf(raw);
  // Both are checked for repetition before either is read as a number.
  const limitText = queryString(query, "limit", LIMIT_RULE);
  const beforeText = queryString(query, "before", BEFORE_RULE);
  if (!paged && limitText === undefined && beforeText === undefined) return undefined;
  const limit = queryInteger(query, "limit", { min: 1, max: PAGE_LIMIT_MAX, rule: LIMIT_RULE });
  const before = queryInteger(query, "before", { min: 0, max: Number.MAX_SAFE_INTEGER, rule: BEFORE_RULE });
  return { limit: limit ?? DEFAULT_PAGE_LIMIT, before };
}

/**
 * The `approved` filter of the admin list: `true`, `false`, or `undefined` when absent (both).
 * @throws InvalidError `query parameter approved: must be true or false`
 */
export function approvedOf(raw: unknown): boolean | undefined {
  return queryBoolean(queryOf(raw), "approved");
}

/**
 * The `article` parameters of the count route, without duplicates, in the order first given.
 * @throws InvalidError `query parameter article: must be given at least once`, `... must be given
 *   at most 100 times`, or `... must be 1 to 200 characters of A-Z a-z 0-9 . _ ~ -`
 */
export function articlesOf(raw: unknown): string[] {
  const values = queryValues(queryOf(raw), "article", { max: COUNT_ARTICLES_MAX });
  if (values.length === 0) throw queryError("article", "must be given at least once");
  const articles = new Set<string>();
  for (const value of values) {
    if (!ARTICLE_NAME.test(value)) throw queryError("article", ARTICLE_NAME_RULE);
    articles.add(value);
  }
  return [...articles];
}
