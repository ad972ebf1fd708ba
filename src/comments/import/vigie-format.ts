/**
 * Vigie's own export: JSON lines, UTF-8. The first line names the format, `{"format":
 * "vigie-comments", "version": 1, "website": "<name>", "exported-at": <ms>}`; every other line is one
 * comment: `id`, `article`, `author`, `author-website`?, `content`, `approved`, `timestamp` (ms),
 * `parent`?, `email`?, `notify-replies`?, `source`?, `source-id`?. `author` and `content` are the
 * text as typed (not HTML-escaped), so the file reads as what people wrote; absent fields are left
 * out. The e-mail addresses make the file personal data: it is written with mode 0600.
 */
import { escapeHtml } from "../../platform/html.js";
import { decodeEntities } from "../browser/widget-logic.js";
import { isAcceptableAuthorWebsite, isEmailAddress } from "../comment-validation.js";
import { ARTICLE_NAME } from "../websites.js";
import { ImportFormatError, type ImportItem, type ImportRow } from "./items.js";
import { parseLine, textLines } from "./text-files.js";

/** The `format` of the first line. */
export const VIGIE_FORMAT = "vigie-comments";
/** The version this code writes and reads. */
export const VIGIE_FORMAT_VERSION = 1;

/** The first line of an export of `website` made at `now` (ms). */
export function exportHeader(website: string, now: number): string {
  return JSON.stringify({ format: VIGIE_FORMAT, version: VIGIE_FORMAT_VERSION, website, "exported-at": now });
}

/** The line of one stored row (without its line break). */
export function exportLine(row: ImportRow): string {
  return JSON.stringify({
    id: row.id,
    article: row.article,
    author: decodeEntities(row.author),
    ...(row.authorWebsite === undefined ? {} : { "author-website": row.authorWebsite }),
    content: decodeEntities(row.content),
    approved: row.approved,
    timestamp: row.timestamp,
    ...(row.parent === undefined ? {} : { parent: row.parent }),
    ...(row.email === undefined ? {} : { email: row.email }),
    ...(row.notifyReplies ? { "notify-replies": true } : {}),
    ...(row.source === undefined ? {} : { source: row.source }),
    ...(row.sourceId === undefined ? {} : { "source-id": row.sourceId }),
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Reads one line's fields, each failure naming the line and the field. */
function fieldsOf(value: unknown, line: number) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ImportFormatError(`line ${line}: not a JSON object`);
  }
  const record = value as Record<string, unknown>;
  const fail = (field: string, rule: string): never => {
    throw new ImportFormatError(`line ${line}: field ${field}: ${rule}`);
  };
  const text = (field: string, optional: boolean): string | undefined => {
    const field_ = record[field];
    if (field_ === undefined && optional) return undefined;
    if (typeof field_ !== "string" || (!optional && field_.trim() === ""))
      return fail(field, "must be a non-empty string");
    return field_;
  };
  return { record, fail, text };
}

/** The row of one comment line. @throws ImportFormatError naming the line and field */
export function rowOfLine(value: unknown, line: number): ImportRow {
  const { record, fail, text } = fieldsOf(value, line);
  const id = text("id", false) ?? "";
  if (!UUID.test(id)) fail("id", "must be a lower-case UUID");
  const article = text("article", false) ?? "";
  if (!ARTICLE_NAME.test(article)) fail("article", "must be 1 to 200 characters of A-Z a-z 0-9 . _ ~ -");
  const timestamp = record.timestamp;
  if (typeof timestamp !== "number" || !Number.isSafeInteger(timestamp) || timestamp < 0) {
    fail("timestamp", "must be an integer number of milliseconds");
  }
  if (typeof record.approved !== "boolean") fail("approved", "must be true or false");
  const parent = text("parent", true);
  if (parent !== undefined && !UUID.test(parent)) fail("parent", "must be a lower-case UUID");
  const email = text("email", true);
  if (email !== undefined && !isEmailAddress(email)) fail("email", "must be an e-mail address");
  const website = text("author-website", true);
  if (website !== undefined && !isAcceptableAuthorWebsite(website)) {
    fail("author-website", "must be a bare domain or an http(s) URL");
  }
  const notify = record["notify-replies"];
  if (notify !== undefined && typeof notify !== "boolean") fail("notify-replies", "must be true or false");
  return {
    id,
    article,
    author: escapeHtml(text("author", false) ?? ""),
    authorWebsite: website,
    content: escapeHtml(text("content", false) ?? ""),
    approved: record.approved === true,
    timestamp: timestamp as number,
    parent,
    email,
    notifyReplies: notify === true,
    source: text("source", true),
    sourceId: text("source-id", true),
  };
}

/**
 * The comments of a Vigie export, line by line, kept exactly (ids, parents, import identity).
 * @throws ImportFormatError when the first line is not the header or a line is not a comment
 */
export async function* vigieItems(path: string): AsyncGenerator<ImportItem> {
  let first = true;
  for await (const line of textLines(path)) {
    const value = parseLine(line);
    if (first) {
      first = false;
      const header = value as { format?: unknown; version?: unknown } | null;
      if (header?.format !== VIGIE_FORMAT || header.version !== VIGIE_FORMAT_VERSION) {
        throw new ImportFormatError(`line ${line.number}: not a Vigie export (version ${VIGIE_FORMAT_VERSION})`);
      }
      continue;
    }
    yield { kind: "row", row: rowOfLine(value, line.number) };
  }
}
