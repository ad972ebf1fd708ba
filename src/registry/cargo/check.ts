/**
 * `vigie registry check` and its start-up counterpart (docs/cargo.md): the disagreements between
 * the database and the stored `.crate` files, and the removal of what a crash left behind.
 *
 * - A version without its file (or with a file of another size) is reported; nothing can repair it
 *   here (restore the file from a backup, or yank the version).
 * - A file without its version is an orphan of a publish that crashed between writing the file
 *   and committing its row; a temporary file is one that crashed while writing. Both are removed
 *   once older than {@link ORPHAN_GRACE_MS}: a younger one may belong to a publish still running
 *   on another instance, whose transaction has not committed yet. On SQLite, which one instance
 *   uses alone, start-up removes them whatever their age.
 */
import type { CrateFiles, FoundFile } from "./files.js";
import type { StoredFile } from "./storage.js";

/** How old an orphan or temporary file must be to be removed: 10 minutes, in milliseconds. */
export const ORPHAN_GRACE_MS = 10 * 60_000;

/** What {@link checkCrateFiles} found and did. */
export interface CheckReport {
  /** Versions of the database whose file is missing. */
  readonly missing: readonly StoredFile[];
  /** Versions whose file's size differs from the database's. */
  readonly wrongSize: readonly { readonly stored: StoredFile; readonly file: FoundFile }[];
  /** Files without a version in the database. */
  readonly orphans: readonly FoundFile[];
  /** Temporary files of unfinished publishes. */
  readonly temporary: readonly string[];
  /** Files that are no crate file at all (left alone). */
  readonly unknown: readonly string[];
  /** The orphan and temporary files removed (older than the grace period). */
  readonly removed: readonly string[];
  /** Versions in the database, files in the directory. */
  readonly versions: number;
  readonly files: number;
}

/** Whether the report shows a disagreement that is still there (what was removed is not). */
export function hasDisagreements(report: CheckReport): boolean {
  const left = report.orphans.length + report.temporary.length - report.removed.length;
  return report.missing.length > 0 || report.wrongSize.length > 0 || left > 0 || report.unknown.length > 0;
}

/**
 * Compares the stored versions with the files and removes the old orphans and temporary files.
 *
 * @param stored every version of the database (`CargoStore.files()`)
 * @param now milliseconds since the epoch
 * @param removeOlderThanMs remove orphan and temporary files at least this old (milliseconds);
 *   `undefined` to report only
 */
export async function checkCrateFiles(
  stored: readonly StoredFile[],
  files: CrateFiles,
  now: number,
  removeOlderThanMs: number | undefined,
): Promise<CheckReport> {
  const survey = await files.survey();
  const found = new Map(survey.files.map((file) => [`${file.canonical}/${file.vers}`, file]));
  const missing: StoredFile[] = [];
  const wrongSize: { stored: StoredFile; file: FoundFile }[] = [];
  for (const version of stored) {
    const key = `${version.canonical}/${version.vers}`;
    const file = found.get(key);
    found.delete(key);
    if (file === undefined) missing.push(version);
    else if (file.size !== version.size) wrongSize.push({ stored: version, file });
  }
  const orphans = [...found.values()];
  const removed: string[] = [];
  if (removeOlderThanMs !== undefined) {
    const old = [...orphans, ...survey.leftovers.temporary].filter(
      (file) => now - file.modifiedAt >= removeOlderThanMs,
    );
    for (const file of old) {
      await files.removePath(file.path);
      removed.push(file.path);
    }
  }
  return {
    missing,
    wrongSize,
    orphans,
    temporary: survey.leftovers.temporary.map((file) => file.path),
    unknown: survey.leftovers.unknown,
    removed,
    versions: stored.length,
    files: survey.files.length,
  };
}

/** The report as lines for a terminal or a log: one line per disagreement, then a summary. */
export function reportLines(report: CheckReport): string[] {
  const lines: string[] = [];
  for (const version of report.missing) lines.push(`missing file: ${version.canonical} ${version.vers}`);
  for (const { stored, file } of report.wrongSize) {
    lines.push(`wrong size: ${file.path} has ${file.size} bytes, the database says ${stored.size}`);
  }
  const removed = new Set(report.removed);
  for (const file of report.orphans) {
    lines.push(`${removed.has(file.path) ? "removed orphan file" : "orphan file"}: ${file.path}`);
  }
  for (const path of report.temporary) {
    lines.push(`${removed.has(path) ? "removed temporary file" : "temporary file"}: ${path}`);
  }
  for (const path of report.unknown) lines.push(`unknown file: ${path}`);
  lines.push(`${report.versions} versions in the database, ${report.files} crate files`);
  return lines;
}
