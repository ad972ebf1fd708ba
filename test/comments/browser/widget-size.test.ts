/**
 * The size budget of the comment widget (at most 5 kB gzip, CSS included), measured
 * on what the build ships: scripts/build-browser.mjs run into a temporary directory, each file
 * compressed with gzip level 9 (as `gzip -9`). Also: the widget carries its CSS, and no built
 * script writes HTML.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { constants, gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../support/temporary.js";

/** The widget's 5 kB, read as 5 000 bytes (the stricter reading of kB). */
const WIDGET_BUDGET_BYTES = 5_000;
/** The moderation page's script and style: no budget in the spec; this one catches a framework slipping in. */
const ADMIN_BUDGET_BYTES = 12_000;

const BUILD_SCRIPT = resolve(import.meta.dirname, "../../../scripts/build-browser.mjs");

function gzipBytes(file: string): number {
  return gzipSync(readFileSync(file), { level: constants.Z_BEST_COMPRESSION }).length;
}

describe("the built browser files of comments", () => {
  const outdir = temporaryDirectory("vigie-browser-build-");
  const file = (name: string) => join(outdir, "comments", "browser", name);

  beforeAll(async () => {
    await promisify(execFile)(process.execPath, [BUILD_SCRIPT, "--outdir", outdir]);
  }, 60_000);

  it(`keeps widget.js within ${WIDGET_BUDGET_BYTES} bytes gzip, CSS included`, () => {
    const bytes = gzipBytes(file("widget.js"));
    console.log(`widget.js: ${readFileSync(file("widget.js")).length} bytes, ${bytes} bytes gzip -9`);
    expect(bytes).toBeLessThanOrEqual(WIDGET_BUDGET_BYTES);
    // Its CSS is inside, not a second file to load.
    expect(readFileSync(file("widget.js"), "utf8")).toContain(".vigie{");
  });

  it(`keeps the moderation page's admin.js and admin.css within ${ADMIN_BUDGET_BYTES} bytes gzip`, () => {
    const bytes = gzipBytes(file("admin.js")) + gzipBytes(file("admin.css"));
    console.log(`admin.js + admin.css: ${bytes} bytes gzip -9`);
    expect(bytes).toBeLessThanOrEqual(ADMIN_BUDGET_BYTES);
  });

  it("never writes HTML: no innerHTML, outerHTML, insertAdjacentHTML or document.write", () => {
    for (const name of ["widget.js", "admin.js"]) {
      expect(readFileSync(file(name), "utf8"), name).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write/,
      );
    }
  });
});
