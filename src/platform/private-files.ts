/**
 * Files that only Vigie's own user may read. The database holds generated secrets (the comments
 * admin token, the challenge secret) in clear, and Vigie writes other secret files beside it, so
 * every directory Vigie creates for its data is made 0700 and every database or secret file 0600,
 * whatever the process umask (the mode is set with chmod after creation, as the umask may have
 * masked it). Existing paths are left as they are: one wider than that (any group or other
 * permission) is reported once per process, naming the path and its mode, and is not an error.
 */

import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, statSync } from "node:fs";
import { chmod, mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { errnoCode } from "./errors.js";

/** The mode of directories Vigie creates for its data: owner only. */
export const PRIVATE_DIRECTORY_MODE = 0o700;

/** The mode of database and secret files Vigie creates: owner read and write only. */
export const PRIVATE_FILE_MODE = 0o600;

/** Permission bits for group and others: any of them set makes a path wider than private. */
const SHARED_BITS = 0o077;

/** Reports a path wider than private (a pino logger's bound `warn` fits). */
export type ModeWarning = (details: { path: string; mode: string }, message: string) => void;

/** Paths already reported by this process, so a path checked twice is reported once. */
const reported = new Set<string>();

/** `0755` for 0o755: the octal permission bits as `ls` and `chmod` spell them. */
export function octalMode(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, "0")}`;
}

/**
 * The directories `mkdir -p` created: from the first one it reports down to `path`, deepest last.
 * @param first what `mkdir(path, {recursive: true})` returned: the first directory it created
 */
function createdChain(path: string, first: string): string[] {
  const top = resolve(first);
  const chain: string[] = [];
  for (let directory = resolve(path); ; directory = dirname(directory)) {
    chain.unshift(directory);
    if (directory === top || dirname(directory) === directory) return chain;
  }
}

/**
 * Creates `path` and its missing parents, each mode 0700 whatever the umask; an existing directory
 * is left as it is.
 * @throws the file-system error (`EACCES`, `ENOTDIR`...)
 */
export async function makePrivateDirectory(path: string): Promise<void> {
  const first = await mkdir(path, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  if (first === undefined) return;
  for (const directory of createdChain(path, first)) await chmod(directory, PRIVATE_DIRECTORY_MODE);
}

/** {@link makePrivateDirectory}, synchronously (for start-up code that is synchronous). */
export function makePrivateDirectorySync(path: string): void {
  const first = mkdirSync(path, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  if (first === undefined) return;
  for (const directory of createdChain(path, first)) chmodSync(directory, PRIVATE_DIRECTORY_MODE);
}

/**
 * Creates an empty file of mode 0600 (whatever the umask) when `path` does not exist, so that a
 * program opening it next (SQLite) keeps that mode; an existing file is left as it is.
 * @returns true when the file was created
 * @throws the file-system error other than `EEXIST`
 */
export function createPrivateFileSync(path: string): boolean {
  let descriptor: number;
  try {
    descriptor = openSync(path, "wx", PRIVATE_FILE_MODE);
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw error;
  }
  try {
    fchmodSync(descriptor, PRIVATE_FILE_MODE);
  } finally {
    closeSync(descriptor);
  }
  return true;
}

/**
 * Reports `path` through `warn` when it exists with a group or other permission bit, once per
 * process and path. A missing path is fine (Vigie creates it private).
 * @param what how the message names it: `data directory`, `database file`…
 */
export function warnIfSharedSync(path: string, what: string, warn: ModeWarning): void {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    return;
  }
  report(path, mode, what, warn);
}

/** {@link warnIfSharedSync}, asynchronously. */
export async function warnIfShared(path: string, what: string, warn: ModeWarning): Promise<void> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch {
    return;
  }
  report(path, mode, what, warn);
}

function report(path: string, mode: number, what: string, warn: ModeWarning): void {
  const absolute = resolve(path);
  if ((mode & SHARED_BITS) === 0 || reported.has(absolute)) return;
  reported.add(absolute);
  const wanted = (mode & 0o170000) === 0o040000 ? PRIVATE_DIRECTORY_MODE : PRIVATE_FILE_MODE;
  const octal = octalMode(mode);
  warn(
    { path: absolute, mode: octal },
    `${what} ${absolute} has mode ${octal}: other local users may read it; Vigie creates it ${octalMode(wanted)} (chmod ${octalMode(wanted).slice(1)} ${absolute})`,
  );
}
