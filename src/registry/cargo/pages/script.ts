/**
 * The pages' script as the server serves it: src/registry/browser/pages.ts, bundled by esbuild into
 * `dist/registry/browser/pages.js` (scripts/build-browser.mjs, run by `npm run build`), read once at
 * start-up and kept in memory with its entity tag.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { errnoCode } from "../../../platform/errors.js";

/** The built script, in the module folder once compiled (`dist/registry/browser/`). */
export const PAGES_SCRIPT_FILE = new URL("../../browser/pages.js", import.meta.url);

/** The script and its entity tag (RFC 9110 §8.8.3), which changes with its content. */
export interface PagesScript {
  readonly source: string;
  /** A strong entity tag, quoted. */
  readonly etag: string;
}

/**
 * Reads the built script.
 * @returns undefined when the file is missing (the sources run without `npm run build`): the
 *   pages of a public registry need no script; a private one's cannot sign in then
 * @throws Error when the file exists but cannot be read
 */
export async function loadPagesScript(file: URL = PAGES_SCRIPT_FILE): Promise<PagesScript | undefined> {
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
