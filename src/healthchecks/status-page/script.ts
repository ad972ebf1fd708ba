/**
 * The status page's refresh script as the server serves it: browser/status.ts, bundled into
 * `dist/healthchecks/browser/status.js`. Without it the page works without refreshing itself.
 */
import { type BuiltScript, loadBuiltScript } from "../../platform/built-script.js";

/** The built script, in the module folder once compiled (`dist/healthchecks/browser/`). */
export const STATUS_SCRIPT_FILE = new URL("../browser/status.js", import.meta.url);

/** The script and its entity tag. */
export type StatusScript = BuiltScript;

/** Reads the built script; undefined when it is missing. @throws Error when it cannot be read */
export function loadStatusScript(file: URL = STATUS_SCRIPT_FILE): Promise<StatusScript | undefined> {
  return loadBuiltScript(file);
}
