/**
 * The widget and the moderation page as the server serves them (docs/comments.md), through
 * `app.inject()`: `/comments/widget.js`, `/comments/admin`, `/comments/admin.js` and
 * `/comments/admin.css` with their types, caching, strong entity tags and 304s, gzip when accepted,
 * `nosniff`, the page's shell and its Content-Security-Policy; a missing build answers 404 after
 * one warning. The files are fixtures written to a temporary directory (the build is the browser
 * engineer's; assets-build.test.ts serves the real one). SQLite only: these routes read no database.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { gunzipSync } from "node:zlib";
import Fastify, { type FastifyBaseLogger } from "fastify";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ADMIN_PAGE_CSP, renderAdminPage } from "../../src/comments/admin-page.js";
import { acceptsGzip, staticAsset } from "../../src/comments/assets.js";
import { registerAssetRoutes } from "../../src/comments/routes/assets.js";
import { installErrorHandling } from "../../src/platform/errors.js";
import type { VigieServer } from "../../src/server.js";
import { temporaryDirectory } from "../support/temporary.js";
import { startComments } from "./support.js";

/** Where the mocked loader reads the built files from; set by each test before starting a server. */
const fixture = vi.hoisted(() => ({ directory: undefined as URL | undefined }));

vi.mock("../../src/comments/assets.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/comments/assets.js")>();
  return { ...original, loadCommentAssets: () => original.loadCommentAssets(fixture.directory) };
});

/** Large and repetitive enough that gzip makes it smaller. */
const WIDGET = `(()=>{${'document.querySelectorAll("[data-vigie-count]").forEach(e=>e.textContent="0");'.repeat(20)}})();\n`;
const ADMIN_SCRIPT = `(()=>{${'document.getElementById("moderation").append("x");'.repeat(20)}})();\n`;
const ADMIN_STYLE = "main{max-width:60rem;margin:0 auto}\n".repeat(10);

let built: string;
let empty: string;
beforeAll(() => {
  built = temporaryDirectory("vigie-comment-assets-");
  empty = temporaryDirectory("vigie-comment-assets-none-");
  writeFileSync(join(built, "widget.js"), WIDGET);
  writeFileSync(join(built, "admin.js"), ADMIN_SCRIPT);
  writeFileSync(join(built, "admin.css"), ADMIN_STYLE);
});

let server: VigieServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A comments server whose built files are those of `directory`. */
async function start(directory: string): Promise<VigieServer> {
  fixture.directory = pathToFileURL(`${directory}/`);
  server = await startComments("sqlite::memory:");
  return server;
}

const get = (url: string, headers: Record<string, string> = {}) =>
  (server as VigieServer).app.inject({ method: "GET", url, headers });

describe("the built files", () => {
  const files = [
    ["/comments/widget.js", WIDGET, "text/javascript; charset=utf-8", "public, max-age=3600"],
    ["/comments/admin.js", ADMIN_SCRIPT, "text/javascript; charset=utf-8", "no-cache"],
    ["/comments/admin.css", ADMIN_STYLE, "text/css; charset=utf-8", "no-cache"],
  ] as const;

  it.each(files)(
    "serves %s with its type, cache, tag and nosniff; 304 when unchanged",
    async (url, body, type, cache) => {
      await start(built);
      const response = await get(url);
      expect(response.statusCode).toBe(200);
      expect(response.body).toBe(body);
      expect(response.headers["content-type"]).toBe(type);
      expect(response.headers["cache-control"]).toBe(cache);
      expect(response.headers["x-content-type-options"]).toBe("nosniff");
      expect(response.headers["content-encoding"]).toBeUndefined();
      expect(response.headers.vary).toBe("Accept-Encoding");
      const etag = `${response.headers.etag}`;
      expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
      // The tag is the content's: the same on every start, as on every instance behind a balancer.
      expect(etag).toBe(staticAsset(body, type).identity.etag);

      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const again = await get(url, { "if-none-match": ifNoneMatch });
        expect([ifNoneMatch, again.statusCode, again.body]).toEqual([ifNoneMatch, 304, ""]);
        expect(again.headers.etag).toBe(etag);
        expect(again.headers["cache-control"]).toBe(cache);
      }
      expect((await get(url, { "if-none-match": '"other"' })).statusCode).toBe(200);

      const head = await (server as VigieServer).app.inject({ method: "HEAD", url });
      expect([head.statusCode, head.body, head.headers.etag]).toEqual([200, "", etag]);
    },
  );

  it.each(files)("sends %s gzip-compressed to clients that accept it, with its own tag", async (url, body) => {
    await start(built);
    const plain = await get(url);
    const compressed = await get(url, { "accept-encoding": "gzip, deflate, br" });
    expect(compressed.statusCode).toBe(200);
    expect(compressed.headers["content-encoding"]).toBe("gzip");
    expect(compressed.headers.vary).toBe("Accept-Encoding");
    expect(gunzipSync(compressed.rawPayload).toString("utf8")).toBe(body);
    expect(compressed.rawPayload.length).toBeLessThan(Buffer.byteLength(body));
    const etag = `${compressed.headers.etag}`;
    expect(etag).not.toBe(plain.headers.etag);
    expect((await get(url, { "accept-encoding": "gzip", "if-none-match": etag })).statusCode).toBe(304);
    // The identity tag does not validate the gzip representation, nor the reverse.
    expect((await get(url, { "accept-encoding": "gzip", "if-none-match": `${plain.headers.etag}` })).statusCode).toBe(
      200,
    );
    expect((await get(url, { "if-none-match": etag })).statusCode).toBe(200);
    for (const refused of ["gzip;q=0", "identity", "br", "gzip;q=0, *"]) {
      expect((await get(url, { "accept-encoding": refused })).headers["content-encoding"]).toBeUndefined();
    }
  });

  it("serves the widget to pages of any origin, as a script tag loads it", async () => {
    await start(built);
    const response = await get("/comments/widget.js", { origin: "https://blog.example.org" });
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe(WIDGET);
  });
});

describe("the moderation page", () => {
  it("serves the HTML shell with its strict Content-Security-Policy, revalidated at each use", async () => {
    await start(built);
    const page = await get("/comments/admin");
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["content-security-policy"]).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.headers["content-security-policy"]).toBe(ADMIN_PAGE_CSP);
    expect(page.headers["referrer-policy"]).toBe("no-referrer");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.headers["cache-control"]).toBe("no-cache");
    expect(page.headers["access-control-allow-origin"]).toBeUndefined();

    const html = page.body;
    expect(html).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(html).toContain("<title>Comment moderation · Vigie</title>");
    expect(html).toContain('<main id="moderation"><noscript><p>This page needs JavaScript');
    // Only the script and the style sheet of this origin: nothing inline for the policy to refuse.
    expect(html.match(/<script[^>]*>/g)).toEqual(['<script src="/comments/admin.js" defer>']);
    expect(html.match(/<link[^>]*>/g)).toEqual([
      '<link rel="icon" href="data:,">',
      '<link rel="stylesheet" href="/comments/admin.css">',
    ]);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);

    const etag = `${page.headers.etag}`;
    const again = await get("/comments/admin", { "if-none-match": etag });
    expect([again.statusCode, again.headers["content-security-policy"]]).toEqual([304, ADMIN_PAGE_CSP]);
    const compressed = await get("/comments/admin", { "accept-encoding": "gzip" });
    expect(gunzipSync(compressed.rawPayload).toString("utf8")).toBe(html);
    expect(compressed.headers["content-security-policy"]).toBe(ADMIN_PAGE_CSP);
  });

  it("answers 404 for files that are not built, and says so on the page", async () => {
    await start(empty);
    for (const url of ["/comments/widget.js", "/comments/admin.js", "/comments/admin.css"]) {
      const response = await get(url);
      expect([url, response.statusCode, response.json()]).toEqual([url, 404, { error: `${url} is not built` }]);
    }
    const page = await get("/comments/admin");
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toMatch(/<script|stylesheet/);
    expect(page.body).toContain("script is not built");
  });

  it("links only the files that are built", () => {
    expect(renderAdminPage({ script: true, style: false })).not.toContain("stylesheet");
    expect(renderAdminPage({ script: true, style: false })).toContain('<script src="/comments/admin.js" defer>');
  });
});

describe("registration", () => {
  it("logs one warning per missing file at start-up, none per request", async () => {
    const lines: string[] = [];
    const logger: FastifyBaseLogger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
    const app = Fastify({ loggerInstance: logger });
    installErrorHandling(app);
    await registerAssetRoutes(app, {
      assets: { widget: undefined, adminScript: staticAsset(ADMIN_SCRIPT, "text/javascript"), adminStyle: undefined },
    });
    await app.ready();
    const warnings = () => lines.map((line) => JSON.parse(line).msg);
    expect(warnings()).toEqual([
      "/comments/widget.js is not built (npm run build): it answers 404",
      "/comments/admin.css is not built (npm run build): it answers 404",
    ]);
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: "/comments/widget.js" })).statusCode).toBe(404);
    expect(warnings()).toHaveLength(2);
    await app.close();
  });
});

describe("Accept-Encoding", () => {
  it.each([
    [undefined, false],
    ["", false],
    ["gzip", true],
    ["GZIP", true],
    ["x-gzip", true],
    ["deflate, gzip;q=0.5", true],
    ["gzip;q=0", false],
    ["gzip; q=0.000", false],
    ["gzip;q=0.001", true],
    ["*", true],
    ["*;q=0", false],
    ["br, *;q=0.1", true],
    ["gzip;q=0, *", false],
    ["identity", false],
    ["br", false],
  ] as const)("%j accepts gzip: %s", (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });
});

afterAll(() => {
  fixture.directory = undefined;
});
