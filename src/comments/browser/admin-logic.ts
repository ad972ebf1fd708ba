/**
 * The moderation page's logic as plain functions, apart from the DOM so that the
 * unit tests run them under Node: the session kept in `sessionStorage`, the name of the registry
 * token it creates, the list of websites typed by the moderator, the order of the pending list.
 */
import { sessionTokenName } from "../../platform/browser/session.js";
import { type Comment, isComment } from "./widget-logic.js";

export { parseSession, type Session, TOKEN_VALIDITY_DAYS } from "../../platform/browser/session.js";

/** A comment of the admin list of a website, with its website added by the page. */
export interface ModeratedComment extends Comment {
  readonly website: string;
  readonly article: string;
}

/** The `sessionStorage` key of the session. */
export const SESSION_KEY = "vigie-comments-admin";
/** The `localStorage` key of the websites typed (names only, no secret: kept across sessions). */
export const WEBSITES_KEY = "vigie-comments-websites";

/** A website name: 1–64 characters of `A-Z a-z 0-9 . _ -`. */
const WEBSITE_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Whether `text` is a website name (1–64 characters of `A-Z a-z 0-9 . _ -`). */
export function isWebsiteName(text: string): boolean {
  return WEBSITE_NAME.test(text);
}

/** The name of the registry token a sign-in creates: `comments-admin-` and 16 hex digits. */
export function tokenName(random: Uint8Array): string {
  return sessionTokenName("comments-admin-", random);
}

/**
 * The website names typed in the page's field, separated by spaces or commas, without duplicates.
 * @returns the valid names in the order typed, and the invalid ones (to be named in an error)
 */
export function parseWebsites(text: string): { readonly websites: string[]; readonly invalid: string[] } {
  const words = [...new Set(text.split(/[\s,]+/).filter((word) => word !== ""))];
  return {
    websites: words.filter((word) => WEBSITE_NAME.test(word)),
    invalid: words.filter((w) => !WEBSITE_NAME.test(w)),
  };
}

/**
 * The website names of a `GET /api/admin/website` answer (`{"websites": [...]}`), or `undefined`
 * when the answer is not such a list or names an invalid website.
 */
export function websiteList(value: unknown): string[] | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const names: unknown = Reflect.get(value, "websites");
  if (!Array.isArray(names)) return undefined;
  const valid = names.filter((name): name is string => typeof name === "string" && WEBSITE_NAME.test(name));
  return valid.length === names.length ? valid : undefined;
}

/** Newest first: timestamp, then id, both descending (the order of the admin list). */
export function newestFirst(a: Comment, b: Comment): number {
  return b.timestamp - a.timestamp || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/**
 * The comments of an admin list answer with their website and article, or `undefined` when the
 * answer is not such a list.
 *
 * @param article the article of an article's list (`/api/admin/comment/<website>/<article>`, whose
 *   comments do not repeat it); `undefined` for a website's list, whose comments each carry theirs
 */
export function moderatedComments(website: string, value: unknown, article?: string): ModeratedComment[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const comments: ModeratedComment[] = [];
  for (const item of value) {
    const itemArticle = article ?? (isComment(item) ? item.article : undefined);
    if (!isComment(item) || typeof itemArticle !== "string") return undefined;
    comments.push({ ...item, article: itemArticle, website });
  }
  return comments;
}

/** What an action did, for the page's live region: `Approved 2 comments.`, `Deleted 1 comment.` */
export function actionSummary(action: "approve" | "delete", done: number, failures: readonly string[]): string {
  const verb = action === "approve" ? "Approved" : "Deleted";
  const text = `${verb} ${done} comment${done === 1 ? "" : "s"}.`;
  if (failures.length === 0) return text;
  return `${text} ${failures.length} failed: ${[...new Set(failures)].join("; ")}.`;
}
