/**
 * Builds the browser code with esbuild, one minified file per entry with no import, for the
 * browsers of the last few years (ES2022: Chrome 94, Firefox 93, Safari 16.4), into dist/:
 * src/healthchecks/browser/status.ts (the status page's refresh script),
 * src/comments/browser/widget.ts (the comment widget a site embeds) and
 * src/comments/browser/admin.ts (the moderation page) and src/registry/browser/pages.ts (the sign-in
 * of a private registry's pages). Run by `npm run build` after tsc.
 *
 * Usage: node scripts/build-browser.mjs [--outdir <directory>]   (default: dist)
 * Paths are resolved from the repository, whatever the working directory.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const root = resolve(import.meta.dirname, "..");
const { values } = parseArgs({ options: { outdir: { type: "string", default: resolve(root, "dist") } } });

await build({
  absWorkingDir: root,
  entryPoints: {
    "healthchecks/browser/status": "src/healthchecks/browser/status.ts",
    "comments/browser/widget": "src/comments/browser/widget.ts",
    "comments/browser/admin": "src/comments/browser/admin.ts",
    "registry/browser/pages": "src/registry/browser/pages.ts",
  },
  outdir: resolve(values.outdir),
  bundle: true,
  minify: true,
  format: "iife",
  platform: "browser",
  target: "es2022",
  tsconfig: "tsconfig.browser.json",
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
