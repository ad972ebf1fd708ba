/**
 * The import: the items of a source, turned into rows and written in batches, one transaction per
 * batch, or only counted per article for a dry run. A malformed file stops the import with its
 * position: the batch being read is not written, those before it are, and a second run (which skips
 * what is there) completes the import.
 */

import { disqusItems } from "./disqus.js";
import { issoItems } from "./isso.js";
import {
  type ArticleSource,
  type ImportFormat,
  type ImportItem,
  type ImportRow,
  type SkipReason,
  toRow,
} from "./items.js";
import { commentoItems, remark42Items } from "./json-items.js";
import { vigieItems } from "./vigie-format.js";
import { wordpressItems } from "./wordpress.js";

/** Where the rows go (storage-import.ts). */
export interface ImportTarget {
  /** Writes rows in one transaction, skipping those already there. @returns how many were added */
  insertBatch(website: string, rows: readonly ImportRow[]): Promise<number>;
  /** Which of `ids` are stored already. */
  existingIds(ids: readonly string[]): Promise<Set<string>>;
}

/** What to import and how. */
export interface ImportSettings {
  readonly website: string;
  readonly format: ImportFormat;
  readonly articleFrom: ArticleSource;
  /** Count and print, write nothing. */
  readonly dryRun: boolean;
  /** Rows per transaction. */
  readonly batchSize?: number;
}

/** What a dry run would write into one article. */
export interface ArticleTally {
  comments: number;
  replies: number;
  approved: number;
  /** Not stored yet: what a real run would add. */
  fresh: number;
}

/** What an import did (or, for a dry run, would do). */
export interface ImportReport {
  /** Comments read and turned into rows. */
  readonly read: number;
  /** Rows written (a dry run: rows that would be). */
  readonly added: number;
  /** Rows already there, left as they are. */
  readonly existing: number;
  readonly skipped: ReadonlyMap<SkipReason, number>;
  /** Per article, for a dry run only (one entry per article: bounded by the site's articles). */
  readonly articles: ReadonlyMap<string, ArticleTally>;
}

/** The default rows per transaction: large enough to amortise a commit, small enough to redo. */
export const DEFAULT_BATCH_SIZE = 1000;

/** The items of `file` read as `format`. */
export function itemsOf(format: ImportFormat, file: string): AsyncGenerator<ImportItem> {
  switch (format) {
    case "disqus":
      return disqusItems(file);
    case "wordpress":
      return wordpressItems(file);
    case "isso":
      return issoItems(file);
    case "remark42":
      return remark42Items(file);
    case "commento":
      return commentoItems(file);
    case "vigie":
      return vigieItems(file);
  }
}

/** Counts one dry-run batch per article. @returns how many of its rows would be added */
async function tally(
  target: ImportTarget,
  rows: readonly ImportRow[],
  articles: Map<string, ArticleTally>,
): Promise<number> {
  let fresh = 0;
  const existing = await target.existingIds(rows.map((row) => row.id));
  for (const row of rows) {
    let entry = articles.get(row.article);
    if (entry === undefined) {
      entry = { comments: 0, replies: 0, approved: 0, fresh: 0 };
      articles.set(row.article, entry);
    }
    entry.comments++;
    if (row.parent !== undefined) entry.replies++;
    if (row.approved) entry.approved++;
    if (!existing.has(row.id)) {
      entry.fresh++;
      fresh++;
      // Two rows of one file with the same id: only the first would be added.
      existing.add(row.id);
    }
  }
  return fresh;
}

/** The row of an item, or why it is skipped. */
function rowOf(item: ImportItem, settings: ImportSettings): ImportRow | SkipReason {
  if (item.kind === "row") return item.row;
  if (item.kind === "skipped") return item.reason;
  return toRow(item, settings.website, settings.format, settings.articleFrom);
}

/**
 * Imports `items` into the website of `settings`.
 * @param onBatch called after each batch with the report so far (progress)
 * @throws ImportFormatError from the parser; the batch being read is then not written
 */
export async function runImport(
  items: AsyncIterable<ImportItem>,
  target: ImportTarget,
  settings: ImportSettings,
  onBatch: (report: ImportReport) => void = () => {},
): Promise<ImportReport> {
  const size = settings.batchSize ?? DEFAULT_BATCH_SIZE;
  const skipped = new Map<SkipReason, number>();
  const articles = new Map<string, ArticleTally>();
  let batch: ImportRow[] = [];
  let read = 0;
  let added = 0;
  const report = (): ImportReport => ({ read, added, existing: read - batch.length - added, skipped, articles });
  const flush = async () => {
    added += settings.dryRun ? await tally(target, batch, articles) : await target.insertBatch(settings.website, batch);
    batch = [];
    onBatch(report());
  };
  for await (const item of items) {
    const row = rowOf(item, settings);
    if (typeof row === "string") {
      skipped.set(row, (skipped.get(row) ?? 0) + 1);
      continue;
    }
    read++;
    batch.push(row);
    if (batch.length >= size) await flush();
  }
  if (batch.length > 0) await flush();
  return report();
}

/** `1 comment`, `3 comments`. */
function counted(count: number, one: string, other = `${one}s`): string {
  return `${count} ${count === 1 ? one : other}`;
}

/** The lines a run prints: per article for a dry run, then the totals and what was skipped. */
export function reportLines(report: ImportReport, settings: ImportSettings): string[] {
  const lines: string[] = [];
  if (settings.dryRun) {
    const names = [...report.articles.keys()].sort();
    for (const name of names) {
      const entry = report.articles.get(name);
      if (entry === undefined) continue;
      lines.push(
        `${name}: ${counted(entry.comments, "comment")} (${counted(entry.replies, "reply", "replies")}, ${entry.approved} approved), ${entry.fresh} new`,
      );
    }
  }
  const verb = settings.dryRun ? "would add" : "added";
  lines.push(`${counted(report.read, "comment")} read, ${verb} ${report.added}, ${report.existing} already imported`);
  if (report.read > 0 && report.added === 0) lines.push("nothing new: every comment of the file is already there");
  const skips = [...report.skipped.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  if (skips.length > 0) lines.push(`skipped: ${skips.map(([reason, count]) => `${count} ${reason}`).join(", ")}`);
  return lines;
}
