/**
 * The JSON imports of other comment servers: Remark42's backup (JSON lines, often gzipped) and
 * Commento's export (one JSON document).
 *
 * Remark42: a first line of metadata (`{"version": 1, "users": […], "posts": […]}`), then one comment
 * per line: `id`, `pid` (the parent's id, empty for none), `text` (rendered HTML), `user` (`name`),
 * `locator` (`url` of the page), `time` (RFC 3339) and `delete` (true for a deleted comment).
 * Remark42 has no moderation queue: every comment is approved.
 *
 * Commento: `{"version": 1, "comments": [{commentHex, url, commenterHex, markdown, html, parentHex
 * ("root" for none), state ("approved", "unapproved", "flagged"), creationDate, deleted}],
 * "commenters": [{commenterHex, email, name, link}]}`. The commenters come after the comments that
 * name them, so the document is read whole: at most {@link COMMENTO_MAX_BYTES} (a site of several
 * hundred thousand comments), beyond which the import stops and says so.
 */
import { htmlToText } from "./html-text.js";
import { ImportFormatError, type ImportItem, timeOf } from "./items.js";
import { parseLine, textLines, wholeText } from "./text-files.js";

/** The largest Commento export read, decompressed. */
export const COMMENTO_MAX_BYTES = 256 * 1024 * 1024;

/** `value[key]` when it is a string. */
function stringAt(value: unknown, key: string): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const field = Reflect.get(value, key);
  return typeof field === "string" ? field : undefined;
}

/** `value[key]` (an object or undefined). */
function objectAt(value: unknown, key: string): object | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const field = Reflect.get(value, key);
  return typeof field === "object" && field !== null ? field : undefined;
}

/** The item of one Remark42 comment line (numbered for errors). */
function remark42Item(value: unknown, line: number): ImportItem {
  const id = stringAt(value, "id");
  const timestamp = timeOf(stringAt(value, "time"));
  if (id === undefined || id === "" || timestamp === undefined) {
    throw new ImportFormatError(`line ${line}: a comment needs a string "id" and an RFC 3339 "time"`);
  }
  if (typeof value === "object" && value !== null && Reflect.get(value, "delete") === true) {
    return { kind: "skipped", reason: "deleted" };
  }
  const pid = stringAt(value, "pid");
  return {
    kind: "comment",
    sourceId: id,
    thread: { url: stringAt(objectAt(value, "locator"), "url") },
    parentSourceId: pid === undefined || pid === "" ? undefined : pid,
    author: stringAt(objectAt(value, "user"), "name") ?? "",
    authorWebsite: undefined,
    email: undefined,
    content: htmlToText(stringAt(value, "text") ?? stringAt(value, "orig") ?? ""),
    timestamp,
    approved: true,
  };
}

/**
 * The comments of a Remark42 backup, line by line.
 * @throws ImportFormatError naming the line of a line that is not JSON or not a comment
 */
export async function* remark42Items(path: string): AsyncGenerator<ImportItem> {
  for await (const line of textLines(path)) {
    const value = parseLine(line);
    // The metadata line (and any other record without a page) is not a comment.
    if (objectAt(value, "locator") === undefined) continue;
    yield remark42Item(value, line.number);
  }
}

/** A Commento commenter: name, link and e-mail address. */
interface Commenter {
  readonly name: string | undefined;
  readonly link: string | undefined;
  readonly email: string | undefined;
}

/** The item of one Commento comment (`index` in the array, for errors). */
function commentoItem(value: unknown, index: number, commenters: ReadonlyMap<string, Commenter>): ImportItem {
  const id = stringAt(value, "commentHex");
  const timestamp = timeOf(stringAt(value, "creationDate"));
  if (id === undefined || id === "" || timestamp === undefined) {
    throw new ImportFormatError(`comments[${index}]: a comment needs a "commentHex" and an RFC 3339 "creationDate"`);
  }
  if (typeof value === "object" && value !== null && Reflect.get(value, "deleted") === true) {
    return { kind: "skipped", reason: "deleted" };
  }
  const state = stringAt(value, "state");
  if (state === "flagged") return { kind: "skipped", reason: "spam" };
  const commenter = commenters.get(stringAt(value, "commenterHex") ?? "");
  const parent = stringAt(value, "parentHex");
  const html = stringAt(value, "html");
  return {
    kind: "comment",
    sourceId: id,
    thread: { url: stringAt(value, "url") },
    parentSourceId: parent === undefined || parent === "" || parent === "root" ? undefined : parent,
    author: commenter?.name ?? "",
    authorWebsite: commenter?.link === "undefined" ? undefined : commenter?.link,
    email: commenter?.email,
    content: html === undefined ? (stringAt(value, "markdown") ?? "") : htmlToText(html),
    timestamp,
    approved: state !== "unapproved",
  };
}

/**
 * The comments of a Commento export.
 * @throws ImportFormatError when it is not JSON, not Commento's shape, or larger than
 *   {@link COMMENTO_MAX_BYTES}
 */
export async function* commentoItems(path: string): AsyncGenerator<ImportItem> {
  let document: unknown;
  try {
    document = JSON.parse(await wholeText(path, COMMENTO_MAX_BYTES));
  } catch (error) {
    if (error instanceof ImportFormatError) throw error;
    throw new ImportFormatError(`not JSON: ${(error as Error).message}`);
  }
  const comments = objectAt(document, "comments");
  if (!Array.isArray(comments)) throw new ImportFormatError('not a Commento export: no "comments" array');
  const commenters = new Map<string, Commenter>();
  const list = objectAt(document, "commenters");
  for (const entry of Array.isArray(list) ? list : []) {
    const hex = stringAt(entry, "commenterHex");
    if (hex === undefined) continue;
    commenters.set(hex, {
      name: stringAt(entry, "name"),
      link: stringAt(entry, "link"),
      email: stringAt(entry, "email"),
    });
  }
  let index = 0;
  for (const comment of comments) yield commentoItem(comment, index++, commenters);
}
