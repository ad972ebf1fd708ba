/**
 * The real widget as the server serves it (docs/comments.md): built from src/comments/browser/ by
 * scripts/build-browser.mjs into a temporary directory (the route reads dist otherwise, which the
 * sources run by vitest have not), served byte for byte by `/comments/widget.js`, and at most
 * 5 000 bytes gzip-compressed, CSS included (the widget carries its style). The moderation page's
 * script is served from the same build.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { WIDGET_GZIP_BUDGET_BYTES } from "../../src/comments/assets.js";
import type { VigieServer } from "../../src/server.js";
import { temporaryDirectory } from "../support/temporary.js";
import { startComments } from "./support.js";

const build = vi.hoisted(() => ({ directory: "" }));

vi.mock("../../src/comments/assets.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/comments/assets.js")>();
  return {
    ...original,
    loadCommentAssets: () => original.loadCommentAssets(pathToFileURL(`${build.directory}/comments/browser/`)),
  };
});

let server: VigieServer;
beforeAll(async () => {
  build.directory = temporaryDirectory("vigie-widget-build-");
  const root = resolve(import.meta.dirname, "../..");
  execFileSync(process.execPath, [join(root, "scripts/build-browser.mjs"), "--outdir", build.directory]);
  server = await startComments("sqlite::memory:");
});
afterAll(async () => {
  await server?.close();
});

it("serves the built widget byte for byte, within 5 000 bytes gzip-compressed", async () => {
  const built = readFileSync(join(build.directory, "comments/browser/widget.js"));
  const plain = await server.app.inject({ method: "GET", url: "/comments/widget.js" });
  expect(plain.statusCode).toBe(200);
  expect(plain.rawPayload.equals(built)).toBe(true);

  const compressed = await server.app.inject({
    method: "GET",
    url: "/comments/widget.js",
    headers: { "accept-encoding": "gzip" },
  });
  // A tiny script is sent as is (gzip would not make it smaller); the budget holds either way.
  const sent = compressed.headers["content-encoding"] === "gzip" ? compressed.rawPayload : plain.rawPayload;
  if (compressed.headers["content-encoding"] === "gzip") expect(gunzipSync(sent).equals(built)).toBe(true);
  expect(sent.length).toBeLessThanOrEqual(WIDGET_GZIP_BUDGET_BYTES);
});

it("serves the built moderation script", async () => {
  const built = readFileSync(join(build.directory, "comments/browser/admin.js"));
  const response = await server.app.inject({ method: "GET", url: "/comments/admin.js" });
  expect(response.statusCode).toBe(200);
  expect(response.rawPayload.equals(built)).toBe(true);
});
