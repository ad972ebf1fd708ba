import { describe, expect, it } from "vitest";
import { LastUsedRecorder } from "../../src/registry/last-used.js";
import { TokenCache } from "../../src/registry/token-cache.js";
import { generateToken, hashToken, type TokenOwner } from "../../src/registry/tokens.js";
import { type Invalidation, isInvalidation, RegistryVerifier } from "../../src/registry/verifier.js";

/**
 * A verifier over `owners` (or `findOwner`), recording lookups, last-use writes and the
 * invalidations it tells other instances of.
 */
function setUp(owners: Map<string, TokenOwner>, findOwner?: (hash: string) => Promise<TokenOwner | undefined>) {
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
      return findOwner === undefined ? owners.get(hash) : findOwner(hash);
    },
    cache: new TokenCache({ now: () => now }),
    lastUsed,
    now: () => now,
  });
  const told: Invalidation[] = [];
  verifier.onInvalidate = (change) => told.push(change);
  return {
    verifier,
    lookups,
    told,
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

describe("registry verifier invalidation across instances", () => {
  it("tells onInvalidate what to forget when a user changed or a token was deleted here", () => {
    const { verifier, told } = setUp(new Map());
    verifier.invalidateUser("u1");
    expect(told).toEqual([{ user: "u1" }]);
    verifier.invalidateToken("t9");
    expect(told).toEqual([{ user: "u1" }, { token: "t9" }]);
    // Every told change is recognised by the receiving side.
    for (const change of told) expect(isInvalidation(JSON.parse(JSON.stringify(change)))).toBe(true);
  });

  it("forgets locally before telling the others", async () => {
    const token = generateToken();
    const owners = new Map([[hashToken(token), owner()]]);
    const { verifier, lookups } = setUp(owners);
    await verifier.verify(token);
    owners.set(hashToken(token), owner({ active: false }));
    let answerWhenTold: unknown;
    verifier.onInvalidate = () => {
      answerWhenTold = verifier.verify(token);
    };
    verifier.invalidateUser("u1");
    // The cache was already cleared when the others were told: a lookup started.
    expect(answerWhenTold).toBeInstanceOf(Promise);
    expect(await answerWhenTold).toEqual({ outcome: "inactive" });
    expect(lookups).toHaveLength(2);
  });

  it("applies another instance's change with forget(), without telling anybody again", async () => {
    const token = generateToken();
    const owners = new Map([[hashToken(token), owner()]]);
    const { verifier, lookups, told } = setUp(owners);
    expect((await verifier.verify(token)).outcome).toBe("ok");
    // Another instance deactivated the user and told this one.
    owners.set(hashToken(token), owner({ active: false }));
    expect(verifier.verify(token)).toMatchObject({ outcome: "ok" }); // cached until told
    verifier.forget({ user: "u1" });
    expect(await verifier.verify(token)).toEqual({ outcome: "inactive" });
    // Another instance deleted the token.
    owners.delete(hashToken(token));
    verifier.forget({ token: "t1" });
    expect(await verifier.verify(token)).toEqual({ outcome: "invalid" });
    expect(lookups).toHaveLength(3);
    expect(told).toEqual([]);
  });

  it("forgets only the user or token named", async () => {
    const ann = generateToken();
    const bob = generateToken();
    const owners = new Map([
      [hashToken(ann), owner()],
      [hashToken(bob), owner({ tokenId: "t2", userId: "u2", userName: "bob" })],
    ]);
    const { verifier, lookups } = setUp(owners);
    await verifier.verify(ann);
    await verifier.verify(bob);
    verifier.forget({ user: "u2" });
    expect(verifier.verify(ann)).not.toBeInstanceOf(Promise);
    expect(verifier.verify(bob)).toBeInstanceOf(Promise);
    await verifier.verify(bob);
    verifier.forget({ token: "t1" });
    expect(verifier.verify(ann)).toBeInstanceOf(Promise);
    expect(verifier.verify(bob)).not.toBeInstanceOf(Promise);
    expect(lookups).toHaveLength(4);
  });

  it('forgets every cached lookup on forget("all")', async () => {
    const tokens = [generateToken(), generateToken(), generateToken()];
    const owners = new Map(
      tokens.map((token, index) => [hashToken(token), owner({ tokenId: `t${index}`, userId: `u${index}` })]),
    );
    const { verifier, lookups, told } = setUp(owners);
    for (const token of tokens) await verifier.verify(token);
    for (const token of tokens) expect(verifier.verify(token)).not.toBeInstanceOf(Promise);
    expect(lookups).toHaveLength(3);
    // Changes may have been missed while the change listener was down.
    for (const token of tokens) owners.set(hashToken(token), owner({ active: false }));
    verifier.forget("all");
    for (const token of tokens) expect(await verifier.verify(token)).toEqual({ outcome: "inactive" });
    expect(lookups).toHaveLength(6);
    expect(told).toEqual([]);
  });

  it.each([
    ["a user", { user: "u1" }],
    ["every lookup", "all"],
  ] as const)("does not reuse nor cache a lookup that started before forgetting %s", async (_, change) => {
    const token = generateToken();
    let release: (value: TokenOwner | undefined) => void = () => {};
    const pending: Array<Promise<TokenOwner | undefined>> = [];
    const { verifier, lookups } = setUp(new Map(), () => {
      const lookup = new Promise<TokenOwner | undefined>((resolve) => {
        release = resolve;
      });
      pending.push(lookup);
      return lookup;
    });
    const before = verifier.verify(token);
    const releaseFirst = release;
    verifier.forget(change);
    const after = verifier.verify(token);
    expect(lookups).toHaveLength(2);
    release(owner({ active: false }));
    releaseFirst(owner());
    expect(await after).toEqual({ outcome: "inactive" });
    expect((await before).outcome).toBe("ok");
    // The stale answer was not kept: the fresh one is cached.
    expect(verifier.verify(token)).toEqual({ outcome: "inactive" });
    expect(lookups).toHaveLength(2);
  });

  it("recognises invalidations received from another instance", () => {
    expect(isInvalidation({ user: "u1" })).toBe(true);
    expect(isInvalidation({ token: "t1" })).toBe(true);
    expect(isInvalidation({ user: "" })).toBe(true);
    for (const value of [
      undefined,
      null,
      "u1",
      1,
      true,
      [],
      ["u1"],
      {},
      { user: 1 },
      { token: null },
      { users: "u1" },
    ]) {
      expect(isInvalidation(value), JSON.stringify(value)).toBe(false);
    }
  });
});
