/**
 * Secrets read from files that the configuration names (`comments.admin-token-file`): systemd's
 * `LoadCredential=` and container secrets hand a service its secrets as files, which keeps them out
 * of the configuration file and of the environment (docs/configuration.md).
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { errnoCode } from "./errors.js";
import { string, ValidationError, type Validator } from "./validation.js";

/** The largest secret file read: a token or key is a few hundred bytes, never megabytes. */
const SECRET_FILE_MAX_BYTES = 64 * 1024;

/** The text of the regular file `file`, at most `max` bytes; a string describing the refusal otherwise. */
function readSmallFile(file: string, max: number): { text: string } | { refusal: string } {
  let descriptor: number;
  try {
    descriptor = openSync(file, "r");
  } catch (error) {
    return { refusal: `cannot read ${file}: ${errnoCode(error) ?? String(error)}` };
  }
  try {
    // A device or a FIFO (/dev/zero, a pipe) would never end: only a regular file is read.
    const stats = fstatSync(descriptor);
    if (!stats.isFile()) return { refusal: `cannot read ${file}: not a regular file` };
    if (stats.size > max) return { refusal: `cannot read ${file}: larger than ${max} bytes` };
    const buffer = Buffer.alloc(max + 1);
    let length = 0;
    for (let read = -1; read !== 0 && length <= max; length += read) {
      read = readSync(descriptor, buffer, length, buffer.length - length, null);
    }
    if (length > max) return { refusal: `cannot read ${file}: larger than ${max} bytes` };
    return { text: buffer.subarray(0, length).toString("utf8") };
  } catch (error) {
    return { refusal: `cannot read ${file}: ${errnoCode(error) ?? String(error)}` };
  } finally {
    closeSync(descriptor);
  }
}

/**
 * The path of a file holding a secret (a systemd credential, a Docker secret), which gives the
 * file's content, trailing line breaks removed, checked by `inner`. The path is relative to the
 * working directory. The file is read when the configuration is validated: at start-up, by
 * `vigie config check` and on every reload. Errors name the path, never the content.
 */
export function secretFile(inner: Validator<string>): Validator<string> {
  return (value, path) => {
    const file = string({ min: 1 })(value, path);
    const read = readSmallFile(file, SECRET_FILE_MAX_BYTES);
    if ("refusal" in read) throw new ValidationError(path, read.refusal);
    try {
      return inner(read.text.replace(/[\r\n]+$/, ""), path);
    } catch (error) {
      if (error instanceof ValidationError) throw new ValidationError(path, `the content of ${file} ${error.rule}`);
      throw error;
    }
  };
}
