/**
 * `vigie backup FILE`: a consistent copy of the SQLite database while the server runs, through
 * SQLite's online backup API (https://www.sqlite.org/backup.html). The copy is taken page by page
 * from a read-only connection; pages a writer changes meanwhile are copied again, so the file holds
 * the database as it was at one instant, every committed transaction before it included. PostgreSQL
 * has its own tool for that (`pg_dump`), which the docs name.
 */

import { closeSync, constants, openSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import SQLite from "better-sqlite3";
import { dialectOf, sqlitePath } from "./database.js";
import { errnoCode, errorMessage } from "./errors.js";

/** Why a backup cannot be taken (usage, not a failure while copying). */
export class BackupRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackupRefusal";
  }
}

/** What a backup wrote. */
export interface BackupReport {
  /** The database file copied, absolute. */
  readonly source: string;
  /** The file written, absolute, mode 0600. */
  readonly destination: string;
  /** Pages of the database copied (SQLite pages, 4 KiB by default). */
  readonly pages: number;
}

/**
 * Copies the SQLite database of `url` to `destination`, a new file of mode 0600 (it holds the
 * database's secrets). Never overwrites: an existing destination is refused.
 *
 * @param url `database.url` (`sqlite:<file>`)
 * @param destination the file to create, relative to the working directory or absolute
 * @throws BackupRefusal when the database is not an SQLite file, does not exist, or the destination exists
 * @throws Error when SQLite fails while copying (the partial destination is removed)
 */
export async function backupSqlite(url: string, destination: string): Promise<BackupReport> {
  if (dialectOf(url) !== "sqlite") {
    throw new BackupRefusal("database.url is PostgreSQL: back it up with pg_dump (see docs/operations.md)");
  }
  const path = sqlitePath(url);
  if (path === ":memory:")
    throw new BackupRefusal("database.url is an in-memory database: there is nothing to back up");
  const source = resolve(path);
  const target = resolve(destination);
  let database: SQLite.Database;
  try {
    database = new SQLite(source, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new BackupRefusal(`cannot open the database ${source}: ${errorMessage(error)}`);
  }
  try {
    // An empty file is an empty database to SQLite: creating it first sets its mode and refuses
    // to overwrite in one step (O_EXCL).
    try {
      closeSync(openSync(target, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600));
    } catch (error) {
      const code = errnoCode(error);
      throw new BackupRefusal(
        code === "EEXIST" ? `${target} exists: choose a new file name` : `cannot create ${target}: ${code}`,
      );
    }
    try {
      const { totalPages } = await database.backup(target);
      return { source, destination: target, pages: totalPages };
    } catch (error) {
      rmSync(target, { force: true });
      throw error;
    }
  } finally {
    database.close();
  }
}
