/** The version of the installed package, from its package.json (one directory above dist/). */
import { createRequire } from "node:module";

/** `package.json`'s `version`, such as `0.1.0`. */
export const VERSION: string = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;
