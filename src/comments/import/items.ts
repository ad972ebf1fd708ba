/**
 * What every import parser yields, and how an imported comment becomes a row: its article name
 * (from the thread's URL path, slug or id, reduced to the article character set as the widget
 * reduces a page's path), its id (derived from its source id, so that a reply names its parent
 * before or after the parent is read, and a second run finds it again), its author and text
 * HTML-escaped as every stored comment is.
 */
import { createHash } from "node:crypto";
import { escapeHtml } from "../../platform/html.js";
import { articleFromPath } from "../browser/widget-logic.js";
import { AUTHOR_MAX_LENGTH, isAcceptableAuthorWebsite, isEmailAddress } from "../comment-validation.js";

/** The formats `vigie comments import` reads. */
export const IMPORT_FORMATS = ["disqus", "wordpress", "isso", "remark42", "commento", "vigie"] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** Where an article's name comes from. */
export const ARTICLE_SOURCES = ["path", "slug", "id"] as const;
export type ArticleSource = (typeof ARTICLE_SOURCES)[number];

/** The thread (page) of a comment in its source; any part may be unknown. */
export interface ThreadRef {
  /** The page's URL, or only its path. */
  readonly url?: string | undefined;
  /** The post's slug (WordPress `post_name`). */
  readonly slug?: string | undefined;
  /** The thread's id in the source (Disqus identifier, WordPress post id, Isso thread id). */
  readonly id?: string | undefined;
}

/** Why an item of the source is not imported. */
export type SkipReason = "spam" | "deleted" | "empty" | "pingback" | "no-thread";

/** A comment read from a source, as plain text. */
export interface SourceComment {
  readonly kind: "comment";
  /** Its id in the source: unique per source and website. */
  readonly sourceId: string;
  readonly thread: ThreadRef;
  /** The source id of the comment it answers. */
  readonly parentSourceId: string | undefined;
  /** Plain text (not yet escaped). */
  readonly author: string;
  readonly authorWebsite: string | undefined;
  readonly email: string | undefined;
  /** Plain text (not yet escaped). */
  readonly content: string;
  /** Milliseconds since the Unix epoch. */
  readonly timestamp: number;
  readonly approved: boolean;
  readonly notifyReplies?: boolean;
}

/** A row as it is written: from a Vigie export, or made by {@link toRow}. */
export interface ImportRow {
  readonly id: string;
  readonly article: string;
  /** HTML-escaped. */
  readonly author: string;
  readonly authorWebsite: string | undefined;
  /** HTML-escaped. */
  readonly content: string;
  readonly approved: boolean;
  /** Milliseconds since the Unix epoch. */
  readonly timestamp: number;
  readonly parent: string | undefined;
  readonly email: string | undefined;
  readonly notifyReplies: boolean;
  readonly source: string | undefined;
  readonly sourceId: string | undefined;
}

/** One item of a source. */
export type ImportItem =
  | SourceComment
  | { readonly kind: "row"; readonly row: ImportRow }
  | { readonly kind: "skipped"; readonly reason: SkipReason };

/** A file that cannot be read as its format: the message names the line or position. */
export class ImportFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ImportFormatError";
  }
}

/**
 * The id of an imported comment: a UUID of version 8 (RFC 9562 §5.8, custom) made of the first 16
 * bytes of SHA-256 of the website, the source and the source id. The same comment imported twice
 * has the same id, and a reply knows its parent's id without looking it up.
 */
export function importedId(website: string, source: string, sourceId: string): string {
  const bytes = createHash("sha256").update(`vigie-import\n${website}\n${source}\n${sourceId}`).digest();
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The path of a URL as a browser's `location.pathname` gives it, percent-encoded
 * (`https://blog.example.org/caf%C3%A9/` and `/café/` → `/caf%C3%A9/`): a bare path, or `host/path`
 * (Commento), is resolved against a placeholder origin.
 */
function pathOf(url: string): string {
  const slash = url.indexOf("/");
  const absolute = /^[A-Za-z][A-Za-z0-9+.-]*:/.test(url);
  const path = absolute || slash <= 0 ? url : url.slice(slash);
  try {
    return new URL(path, "http://host.invalid").pathname;
  } catch {
    return path;
  }
}

/**
 * The article name of a thread: `path` (default) reduces the URL's path as the widget reduces a
 * page's (`/posts/my-post/` → `posts-my-post`); `slug` its slug (else the last segment of its path);
 * `id` its id in the source. A thread without what was asked falls back to its path.
 * @returns undefined when the thread has neither
 */
export function articleOf(thread: ThreadRef, from: ArticleSource): string | undefined {
  if (from === "id" && thread.id !== undefined && thread.id !== "") return articleFromPath(thread.id);
  if (from === "slug") {
    const slug =
      thread.slug ??
      pathOf(thread.url ?? "")
        .split("/")
        .filter(Boolean)
        .at(-1);
    if (slug !== undefined && slug !== "") return articleFromPath(slug);
  }
  if (thread.url === undefined || thread.url === "") return undefined;
  return articleFromPath(pathOf(thread.url));
}

/** The author's name as stored: trimmed, at most the API's 100 characters, `Anonymous` when empty. */
function authorOf(name: string): string {
  const trimmed = [...name.trim().replace(/\s+/g, " ")].slice(0, AUTHOR_MAX_LENGTH).join("").trim();
  return escapeHtml(trimmed === "" ? "Anonymous" : trimmed);
}

/** Text without the NUL characters PostgreSQL cannot store. */
function withoutNul(text: string): string {
  return text.includes("\u0000") ? text.replaceAll("\u0000", "") : text;
}

/**
 * The row of a source comment: the website and e-mail address kept only when the API would accept
 * them (an invalid one is dropped, not the comment), the text escaped.
 * @returns a skip reason when the comment has no text or no article
 */
export function toRow(
  comment: SourceComment,
  website: string,
  source: string,
  from: ArticleSource,
): ImportRow | SkipReason {
  const article = articleOf(comment.thread, from);
  if (article === undefined) return "no-thread";
  const content = withoutNul(comment.content).trim();
  if (content === "") return "empty";
  const authorWebsite = comment.authorWebsite?.trim();
  const email = comment.email?.trim();
  return {
    id: importedId(website, source, comment.sourceId),
    article,
    author: authorOf(withoutNul(comment.author)),
    authorWebsite: authorWebsite !== undefined && isAcceptableAuthorWebsite(authorWebsite) ? authorWebsite : undefined,
    content: escapeHtml(content),
    approved: comment.approved,
    timestamp: comment.timestamp,
    parent: comment.parentSourceId === undefined ? undefined : importedId(website, source, comment.parentSourceId),
    email: email !== undefined && isEmailAddress(email) ? email : undefined,
    notifyReplies: comment.notifyReplies === true,
    source,
    sourceId: comment.sourceId,
  };
}

/**
 * Milliseconds of an RFC 3339 time (`2012-01-02T03:04:05Z`) or of WordPress's GMT form
 * (`2012-01-02 03:04:05`, UTC); `undefined` when it is neither.
 */
export function timeOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  const wordpress = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(trimmed) ? `${trimmed.replace(" ", "T")}Z` : trimmed;
  if (!/^\d{4}-\d{2}-\d{2}T/.test(wordpress)) return undefined;
  const time = Date.parse(wordpress);
  return Number.isFinite(time) && time >= 0 ? time : undefined;
}
