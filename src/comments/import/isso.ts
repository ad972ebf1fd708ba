/**
 * Isso's database (an SQLite file): `threads(id, uri, title)` and `comments(tid, id, parent,
 * created, mode, text, author, email, website, notification, …)`; `created` is seconds since the
 * Unix epoch (a real), `mode` 1 accepted, 2 waiting for moderation, 4 deleted (Isso keeps a deleted
 * comment that has replies), `text` the Markdown as typed (kept as text: the widget shows text),
 * `notification` 1 when the commenter asked for replies by e-mail.
 *
 * Opened read-only, and read row by row in the order of `id` (a parent always has a smaller id).
 */
import Sqlite from "better-sqlite3";
import { ImportFormatError, type ImportItem } from "./items.js";

/** One row of the query below. */
interface IssoRow {
  id: number;
  parent: number | null;
  created: number;
  mode: number | null;
  text: string | null;
  author: string | null;
  email: string | null;
  website: string | null;
  notification: number | null;
  uri: string | null;
  tid: number;
}

const QUERY = `select c.id, c.parent, c.created, c.mode, c.text, c.author, c.email, c.website, c.notification,
  c.tid, t.uri from comments c left join threads t on t.id = c.tid order by c.id`;

/** The item of one Isso row. */
function itemOf(row: IssoRow): ImportItem {
  if (row.mode === 4) return { kind: "skipped", reason: "deleted" };
  return {
    kind: "comment",
    sourceId: String(row.id),
    thread: { url: row.uri ?? undefined, id: String(row.tid) },
    parentSourceId: row.parent === null ? undefined : String(row.parent),
    author: row.author ?? "",
    authorWebsite: row.website ?? undefined,
    email: row.email ?? undefined,
    content: row.text ?? "",
    timestamp: Math.round(row.created * 1000),
    approved: row.mode === 1,
    notifyReplies: row.notification === 1,
  };
}

/**
 * The comments of an Isso database, oldest id first.
 * @throws ImportFormatError when the file is not an SQLite database with Isso's tables
 */
export async function* issoItems(path: string): AsyncGenerator<ImportItem> {
  let database: Sqlite.Database;
  let rows: IterableIterator<unknown>;
  try {
    database = new Sqlite(path, { readonly: true, fileMustExist: true });
    rows = database.prepare(QUERY).iterate();
  } catch (error) {
    throw new ImportFormatError(`not an Isso database: ${(error as Error).message}`);
  }
  try {
    for (const row of rows) yield itemOf(row as IssoRow);
  } finally {
    // An iteration still open keeps the connection busy, and close() would throw.
    rows.return?.();
    database.close();
  }
}
