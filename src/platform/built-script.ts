/**
 * A browser script as the server serves it: bundled by esbuild into `dist/` (scripts/build-browser.mjs,
 * run by `npm run build`), read once at start-up and kept in memory with its entity tag.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { errnoCode } from "./errors.js";

/** A built script and its entity tag (RFC 9110 §8.8.3), which changes with its content. */
export interface BuiltScript {
  readonly source: string;
  /** A strong entity tag, quoted: `"Jx4…"`. */
  readonly etag: string;
}

/**
 * Reads a built script.
 *
 * @returns undefined when the file is missing (a build without the browser step, or the sources
 *   run directly): each page says what it does without its script
 * @throws Error when the file exists but cannot be read
 */
export async function loadBuiltScript(file: URL): Promise<BuiltScript | undefined> {
  let source: string;
  try {
    source = await readFile(file, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw error;
  }
  const etag = `"${createHash("sha256").update(source).digest("base64url").slice(0, 22)}"`;
  return { source, etag };
}
