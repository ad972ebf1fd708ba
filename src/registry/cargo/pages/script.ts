/**
 * The pages' script as the server serves it: src/registry/browser/pages.ts, bundled into
 * `dist/registry/browser/pages.js`. The pages of a public registry need no script; without it a
 * private one's cannot sign in.
 */
import { type BuiltScript, loadBuiltScript } from "../../../platform/built-script.js";

/** The built script, in the module folder once compiled (`dist/registry/browser/`). */
export const PAGES_SCRIPT_FILE = new URL("../../browser/pages.js", import.meta.url);

/** The script and its entity tag. */
export type PagesScript = BuiltScript;

/** Reads the built script; undefined when it is missing. @throws Error when it cannot be read */
export function loadPagesScript(file: URL = PAGES_SCRIPT_FILE): Promise<PagesScript | undefined> {
  return loadBuiltScript(file);
}
