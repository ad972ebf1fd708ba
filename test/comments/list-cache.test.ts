import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  ifNoneMatchHolds,
  LIST_CACHE_MAX_ARTICLES,
  LIST_CACHE_MAX_ENTRY_BYTES,
  ListCache,
  type ListCacheOptions,
  listEntityTag,
} from "../../src/comments/list-cache.js";

/** A cache whose reads are counted per article and whose reports are counted too. */
function counted(options: ListCacheOptions = {}) {
  const reads = new Map<string, number>();
  const reports = { hit: 0, miss: 0, dropped: 0 };
  const cache = new ListCache({
    ...options,
    observer: { hit: () => reports.hit++, miss: () => reports.miss++, dropped: () => reports.dropped++ },
  });
  /** Loads `website/article`, whose list is `[{article, read: n}]` for the n-th read. */
  const load = (website: string, article: string, extra = "") =>
    cache.load(website, article, async () => {
      const key = `${website}/${article}`;
      const count = (reads.get(key) ?? 0) + 1;
      reads.set(key, count);
      return [{ article: key, read: count, extra }];
    });
  const readsOf = (website: string, article: string) => reads.get(`${website}/${article}`) ?? 0;
  return { cache, load, readsOf, reports };
}

describe("listEntityTag", () => {
  it("is the quoted base64url of the first 128 bits of the SHA-256 of the text", () => {
    const body = '[{"id":"x"}]';
    const digest = createHash("sha256").update(body).digest().subarray(0, 16).toString("base64url");
    expect(listEntityTag(body)).toBe(`"${digest}"`);
    expect(listEntityTag(body)).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(listEntityTag("[]")).not.toBe(listEntityTag(body));
    expect(listEntityTag(body)).toBe(listEntityTag(String(body)));
  });
});

describe("ifNoneMatchHolds (RFC 9110 §13.1.2)", () => {
  const tag = '"abc"';
  it("holds for *, the same tag, its weak form, or a list that contains it", () => {
    for (const header of ["*", " * ", tag, `W/${tag}`, `"x", ${tag}`, `"x",W/${tag}  ,"y"`]) {
      expect([header, ifNoneMatchHolds(header, tag)]).toEqual([header, true]);
    }
  });

  it("does not hold without the header or for other tags", () => {
    for (const header of [undefined, "", '"abcd"', '"ab"', "abc", '"x", "y"', "W/abc"]) {
      expect([header, ifNoneMatchHolds(header, tag)]).toEqual([header, false]);
    }
  });
});

describe("ListCache", () => {
  it("keeps the JSON.stringify text of the list and its tag, and reads the database once", async () => {
    const { load, readsOf, reports } = counted();
    const first = await load("blog", "post");
    expect(first.body).toBe(JSON.stringify([{ article: "blog/post", read: 1, extra: "" }]));
    expect(first.etag).toBe(listEntityTag(first.body));
    const second = await load("blog", "post");
    expect(second).toEqual(first);
    expect(readsOf("blog", "post")).toBe(1);
    expect(reports).toEqual({ hit: 1, miss: 1, dropped: 0 });
  });

  it("reads every article again after clear (another process wrote)", async () => {
    const { cache, load, readsOf } = counted();
    await load("blog", "post");
    await load("blog", "other");
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.bytes).toBe(0);
    expect((await load("blog", "post")).body).toContain('"read":2');
    expect((await load("blog", "other")).body).toContain('"read":2');
    expect(readsOf("blog", "other")).toBe(2);
  });

  it("reads again after invalidate, for that article only", async () => {
    const { cache, load, readsOf } = counted();
    await load("blog", "post");
    await load("blog", "other");
    await load("blog-post", "x");
    cache.invalidate("blog", "post");
    expect((await load("blog", "post")).body).toContain('"read":2');
    expect((await load("blog", "other")).body).toContain('"read":1');
    expect(readsOf("blog", "other")).toBe(1);
    expect(readsOf("blog-post", "x")).toBe(1);
    // Invalidating an article that is not kept is harmless.
    cache.invalidate("nope", "nothing");
    expect(cache.size).toBe(3);
  });

  it("does not keep a list read while an invalidation happened, since it may predate the write", async () => {
    const cache = new ListCache();
    let release: (list: unknown[]) => void = () => undefined;
    const pending = cache.load("blog", "post", () => new Promise((resolve) => (release = resolve)));
    // The write commits and invalidates while the read is in flight.
    cache.invalidate("blog", "post");
    release([{ stale: true }]);
    expect((await pending).body).toBe('[{"stale":true}]');
    expect(cache.size).toBe(0);
    const fresh = await cache.load("blog", "post", async () => [{ stale: false }]);
    expect(fresh.body).toBe('[{"stale":false}]');
    expect(cache.size).toBe(1);
  });

  it("keeps nothing when the read fails", async () => {
    const cache = new ListCache();
    await expect(cache.load("blog", "post", () => Promise.reject(new Error("database down")))).rejects.toThrow(
      "database down",
    );
    expect(cache.size).toBe(0);
  });

  it("keeps at most maxArticles, dropping the least recently used first", async () => {
    const { cache, load, readsOf, reports } = counted({ maxArticles: 3 });
    await load("w", "a");
    await load("w", "b");
    await load("w", "c");
    await load("w", "a"); // a is now the most recently used
    await load("w", "d"); // drops b
    expect(cache.size).toBe(3);
    expect(reports.dropped).toBe(1);
    await load("w", "a");
    await load("w", "c");
    await load("w", "d");
    expect([readsOf("w", "a"), readsOf("w", "c"), readsOf("w", "d")]).toEqual([1, 1, 1]);
    await load("w", "b"); // read again, drops a (least recently used now)
    expect(readsOf("w", "b")).toBe(2);
    expect(reports.dropped).toBe(2);
    await load("w", "a");
    expect(readsOf("w", "a")).toBe(2);
  });

  it(`keeps at most ${LIST_CACHE_MAX_ARTICLES} articles by default`, async () => {
    const { cache, load, reports } = counted();
    for (let index = 0; index <= LIST_CACHE_MAX_ARTICLES; index++) await load("w", `article-${index}`);
    expect(cache.size).toBe(LIST_CACHE_MAX_ARTICLES);
    expect(reports.dropped).toBe(1);
  });

  it("keeps at most maxBytes of text in all, and never a list longer than maxEntryBytes", async () => {
    const { cache, load, readsOf, reports } = counted({ maxBytes: 200, maxEntryBytes: 150 });
    const entry = (await load("w", "a", "x".repeat(40))).body;
    const bytes = Buffer.byteLength(entry);
    expect(bytes).toBeGreaterThan(60);
    expect(bytes).toBeLessThan(100);
    await load("w", "b", "x".repeat(40));
    expect(cache.bytes).toBe(2 * bytes);
    // A third one would exceed 200 bytes: the least recently used goes.
    await load("w", "c", "x".repeat(40));
    expect(cache.size).toBe(2);
    expect(cache.bytes).toBe(2 * bytes);
    expect(reports.dropped).toBe(1);
    await load("w", "a", "x".repeat(40));
    expect(readsOf("w", "a")).toBe(2);
    // Too long to keep: answered, never kept, counted.
    const long = await load("w", "long", "é".repeat(60));
    expect(Buffer.byteLength(long.body)).toBeGreaterThan(150);
    await load("w", "long", "é".repeat(60));
    expect(readsOf("w", "long")).toBe(2);
    expect(reports.dropped).toBe(4);
    expect(cache.bytes).toBeLessThanOrEqual(200);
  });

  it(`never keeps a list longer than ${LIST_CACHE_MAX_ENTRY_BYTES} bytes by default`, async () => {
    const { cache, load, reports } = counted();
    await load("w", "huge", "x".repeat(LIST_CACHE_MAX_ENTRY_BYTES));
    expect(cache.size).toBe(0);
    expect(reports.dropped).toBe(1);
  });

  it("lets an entry live ttlMs from the start of its read, when a TTL is set (shared PostgreSQL)", async () => {
    let now = 5_000;
    const { load, readsOf } = counted({ ttlMs: 1000, clock: () => now });
    await load("w", "a");
    now += 999;
    await load("w", "a");
    expect(readsOf("w", "a")).toBe(1);
    now += 1;
    await load("w", "a");
    expect(readsOf("w", "a")).toBe(2);
    // The age counts from the start of the read, not its end.
    const slow = new ListCache({ ttlMs: 1000, clock: () => now });
    let calls = 0;
    await slow.load("w", "b", async () => {
      calls++;
      now += 600;
      return [];
    });
    now += 400;
    await slow.load("w", "b", async () => {
      calls++;
      return [];
    });
    expect(calls).toBe(2);
  });

  it("keeps entries until invalidated without a TTL (one SQLite process)", async () => {
    let now = 0;
    const { load, readsOf } = counted({ clock: () => now });
    await load("w", "a");
    now += 365 * 24 * 3_600_000;
    await load("w", "a");
    expect(readsOf("w", "a")).toBe(1);
  });

  it("refuses bounds below 1", () => {
    expect(() => new ListCache({ maxArticles: 0 })).toThrow(RangeError);
    expect(() => new ListCache({ maxBytes: Number.NaN })).toThrow(RangeError);
  });
});
