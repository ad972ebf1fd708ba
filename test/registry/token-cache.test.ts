import { describe, expect, it } from "vitest";
import { type CachedToken, TokenCache } from "../../src/registry/token-cache.js";

function entry(tokenId: string, userId = "u1"): CachedToken {
  return { tokenId, principal: { id: userId, name: userId, role: "tech" }, active: true, expiresAt: 10_000_000 };
}

describe("token cache", () => {
  it("keeps a lookup for its TTL", () => {
    let now = 1000;
    const cache = new TokenCache({ ttlMs: 5000, now: () => now });
    cache.set("h1", entry("t1"), cache.generation);
    expect(cache.get("h1")?.tokenId).toBe("t1");
    now += 4999;
    expect(cache.get("h1")?.tokenId).toBe("t1");
    now += 1;
    expect(cache.get("h1")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("keeps at most maxEntries, dropping the oldest", () => {
    const cache = new TokenCache({ maxEntries: 3, now: () => 0 });
    for (const hash of ["a", "b", "c", "d"]) cache.set(hash, entry(hash), cache.generation);
    expect(cache.size).toBe(3);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.get("d")?.tokenId).toBe("d");
  });

  it("forgets a user's or a token's entries", () => {
    const cache = new TokenCache({ now: () => 0 });
    cache.set("a", entry("ta", "ann"), cache.generation);
    cache.set("b", entry("tb", "ann"), cache.generation);
    cache.set("c", entry("tc", "bob"), cache.generation);
    cache.invalidateUser("ann");
    expect([cache.get("a"), cache.get("b"), cache.get("c")?.tokenId]).toEqual([undefined, undefined, "tc"]);
    cache.invalidateToken("tc");
    expect(cache.get("c")).toBeUndefined();
  });

  it("does not keep a lookup that started before an invalidation", () => {
    const cache = new TokenCache({ now: () => 0 });
    const generation = cache.generation;
    cache.invalidateUser("ann");
    cache.set("a", entry("ta", "ann"), generation);
    expect(cache.get("a")).toBeUndefined();
    cache.set("a", entry("ta", "ann"), cache.generation);
    expect(cache.get("a")?.tokenId).toBe("ta");
  });

  it("keeps nothing with a TTL of 0", () => {
    const cache = new TokenCache({ ttlMs: 0, now: () => 0 });
    cache.set("a", entry("ta"), cache.generation);
    expect(cache.get("a")).toBeUndefined();
  });
});
