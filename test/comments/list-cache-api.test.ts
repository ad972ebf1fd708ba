/**
 * The public list through the API with its cache (list-cache.ts): the same bytes as before, the
 * entity tag and 304 (RFC 9110 §13.1.2), every write visible at once on the instance that made it,
 * and within the TTL on another instance sharing PostgreSQL.
 */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LIST_CACHE_SHARED_TTL_MS } from "../../src/comments/list-cache.js";
import type { VigieServer } from "../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { until } from "../support/until.js";
import { addComment, admin, startComments } from "./support.js";

const ORIGIN = "https://blog.example.org";

/** GET of the public list of an article, with extra request headers. */
function getList(
  app: FastifyInstance,
  website: string,
  article: string,
  headers: Record<string, string> = {},
  method: "GET" | "HEAD" = "GET",
): Promise<LightMyRequestResponse> {
  return app.inject({ method, url: `/api/v1/comment/${website}/${article}`, headers });
}

/** The list cache's lookups so far, from `GET /metrics`. */
async function lookups(app: FastifyInstance): Promise<{ hit: number; miss: number }> {
  const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
  const value = (result: string) =>
    Number(new RegExp(`^comments_list_cache_lookups_total\\{result="${result}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
  return { hit: value("hit"), miss: value("miss") };
}

/** The authors of the public list of an article, in order. */
async function authors(app: FastifyInstance, website: string, article: string): Promise<string[]> {
  const response = await getList(app, website, article);
  expect(response.statusCode).toBe(200);
  return response.json().map((comment: { author: string }) => comment.author);
}

/**
 * The authors of the list once it is in the cache: reads it twice and checks the second read was
 * a hit, so that a write made next must invalidate it to be seen.
 */
async function cachedAuthors(app: FastifyInstance, website: string, article: string): Promise<string[]> {
  const first = await authors(app, website, article);
  const before = await lookups(app);
  expect(await authors(app, website, article)).toEqual(first);
  expect(await lookups(app)).toEqual({ hit: before.hit + 1, miss: before.miss });
  return first;
}

/** The id of the comment of `author` in the admin list. */
async function idOf(app: FastifyInstance, website: string, article: string, author: string): Promise<string> {
  const all = (await admin(app, "GET", `/api/admin/comment/${website}/${article}`)).json();
  const found = all.find((comment: { author: string }) => comment.author === author);
  if (found === undefined) throw new Error(`no comment of ${author}`);
  return found.id;
}

describe.each(DATABASE_KINDS)("the public list and its cache on $kind", ({ kind, skip }) => {
  let database: TestDatabase;
  const servers: VigieServer[] = [];
  beforeAll(async () => {
    if (!skip) database = await createTestDatabase(kind);
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });
  afterAll(async () => {
    if (!skip) await database.drop();
  });

  const start = async (comments: Record<string, unknown> = {}) => {
    const server = await startComments(database.url, comments);
    servers.push(server);
    return server.app;
  };

  it.skipIf(skip)("answers the bytes Fastify serialised before, with a strong ETag and no-cache", async () => {
    const app = await start({ websites: [{ name: "etag", "auto-approve": true, "allowed-origins": [ORIGIN] }] });
    expect(
      (await addComment(app, "etag", "post", { author: "Ann", "author-website": "ann.example.org" })).statusCode,
    ).toBe(201);
    expect((await addComment(app, "etag", "post", { author: "Bob", content: 'é "quoted" <b>' })).statusCode).toBe(201);

    const response = await getList(app, "etag", "post", { origin: ORIGIN });
    expect(response.statusCode).toBe(200);
    // Every comment is approved: the admin route, which Fastify serialises, gives the same bytes.
    const adminList = await admin(app, "GET", "/api/admin/comment/etag/post");
    expect(response.body).toBe(adminList.body);
    expect(Object.keys(response.json()[0])).toEqual([
      "id",
      "content",
      "author",
      "author-website",
      "approved",
      "timestamp",
    ]);
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(response.headers["content-length"]).toBe(String(Buffer.byteLength(response.body)));
    expect(response.headers.etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(response.headers["cache-control"]).toBe("no-cache");
    expect(response.headers.vary).toMatch(/Origin/);
    expect(response.headers["access-control-allow-origin"]).toBe(ORIGIN);

    // From the cache: the same bytes and tag.
    const before = await lookups(app);
    const again = await getList(app, "etag", "post");
    expect([again.body, again.headers.etag]).toEqual([response.body, response.headers.etag]);
    expect((await lookups(app)).hit).toBe(before.hit + 1);

    // An empty article is `[]`, with its own tag.
    const empty = await getList(app, "etag", "nothing-yet");
    expect(empty.body).toBe("[]");
    expect(empty.headers.etag).not.toBe(response.headers.etag);
  });

  it.skipIf(skip)("answers If-None-Match with 304 and no body, keeping ETag and CORS headers", async () => {
    const app = await start({ websites: [{ name: "etag", "auto-approve": true, "allowed-origins": [ORIGIN] }] });
    expect((await addComment(app, "etag", "revalidated", { author: "Ann" })).statusCode).toBe(201);
    const etag = (await getList(app, "etag", "revalidated")).headers.etag as string;

    for (const header of [etag, `W/${etag}`, `"something-else", ${etag}`, "*"]) {
      const response = await getList(app, "etag", "revalidated", { origin: ORIGIN, "if-none-match": header });
      expect([header, response.statusCode, response.body]).toEqual([header, 304, ""]);
      expect(response.headers.etag).toBe(etag);
      expect(response.headers["cache-control"]).toBe("no-cache");
      expect(response.headers.vary).toMatch(/Origin/);
      expect(response.headers["access-control-allow-origin"]).toBe(ORIGIN);
      expect(response.headers["access-control-expose-headers"]).toBe("Retry-After");
    }
    const head = await getList(app, "etag", "revalidated", { "if-none-match": etag }, "HEAD");
    expect([head.statusCode, head.body]).toEqual([304, ""]);
    const plainHead = await getList(app, "etag", "revalidated", {}, "HEAD");
    expect([plainHead.statusCode, plainHead.body, plainHead.headers.etag]).toEqual([200, "", etag]);
    // Another origin gets its 304 too, without the CORS header but still with Vary.
    const otherOrigin = await getList(app, "etag", "revalidated", {
      origin: "https://evil.example",
      "if-none-match": etag,
    });
    expect(otherOrigin.statusCode).toBe(304);
    expect(otherOrigin.headers.vary).toMatch(/Origin/);
    expect(otherOrigin.headers["access-control-allow-origin"]).toBeUndefined();

    const stale = await getList(app, "etag", "revalidated", { "if-none-match": '"something-else"' });
    expect(stale.statusCode).toBe(200);
    expect(stale.json()).toHaveLength(1);

    // A new comment changes the list, hence the tag: the old one gets the new list.
    expect((await addComment(app, "etag", "revalidated", { author: "Bob" })).statusCode).toBe(201);
    const changed = await getList(app, "etag", "revalidated", { "if-none-match": etag });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().map((comment: { author: string }) => comment.author)).toEqual(["Ann", "Bob"]);
    expect(changed.headers.etag).not.toBe(etag);

    // Errors are not cached and carry no tag.
    const unknown = await getList(app, "nope", "post", { "if-none-match": "*" });
    expect([unknown.statusCode, unknown.json(), unknown.headers.etag]).toEqual([
      404,
      { error: "website nope not found" },
      undefined,
    ]);
  });

  it.skipIf(skip)("shows every write at once: add, approve, delete one, delete all", async () => {
    const app = await start({
      websites: [{ name: "mod" }, { name: "auto", "auto-approve": true }],
      "rate-limit": { comments: 100 },
    });
    // Auto-approved: a new comment is listed at once.
    expect(await cachedAuthors(app, "auto", "post")).toEqual([]);
    expect((await addComment(app, "auto", "post", { author: "Ann" })).statusCode).toBe(201);
    expect(await cachedAuthors(app, "auto", "post")).toEqual(["Ann"]);

    // Moderated: a new comment is not listed, but the add invalidated the list anyway.
    expect(await cachedAuthors(app, "mod", "post")).toEqual([]);
    expect((await addComment(app, "mod", "post", { author: "Ann" })).statusCode).toBe(201);
    const before = await lookups(app);
    expect(await authors(app, "mod", "post")).toEqual([]);
    expect(await lookups(app)).toEqual({ hit: before.hit, miss: before.miss + 1 });

    // Approve.
    expect(await cachedAuthors(app, "mod", "post")).toEqual([]);
    const ann = await idOf(app, "mod", "post", "Ann");
    expect((await admin(app, "POST", `/api/admin/comment/mod/post/${ann}`)).statusCode).toBe(200);
    expect(await cachedAuthors(app, "mod", "post")).toEqual(["Ann"]);
    await new Promise((wait) => setTimeout(wait, 2));
    expect((await addComment(app, "mod", "post", { author: "Bob" })).statusCode).toBe(201);
    const bob = await idOf(app, "mod", "post", "Bob");
    expect(await cachedAuthors(app, "mod", "post")).toEqual(["Ann"]);
    expect((await admin(app, "POST", `/api/admin/comment/mod/post/${bob}`)).statusCode).toBe(200);
    expect(await cachedAuthors(app, "mod", "post")).toEqual(["Ann", "Bob"]);

    // Delete one.
    expect((await admin(app, "DELETE", `/api/admin/comment/mod/post/${ann}`)).statusCode).toBe(200);
    expect(await cachedAuthors(app, "mod", "post")).toEqual(["Bob"]);

    // Delete all of the article; another article's cached list is untouched and still a hit.
    expect((await addComment(app, "auto", "other", { author: "Cid" })).statusCode).toBe(201);
    expect(await cachedAuthors(app, "auto", "other")).toEqual(["Cid"]);
    expect((await admin(app, "DELETE", "/api/admin/comment/mod/post")).statusCode).toBe(200);
    expect(await authors(app, "mod", "post")).toEqual([]);
    const beforeOther = await lookups(app);
    expect(await authors(app, "auto", "other")).toEqual(["Cid"]);
    expect((await lookups(app)).hit).toBe(beforeOther.hit + 1);

    // The admin list never comes from the cache: it shows pending comments the public list hides.
    expect((await addComment(app, "mod", "post", { author: "Dan" })).statusCode).toBe(201);
    expect(await cachedAuthors(app, "mod", "post")).toEqual([]);
    const pending = (await admin(app, "GET", "/api/admin/comment/mod/post")).json();
    expect(pending.map((comment: { author: string; approved: boolean }) => [comment.author, comment.approved])).toEqual(
      [["Dan", false]],
    );
  });

  it.skipIf(skip || kind !== "sqlite")(
    "keeps a list cached past the PostgreSQL TTL on SQLite (one process)",
    async () => {
      const app = await start();
      await authors(app, "open", "post");
      await new Promise((wait) => setTimeout(wait, LIST_CACHE_SHARED_TTL_MS + 100));
      const before = await lookups(app);
      await authors(app, "open", "post");
      expect(await lookups(app)).toEqual({ hit: before.hit + 1, miss: before.miss });
    },
  );

  it.skipIf(skip || kind !== "postgres")(
    "shows another instance's approvals and deletions within the TTL on shared PostgreSQL",
    async () => {
      const settings = { websites: [{ name: "shared" }] };
      const first = await start(settings);
      const second = await start(settings);
      expect((await addComment(second, "shared", "post", { author: "Ann" })).statusCode).toBe(201);
      const ann = await idOf(second, "shared", "post", "Ann");
      expect(await cachedAuthors(first, "shared", "post")).toEqual([]);

      const approvedAt = Date.now();
      expect((await admin(second, "POST", `/api/admin/comment/shared/post/${ann}`)).statusCode).toBe(200);
      // The admin routes of the first instance read the database: the approval shows there at once.
      expect((await admin(first, "GET", `/api/admin/comment/shared/post/${ann}`)).json().approved).toBe(true);
      await until(
        async () => ((await authors(first, "shared", "post")).length === 1 ? true : undefined),
        "the approval on the other instance",
        LIST_CACHE_SHARED_TTL_MS + 2_000,
      );
      expect(Date.now() - approvedAt).toBeLessThan(LIST_CACHE_SHARED_TTL_MS + 1_000);

      expect(await authors(first, "shared", "post")).toEqual(["Ann"]);
      const deletedAt = Date.now();
      expect((await admin(second, "DELETE", `/api/admin/comment/shared/post/${ann}`)).statusCode).toBe(200);
      await until(
        async () => ((await authors(first, "shared", "post")).length === 0 ? true : undefined),
        "the deletion on the other instance",
        LIST_CACHE_SHARED_TTL_MS + 2_000,
      );
      expect(Date.now() - deletedAt).toBeLessThan(LIST_CACHE_SHARED_TTL_MS + 1_000);
    },
  );
});
