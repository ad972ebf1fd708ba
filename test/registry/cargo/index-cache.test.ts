import { describe, expect, it } from "vitest";
import { cargoSection, DEFAULT_INDEX_CACHE_SIZE } from "../../../src/registry/cargo/config.js";
import { IndexCache, type RenderedIndex } from "../../../src/registry/cargo/index-cache.js";

/** A rendered file of `body` bytes and `gzip` bytes. */
function rendered(etag: string, body: number, gzip = 0): RenderedIndex {
  return { etag, body: Buffer.alloc(body), gzip: Buffer.alloc(gzip) };
}

describe("IndexCache", () => {
  it("defaults to 64 MiB", () => {
    expect(DEFAULT_INDEX_CACHE_SIZE).toBe(64 * 1024 * 1024);
  });

  it("holds at most maxBytes of bodies and gzips, the least recently used going first", () => {
    const cache = new IndexCache(1000);
    cache.set(1, rendered("a", 300, 100));
    cache.set(2, rendered("b", 300, 100));
    expect(cache.bytes).toBe(800);
    // Crate 1 served again: crate 2 is now the least recently used.
    expect(cache.get(1)?.etag).toBe("a");
    cache.set(3, rendered("c", 250, 50));
    expect(cache.get(2)).toBeUndefined();
    expect(cache.get(1)?.etag).toBe("a");
    expect(cache.get(3)?.etag).toBe("c");
    expect(cache.bytes).toBe(700);
    expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes);
  });

  it("replaces a crate's older file without counting it twice", () => {
    const cache = new IndexCache(1000);
    cache.set(1, rendered("a", 600));
    cache.set(1, rendered("a2", 700));
    expect(cache.size).toBe(1);
    expect(cache.bytes).toBe(700);
    expect(cache.get(1)?.etag).toBe("a2");
  });

  it("keeps no file larger than the whole bound, and nothing with a bound of 0", () => {
    const cache = new IndexCache(1000);
    cache.set(1, rendered("a", 400));
    cache.set(2, rendered("huge", 900, 200));
    expect(cache.get(2)).toBeUndefined();
    expect(cache.get(1)?.etag).toBe("a");
    const none = new IndexCache(0);
    none.set(1, rendered("a", 1));
    expect(none.size).toBe(0);
  });

  it("stays within its bound whatever the sizes", () => {
    const cache = new IndexCache(10_000);
    let seed = 42;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed;
    };
    for (let round = 0; round < 2_000; round += 1) {
      cache.set(next() % 50, rendered(String(round), next() % 4_000, next() % 1_000));
      if (round % 3 === 0) cache.get(next() % 50);
      expect(cache.bytes).toBeLessThanOrEqual(10_000);
    }
  });
});

describe("registry.cargo bounds", () => {
  it("default to 300 features, 256 KiB index lines and a 64 MiB index cache", () => {
    expect(cargoSection(undefined, "registry.cargo")).toMatchObject({
      "max-features": 300,
      "max-index-line": 256 * 1024,
      "index-cache-size": 64 * 1024 * 1024,
    });
    expect(cargoSection({ "index-cache-size": "1MiB", "max-index-line": "1MiB" }, "registry.cargo")).toMatchObject({
      "max-index-line": 1024 * 1024,
      "index-cache-size": 1024 * 1024,
    });
  });

  it("refuses values that would refuse every publish", () => {
    expect(() => cargoSection({ "max-features": 0 }, "registry.cargo")).toThrow(
      "registry.cargo.max-features: must be an integer between 1 and 100000",
    );
    expect(() => cargoSection({ "max-index-line": "100B" }, "registry.cargo")).toThrow(
      "registry.cargo.max-index-line: must be at least 1KiB",
    );
  });
});
