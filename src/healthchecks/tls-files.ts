/**
 * The client certificate and CA bundle files of http and tls checks (`key`, `cert`, `cacert`),
 * read at each execution so that renewed files are used without re-registering the check.
 *
 * Where a check comes from decides what these fields are (no file paths from the network,
 * docs/security.md, "Files and secrets"):
 *
 * - in the configuration file, any path (a relative one from the working directory);
 * - through the API, a file name relative to `healthchecks.tls-directory`: no absolute path, no
 *   `..` segment ({@link isTlsFileName}); without a configured directory the fields are refused.
 *   When the check is posted (and when a stored check is restored at start-up) each name must
 *   lead to a regular file of at most {@link MAX_TLS_FILE_BYTES} ({@link checkTlsFiles}), with one
 *   answer for every way it does not, so that the API does not tell which files exist.
 *
 * Every read, whatever the source, is bounded: a file that is not a regular file (a FIFO,
 * `/dev/zero`, a directory) or is larger than 1 MiB fails the execution instead of being read
 * without bound ({@link readTlsFiles}).
 */
import { constants } from "node:fs";
import { access, open, stat } from "node:fs/promises";
import { isAbsolute, posix, resolve, win32 } from "node:path";
import { errnoCode, errorMessage } from "../platform/errors.js";
import { ValidationError } from "../platform/validation.js";

/** Largest TLS file read, in bytes: 1 MiB (docs/security.md). A PEM chain is a few kilobytes. */
export const MAX_TLS_FILE_BYTES = 1024 * 1024;

/** The fields naming TLS files. */
export interface TlsFileFields {
  readonly key?: string;
  readonly cert?: string;
  readonly cacert?: string;
}

/** The names of the fields naming TLS files, in the order their errors are reported. */
export const TLS_FILE_FIELDS = ["key", "cert", "cacert"] as const;

/** The contents, as `tls.connect` takes them (`ca` replaces the system trust store). */
export interface TlsFiles {
  key?: Buffer;
  cert?: Buffer;
  ca?: Buffer;
}

/**
 * How the fields of a check lead to files: `paths` for configuration-file checks (used as given),
 * `names` for API checks (resolved against `directory`, `healthchecks.tls-directory`; nothing is
 * read when it is undefined).
 */
export type TlsFileLocation =
  | { readonly kind: "paths" }
  | { readonly kind: "names"; readonly directory: string | undefined };

/** The location of configuration-file checks: paths used as given. */
export const TLS_FILE_PATHS: TlsFileLocation = { kind: "paths" };

/**
 * The rule of a TLS file field posted without `healthchecks.tls-directory` configured
 * (docs/security.md).
 */
export const NO_TLS_DIRECTORY_RULE = "cannot be set through the API: healthchecks.tls-directory is not configured";

/** The rule of a TLS file field through the API that is not a relative name (docs/security.md). */
export const TLS_FILE_NAME_RULE =
  "must be a file name relative to healthchecks.tls-directory, not an absolute path and without .. segments";

/**
 * The rule of a TLS file name that does not lead to a regular file of at most 1 MiB in
 * `healthchecks.tls-directory`: one wording whether the file is missing, a directory, a special
 * file, too large or unreadable, so that the API does not reveal which files exist.
 */
export const TLS_FILE_RULE = "must name a regular file of at most 1 MiB in healthchecks.tls-directory";

/** C0 control characters and DEL: no file name of a certificate has them. */
function isControlCharacter(character: string): boolean {
  const code = character.codePointAt(0) ?? 0;
  return code < 0x20 || code === 0x7f;
}

/**
 * Whether `name` may name a TLS file through the API (docs/security.md): non-empty, without control
 * characters, not absolute (POSIX or Windows style) and without a `..` segment (`/` or `\`
 * separated). Subdirectories (`clients/web.pem`) are allowed. A lexical rule: it reads no file.
 */
export function isTlsFileName(name: string): boolean {
  if (name === "" || [...name].some(isControlCharacter)) return false;
  if (isAbsolute(name) || posix.isAbsolute(name) || win32.isAbsolute(name)) return false;
  return !name.split(/[\\/]/).includes("..");
}

/** The file an API check's name leads to, or `undefined` when it leads nowhere allowed. */
function fileUnder(directory: string | undefined, name: string): string | undefined {
  if (directory === undefined || !isTlsFileName(name)) return undefined;
  return resolve(directory, name);
}

/**
 * Checks, after the synchronous validation of an API definition, that each TLS file name leads to
 * a regular file of at most 1 MiB under `directory` (docs/security.md). Symbolic links that the
 * operator put in the directory are followed.
 *
 * @param directory `healthchecks.tls-directory` (absolute), or undefined when not configured
 * @throws ValidationError naming the first failing field (`key`, `cert`, `cacert`, after `path`)
 *   with {@link TLS_FILE_RULE} (or {@link NO_TLS_DIRECTORY_RULE}, {@link TLS_FILE_NAME_RULE}),
 *   never with the value
 */
export async function checkTlsFiles(fields: TlsFileFields, directory: string | undefined, path = ""): Promise<void> {
  const problems = await Promise.all(
    TLS_FILE_FIELDS.map(async (field): Promise<string | undefined> => {
      const name = fields[field];
      if (name === undefined) return undefined;
      if (directory === undefined) return NO_TLS_DIRECTORY_RULE;
      const file = fileUnder(directory, name);
      if (file === undefined) return TLS_FILE_NAME_RULE;
      try {
        const stats = await stat(file);
        return stats.isFile() && stats.size <= MAX_TLS_FILE_BYTES ? undefined : TLS_FILE_RULE;
      } catch {
        return TLS_FILE_RULE;
      }
    }),
  );
  for (const [index, field] of TLS_FILE_FIELDS.entries()) {
    const problem = problems[index];
    if (problem !== undefined) throw new ValidationError(path === "" ? field : `${path}.${field}`, problem);
  }
}

/**
 * A TLS file that could not be read at execution; the message reads `cannot read cert
 * /etc/x.pem: ENOENT`, `cannot read cacert ca.pem: not a regular file` or `cannot read key
 * big.pem: larger than 1 MiB`. The file is named as the check names it (an API check's name, not
 * the path under `healthchecks.tls-directory`).
 */
export class TlsFileError extends Error {
  constructor(field: string, shown: string, reason: string) {
    super(`cannot read ${field} ${shown}: ${reason}`);
    this.name = "TlsFileError";
  }
}

/** A reason of {@link TlsFileError} found after the file was opened. */
class Unreadable extends Error {}

// O_NONBLOCK: opening a FIFO without a writer returns at once (it would block otherwise), so that
// fstat can refuse it. O_NOCTTY: a terminal device never becomes the controlling terminal.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** Bytes asked of each read after the first (which asks for the size fstat gave, plus one). */
const READ_CHUNK = 64 * 1024;

/**
 * Reads a whole regular file of at most 1 MiB. The type and size are checked on the open file
 * (no race with a rename), and the read stops one byte past the bound if the file grew since.
 */
async function readBounded(path: string): Promise<Buffer> {
  const handle = await open(path, OPEN_FLAGS);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new Unreadable("not a regular file");
    if (stats.size > MAX_TLS_FILE_BYTES) throw new Unreadable("larger than 1 MiB");
    const chunks: Buffer[] = [];
    let total = 0;
    let wanted = stats.size + 1;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(wanted, MAX_TLS_FILE_BYTES + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > MAX_TLS_FILE_BYTES) throw new Unreadable("larger than 1 MiB");
      wanted = READ_CHUNK;
    }
    return Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}

async function read(field: string, value: string | undefined, location: TlsFileLocation): Promise<Buffer | undefined> {
  if (value === undefined) return undefined;
  let path = value;
  if (location.kind === "names") {
    // Validated when the check was posted or restored; checked again so that nothing outside the
    // directory is ever read for an API check.
    if (location.directory === undefined) {
      throw new TlsFileError(field, value, "healthchecks.tls-directory is not configured");
    }
    const file = fileUnder(location.directory, value);
    if (file === undefined) throw new TlsFileError(field, value, "not a file name under healthchecks.tls-directory");
    path = file;
  }
  try {
    return await readBounded(path);
  } catch (error) {
    const reason = error instanceof Unreadable ? error.message : (errnoCode(error) ?? errorMessage(error));
    throw new TlsFileError(field, value, reason);
  }
}

/** Whether a check names any TLS file. */
export function hasTlsFiles(fields: TlsFileFields): boolean {
  return fields.key !== undefined || fields.cert !== undefined || fields.cacert !== undefined;
}

/**
 * Reads the files a check names, each bounded to 1 MiB (docs/security.md).
 *
 * @param location {@link TLS_FILE_PATHS} for configuration-file checks, `{kind: "names",
 *   directory}` for API checks
 * @throws TlsFileError when one cannot be read, is not a regular file or is larger than 1 MiB
 */
export async function readTlsFiles(fields: TlsFileFields, location: TlsFileLocation): Promise<TlsFiles> {
  const [key, cert, ca] = await Promise.all([
    read("key", fields.key, location),
    read("cert", fields.cert, location),
    read("cacert", fields.cacert, location),
  ]);
  const files: TlsFiles = {};
  if (key !== undefined) files.key = key;
  if (cert !== undefined) files.cert = cert;
  if (ca !== undefined) files.ca = ca;
  return files;
}

/** Why `healthchecks.tls-directory` cannot be used; the message completes `must be a readable directory; `. */
export class TlsDirectoryError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "TlsDirectoryError";
  }
}

/**
 * Checks `healthchecks.tls-directory` at start-up: it must be a directory that the process can
 * list and read.
 *
 * @param path the configured value (a relative one is resolved against the working directory)
 * @returns the absolute path
 * @throws TlsDirectoryError `it does not exist`, `it is not a directory`, `it is not readable`
 */
export async function checkTlsDirectory(path: string): Promise<string> {
  const absolute = resolve(path);
  try {
    if (!(await stat(absolute)).isDirectory()) throw new TlsDirectoryError("it is not a directory");
    await access(absolute, constants.R_OK | constants.X_OK);
  } catch (error) {
    if (error instanceof TlsDirectoryError) throw error;
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") throw new TlsDirectoryError("it does not exist");
    if (code === "EACCES" || code === "EPERM") throw new TlsDirectoryError("it is not readable");
    throw new TlsDirectoryError(`it cannot be read (${code ?? String(error)})`);
  }
  return absolute;
}
