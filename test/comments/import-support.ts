/** Helpers of the import tests: the fixtures' directory and an Isso database built from its SQL fixture. */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Sqlite from "better-sqlite3";
import { temporaryDirectory } from "../support/temporary.js";

/** test/fixtures/comments-import: files written for the tests from each format's description. */
export const FIXTURES = resolve(import.meta.dirname, "../fixtures/comments-import");

/** Builds an Isso database (an SQLite file) from isso.sql. @returns its path */
export function issoDatabase(): string {
  const file = join(temporaryDirectory("vigie-isso-"), "comments.db");
  const database = new Sqlite(file);
  database.exec(readFileSync(join(FIXTURES, "isso.sql"), "utf8"));
  database.close();
  return file;
}
