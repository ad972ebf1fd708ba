import { describe, expect, it } from "vitest";
import { LastUsedRecorder } from "../../src/registry/last-used.js";
import { TokenCache } from "../../src/registry/token-cache.js";
import { generateToken, hashToken, type TokenOwner } from "../../src/registry/tokens.js";
import { RegistryVerifier } from "../../src/registry/verifier.js";

function setUp(owners: Map<string, TokenOwner>) {
  let now = 1_000_000;
  const lookups: string[] = [];
  const writes: Array<[string, number]> = [];
  const lastUsed = new LastUsedRecorder({
    write: async (tokenId, at) => void writes.push([tokenId, at]),
    onError: () => undefined,
  });
  const verifier = new RegistryVerifier({
    findOwner: async (hash) => {
      lookups.push(hash);
      return owners.get(hash);
    },
    cache: new TokenCache({ now: () => now }),
    lastUsed,
    now: () => now,
  });
  return {
    verifier,
    lookups,
    writes,
    lastUsed,
    advance: (milliseconds: number) => {
      now += milliseconds;
    },
  };
}

function owner(changes: Partial<TokenOwner> = {}): TokenOwner {
  return {
    tokenId: "t1",
    expiresAt: 2_000_000,
    lastUsedAt: null,
    userId: "u1",
    userName: "ann",
    role: "tech",
    active: true,
    ...changes,
  };
}

describe("registry verifier", () => {
  it("refuses a malformed token synchronously without a lookup", () => {
    const { verifier, lookups } = setUp(new Map());
    expect(verifier.verify("not-a-token")).toEqual({ outcome: "invalid" });
    expect(lookups).toEqual([]);
  });

  it("looks a token up once, then answers synchronously from the cache", async () => {
    const token = generateToken();
    const { verifier, lookups, writes, lastUsed } = setUp(new Map([[hashToken(token), owner()]]));
    const first = verifier.verify(token);
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toEqual({ outcome: "ok", principal: { id: "u1", name: "ann", role: "tech" } });
    const second = verifier.verify(token);
    expect(second).not.toBeInstanceOf(Promise);
    expect(second).toEqual({ outcome: "ok", principal: { id: "u1", name: "ann", role: "tech" } });
    expect(lookups).toEqual([hashToken(token)]);
    await lastUsed.flush();
    expect(writes).toEqual([["t1", 1_000_000]]);
  });

  it("asks the database once for a burst of requests with a new token", async () => {
    const token = generateToken();
    const { verifier, lookups } = setUp(new Map([[hashToken(token), owner()]]));
    const results = await Promise.all([verifier.verify(token), verifier.verify(token), verifier.verify(token)]);
    expect(results.map((result) => result.outcome)).toEqual(["ok", "ok", "ok"]);
    expect(lookups).toHaveLength(1);
  });

  it("tells unknown, expired and inactive apart, checking expiry on every request", async () => {
    const expired = generateToken();
    const inactive = generateToken();
    const soon = generateToken();
    const { verifier, advance } = setUp(
      new Map([
        [hashToken(expired), owner({ tokenId: "t2", expiresAt: 1_000_000 })],
        [hashToken(inactive), owner({ tokenId: "t3", active: false })],
        [hashToken(soon), owner({ tokenId: "t4", expiresAt: 1_000_500 })],
      ]),
    );
    expect(await verifier.verify(generateToken())).toEqual({ outcome: "invalid" });
    expect(await verifier.verify(expired)).toEqual({ outcome: "expired" });
    expect(await verifier.verify(inactive)).toEqual({ outcome: "inactive" });
    expect((await verifier.verify(soon)).outcome).toBe("ok");
    advance(500);
    expect(verifier.verify(soon)).toEqual({ outcome: "expired" });
  });

  it("carries the token's scopes and crates on the principal, from the same lookup and then the cache", async () => {
    const scoped = generateToken();
    const plain = generateToken();
    const { verifier, lookups } = setUp(
      new Map([
        [hashToken(scoped), owner({ tokenId: "t5", scopes: ["yank"], crates: ["acme-*"] })],
        [hashToken(plain), owner({ tokenId: "t6" })],
      ]),
    );
    const first = await verifier.verify(scoped);
    expect(first).toEqual({
      outcome: "ok",
      principal: { id: "u1", name: "ann", role: "tech", scopes: ["yank"], crates: ["acme-*"] },
    });
    // The cached answer is the very same object: nothing is built per request.
    const second = verifier.verify(scoped);
    expect(second).toBe(first);
    const unscoped = await verifier.verify(plain);
    expect(unscoped.outcome === "ok" && unscoped.principal.scopes).toBeUndefined();
    expect(unscoped.outcome === "ok" && unscoped.principal.crates).toBeUndefined();
    // One shape for every principal: both keys exist, undefined when absent.
    expect(unscoped.outcome === "ok" && Object.keys(unscoped.principal)).toEqual([
      "id",
      "name",
      "role",
      "scopes",
      "crates",
    ]);
    expect(lookups).toHaveLength(2);
  });

  it("asks again after an invalidation", async () => {
    const token = generateToken();
    const owners = new Map([[hashToken(token), owner()]]);
    const { verifier, lookups } = setUp(owners);
    await verifier.verify(token);
    owners.set(hashToken(token), owner({ active: false }));
    expect(verifier.verify(token)).toMatchObject({ outcome: "ok" });
    verifier.invalidateUser("u1");
    expect(await verifier.verify(token)).toEqual({ outcome: "inactive" });
    owners.delete(hashToken(token));
    verifier.invalidateToken("t1");
    expect(await verifier.verify(token)).toEqual({ outcome: "invalid" });
    expect(lookups).toHaveLength(3);
  });
});
