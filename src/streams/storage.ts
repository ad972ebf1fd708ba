/**
 * The streams module's storage (streams.md §6): streams keep no table (their state and index live
 * in memory), only files. Every `*.edn` file of `streams.directories` is a streams file, an EDN map
 * from stream name to configuration. Streams created through the API with `:persist true` are
 * written to `<first directory>/<name>.edn` (temporary file, then rename).
 */
import { randomBytes } from "node:crypto";
import { readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Migration } from "kysely";
import { compileConfig } from "./compiler.js";
import { type EdnValue, isMap, nameOf, parseEdn, toEdn } from "./edn.js";
import { DEFAULT_STREAM, isStreamName, STREAM_NAME_RULE } from "./names.js";

/** The module's migrations: none, streams keep nothing in the database. */
export const streamsMigrations: Readonly<Record<string, Migration>> = {};

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
 * @throws StreamFileError for unreadable or invalid files, invalid names, duplicate stream names
 */
export async function loadStreamDirectories(directories: readonly string[]): Promise<Map<string, FileStream>> {
  const streams = new Map<string, FileStream>();
  for (const directory of directories) {
    let entries: string[];
    try {
      entries = (await readdir(directory)).filter((entry) => entry.endsWith(".edn")).sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw new StreamFileError(directory, (error as Error).message);
    }
    for (const entry of entries) {
      const file = join(directory, entry);
      for (const stream of parseStreamsFile(file, await readFile(file, "utf8"))) {
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
 * Parses and compiles the streams of one file's text.
 * @throws StreamFileError naming the file
 */
export function parseStreamsFile(file: string, text: string): FileStream[] {
  let value: EdnValue;
  try {
    value = parseEdn(text);
  } catch (error) {
    throw new StreamFileError(file, (error as Error).message);
  }
  if (!isMap(value))
    throw new StreamFileError(file, "a streams file must be an EDN map from stream name to configuration");
  return value.map.map(([key, config]) => {
    const name = nameOf(key);
    if (name === undefined || !isStreamName(name) || name === DEFAULT_STREAM) {
      throw new StreamFileError(file, `stream name ${toEdn(key)} ${STREAM_NAME_RULE} and is not "default"`);
    }
    try {
      compileConfig(config);
    } catch (error) {
      throw new StreamFileError(file, `stream ${name}: ${(error as Error).message}`);
    }
    return { name, config, text: toEdn(config), file };
  });
}

/** The file a persisted stream lives in. */
export function persistedFile(directory: string, name: string): string {
  return join(directory, `${name}.edn`);
}

/**
 * Writes `{:<name> <config>}` to `<directory>/<name>.edn` atomically: a temporary file in the same
 * directory, then a rename, so a crash never leaves a half-written streams file.
 */
export async function writeStreamFile(directory: string, name: string, config: EdnValue): Promise<string> {
  const file = persistedFile(directory, name);
  // Names that start with a digit are not valid EDN keywords: use a string key for them.
  const key = /^[A-Za-z._-]/.test(name) && !/^[._-]?\d/.test(name) ? `:${name}` : JSON.stringify(name);
  const temporary = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, `{${key} ${toEdn(config)}}\n`, { mode: 0o644 });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  return file;
}

/** Removes a persisted stream's file (nothing when there is none). */
export async function removeStreamFile(directory: string, name: string): Promise<void> {
  await rm(persistedFile(directory, name), { force: true });
}
