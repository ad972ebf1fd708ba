/**
 * The status page's refresh script as the server serves it: browser/status.ts, bundled by esbuild
 * into `dist/healthchecks/browser/status.js` (scripts/build-browser.mjs, run by `npm run build`),
 * read once at start-up and kept in memory.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { errnoCode } from "../../platform/errors.js";

/** The built script, in the module folder once compiled (`dist/healthchecks/browser/`). */
export const STATUS_SCRIPT_FILE = new URL("../browser/status.js", import.meta.url);

/** The script and its entity tag (RFC 9110 §8.8.3), which changes with its content. */
export interface StatusScript {
  readonly source: string;
  /** A strong entity tag, quoted: `"Jx4…"`. */
  readonly etag: string;
}

/**
 * Reads the built script.
 *
 * @returns undefined when the file is missing (a build without the browser step, or the sources
 *   run directly): the page then works without refreshing itself
 * @throws Error when the file exists but cannot be read
 */
export async function loadStatusScript(file: URL = STATUS_SCRIPT_FILE): Promise<StatusScript | undefined> {
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
