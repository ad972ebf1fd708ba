/**
 * Reading an upstream sparse index file (one JSON object per line, one line per version, Cargo's
 * index format https://doc.rust-lang.org/cargo/reference/registry-index.html#json-schema) before it
 * is kept and served: each line must name the crate asked for with a valid version, so that what
 * the network sent never becomes a path or a URL without being checked.
 */
import { isPlainObject } from "../../../platform/validation.js";
import { canonicalCrateName, crateName, quoted } from "../names.js";
import { publishVersion } from "../publish.js";
import type { DownloadTarget } from "./download-url.js";

/** An index file the mirror will not keep: the sentence says why. */
export class BadIndexFileError extends Error {}

const CHECKSUM = /^[0-9a-f]{64}$/;

/** Whether a text is a version as Cargo publishes them (strict SemVer 2.0, build metadata allowed). */
export function isCrateVersion(text: string): boolean {
  try {
    publishVersion(text);
    return true;
  } catch {
    return false;
  }
}

/** The fields the mirror reads of one line, once checked. */
function readLine(line: string, lowerName: string, number: number): DownloadTarget {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new BadIndexFileError(`line ${number} is not JSON`);
  }
  if (!isPlainObject(value)) throw new BadIndexFileError(`line ${number} is not an object`);
  const { name, vers, cksum } = value;
  let valid: string;
  try {
    valid = crateName(name);
  } catch (error) {
    throw new BadIndexFileError(`line ${number}: ${(error as Error).message}`);
  }
  // Cargo asks for the file of the lower-cased name; `foo_bar` and `foo-bar` are one crate.
  if (canonicalCrateName(valid) !== canonicalCrateName(lowerName)) {
    throw new BadIndexFileError(`line ${number} is about crate ${quoted(valid)}, not ${lowerName}`);
  }
  if (typeof vers !== "string" || !isCrateVersion(vers)) {
    throw new BadIndexFileError(`line ${number}: invalid version ${quoted(String(vers))}`);
  }
  if (typeof cksum !== "string" || !CHECKSUM.test(cksum)) {
    throw new BadIndexFileError(`line ${number}: cksum is not a SHA-256 in hexadecimal`);
  }
  return { name: valid, vers, cksum };
}

/** The non-empty lines of an index file. */
function linesOf(body: Buffer): string[] {
  return body
    .toString("utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
}

/**
 * Checks every line of an upstream index file for the crate `lowerName` (as its index path names
 * it, lower-cased).
 * @throws BadIndexFileError naming the first wrong line
 */
export function checkIndexFile(body: Buffer, lowerName: string): void {
  const lines = linesOf(body);
  for (let number = 1; number <= lines.length; number++) readLine(lines[number - 1] ?? "", lowerName, number);
}

/**
 * The line of version `vers` (compared as written, as cargo asks for it) in an index file that
 * {@link checkIndexFile} accepted, or undefined when the crate has no such version.
 */
export function findVersion(body: Buffer, lowerName: string, vers: string): DownloadTarget | undefined {
  const lines = linesOf(body);
  for (let number = 1; number <= lines.length; number++) {
    const line = lines[number - 1] ?? "";
    // Only lines that may hold the version are parsed: a big crate has thousands.
    if (!line.includes(`"${vers}"`)) continue;
    const target = readLine(line, lowerName, number);
    if (target.vers === vers) return target;
  }
  return undefined;
}
