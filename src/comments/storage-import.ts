/**
 * The SQL of the import and export of comments (docs/comments.md, "Moving in"): batches of rows
 * written in one transaction each, skipping rows already there, and the comments of a website read
 * page by page for the export. No event is written: an imported comment is not news.
 */
import type { Database } from "../platform/database.js";
import type { ImportRow } from "./import/items.js";
import type { CommentsDb, CommentTable, CommentTables } from "./storage.js";

/**
 * Rows per INSERT statement: 15 parameters each stays far below SQLite's 32 766 bound variables
 * and PostgreSQL's 65 535 parameters.
 */
const ROWS_PER_STATEMENT = 500;

/** The row of the table of an import row. */
function tableRow(website: string, row: ImportRow): CommentTable {
  return {
    id: row.id,
    website,
    article: row.article,
    author: row.author,
    author_website: row.authorWebsite ?? null,
    content: row.content,
    approved: row.approved ? 1 : 0,
    created_at: row.timestamp,
    parent: row.parent ?? null,
    email: row.email ?? null,
    notify_replies: row.notifyReplies ? 1 : 0,
    // Spam is skipped by the parsers, never imported.
    spam: 0,
    source: row.source ?? null,
    source_id: row.sourceId ?? null,
  };
}

/** The import row of a table row (for the export). */
function importRow(row: CommentTable): ImportRow {
  return {
    id: row.id,
    article: row.article,
    author: row.author,
    authorWebsite: row.author_website ?? undefined,
    content: row.content,
    approved: row.approved === 1,
    timestamp: Number(row.created_at),
    parent: row.parent ?? undefined,
    email: row.email ?? undefined,
    notifyReplies: row.notify_replies === 1,
    source: row.source ?? undefined,
    sourceId: row.source_id ?? undefined,
  };
}

/** Writes imported comments and reads a website's comments for an export. */
export class ImportStore {
  readonly #db: CommentsDb;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<CommentTables>();
  }

  /**
   * Writes `rows` into `website` in one transaction; a row whose id, or whose source and source id,
   * is already there is left as it is (`ON CONFLICT DO NOTHING`, on any unique key).
   * @returns how many rows were added
   */
  async insertBatch(website: string, rows: readonly ImportRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    return this.#db.transaction().execute(async (trx) => {
      let added = 0;
      for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
        const values = rows.slice(start, start + ROWS_PER_STATEMENT).map((row) => tableRow(website, row));
        const result = await trx
          .insertInto("comments_comment")
          .values(values)
          .onConflict((conflict) => conflict.doNothing())
          .executeTakeFirst();
        added += Number(result.numInsertedOrUpdatedRows ?? 0);
      }
      return added;
    });
  }

  /** Which of `ids` are stored already (any website: ids are unique). */
  async existingIds(ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let start = 0; start < ids.length; start += ROWS_PER_STATEMENT) {
      const rows = await this.#db
        .selectFrom("comments_comment")
        .select("id")
        .where("id", "in", ids.slice(start, start + ROWS_PER_STATEMENT))
        .execute();
      for (const row of rows) found.add(row.id);
    }
    return found;
  }

  /**
   * The comments of `website`, oldest first (timestamp, then id), `pageSize` rows per query along
   * the website index, so an export of any size holds one page in memory.
   */
  async *exportRows(website: string, pageSize = 1000): AsyncGenerator<ImportRow> {
    let after: { readonly time: number; readonly id: string } | undefined;
    for (;;) {
      let query = this.#db.selectFrom("comments_comment").selectAll().where("website", "=", website);
      if (after !== undefined) {
        const { time, id } = after;
        query = query.where((eb) =>
          eb.or([eb("created_at", ">", time), eb.and([eb("created_at", "=", time), eb("id", ">", id)])]),
        );
      }
      const rows = await query.orderBy("created_at").orderBy("id").limit(pageSize).execute();
      for (const row of rows) yield importRow(row);
      const last = rows.at(-1);
      if (last === undefined || rows.length < pageSize) return;
      after = { time: Number(last.created_at), id: last.id };
    }
  }
}
