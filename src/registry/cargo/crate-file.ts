/**
 * What a published `.crate` must be (docs/cargo.md): a gzip-compressed tar whose entries all sit under
 * `<name>-<vers>/`, as `cargo package` writes it, with `<name>-<vers>/Cargo.toml` among them. Read
 * as a stream in memory (node:zlib, then tar-stream), never extracted to disk; contents are drained,
 * not kept.
 */
import { createGunzip } from "node:zlib";
import type TarStream from "tar-stream";
import { errorMessage, InvalidError } from "../../platform/errors.js";
import { lazyLibrary } from "../../platform/lazy.js";

/** tar-stream, loaded with the first crate read (start-up skips it). */
const tarStream = lazyLibrary<typeof TarStream>("tar-stream");

/** Limits of {@link checkCrateFile}. */
export interface CrateFileLimits {
  /** Bytes of the decompressed tar stream (headers and padding included); default 512 MiB. */
  readonly maxUnpackedBytes?: number;
  /** Entries of the tar (files and directories); default 100 000. */
  readonly maxEntries?: number;
}

/** Default of {@link CrateFileLimits.maxUnpackedBytes}: 512 MiB. */
export const MAX_UNPACKED_BYTES = 512 * 1024 * 1024;
/** Default of {@link CrateFileLimits.maxEntries}. */
export const MAX_ENTRIES = 100_000;

/** The longest part of an entry path quoted back in an error sentence. */
const SHOWN_PATH_MAX = 200;

/** An entry path for a sentence: control characters escaped, cut when very long. */
function shownPath(path: string): string {
  const escaped = path.replace(
    /\p{Cc}/gu,
    (character) => `\\u${character.codePointAt(0)?.toString(16).padStart(4, "0") ?? ""}`,
  );
  return escaped.length > SHOWN_PATH_MAX ? `${escaped.slice(0, SHOWN_PATH_MAX)}…` : escaped;
}

function bytesShown(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

function refusal(sentence: string): InvalidError {
  return new InvalidError(sentence);
}

/**
 * What a zlib failure means for the user (zlib's messages; Node's gunzip reads any bytes after a
 * member as another member, ignoring only zero padding). The first member's magic is checked before
 * zlib, so a header with a wrong magic can only come after the gzip data.
 */
function gzipError(error: unknown): InvalidError {
  const code = error instanceof Error && "code" in error ? error.code : undefined;
  const message = errorMessage(error);
  if (code === "Z_BUF_ERROR") return refusal("the .crate is a truncated gzip file");
  if (message === "incorrect header check") return refusal("the .crate has bytes after its gzip data");
  if (message === "unknown compression method" || message === "unknown header flags set") {
    return refusal("the .crate is not a gzip file");
  }
  return refusal(`the .crate is a corrupt gzip file (${message})`);
}

/** What a tar-stream failure means for the user (its messages, tar-stream 3 `extract.js`/`headers.js`). */
function tarError(error: unknown): InvalidError {
  const message = errorMessage(error);
  const prefix = "the .crate is not a valid tar archive";
  if (message === "Unexpected end of data") return refusal(`${prefix}: it ends in the middle of a header or an entry`);
  if (message.startsWith("Invalid tar header. Maybe")) return refusal(`${prefix}: a header has a wrong checksum`);
  if (message.startsWith("Invalid tar header: unknown format")) {
    return refusal(`${prefix}: a header is neither ustar nor GNU`);
  }
  if (message === "Header exceeds max size") return refusal(`${prefix}: a long-name header is larger than 4 MiB`);
  if (message === "Invalid header") return refusal(`${prefix}: a header has an invalid size`);
  return refusal(`${prefix} (${message})`);
}

/** Why an entry type is refused, or undefined for the two allowed ones. */
function refusedType(type: string | null | undefined): string | undefined {
  switch (type) {
    case "file":
    case "directory":
      return undefined;
    case "symlink":
      return "a symbolic link";
    case "link":
      return "a hard link";
    case "character-device":
    case "block-device":
      return "a device";
    case "fifo":
      return "a FIFO";
    default:
      return `an entry of type ${type ?? "unknown"}`;
  }
}

/**
 * Why an entry path is refused, or undefined: it must start with exactly `prefix`
 * (`<name>-<vers>/`; the top directory itself may come as a directory entry) and hold no `..`
 * segment, no backslash (a separator on Windows) and no absolute path.
 */
function refusedPath(path: string, prefix: string, directory: boolean): string | undefined {
  const outside = `the .crate holds a path outside ${prefix}: ${shownPath(path)}`;
  if (path.includes("\\")) return `the .crate holds a path with a backslash: ${shownPath(path)}`;
  if (path.startsWith("/")) return `the .crate holds an absolute path: ${shownPath(path)}`;
  if (directory && (path === prefix || `${path}/` === prefix)) return undefined;
  if (!path.startsWith(prefix)) return outside;
  if (path.slice(prefix.length).split("/").includes("..")) return outside;
  return undefined;
}

/**
 * Checks a `.crate`: gzip of a tar whose every entry is a file or a directory under
 * exactly `<name>-<vers>/` (the name as in the metadata, case kept, as `cargo package` writes it),
 * with no `..` segment, backslash or absolute path, and which holds the file
 * `<name>-<vers>/Cargo.toml`. Decompresses in memory as a stream and drains each entry; stops at
 * the first problem.
 *
 * @param bytes the `.crate`
 * @param name the crate name of the metadata, already checked (`crateName`)
 * @param vers the version of the metadata, already checked
 * @throws InvalidError (a rejected promise, which always settles) with a sentence: `the .crate is
 *   not a gzip file`, `the .crate is a truncated gzip file`, `the .crate has bytes after its gzip
 *   data`, `the .crate is a corrupt gzip file (…)`, `the .crate is not a valid tar archive: …`,
 *   `the .crate holds a path outside a-0.1.0/: a-0.1.0/../evil`, `the .crate holds an absolute
 *   path: …`, `the .crate holds a path with a backslash: …`, `the .crate holds a symbolic link
 *   (only files and directories are allowed): …` (or a hard link, a device, a FIFO), `the .crate
 *   unpacks to more than 512 MiB`, `the .crate holds more than 100000 entries`, `the .crate does
 *   not hold a-0.1.0/Cargo.toml`
 */
export function checkCrateFile(bytes: Buffer, name: string, vers: string, limits: CrateFileLimits = {}): Promise<void> {
  const maxUnpacked = limits.maxUnpackedBytes ?? MAX_UNPACKED_BYTES;
  const maxEntries = limits.maxEntries ?? MAX_ENTRIES;
  const prefix = `${name}-${vers}/`;
  const manifest = `${prefix}Cargo.toml`;
  // Every gzip member starts with 1f 8b (RFC 1952 §2.3.1): anything else is refused before zlib.
  if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    return Promise.reject(refusal("the .crate is not a gzip file"));
  }

  return new Promise<void>((resolve, reject) => {
    const gunzip = createGunzip();
    const extract = tarStream().extract();
    let settled = false;
    let unpacked = 0;
    let declared = 0;
    let entries = 0;
    let hasManifest = false;

    const fail = (error: InvalidError): void => {
      if (settled) return;
      settled = true;
      gunzip.destroy();
      extract.destroy();
      reject(error);
    };
    const tooBig = (): InvalidError => refusal(`the .crate unpacks to more than ${bytesShown(maxUnpacked)}`);

    gunzip.on("error", (error) => fail(gzipError(error)));
    extract.on("error", (error) => fail(tarError(error)));

    // Counted on the decompressed bytes themselves, so a gzip bomb stops at the limit.
    gunzip.on("data", (chunk: Buffer) => {
      if (settled) return;
      unpacked += chunk.length;
      if (unpacked > maxUnpacked) return fail(tooBig());
      if (!extract.write(chunk)) gunzip.pause();
    });
    extract.on("drain", () => gunzip.resume());
    gunzip.on("end", () => {
      // streamx's types want an argument; undefined ends without writing more.
      if (!settled) extract.end(undefined);
    });

    extract.on("entry", (header, stream, next) => {
      // The extract reports the same failure; this only keeps the entry's own copy from being unhandled.
      stream.on("error", () => {});
      if (settled) return;
      entries += 1;
      if (entries > maxEntries) return fail(refusal(`the .crate holds more than ${maxEntries} entries`));
      const type = refusedType(header.type);
      if (type !== undefined) {
        return fail(
          refusal(`the .crate holds ${type} (only files and directories are allowed): ${shownPath(header.name)}`),
        );
      }
      const path = refusedPath(header.name, prefix, header.type === "directory");
      if (path !== undefined) return fail(refusal(path));
      // The declared sizes reach the limit before the bytes do: refuse without decompressing them.
      declared += header.size;
      if (declared > maxUnpacked) return fail(tooBig());
      if (header.name === manifest && header.type === "file") hasManifest = true;
      stream.on("end", () => next());
      stream.resume();
    });

    extract.on("finish", () => {
      if (settled) return;
      if (!hasManifest) return fail(refusal(`the .crate does not hold ${manifest}`));
      settled = true;
      resolve();
    });
    // A stream closed without finishing or failing (never expected) must still settle the promise.
    extract.on("close", () => fail(tarError(new Error("the archive closed early"))));

    gunzip.end(bytes);
  });
}
