/**
 * The comment widget's logic as plain functions, apart from the DOM so that the
 * unit tests run them under Node: the article name of a page, the decoding of the stored text, the
 * field a server error names, the paging cursor, the shape checks of the API's answers.
 *
 * Nothing here touches a browser global, so the root tsconfig (no DOM library) can check the tests
 * that import it.
 */

import type { Comment as ServerComment } from "../resources.js";

/**
 * A comment as the public list returns it: the server's own resource; `article`
 * comes with the admin routes.
 */
export interface Comment extends ServerComment {
  readonly article?: string;
}

/** A challenge. */
export interface Challenge {
  readonly question: string;
  readonly signature: string;
  /** Milliseconds since the Unix epoch, posted back as is. */
  readonly timestamp: number;
}

/** How many comments a page of the list shows: the newest 50, then 50 more on demand. */
export const PAGE_SIZE = 50;

/** The longest article name. */
const ARTICLE_MAX_LENGTH = 200;

/**
 * The article name of a page whose script has no `data-article`: its path reduced to the article
 * character set `A-Z a-z 0-9 . _ ~ -`. A final `index.html` (or `index.htm`) is
 * dropped, since `/post/` and `/post/index.html` are one page; every run of other characters
 * (slashes, percent escapes of non-ASCII letters, `+`) becomes one `-`; `-` at either end go; the
 * result is cut at 200 characters. The root page (nothing left) is `index`.
 *
 * The path is taken as the browser gives it (percent-encoded), so two different paths rarely meet:
 * `/posts/my-post/` → `posts-my-post`, `/café` → `caf-C3-A9`, `/` → `index`.
 */
export function articleFromPath(path: string): string {
  const name = path
    .replace(/(^|\/)index\.html?$/, "$1")
    .replace(/[^\w.~-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, ARTICLE_MAX_LENGTH);
  return name === "" ? "index" : name;
}

/** Whether `text` is an article name (1–200 characters of `A-Z a-z 0-9 . _ ~ -`). */
export function isArticleName(text: string): boolean {
  return /^[\w.~-]{1,200}$/.test(text);
}

const ENTITIES: Readonly<Record<string, string>> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&#39;": "'",
};

/**
 * Undoes the escaping of src/platform/html.ts (`&amp;` `&lt;` `&gt;` `&quot;` `&#39;`), in one pass
 * so that `&amp;lt;` gives `&lt;`, as typed. The result is meant for `textContent`, never for HTML.
 */
export function decodeEntities(text: string): string {
  return text.replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity] ?? entity);
}

/** The form fields a server error can name: the names of the posted fields. */
export type FormField = "author" | "author-website" | "email" | "content" | "answer";

/** Where an error goes in the form and what it says. */
export interface PlacedError {
  /** The field shown beside the error; `undefined`: a message for the whole form. */
  readonly field: FormField | undefined;
  /** The sentence to show. */
  readonly text: string;
  /** Whether the challenge is spent or wrong, so the form needs a new question. */
  readonly renew: boolean;
}

/**
 * Places the error sentence of an answer to a post (`{"error": "<sentence>"}`): `field <name>: <rule>`
 * goes beside that field, without the prefix that the place makes redundant, capitalised; the
 * challenge's own sentences (`Bad challenge response`, `The challenge has expired`, `… already been
 * used`) and errors of `signature` or `timestamp` go beside the answer and ask for a new question;
 * anything else (a 404, a 429, a 413) is for the whole form, as is.
 */
export function placeError(sentence: string): PlacedError {
  const match = /^field ([\w-]+): (.+)$/s.exec(sentence);
  if (match !== null) {
    const name = match[1] ?? "";
    const rule = match[2] ?? "";
    const text = rule.charAt(0).toUpperCase() + rule.slice(1);
    if (name === "author" || name === "author-website" || name === "email" || name === "content" || name === "answer") {
      return { field: name, text, renew: false };
    }
    if (name === "signature" || name === "timestamp") return { field: "answer", text, renew: true };
  }
  if (/challenge/i.test(sentence)) return { field: "answer", text: sentence, renew: true };
  return { field: undefined, text: sentence, renew: false };
}

/**
 * The `limit` and `before` query of the next page to load, given the comments shown (oldest first):
 * the newest `PAGE_SIZE + 1` at first (one more than shown tells whether older ones exist), then
 * those at or before the oldest shown. `before` is exclusive and timestamps are milliseconds, so
 * the query reaches one millisecond later and asks for as many more as the comments shown in that
 * millisecond, which {@link nextPage} drops: two comments of one millisecond split by a page are
 * both shown, once.
 */
export function pageQuery(shown: readonly Comment[]): string {
  const oldest = shown[0];
  if (oldest === undefined) return `limit=${PAGE_SIZE + 1}`;
  const same = shown.filter((comment) => comment.timestamp === oldest.timestamp).length;
  // The route takes at most 100; a millisecond holding more than 49 shown comments is not real.
  return `limit=${Math.min(100, PAGE_SIZE + 1 + same)}&before=${oldest.timestamp + 1}`;
}

/**
 * What a page answered for {@link pageQuery} adds to the comments shown: the new ones (at most
 * `PAGE_SIZE`, the newest, oldest first) and whether older ones remain.
 */
export function nextPage(
  page: readonly Comment[],
  shown: readonly Comment[],
): { readonly fresh: readonly Comment[]; readonly more: boolean } {
  const ids = new Set(shown.map((comment) => comment.id));
  const fresh = page.filter((comment) => !ids.has(comment.id));
  return { fresh: fresh.slice(-PAGE_SIZE), more: fresh.length > PAGE_SIZE };
}

/**
 * The link of an author's website (a bare domain or an http(s) URL): a bare domain
 * gets `https://`; anything that is not then an http or https URL gets no link.
 */
export function authorHref(website: string | undefined): string | undefined {
  if (website === undefined || website === "") return undefined;
  const text = /^https?:\/\//i.test(website) ? website : `https://${website}`;
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `value` is an object (not null). */
function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null;
}

/** Whether `value` is an object whose `key` has the JavaScript type `type`. */
function has(value: object, key: string, type: "string" | "number" | "boolean"): boolean {
  return typeof Reflect.get(value, key) === type;
}

/** Whether an API answer is a comment. */
export function isComment(value: unknown): value is Comment {
  return (
    isObject(value) &&
    has(value, "id", "string") &&
    has(value, "content", "string") &&
    has(value, "author", "string") &&
    has(value, "approved", "boolean") &&
    has(value, "timestamp", "number") &&
    (!("author-website" in value) || has(value, "author-website", "string"))
  );
}

/** Whether an API answer is a list of comments. */
export function isCommentList(value: unknown): value is Comment[] {
  return Array.isArray(value) && value.every(isComment);
}

/** Whether an API answer is a challenge. */
export function isChallenge(value: unknown): value is Challenge {
  return (
    isObject(value) &&
    has(value, "question", "string") &&
    has(value, "signature", "string") &&
    has(value, "timestamp", "number")
  );
}

/** The error sentence of an API answer `{"error": "..."}`, or `undefined`. */
export function errorOf(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const error = Reflect.get(value, "error");
  return typeof error === "string" ? error : undefined;
}

/** Whether `comment` is the one just posted with `author` and `content` after `since` (ms). */
export function isPosted(comment: Comment, author: string, content: string, since: number): boolean {
  return (
    comment.timestamp >= since &&
    decodeEntities(comment.author) === author.trim() &&
    decodeEntities(comment.content) === content.trim()
  );
}

/**
 * One line of the thread view: a comment, or (`comment` undefined) a deleted comment that has
 * replies; its indentation, 0 for a top-level comment up to {@link MAX_DEPTH}; and, for a reply
 * deeper than that (shown at the last level), the HTML-escaped name of the author it answers.
 */
export interface ThreadLine {
  readonly comment: Comment | undefined;
  readonly depth: number;
  readonly replyTo: string | undefined;
}

/** The deepest indentation: top level, replies, replies to replies; deeper ones stay there. */
export const MAX_DEPTH = 2;

/**
 * The comments shown (oldest first) as threads: each reply under its parent, oldest first, depth
 * first. A reply whose parent is not among them shows under a "deleted" line when the list is
 * `complete` (the parent was deleted), or as a top-level comment when older pages may still hold
 * the parent. A comment in a cycle of parents (possible only in imported data) shows at the top.
 */
export function threadLines(comments: readonly Comment[], complete: boolean): ThreadLine[] {
  const ids = new Set(comments.map((comment) => comment.id));
  const children = new Map<string, Comment[]>();
  // A root is a comment, or the id of a deleted parent, placed where its first reply was.
  const roots: (Comment | string)[] = [];
  for (const comment of comments) {
    const parent = comment.parent;
    if (parent === undefined || (!ids.has(parent) && !complete)) {
      roots.push(comment);
      continue;
    }
    let replies = children.get(parent);
    if (replies === undefined) {
      if (!ids.has(parent)) roots.push(parent);
      replies = [];
      children.set(parent, replies);
    }
    replies.push(comment);
  }
  const lines: ThreadLine[] = [];
  const seen = new Set<string>();
  const visit = (node: Comment | string, level: number, parentAuthor: string | undefined): void => {
    const comment = typeof node === "string" ? undefined : node;
    const id = comment?.id ?? (node as string);
    if (seen.has(id)) return;
    seen.add(id);
    lines.push({ comment, depth: Math.min(level, MAX_DEPTH), replyTo: level > MAX_DEPTH ? parentAuthor : undefined });
    for (const reply of children.get(id) ?? []) visit(reply, level + 1, comment?.author);
  };
  for (const root of roots) visit(root, 0, undefined);
  for (const comment of comments) visit(comment, 0, undefined);
  return lines;
}
