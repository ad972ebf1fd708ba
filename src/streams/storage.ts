/**
 * The streams module's storage (docs/streams.md): streams keep no table (their state and index live
 * in memory), only files. Every `*.edn` file of `streams.directories` is a streams file, an EDN map
 * from stream name to configuration, written by the operator: Vigie reads these and never changes
 * them. Streams created through the API with `:persist true` are written apart, one file each, to
 * the API streams directory `<first directory>/.vigie-api/<name>.edn` (see {@link apiStreamsDirectory},
 * `writeStreamFile`), which only Vigie writes. Files that earlier versions wrote for the API beside
 * the operator's are moved there once, at start-up ({@link moveLegacyApiFiles}).
 */

import { randomBytes } from "node:crypto";
import { type FileHandle, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Kysely, Migration } from "kysely";
import type { Database, PlatformTables } from "../platform/database.js";
import { runDdl } from "../platform/ddl.js";
import { errnoCode, errorMessage } from "../platform/errors.js";
import { makePrivateDirectory, PRIVATE_FILE_MODE } from "../platform/private-files.js";
import { compileConfig } from "./compiler.js";
import { type EdnValue, isMap, nameOf, parseEdn, toEdn } from "./edn.js";
import { type Declarations, NO_DECLARATIONS } from "./io.js";
import { DEFAULT_STREAM, isStreamName, STREAM_NAME_RULE } from "./names.js";

/**
 * The module's migrations. Streams keep their state in memory; the one table holds the streams
 * created through the API in cluster mode (docs/cluster.md), so that every instance runs the same
 * ones. It stays empty on a single instance.
 */
export const streamsMigrations: Readonly<Record<string, Migration>> = {
  "streams-0001-api-streams": {
    // config: the stream's configuration as EDN text.
    up: (db) =>
      runDdl(db, [
        "create table stream_definition (name varchar(128) primary key, config text not null, updated_at bigint not null)",
      ]),
  },
};

type StreamTables = {
  stream_definition: { name: string; config: string; updated_at: number };
};

/** A stream created through the API, as stored in cluster mode. */
export interface StoredStream {
  readonly name: string;
  /** EDN text. */
  readonly config: string;
}

/** Cluster mode: the streams created through the API, shared by every instance (docs/cluster.md). */
export class SharedStreamStore {
  readonly #db: Kysely<PlatformTables & StreamTables>;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<StreamTables>();
  }

  /** Every stored stream, or those of `names`. */
  async list(names?: readonly string[]): Promise<StoredStream[]> {
    let query = this.#db.selectFrom("stream_definition").select(["name", "config"]).orderBy("name");
    if (names !== undefined) {
      if (names.length === 0) return [];
      query = query.where("name", "in", names);
    }
    return query.execute();
  }

  /** Adds or replaces a stream. */
  async save(name: string, config: string): Promise<void> {
    await this.#db
      .insertInto("stream_definition")
      .values({ name, config, updated_at: Date.now() })
      .onConflict((conflict) =>
        conflict.column("name").doUpdateSet((update) => ({
          config: update.ref("excluded.config"),
          updated_at: update.ref("excluded.updated_at"),
        })),
      )
      .execute();
  }

  /** Removes a stream; false when none was stored. */
  async remove(name: string): Promise<boolean> {
    const result = await this.#db.deleteFrom("stream_definition").where("name", "=", name).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

/** A stream read from a streams file. */
export interface FileStream {
  readonly name: string;
  readonly config: EdnValue;
  /** The configuration as EDN text, to tell changed streams from untouched ones on reload. */
  readonly text: string;
  readonly file: string;
}

/** A streams file that cannot be loaded; the message names the file and the problem. */
export class StreamFileError extends Error {
  constructor(file: string, problem: string) {
    super(`streams file ${file}: ${problem}`);
    this.name = "StreamFileError";
  }
}

/**
 * Reads, parses and compiles every streams file of the directories (missing directories count as
 * empty), so that a caller can apply all of them or none.
 * @param declarations the outputs and async queues the streams may name
 * @throws StreamFileError for unreadable or invalid files, invalid names, duplicate stream names
 */
export async function loadStreamDirectories(
  directories: readonly string[],
  declarations: Declarations = NO_DECLARATIONS,
): Promise<Map<string, FileStream>> {
  const streams = new Map<string, FileStream>();
  for (const directory of directories) {
    let entries: string[];
    try {
      entries = (await readdir(directory)).filter((entry) => entry.endsWith(".edn")).sort();
    } catch (error) {
      if (errnoCode(error) === "ENOENT") continue;
      throw new StreamFileError(directory, errorMessage(error));
    }
    for (const entry of entries) {
      const file = join(directory, entry);
      for (const stream of parseStreamsFile(file, await readFile(file, "utf8"), declarations)) {
        const previous = streams.get(stream.name);
        if (previous !== undefined) {
          throw new StreamFileError(file, `stream ${stream.name} is also defined in ${previous.file}`);
        }
        streams.set(stream.name, stream);
      }
    }
  }
  return streams;
}

/**
 * The streams a single instance with these stream directories starts: those of the directories
 * ({@link loadStreamDirectories}), and those persisted through the API ({@link apiStreamsDirectory})
 * that no directory file defines. What `vigie stream test` runs.
 * @throws StreamFileError as {@link loadStreamDirectories}
 */
export async function loadConfiguredStreams(
  directories: readonly string[],
  declarations: Declarations = NO_DECLARATIONS,
): Promise<Map<string, FileStream>> {
  const streams = await loadStreamDirectories(directories, declarations);
  const persistDirectory = apiStreamsDirectory(directories);
  if (persistDirectory === undefined) return streams;
  for (const [name, stream] of await loadStreamDirectories([persistDirectory], declarations)) {
    if (!streams.has(name)) streams.set(name, stream);
  }
  return streams;
}

/**
 * Parses and compiles the streams of one file's text.
 * @throws StreamFileError naming the file
 */
export function parseStreamsFile(
  file: string,
  text: string,
  declarations: Declarations = NO_DECLARATIONS,
): FileStream[] {
  let value: EdnValue;
  try {
    value = parseEdn(text);
  } catch (error) {
    throw new StreamFileError(file, errorMessage(error));
  }
  if (!isMap(value))
    throw new StreamFileError(file, "a streams file must be an EDN map from stream name to configuration");
  return value.map.map(([key, config]) => {
    const name = nameOf(key);
    if (name === undefined || !isStreamName(name) || name === DEFAULT_STREAM) {
      throw new StreamFileError(file, `stream name ${toEdn(key)} ${STREAM_NAME_RULE} and is not "default"`);
    }
    try {
      compileConfig(config, declarations);
    } catch (error) {
      throw new StreamFileError(file, `stream ${name}: ${errorMessage(error)}`);
    }
    return { name, config, text: toEdn(config), file };
  });
}

/**
 * The subdirectory of the first stream directory that holds the streams persisted through the API,
 * one `<name>.edn` file each. Only Vigie writes there. The loader of stream directories reads the
 * files of each directory, not its subdirectories, so these are never taken for the operator's; the
 * leading dot keeps the operator's own tools (globs, `ls`) off it.
 */
export const API_STREAMS_SUBDIRECTORY = ".vigie-api";

/**
 * The API streams directory: `<first of directories>/.vigie-api`, or `undefined` without stream
 * directories (`:persist true` is then refused).
 */
export function apiStreamsDirectory(directories: readonly string[]): string | undefined {
  const first = directories[0];
  return first === undefined ? undefined : join(first, API_STREAMS_SUBDIRECTORY);
}

/** The file a persisted stream lives in, in the API streams directory. */
export function persistedFile(directory: string, name: string): string {
  return join(directory, `${name}.edn`);
}

/**
 * The text of a persisted stream's file: `{:<name> <config>}` and a line break, on one line. Names
 * that start with a digit are not valid EDN keywords: they are written as strings (`{"1m" ...}`).
 */
export function persistedText(name: string, config: EdnValue): string {
  const key = /^[A-Za-z._-]/.test(name) && !/^[._-]?\d/.test(name) ? `:${name}` : JSON.stringify(name);
  return `{${key} ${toEdn(config)}}\n`;
}

/**
 * Writes {@link persistedText} to `<directory>/<name>.edn`, replacing any file of that name,
 * atomically and durably: the text goes to a temporary file in the same directory
 * (`<name>.edn.<random>.tmp`, which the loader ignores), is flushed to disk, is renamed over
 * `<name>.edn`, and the directory is flushed so the rename itself is on disk. A killed process or an
 * operating-system crash therefore leaves either the previous file or the complete new one, never a
 * half-written or empty one; once the promise resolves the new file survives both. The file is mode
 * 0600: an output's credentials may be in it.
 * @param directory the API streams directory ({@link apiStreamsDirectory}), never an operator's
 *   stream directory; created (mode 0700, with its parents) when missing
 * @returns the path of the written file
 * @throws the file-system error (`EACCES`, `ENOSPC`, `EIO`...) when creating the directory, writing, flushing or renaming fails; the temporary file is removed and an existing
 * `<name>.edn` is left untouched. A failure to flush the directory after the rename is thrown too
 * (the new file is then in place but may not survive a crash), except where the platform cannot
 * open or flush directories (Windows, some file systems), where that step is skipped.
 */
export async function writeStreamFile(directory: string, name: string, config: EdnValue): Promise<string> {
  const file = persistedFile(directory, name);
  const temporary = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  // Vigie's own data, created on first use: a stream's configuration may hold an output's
  // credentials, so the directory and the files are its user's only (0700, 0600).
  await makePrivateDirectory(directory);
  // "wx": a temporary file is only ever ours, so removing it on failure never removes another's.
  const handle = await open(temporary, "wx", PRIVATE_FILE_MODE);
  try {
    try {
      await handle.chmod(PRIVATE_FILE_MODE);
      await handle.writeFile(persistedText(name, config), "utf8");
      // The file system may put the rename on disk before the data: without this flush, a crash of
      // the machine could leave an empty <name>.edn where the previous version was.
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await syncDirectory(directory);
  return file;
}

/**
 * Whether a file of the first stream directory is one that earlier versions wrote there for
 * `:persist true`. Those files are recognised by their exact bytes: the file `<name>.edn` (a valid
 * stream name, not `default`) holds {@link persistedText} of `name` and of the one configuration it
 * defines, byte for byte: a single line `{:<name> <config>}` ending in a line break, the
 * configuration as Vigie prints EDN. A file written or edited by hand practically never matches;
 * one that does defines just that stream, as the API would have.
 */
export function isLegacyApiFile(entry: string, text: string): boolean {
  if (!entry.endsWith(".edn")) return false;
  const name = entry.slice(0, -".edn".length);
  if (!isStreamName(name) || name === DEFAULT_STREAM) return false;
  // Cheap checks first: most operator files fail them without being parsed.
  if (text.indexOf("\n") !== text.length - 1 || !text.endsWith("}\n")) return false;
  let value: EdnValue;
  try {
    value = parseEdn(text);
  } catch {
    return false;
  }
  if (!isMap(value) || value.map.length !== 1) return false;
  const [pair] = value.map;
  if (pair === undefined) return false;
  const [key, config] = pair;
  return nameOf(key) === name && text === persistedText(name, config);
}

/** What {@link moveLegacyApiFiles} did. */
export interface LegacyApiFilesMove {
  /** The files moved: where each was, and its path in the API streams directory. */
  readonly moved: ReadonlyArray<{ readonly from: string; readonly to: string }>;
  /** The files recognised but left in place (a read-only directory...), with the error's message. */
  readonly failed: ReadonlyArray<{ readonly file: string; readonly reason: string }>;
}

/**
 * Moves the files that earlier versions wrote for `:persist true` into the first stream directory
 * ({@link isLegacyApiFile}) to the API streams directory, keeping their names, so that they load
 * as before and stay the API's to replace and delete. A file of the same name already there is
 * replaced (the one beside the operator's files is then the newer one, written by an earlier
 * version after this one had run). A file that cannot be moved is left in place and reported: it
 * still loads, as one of the operator's. Run at start-up, before the directories are loaded.
 * @throws the file-system error when the first directory exists but cannot be listed
 */
export async function moveLegacyApiFiles(firstDirectory: string, apiDirectory: string): Promise<LegacyApiFilesMove> {
  let entries: string[];
  try {
    entries = (await readdir(firstDirectory)).filter((entry) => entry.endsWith(".edn")).sort();
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return { moved: [], failed: [] };
    throw error;
  }
  const moved: Array<{ from: string; to: string }> = [];
  const failed: Array<{ file: string; reason: string }> = [];
  for (const entry of entries) {
    const file = join(firstDirectory, entry);
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch {
      continue; // not readable as a file: the loader reports it
    }
    if (!isLegacyApiFile(entry, text)) continue;
    try {
      await makePrivateDirectory(apiDirectory);
      const to = join(apiDirectory, entry);
      await rename(file, to);
      moved.push({ from: file, to });
    } catch (error) {
      failed.push({ file, reason: errorMessage(error) });
    }
  }
  if (moved.length > 0) {
    // The new entries first: a crash in between leaves a file in both places, moved again next time.
    await syncDirectory(apiDirectory);
    await syncDirectory(firstDirectory);
  }
  return { moved, failed };
}

/**
 * Error codes of platforms where a directory cannot be opened for reading or flushed (Windows:
 * `EISDIR`/`EPERM`; some file systems: `EINVAL`/`ENOTSUP`/`EBADF`; an unreadable directory: `EACCES`).
 * Flushing a directory is then impossible rather than failed, so it is skipped.
 */
const DIRECTORY_SYNC_UNSUPPORTED = new Set(["EISDIR", "EPERM", "EACCES", "EINVAL", "ENOTSUP", "EBADF"]);

/**
 * Flushes a directory's entries to disk (`fsync` of the directory), so a rename into it survives an
 * operating-system crash.
 * @throws the file-system error, except the codes of `DIRECTORY_SYNC_UNSUPPORTED`
 */
async function syncDirectory(directory: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(directory, "r");
  } catch (error) {
    if (DIRECTORY_SYNC_UNSUPPORTED.has(errnoCode(error) ?? "")) return;
    throw error;
  }
  try {
    await handle.sync();
  } catch (error) {
    if (!DIRECTORY_SYNC_UNSUPPORTED.has(errnoCode(error) ?? "")) throw error;
  } finally {
    await handle.close();
  }
}

/**
 * Removes a persisted stream's file (nothing when there is none), durably: the directory is flushed
 * so that a removed stream does not come back after an operating-system crash.
 * @throws the file-system error of the removal or of the flush (`EACCES`, `EIO`...)
 * @param directory the API streams directory ({@link apiStreamsDirectory}), never an operator's
 */
export async function removeStreamFile(directory: string, name: string): Promise<void> {
  try {
    await rm(persistedFile(directory, name));
  } catch (error) {
    // Most streams were never persisted: nothing to remove, nothing to flush.
    if (errnoCode(error) === "ENOENT") return;
    throw error;
  }
  await syncDirectory(directory);
}
