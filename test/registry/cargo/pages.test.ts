/**
 * The registry's web pages (docs/cargo.md, "Web pages") through `app.inject()`, on SQLite and on
 * PostgreSQL: the crate list and its search, a crate page (README rendered inert, versions with
 * yanked ones marked, dependencies, owners, downloads, how to use it), 404, the headers every page
 * carries, the size budget, and a private registry's sign-in frame.
 */
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PAGES_CSP } from "../../../src/registry/cargo/pages/layout.js";
import { createRegistryModule } from "../../../src/registry/index.js";
import type { VigieServer } from "../../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { startTestServer } from "../../support/server.js";
import { temporaryDirectory } from "../../support/temporary.js";
import { dropWhenClosed } from "../sessions.js";
import { dependency, publication } from "./frames.js";

const PUBLIC_URL = "http://registry.test:8080";
const ROOT_PASSWORD = "root-password-1";
/** The most a page may weigh, in bytes (docs/cargo.md): 50 kB read as 50 000 bytes. */
const PAGE_BUDGET = 50_000;

const HOSTILE_README = [
  "# Pretty crate",
  "",
  "<script>alert('readme')</script>",
  "",
  "[click me](javascript:alert(1)) and [data](data:text/html,<script>alert(2)</script>)",
  "",
  '<img src=x onerror="alert(3)"> ![badge](https://ci.example.org/badge.svg)',
  "",
  "```rust",
  "let parsed = pretty::parse(input)?;",
  "```",
].join("\n");

describe.each(DATABASE_KINDS)("Cargo registry web pages on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let server: VigieServer;
    let privateServer: VigieServer;
    let app: FastifyInstance;
    let root: string;

    const start = (authRequired: boolean, storage: string) =>
      startTestServer({
        modules: [
          createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: ROOT_PASSWORD } }),
        ],
        config: {
          database: { url: testDatabase.url },
          http: { "public-url": PUBLIC_URL },
          registry: { enabled: true, cargo: { enabled: true, "auth-required": authRequired, storage } },
        },
      });
    const token = async (on: FastifyInstance) => {
      const answer = await on.inject({
        method: "POST",
        url: "/api/v1/registry/token",
        payload: { name: `t-${Math.random().toString(36).slice(2)}`, user: "root", password: ROOT_PASSWORD },
      });
      expect(answer.statusCode, answer.body).toBe(201);
      return answer.json().token as string;
    };
    const publish = async (name: string, vers: string, fields: Record<string, unknown> = {}) => {
      const made = await publication(name, vers, fields);
      const answer = await app.inject({
        method: "PUT",
        url: "/api/v1/crates/new",
        headers: { authorization: root },
        payload: made.body,
      });
      expect(answer.statusCode, answer.body).toBe(200);
    };
    const page = (url: string, headers: Record<string, string> = {}) => app.inject({ method: "GET", url, headers });

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      const storage = join(temporaryDirectory("vigie-crates-"), "crates");
      server = await start(false, storage);
      app = server.app;
      root = await token(app);
      await publish("pretty", "0.1.0", { description: "Pretty printing", keywords: ["format"] });
      await publish("pretty", "0.2.0", {
        description: "Pretty printing, faster",
        keywords: ["format", "print"],
        readme: HOSTILE_README,
        repository: "https://git.example.org/pretty",
        license: "MIT OR Apache-2.0",
      });
      await publish("pretty", "0.3.0-beta.1", { description: "next", keywords: ["beta"] });
      await app.inject({
        method: "DELETE",
        url: "/api/v1/crates/pretty/0.3.0-beta.1/yank",
        headers: { authorization: root, "content-type": "application/json" },
        payload: Buffer.alloc(0),
      });
      await publish("uses-pretty", "1.0.0", {
        description: "Depends on pretty",
        deps: [
          dependency("pretty", "^0.2"),
          dependency("serde", "^1", { registry: "https://github.com/rust-lang/crates.io-index", optional: true }),
          dependency("helper", "^0.1", { kind: "dev" }),
        ],
      });
      await publish("all-yanked", "0.1.0", {});
      await app.inject({
        method: "DELETE",
        url: "/api/v1/crates/all-yanked/0.1.0/yank",
        headers: { authorization: root, "content-type": "application/json" },
        payload: Buffer.alloc(0),
      });
      // The download count of pretty 0.2.0: two downloads, flushed on close at the latest.
      for (let i = 0; i < 2; i++) await page("/api/v1/crates/pretty/0.2.0/download");
      privateServer = await start(true, join(temporaryDirectory("vigie-crates-"), "crates"));
    });

    afterAll(async () => {
      await server?.close();
      await privateServer?.close();
      await dropWhenClosed(testDatabase);
    });

    it("lists every crate with its highest version that is not yanked, and a search form", async () => {
      const answer = await page("/registry");
      expect(answer.statusCode).toBe(200);
      expect(answer.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(answer.body).toContain('<form class="search" method="get" action="/registry" role="search">');
      expect(answer.body).toContain('<a href="/registry/pretty"><strong>pretty</strong></a> 0.2.0');
      expect(answer.body).toContain('<a href="/registry/uses-pretty"><strong>uses-pretty</strong></a> 1.0.0');
      expect(answer.body).toContain('<strong>all-yanked</strong></a> <span class="yanked">yanked</span>');
      expect(answer.body).toContain("3 crates");
    });

    it("searches names, descriptions and keywords with ?q, and keeps the words in the form", async () => {
      // A crate's description and keywords are those of its latest publish (0.3.0-beta.1 here).
      const byKeyword = await page("/registry?q=beta");
      expect(byKeyword.body).toContain('href="/registry/pretty"');
      expect(byKeyword.body).not.toContain("/registry/uses-pretty");
      expect(byKeyword.body).toContain('value="beta"');
      const byDescription = await page("/registry?q=DEPENDS+on");
      expect(byDescription.body).toContain('href="/registry/uses-pretty"');
      expect(byDescription.body).not.toContain('href="/registry/pretty"');
      expect(byDescription.body).toContain("1 crate.");
      const none = await page(`/registry?q=${encodeURIComponent('"><script>x</script>')}`);
      expect(none.statusCode).toBe(200);
      expect(none.body).toContain("No crate found.");
      expect(none.body).not.toContain("<script>x");
      expect(none.body).toContain('value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"');
    });

    it("refuses a bad page number or an overlong search with 400", async () => {
      expect((await page("/registry?page=0")).statusCode).toBe(400);
      expect((await page(`/registry?q=${"x".repeat(1001)}`)).statusCode).toBe(400);
      expect((await page("/registry?q=a&q=b")).statusCode).toBe(400);
      const beyond = await page("/registry?page=9");
      expect(beyond.statusCode).toBe(200);
      expect(beyond.body).toContain("No crate found.");
    });

    it("shows a crate: the highest version not yanked, its README inert, versions, owners, downloads, usage", async () => {
      const answer = await page("/registry/pretty");
      expect(answer.statusCode).toBe(200);
      const html = answer.body;
      expect(html).toContain('<h1>pretty <span class="muted">0.2.0</span></h1>');
      expect(html).toContain("<p>Pretty printing, faster</p>");
      expect(html).toContain("<h3>Pretty crate</h3>");
      expect(html).toContain("<code>cargo add pretty --registry vigie</code>");
      expect(html).toContain(`index = "sparse+${PUBLIC_URL}/api/v1/cargo/index/"`);
      expect(html).toContain('0.3.0-beta.1 <span class="yanked">yanked</span>');
      expect(html).toContain('<li>root <span class="muted">(created at start-up from VIGIE_ADMIN_NAME)</span></li>');
      expect(html).toContain("MIT OR Apache-2.0");
      expect(html).toContain('<a href="https://git.example.org/pretty" rel="nofollow ugc noopener">');
      // Newest first.
      expect(html.indexOf("0.3.0-beta.1")).toBeLessThan(html.indexOf("<td>0.1.0"));
      // The README's hostile parts are text.
      expect(html).toContain("&lt;script&gt;alert('readme')&lt;/script&gt;");
      expect(html).not.toMatch(/<script(?! src="\/registry\/registry\.js")/);
      // (The page's own favicon is `data:,`: the README part is what is checked.)
      const readme = html.slice(html.indexOf('<div class="readme">'), html.indexOf("<h2>Dependencies"));
      expect(readme).not.toMatch(/href="(javascript|data):/i);
      expect(readme).toContain("[data](data:text/html,&lt;script&gt;alert(2)&lt;/script&gt;)");
      expect(html).not.toMatch(/<img\b/i);
      expect(html).not.toMatch(/\son[a-z]+="/i);
    });

    it("lists dependencies, linking those of this registry", async () => {
      const html = (await page("/registry/uses-pretty")).body;
      expect(html).toContain('<td><a href="/registry/pretty">pretty</a></td><td><code>^0.2</code></td><td></td>');
      expect(html).toContain(
        'serde <span class="muted">(crates.io)</span></td><td><code>^1</code></td><td>optional</td>',
      );
      expect(html).toContain("<td>dev</td>");
      expect(html).toContain("This version was published without a README.");
    });

    it("finds a crate whatever its case and - or _, and shows a crate whose every version is yanked", async () => {
      expect((await page("/registry/Uses_Pretty")).body).toContain("<h1>uses-pretty");
      const yanked = await page("/registry/all-yanked");
      expect(yanked.statusCode).toBe(200);
      expect(yanked.body).toContain("(every version is yanked)");
    });

    it("answers 404 with a page for an unknown crate or a name that cannot be one", async () => {
      for (const name of ["nothing-here", "%3Cscript%3E", "a".repeat(65)]) {
        const answer = await page(`/registry/${name}`);
        expect(answer.statusCode, name).toBe(404);
        expect(answer.headers["content-type"]).toBe("text/html; charset=utf-8");
        expect(answer.body).toContain("<h1>Not found</h1>");
        expect(answer.body).not.toContain("<script>");
      }
    });

    it("counts downloads on the crate page", async () => {
      await server.close();
      server = await start(false, join(temporaryDirectory("vigie-crates-"), "crates"));
      app = server.app;
      expect((await page("/registry/pretty")).body).toContain("<dt>Downloads</dt><dd>2</dd>");
    });

    it("sends the CSP, nosniff and no-referrer, needs no script, and stays under 50 kB", async () => {
      for (const url of ["/registry", "/registry/pretty", "/registry/nothing-here"]) {
        const answer = await page(url);
        expect(answer.headers["content-security-policy"]).toBe(PAGES_CSP);
        expect(answer.headers["x-content-type-options"]).toBe("nosniff");
        expect(answer.headers["referrer-policy"]).toBe("no-referrer");
        expect(answer.headers["cache-control"]).toBe("no-cache");
        expect(answer.body).not.toContain("<script");
        expect(Buffer.byteLength(answer.body), url).toBeLessThan(PAGE_BUDGET);
      }
      expect(PAGES_CSP).toContain("default-src 'none'");
      expect(PAGES_CSP).toContain("form-action 'self'");
    });

    describe("with auth-required", () => {
      it("answers the sign-in frame (401, the script, no crate) without a token or with a bad one", async () => {
        for (const headers of [{}, { authorization: "Bearer vigie_not-a-token" }]) {
          for (const url of ["/registry", "/registry/pretty"]) {
            const answer = await privateServer.app.inject({ method: "GET", url, headers });
            expect(answer.statusCode, url).toBe(401);
            expect(answer.headers["cache-control"]).toBe("no-store");
            expect(answer.body).toContain('<main id="registry" data-signin="401">');
            expect(answer.body).toContain('<script src="/registry/registry.js" defer></script>');
            expect(answer.body).toContain("<noscript>");
            expect(answer.body).not.toContain("cargo add");
          }
        }
      });

      it("shows the pages to a valid token", async () => {
        const privateToken = await token(privateServer.app);
        const answer = await privateServer.app.inject({
          method: "GET",
          url: "/registry",
          headers: { authorization: `Bearer ${privateToken}` },
        });
        expect(answer.statusCode).toBe(200);
        expect(answer.headers["cache-control"]).toBe("no-store");
        expect(answer.body).toContain("<h1>Crates</h1>");
      });
    });
  });
});
