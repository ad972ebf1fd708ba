/** The version of the installed package, from its package.json (one directory above dist/). */
import { createRequire } from "node:module";
import { isPlainObject } from "./validation.js";

const manifest: unknown = createRequire(import.meta.url)("../../package.json");

/** `package.json`'s `version`, such as `0.1.0`. */
export const VERSION: string =
  isPlainObject(manifest) && typeof manifest.version === "string" ? manifest.version : "unknown";
