/**
 * The routes of docs/comments.md through `app.inject()` on SQLite and PostgreSQL: pages of the
 * public list (`?limit=&before=`), counts (`/api/v1/count/<website>?article=`), and the admin list
 * of a website across its articles (`/api/admin/comment/<website>?approved=&limit=&before=`):
 * answers, order, ties, headers, CORS, every 400 with its message, 404s, and auth.
 */
import { describe, expect, it } from "vitest";
import type { Comment } from "../../src/comments/resources.js";
import { PAGE_LIMIT_MAX } from "../../src/comments/storage.js";
import { DATABASE_KINDS } from "../support/databases.js";
import { oldestFirst, type Seed, seed, seedStore } from "./seed.js";
import { ADMIN_TOKEN, addComment, admin, commentsServers, type StartArguments } from "./support.js";

const NOW = 1_700_000_000_000;
const SECOND = 1_000;
const LIMIT_ERROR = "query parameter limit: must be an integer between 1 and 100";
const BEFORE_ERROR = "query parameter before: must be an integer number of milliseconds";
const APPROVED_ERROR = "query parameter approved: must be true or false";
const ARTICLE_NAME_ERROR = "query parameter article: must be 1 to 200 characters of A-Z a-z 0-9 . _ ~ -";
const ALLOWED = { origin: "https://blog.example.org" };
const EVIL = { origin: "https://evil.example.org" };

const ids = (comments: readonly { id: string }[]) => comments.map((comment) => comment.id);
/** `?article=a0&article=a1…` with `count` articles. */
const manyArticles = (count: number) => Array.from({ length: count }, (_, index) => `article=a${index}`).join("&");

describe.each(DATABASE_KINDS)("counts, pages and the admin list of a website on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip);
  const start = async (...args: StartArguments) => {
    const server = await servers.start(...args);
    return { app: server.app, store: seedStore(server) };
  };
  const get = (url: string, headers: Record<string, string> = {}) =>
    servers.current().app.inject({ method: "GET", url, headers });

  describe("pages of the public list", () => {
    it.skipIf(skip)("walks the newest page first, each page oldest first, before the first comment", async () => {
      const { store } = await start();
      const seeds: Seed[] = [];
      for (let i = 0; i < 120; i++) {
        seeds.push({ website: "site", article: "long", timestamp: NOW + i * SECOND, approved: true });
        // Pending ones in between are never listed.
        if (i % 12 === 0)
          seeds.push({ website: "site", article: "long", timestamp: NOW + i * SECOND + 1, approved: false });
      }
      const approved = (await seed(store, seeds)).filter((comment) => comment.approved);

      // Without parameters: unchanged, the whole list oldest first, from the cache, with its tag.
      const whole = await get("/api/v1/comment/site/long");
      expect(ids(whole.json())).toEqual(ids(approved));
      expect(whole.headers["cache-control"]).toBe("no-cache");

      const newest = await get("/api/v1/comment/site/long?limit=50");
      expect(newest.statusCode).toBe(200);
      expect(newest.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(newest.headers["cache-control"]).toBe("no-cache");
      expect(newest.headers.etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
      const first: Comment[] = newest.json();
      expect(first).toEqual(approved.slice(70));
      const notModified = await get("/api/v1/comment/site/long?limit=50", {
        "if-none-match": `${newest.headers.etag}`,
      });
      expect([notModified.statusCode, notModified.body]).toEqual([304, ""]);
      expect(notModified.headers.etag).toBe(newest.headers.etag);

      const second = await get(`/api/v1/comment/site/long?limit=50&before=${first[0]?.timestamp}`);
      expect(second.json()).toEqual(approved.slice(20, 70));
      expect(second.headers.etag).not.toBe(newest.headers.etag);
      // `before` alone: 50 per page.
      const third = await get(`/api/v1/comment/site/long?before=${second.json()[0].timestamp}`);
      expect(third.json()).toEqual(approved.slice(0, 20));
      expect((await get(`/api/v1/comment/site/long?before=${NOW}`)).json()).toEqual([]);
      expect((await get("/api/v1/comment/site/long?before=0")).json()).toEqual([]);
      expect((await get(`/api/v1/comment/site/long?limit=${PAGE_LIMIT_MAX}`)).json()).toEqual(approved.slice(20));
      // Leading zeros are still decimal integers; unknown parameters are ignored.
      expect((await get("/api/v1/comment/site/long?limit=007&x=1")).json()).toEqual(approved.slice(113));
      expect((await get("/api/v1/comment/site/nothing?limit=5")).json()).toEqual([]);
    });

    it.skipIf(skip)(
      "ends a page on a whole millisecond: comments sharing the boundary timestamp come along",
      async () => {
        const { store } = await start();
        const at = (offset: number): Seed => ({
          website: "site",
          article: "ties",
          timestamp: NOW + offset,
          approved: true,
        });
        const all = (await seed(store, [at(0), at(5), at(5), at(5), at(9)])).sort(oldestFirst);
        const page = await get("/api/v1/comment/site/ties?limit=2");
        expect(page.json()).toEqual(all.slice(1));
        expect((await get(`/api/v1/comment/site/ties?limit=2&before=${NOW + 5}`)).json()).toEqual(all.slice(0, 1));
        expect((await get("/api/v1/comment/site/ties?limit=1")).json()).toEqual(all.slice(4));
      },
    );

    it.skipIf(skip)("shows a comment posted or approved through the API at once", async () => {
      const { app } = await start({ websites: [{ name: "auto", "auto-approve": true }, { name: "held" }] });
      expect((await addComment(app, "auto", "post", { author: "Zoe" })).statusCode).toBe(201);
      expect((await get("/api/v1/comment/auto/post?limit=1")).json().map((c: Comment) => c.author)).toEqual(["Zoe"]);

      expect((await addComment(app, "held", "post")).statusCode).toBe(201);
      expect((await get("/api/v1/comment/held/post?limit=1")).json()).toEqual([]);
      const [pending] = (await admin(app, "GET", "/api/admin/comment/held?approved=false")).json();
      expect((await admin(app, "POST", `/api/admin/comment/held/post/${pending.id}`)).statusCode).toBe(200);
      expect(ids((await get("/api/v1/comment/held/post?limit=1")).json())).toEqual([pending.id]);
    });

    it.skipIf(skip)("refuses bad limit and before with 400 naming them, before looking at the website", async () => {
      await start({ websites: [{ name: "blog", "allowed-origins": [ALLOWED.origin] }] });
      for (const [query, error] of [
        ["limit=0", LIMIT_ERROR],
        ["limit=101", LIMIT_ERROR],
        ["limit=-1", LIMIT_ERROR],
        ["limit=1.5", LIMIT_ERROR],
        ["limit=1e1", LIMIT_ERROR],
        ["limit=abc", LIMIT_ERROR],
        ["limit=", LIMIT_ERROR],
        ["limit=%205", LIMIT_ERROR],
        ["limit=99999999999999999999", LIMIT_ERROR],
        ["limit=5&limit=6", LIMIT_ERROR],
        ["before=-1", BEFORE_ERROR],
        ["before=1.5", BEFORE_ERROR],
        ["before=1e12", BEFORE_ERROR],
        ["before=0x10", BEFORE_ERROR],
        ["before=abc", BEFORE_ERROR],
        ["before=", BEFORE_ERROR],
        ["before=9007199254740992", BEFORE_ERROR],
        ["before=1&before=2", BEFORE_ERROR],
        ["limit=10&before=yesterday", BEFORE_ERROR],
      ] as const) {
        const response = await get(`/api/v1/comment/blog/post?${query}`, ALLOWED);
        expect([query, response.statusCode, response.json()]).toEqual([query, 400, { error }]);
        // The page can read the error (CORS headers on errors too).
        expect(response.headers["access-control-allow-origin"]).toBe(ALLOWED.origin);
        const unknown = await get(`/api/v1/comment/shop/post?${query}`);
        expect([query, unknown.statusCode]).toEqual([query, 400]);
      }
      const unknown = await get("/api/v1/comment/shop/post?limit=5");
      expect([unknown.statusCode, unknown.json()]).toEqual([404, { error: "website shop not found" }]);
      expect((await get("/api/v1/comment/blog/post?before=9007199254740991")).statusCode).toBe(200);
    });

    it.skipIf(skip)("answers CORS requests on pages for the website's allowed origins", async () => {
      await start({ websites: [{ name: "blog", "allowed-origins": [ALLOWED.origin] }] });
      const ok = await get("/api/v1/comment/blog/post?limit=5", ALLOWED);
      expect(ok.statusCode).toBe(200);
      expect(ok.headers["access-control-allow-origin"]).toBe(ALLOWED.origin);
      expect(ok.headers.vary).toMatch(/Origin/);
      const evil = await get("/api/v1/comment/blog/post?limit=5", EVIL);
      expect(evil.statusCode).toBe(200);
      expect(evil.headers["access-control-allow-origin"]).toBeUndefined();
    });
  });

  describe("counts", () => {
    it.skipIf(skip)("counts the approved comments of every requested article, 0 for those without", async () => {
      const { app, store } = await start();
      const at = (article: string, approved: boolean): Seed => ({
        website: "counted",
        article,
        timestamp: NOW,
        approved,
      });
      await seed(store, [at("a", true), at("a", true), at("a", false), at("b", false), at("__proto__", true)]);
      await seed(store, [{ ...at("a", true), website: "other" }]);

      const response = await get("/api/v1/count/counted?article=a&article=b&article=none&article=__proto__&article=a");
      expect(response.statusCode).toBe(200);
      expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(response.headers["cache-control"]).toBe("no-cache");
      // Compared as entries: an object literal would read `__proto__` as the prototype.
      expect(Object.entries(response.json())).toEqual([
        ["a", 2],
        ["b", 0],
        ["none", 0],
        ["__proto__", 1],
      ]);
      expect(response.body).toBe('{"a":2,"b":0,"none":0,"__proto__":1}');

      // Approving shows in the count at once (no cache).
      const [pending] = (await admin(app, "GET", "/api/admin/comment/counted?approved=false")).json();
      const url = `/api/v1/count/counted?article=${pending.article}`;
      const before: number = (await get(url)).json()[pending.article];
      expect((await admin(app, "POST", `/api/admin/comment/counted/${pending.article}/${pending.id}`)).statusCode).toBe(
        200,
      );
      expect((await get(url)).json()).toEqual({ [pending.article]: before + 1 });

      const hundred = await get(`/api/v1/count/counted?${manyArticles(100)}`);
      expect(hundred.statusCode).toBe(200);
      expect(Object.keys(hundred.json())).toHaveLength(100);
      const long = "x".repeat(200);
      expect((await get(`/api/v1/count/counted?article=${long}`)).json()).toEqual({ [long]: 0 });
    });

    it.skipIf(skip)("refuses missing, too many and invalid articles with 400, before the website's 404", async () => {
      await start({
        websites: [
          { name: "blog", "allowed-origins": [ALLOWED.origin] },
          { name: "docs", articles: ["intro"] },
        ],
      });
      for (const [query, error] of [
        ["", "query parameter article: must be given at least once"],
        ["articles=a", "query parameter article: must be given at least once"],
        [manyArticles(101), "query parameter article: must be given at most 100 times"],
        ["article=", ARTICLE_NAME_ERROR],
        ["article=a%20b", ARTICLE_NAME_ERROR],
        ["article=ok&article=no/slash", ARTICLE_NAME_ERROR],
        [`article=${"x".repeat(201)}`, ARTICLE_NAME_ERROR],
        ["article=%C3%A9t%C3%A9", ARTICLE_NAME_ERROR],
      ] as const) {
        const response = await get(`/api/v1/count/blog?${query}`, ALLOWED);
        expect([query, response.statusCode, response.json()]).toEqual([query, 400, { error }]);
        expect(response.headers["access-control-allow-origin"]).toBe(ALLOWED.origin);
        expect((await get(`/api/v1/count/shop?${query}`)).statusCode).toBe(400);
      }
      for (const [url, error] of [
        ["/api/v1/count/shop?article=a", "website shop not found"],
        ["/api/v1/count/b~g?article=a", "website b~g not found"],
        ["/api/v1/count/docs?article=intro&article=other", "article other not found"],
      ] as const) {
        const response = await get(url);
        expect([url, response.statusCode, response.json()]).toEqual([url, 404, { error }]);
      }
      expect((await get("/api/v1/count/docs?article=intro")).json()).toEqual({ intro: 0 });
    });

    it.skipIf(skip)("answers CORS requests and pre-flights for the website's allowed origins", async () => {
      await start({ websites: [{ name: "blog", "allowed-origins": [ALLOWED.origin] }] });
      const ok = await get("/api/v1/count/blog?article=a", ALLOWED);
      expect(ok.headers["access-control-allow-origin"]).toBe(ALLOWED.origin);
      expect(ok.headers.vary).toMatch(/Origin/);
      expect((await get("/api/v1/count/blog?article=a", EVIL)).headers["access-control-allow-origin"]).toBeUndefined();

      const options = (url: string, headers: Record<string, string>) =>
        servers.current().app.inject({ method: "OPTIONS", url, headers });
      const preflight = await options("/api/v1/count/blog", { ...ALLOWED, "access-control-request-method": "GET" });
      expect(preflight.statusCode).toBe(204);
      expect(preflight.headers["access-control-allow-origin"]).toBe(ALLOWED.origin);
      expect(preflight.headers["access-control-allow-methods"]).toBe("GET, POST");
      expect(preflight.headers["access-control-max-age"]).toBe("3600");
      const evil = await options("/api/v1/count/blog", { ...EVIL, "access-control-request-method": "GET" });
      expect([evil.statusCode, evil.json()]).toEqual([
        403,
        { error: "origin https://evil.example.org is not allowed for website blog" },
      ]);
      const unknown = await options("/api/v1/count/shop", ALLOWED);
      expect([unknown.statusCode, unknown.json()]).toEqual([404, { error: "website shop not found" }]);
      const plain = await options("/api/v1/count/blog", {});
      expect([plain.statusCode, plain.headers.allow]).toEqual([204, "GET, HEAD, OPTIONS"]);
    });

    it.skipIf(skip)("answers any origin in open mode", async () => {
      await start();
      const origin = "https://anything.example.net";
      expect((await get("/api/v1/count/open?article=a", { origin })).headers["access-control-allow-origin"]).toBe(
        origin,
      );
    });
  });

  describe("the websites to moderate", () => {
    it.skipIf(skip)("lists the configured websites in their order, comments or not", async () => {
      const { app, store } = await start({ websites: [{ name: "shop" }, { name: "blog" }] });
      await seed(store, [{ website: "shop", article: "a", timestamp: NOW, approved: false }]);
      const response = await admin(app, "GET", "/api/admin/website");
      expect([response.statusCode, response.json()]).toEqual([200, { websites: ["shop", "blog"] }]);
      expect(response.headers["cache-control"]).toBe("no-store");
      expect((await admin(app, "GET", "/api/admin/website", "registry-admin")).statusCode).toBe(200);
      const tech = await admin(app, "GET", "/api/admin/website", "registry-tech");
      expect([tech.statusCode, tech.json()]).toEqual([403, { error: "forbidden" }]);
      expect((await admin(app, "GET", "/api/admin/website", null)).json()).toEqual({ error: "missing token" });
    });

    it.skipIf(skip)("lists in open mode the websites holding comments, once each, by name", async () => {
      const { app, store } = await start();
      // The database is shared by this file's tests: what they stored comes too.
      const { websites: before } = (await admin(app, "GET", "/api/admin/website")).json();
      expect(before).not.toContain("open-zeta");
      await seed(store, [
        { website: "open-zeta", article: "a", timestamp: NOW, approved: true },
        { website: "open-alpha", article: "a", timestamp: NOW, approved: false },
        { website: "open-zeta", article: "b", timestamp: NOW + 1, approved: false },
      ]);
      const after = [...before, "open-alpha", "open-zeta"].sort();
      expect((await admin(app, "GET", "/api/admin/website")).json()).toEqual({ websites: after });
    });
  });

  describe("the admin list of a website", () => {
    it.skipIf(skip)("lists a website's comments across articles, newest first, each with its article", async () => {
      const { app, store } = await start({ websites: [{ name: "blog" }, { name: "other" }] });
      const seeds: Seed[] = [];
      for (let i = 0; i < 70; i++) {
        seeds.push({ website: "blog", article: `post-${i % 3}`, timestamp: NOW + i * SECOND, approved: i % 4 === 0 });
      }
      seeds.push({ website: "other", article: "post-0", timestamp: NOW, approved: false });
      const stored = await seed(store, seeds);
      const withArticle = stored
        .map((comment, index) => ({ ...comment, article: seeds[index]?.article }))
        .filter((_comment, index) => seeds[index]?.website === "blog")
        .reverse();
      const pending = withArticle.filter((comment) => !comment.approved);
      const approved = withArticle.filter((comment) => comment.approved);

      const page = await admin(app, "GET", "/api/admin/comment/blog?approved=false");
      expect(page.statusCode).toBe(200);
      expect(page.headers["cache-control"]).toBe("no-store");
      // Default limit 50; newest first.
      expect(page.json()).toEqual(pending.slice(0, 50));
      expect(Object.keys(page.json()[0])).toEqual(["id", "content", "author", "approved", "timestamp", "article"]);
      const older = await admin(
        app,
        "GET",
        `/api/admin/comment/blog?approved=false&before=${page.json()[49].timestamp}`,
      );
      expect(older.json()).toEqual(pending.slice(50));
      expect((await admin(app, "GET", "/api/admin/comment/blog?approved=true&limit=100")).json()).toEqual(approved);
      expect((await admin(app, "GET", "/api/admin/comment/blog?limit=100")).json()).toEqual(withArticle);
      expect((await admin(app, "GET", "/api/admin/comment/blog/?limit=3")).json()).toEqual(withArticle.slice(0, 3));
      expect((await admin(app, "GET", `/api/admin/comment/blog?before=${NOW}`)).json()).toEqual([]);

      // Changes show at once: approve one, delete another.
      const [first, second] = pending;
      expect((await admin(app, "POST", `/api/admin/comment/blog/${first?.article}/${first?.id}`)).statusCode).toBe(200);
      expect((await admin(app, "DELETE", `/api/admin/comment/blog/${second?.article}/${second?.id}`)).statusCode).toBe(
        200,
      );
      expect(ids((await admin(app, "GET", "/api/admin/comment/blog?approved=false&limit=2")).json())).toEqual(
        ids(pending.slice(2, 4)),
      );
      expect((await admin(app, "GET", "/api/admin/comment/blog?approved=true&limit=1")).json()).toEqual([
        { ...first, approved: true },
      ]);
    });

    it.skipIf(skip)("refuses bad parameters with 400 and unknown websites with 404, sends no CORS", async () => {
      const { app } = await start({ websites: [{ name: "blog", "allowed-origins": [ALLOWED.origin] }] });
      for (const [query, error] of [
        ["approved=yes", APPROVED_ERROR],
        ["approved=TRUE", APPROVED_ERROR],
        ["approved=", APPROVED_ERROR],
        ["approved=true&approved=false", APPROVED_ERROR],
        ["limit=0", LIMIT_ERROR],
        ["limit=101", LIMIT_ERROR],
        ["limit=ten", LIMIT_ERROR],
        ["before=-5", BEFORE_ERROR],
        ["before=now", BEFORE_ERROR],
      ] as const) {
        const response = await admin(app, "GET", `/api/admin/comment/blog?${query}`);
        expect([query, response.statusCode, response.json()]).toEqual([query, 400, { error }]);
      }
      for (const website of ["shop", "b~g"]) {
        const response = await admin(app, "GET", `/api/admin/comment/${website}`);
        expect([response.statusCode, response.json()]).toEqual([404, { error: `website ${website} not found` }]);
      }
      const crossOrigin = await app.inject({
        method: "GET",
        url: "/api/admin/comment/blog",
        headers: { ...ALLOWED, authorization: ADMIN_TOKEN },
      });
      expect(crossOrigin.statusCode).toBe(200);
      expect(Object.keys(crossOrigin.headers).filter((name) => name.startsWith("access-control-"))).toEqual([]);
      const preflight = await app.inject({ method: "OPTIONS", url: "/api/admin/comment/blog", headers: ALLOWED });
      expect(preflight.statusCode).toBe(405);
    });

    it.skipIf(skip)("needs the comments admin token or a registry admin's token, before any other check", async () => {
      const { app } = await start({ websites: [{ name: "blog" }] });
      for (const url of ["/api/admin/comment/blog", "/api/admin/comment/blog?approved=false&limit=5&before=1"]) {
        const missing = await admin(app, "GET", url, null);
        expect([missing.statusCode, missing.json()]).toEqual([401, { error: "missing token" }]);
        const wrong = await admin(app, "GET", url, "Bearer wrong");
        expect([wrong.statusCode, wrong.json()]).toEqual([401, { error: "invalid token" }]);
        for (const token of [ADMIN_TOKEN, `Bearer ${ADMIN_TOKEN}`, "registry-admin", "Bearer registry-admin"]) {
          expect((await admin(app, "GET", url, token)).statusCode).toBe(200);
        }
        const tech = await admin(app, "GET", url, "registry-tech");
        expect([tech.statusCode, tech.json()]).toEqual([403, { error: "forbidden" }]);
      }
      // Strangers learn nothing: neither which websites exist nor which parameters are wrong.
      for (const url of ["/api/admin/comment/shop", "/api/admin/comment/blog?limit=0", "/api/admin/website"]) {
        const response = await admin(app, "GET", url, "nope");
        expect([response.statusCode, response.json()]).toEqual([401, { error: "invalid token" }]);
      }
    });
  });
});
