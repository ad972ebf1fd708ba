/**
 * The query parameters of the comments API (comments.md §9–10): `limit` and `before` of the paged
 * lists, `approved` of the admin list of a website, `article` of the count route. Each parser
 * reads the query object Fastify built (a repeated name gives an array) and throws a 400 naming the
 * parameter and its rule (platform.md §4): `query parameter limit: must be an integer between 1 and
 * 100`. Unknown parameters are ignored.
 */
import { HttpError } from "../../platform/errors.js";
import { PAGE_LIMIT_MAX, type PageRequest } from "../storage.js";
import { ARTICLE_NAME, ARTICLE_NAME_RULE } from "../websites.js";

/** The page size when `before` comes without `limit` (comments.md §9), and of the admin list. */
export const DEFAULT_PAGE_LIMIT = 50;

/** Most `article` parameters of one count request (comments.md §9). */
export const COUNT_ARTICLES_MAX = 100;

/** The rule of `limit`. */
export const LIMIT_RULE = `must be an integer between 1 and ${PAGE_LIMIT_MAX}`;
/** The rule of `before`. */
export const BEFORE_RULE = "must be an integer number of milliseconds";
/** The rule of `approved`. */
export const APPROVED_RULE = "must be true or false";

/** The 400 of a query parameter that broke its rule. */
export function queryParameterError(name: string, rule: string): HttpError {
  return new HttpError(400, `query parameter ${name}: ${rule}`);
}

/** The values of a query parameter, in order: none when absent, several when repeated. */
function valuesOf(query: unknown, name: string): unknown[] {
  if (typeof query !== "object" || query === null) return [];
  const value: unknown = Reflect.get(query, name);
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

/**
 * The single value of a parameter that may be given at most once, as a string; `undefined` when
 * absent. A repeated parameter breaks `rule`: its meaning would be ambiguous.
 */
function singleValue(query: unknown, name: string, rule: string): string | undefined {
  const values = valuesOf(query, name);
  if (values.length === 0) return undefined;
  const [value] = values;
  if (values.length > 1 || typeof value !== "string") throw queryParameterError(name, rule);
  return value;
}

/** Digits only, so that `1e3`, `0x10`, `+5`, `1.0` and ` 5` are refused rather than read by `Number`. */
const DIGITS = /^\d+$/;

/**
 * The paging parameters of a list, `limit` (1 to 100) and `before` (milliseconds since the epoch,
 * exclusive).
 *
 * @param paged whether the list is always paged (the admin list); otherwise `undefined` is returned
 *   when neither parameter is given, for the unpaged public list
 * @returns the page, with `limit` {@link DEFAULT_PAGE_LIMIT} when absent
 * @throws HttpError 400 `query parameter limit: must be an integer between 1 and 100`, or
 *   `query parameter before: must be an integer number of milliseconds`
 */
export function pageOf(query: unknown, paged: true): PageRequest;
export function pageOf(query: unknown, paged: false): PageRequest | undefined;
export function pageOf(query: unknown, paged: boolean): PageRequest | undefined {
  const limitText = singleValue(query, "limit", LIMIT_RULE);
  const beforeText = singleValue(query, "before", BEFORE_RULE);
  if (!paged && limitText === undefined && beforeText === undefined) return undefined;
  let limit = DEFAULT_PAGE_LIMIT;
  if (limitText !== undefined) {
    limit = DIGITS.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= PAGE_LIMIT_MAX)) throw queryParameterError("limit", LIMIT_RULE);
  }
  let before: number | undefined;
  if (beforeText !== undefined) {
    before = DIGITS.test(beforeText) ? Number(beforeText) : Number.NaN;
    // Past 2^53 the number would not be the one written (and no timestamp is that large).
    if (!Number.isSafeInteger(before)) throw queryParameterError("before", BEFORE_RULE);
  }
  return { limit, before };
}

/**
 * The `approved` filter of the admin list: `true`, `false`, or `undefined` when absent (both).
 * @throws HttpError 400 `query parameter approved: must be true or false`
 */
export function approvedOf(query: unknown): boolean | undefined {
  const text = singleValue(query, "approved", APPROVED_RULE);
  if (text === undefined) return undefined;
  if (text === "true") return true;
  if (text === "false") return false;
  throw queryParameterError("approved", APPROVED_RULE);
}

/**
 * The `article` parameters of the count route, without duplicates, in the order first given.
 * @throws HttpError 400 `query parameter article: must be given at least once`, `... must be given
 *   at most 100 times`, or `... must be 1 to 200 characters of A-Z a-z 0-9 . _ ~ -`
 */
export function articlesOf(query: unknown): string[] {
  const values = valuesOf(query, "article");
  if (values.length === 0) throw queryParameterError("article", "must be given at least once");
  if (values.length > COUNT_ARTICLES_MAX) {
    throw queryParameterError("article", `must be given at most ${COUNT_ARTICLES_MAX} times`);
  }
  const articles = new Set<string>();
  for (const value of values) {
    if (typeof value !== "string" || !ARTICLE_NAME.test(value)) throw queryParameterError("article", ARTICLE_NAME_RULE);
    articles.add(value);
  }
  return [...articles];
}
