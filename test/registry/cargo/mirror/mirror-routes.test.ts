/**
 * The Cargo mirror through `app.inject()` against a fake upstream index (docs/cargo.md, "Using the
 * mirror for CI"): config.json, index files fetched once and revalidated after max-age with the
 * upstream's ETag, served stale with a Warning when the upstream fails, `.crate` files checked
 * against the index's cksum, downloaded once for 50 concurrent requests, refused when corrupted.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkMirrorCache } from "../../../../src/registry/cargo/mirror/index.js";
import { createRegistryModule } from "../../../../src/registry/index.js";
import type { VigieServer } from "../../../../src/server.js";
import { startTestServer } from "../../../support/server.js";
import { temporaryDirectory } from "../../../support/temporary.js";
import { FakeUpstream } from "./upstream-fake.js";

const PUBLIC_URL = "http://mirror.test:8080";
const MAX_AGE_MS = 600_000;

describe("cargo mirror routes", () => {
  const upstream = new FakeUpstream();
  let server: VigieServer;
  let app: FastifyInstance;
  let cache: string;
  let time = Date.parse("2026-11-26T12:00:00Z");

  const start = (cargo: Record<string, unknown> = {}) =>
    startTestServer({
      modules: [createRegistryModule({ now: () => time })],
      config: {
        http: { "public-url": PUBLIC_URL },
        registry: {
          enabled: true,
          cargo: {
            enabled: false,
            mirror: { enabled: true, "upstream-index": upstream.indexUrl, cache, "max-age": "10m" },
            ...cargo,
          },
        },
      },
    });
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: "GET", url, headers });

  beforeAll(async () => {
    await upstream.start();
    upstream.add("foo", "1.0.0");
    upstream.add("foo", "1.1.0");
    upstream.add("Serde_Like", "0.1.0");
    cache = temporaryDirectory();
    server = await start();
    app = server.app;
  });
  afterAll(async () => {
    await server?.close();
    await upstream.stop();
  });

  it("serves config.json sending downloads to the mirror", async () => {
    const answer = await get("/api/v1/mirror/index/config.json");
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toEqual({ dl: `${PUBLIC_URL}/api/v1/mirror/download/{crate}/{version}` });
  });

  it("fetches an index file once, then serves it from the cache until max-age", async () => {
    const first = await get("/api/v1/mirror/index/3/f/foo");
    expect(first.statusCode).toBe(200);
    expect(first.body).toBe(upstream.indexFile("foo"));
    expect(first.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(first.headers["last-modified"]).toBe(new Date(time).toUTCString());
    const second = await get("/api/v1/mirror/index/3/f/foo", { "accept-encoding": "gzip" });
    expect(second.headers["content-encoding"]).toBe("gzip");
    expect(upstream.count("/index/3/f/foo")).toBe(1);
    // Cargo's own revalidation: 304 from the cache.
    const notModified = await get("/api/v1/mirror/index/3/f/foo", { "if-none-match": String(first.headers.etag) });
    expect(notModified.statusCode).toBe(304);
    expect(upstream.count("/index/3/f/foo")).toBe(1);
    // The copy is on disk, under the index path of the name.
    expect(readFileSync(join(cache, "index", "3", "f", "foo"), "utf8")).toContain('"name":"foo","vers":"1.1.0"');
  });

  it("revalidates after max-age with the upstream's ETag, and takes new versions", async () => {
    time += MAX_AGE_MS;
    const confirmed = await get("/api/v1/mirror/index/3/f/foo");
    expect(confirmed.statusCode).toBe(200);
    expect(upstream.count("/index/3/f/foo")).toBe(2);
    expect(upstream.conditions.at(-1)).toMatch(/^"[0-9a-f]{16}"$/);
    upstream.add("foo", "1.2.0");
    time += MAX_AGE_MS;
    const replaced = await get("/api/v1/mirror/index/3/f/foo");
    expect(replaced.body).toContain('"vers":"1.2.0"');
    expect(replaced.headers.etag).not.toBe(confirmed.headers.etag);
    expect(upstream.count("/index/3/f/foo")).toBe(3);
  });

  it("matches index paths case-insensitively and refuses what is no index path", async () => {
    expect((await get("/api/v1/mirror/index/SE/rd/Serde_Like")).statusCode).toBe(200);
    for (const path of ["se/rd", "xx/rl/serde_like", "..%2f..%2fetc/passwd", "3/f/fo"]) {
      expect((await get(`/api/v1/mirror/index/${path}`)).statusCode, path).toBe(404);
    }
    const unknown = await get("/api/v1/mirror/index/3/n/non");
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toBe("crate non not found in the upstream index");
  });

  it("remembers a crate missing upstream for max-age, then asks again", async () => {
    const path = "/api/v1/mirror/index/la/te/later";
    expect((await get(path)).statusCode).toBe(404);
    expect(upstream.count("/index/la/te/later")).toBe(1);
    upstream.add("later", "0.1.0");
    // Within max-age the upstream's 404 holds, as cargo would see from a CDN.
    time += MAX_AGE_MS - 1;
    const remembered = await get(path);
    expect(remembered.statusCode).toBe(404);
    expect(remembered.json().error).toBe("crate later not found in the upstream index");
    expect(upstream.count("/index/la/te/later")).toBe(1);
    time += 1;
    const published = await get(path);
    expect(published.statusCode).toBe(200);
    expect(published.body).toBe(upstream.indexFile("later"));
    expect(upstream.count("/index/la/te/later")).toBe(2);
  });

  it("refuses an upstream index file naming another crate, and keeps nothing of it", async () => {
    upstream.add("bad", "1.0.0");
    upstream.extraLines.set("bad", JSON.stringify({ name: "evil", vers: "1.0.0", cksum: "0".repeat(64) }));
    const answer = await get("/api/v1/mirror/index/3/b/bad");
    expect(answer.statusCode).toBe(503);
    expect(answer.json().error).toMatch(/cannot give the file of crate bad \(line 2 is about crate "evil"/);
    expect(existsSync(join(cache, "index", "3", "b", "bad"))).toBe(false);
  });

  /** Holds the upstream's answers until the returned function is called. */
  const holdUpstream = (): (() => void) => {
    let release: () => void = () => {};
    upstream.gate = new Promise((resolve) => {
      release = resolve;
    });
    return release;
  };

  it("asks the upstream once for an index file 20 requests want at once", async () => {
    upstream.add("many", "0.1.0");
    const release = holdUpstream();
    const pending = Array.from({ length: 20 }, () => get("/api/v1/mirror/index/ma/ny/many"));
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    for (const answer of await Promise.all(pending)) expect(answer.statusCode, answer.body).toBe(200);
    expect(upstream.count("/index/ma/ny/many")).toBe(1);
  });

  it("downloads a .crate once for 50 concurrent requests, then streams it from the cache", async () => {
    const release = holdUpstream();
    const pending = Array.from({ length: 50 }, () => get("/api/v1/mirror/download/foo/1.0.0"));
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    const answers = await Promise.all(pending);
    for (const answer of answers) {
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.body).toBe("foo-1.0.0 crate bytes");
    }
    expect(answers[0]?.headers["content-type"]).toBe("application/gzip");
    expect(upstream.count("/dl/foo/1.0.0/download")).toBe(1);
    expect((await get("/api/v1/mirror/download/foo/1.0.0")).body).toBe("foo-1.0.0 crate bytes");
    expect(upstream.count("/dl/foo/1.0.0/download")).toBe(1);
    expect(readFileSync(join(cache, "crates", "foo", "foo-1.0.0.crate"), "utf8")).toBe("foo-1.0.0 crate bytes");
  });

  it("refuses a download that does not match the index's checksum, and caches nothing", async () => {
    upstream.corrupted.add("foo/1.1.0");
    const refused = await get("/api/v1/mirror/download/foo/1.1.0");
    expect(refused.statusCode).toBe(503);
    expect(refused.json().error).toMatch(
      /^the upstream's foo 1\.1\.0 does not match the index's checksum \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\): refused, not cached$/,
    );
    expect(existsSync(join(cache, "crates", "foo", "foo-1.1.0.crate"))).toBe(false);
    upstream.corrupted.clear();
    expect((await get("/api/v1/mirror/download/foo/1.1.0")).body).toBe("foo-1.1.0 crate bytes");
    expect(upstream.count("/dl/foo/1.1.0/download")).toBe(2);
  });

  it("answers 404 for unknown versions and invalid names or versions, without asking the upstream", async () => {
    const before = upstream.requests.size;
    expect((await get("/api/v1/mirror/download/foo/9.9.9")).json().error).toBe(
      "crate foo has no version 9.9.9 in the upstream index",
    );
    for (const path of ["..%2F..%2Fetc/1.0.0", "foo/..%2F1.0.0", "9foo/1.0.0", "foo/1.0"]) {
      expect((await get(`/api/v1/mirror/download/${path}`)).statusCode, path).toBe(404);
    }
    expect(upstream.requests.size).toBe(before);
  });

  it("serves the cache stale, with a Warning and a metric, when the upstream fails", async () => {
    upstream.failing = true;
    time += MAX_AGE_MS;
    try {
      const stale = await get("/api/v1/mirror/index/3/f/foo");
      expect(stale.statusCode).toBe(200);
      expect(stale.headers.warning).toBe('110 - "Response is Stale"');
      expect(stale.body).toContain('"vers":"1.2.0"');
      // Cached crates still download; uncached index files cannot be served.
      expect((await get("/api/v1/mirror/download/foo/1.0.0")).statusCode).toBe(200);
      const missing = await get("/api/v1/mirror/index/3/z/zzz");
      expect(missing.statusCode).toBe(503);
      expect(missing.json().error).toMatch(/the upstream answered 503\), and it is not cached/);
      const metrics = (await get("/metrics")).body;
      expect(metrics).toMatch(/^registry_mirror_stale_total [1-9]/m);
      expect(metrics).toMatch(/^registry_mirror_upstream_requests_total\{kind="crate"\} 3$/m);
    } finally {
      upstream.failing = false;
    }
  });

  it("keeps its copies across restarts", async () => {
    await server.close();
    upstream.failing = true;
    try {
      server = await start();
      app = server.app;
      time += MAX_AGE_MS;
      const stale = await get("/api/v1/mirror/index/3/f/foo");
      expect(stale.statusCode).toBe(200);
      expect(stale.headers.warning).toBe('110 - "Response is Stale"');
      expect((await get("/api/v1/mirror/download/foo/1.1.0")).body).toBe("foo-1.1.0 crate bytes");
    } finally {
      upstream.failing = false;
    }
  });

  it("asks for a token with auth-required, as the registry does", async () => {
    const guarded = await start({ "auth-required": true });
    try {
      for (const url of [
        "/api/v1/mirror/index/config.json",
        "/api/v1/mirror/index/3/f/foo",
        "/api/v1/mirror/download/foo/1.0.0",
      ]) {
        const answer = await guarded.app.inject({ method: "GET", url });
        expect(answer.statusCode, url).toBe(401);
        expect(answer.headers["www-authenticate"]).toBe(`Cargo login_url="${PUBLIC_URL}/me"`);
      }
      // The page the challenge names exists without the private registry too.
      expect((await guarded.app.inject({ method: "GET", url: "/me" })).statusCode).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});

describe("the mirror's cache directory", () => {
  it("must stay out of the crate storage, and not hold it", () => {
    expect(() => checkMirrorCache("/data/crates/mirror", "/data/crates")).toThrow(
      "registry.cargo.mirror.cache (/data/crates/mirror) must be outside the crate storage (/data/crates)",
    );
    expect(() => checkMirrorCache("/data/crates", "/data/crates")).toThrow();
    expect(() => checkMirrorCache("/data", "/data/crates")).toThrow();
    expect(() => checkMirrorCache("/data/crates-mirror", "/data/crates")).not.toThrow();
    expect(() => checkMirrorCache("/data/crates2", "/data/crates")).not.toThrow();
  });

  it("is checked with the configuration when both directories are written there", async () => {
    const registry = (cache: string) => ({
      enabled: true,
      cargo: { enabled: true, storage: "/srv/crates", mirror: { enabled: true, cache } },
    });
    const start = (cache: string) =>
      startTestServer({ modules: [createRegistryModule()], config: { registry: registry(cache) } });
    await expect(start("/srv/crates/cache")).rejects.toThrow(
      "registry.cargo.mirror.cache: must be outside registry.cargo.storage, and not hold it",
    );
    await expect(start("/srv")).rejects.toThrow("registry.cargo.mirror.cache: must be outside registry.cargo.storage");
  });
});
