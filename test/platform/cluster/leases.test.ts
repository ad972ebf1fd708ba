import { describe, expect, it } from "vitest";
import { SHARD_COUNT, shardOf } from "../../../src/platform/cluster/index.js";
import { type LeaseListener, type LeaseQueries, LeaseSet, shareOf } from "../../../src/platform/cluster/leases.js";
import { type HeldLease, type LeaseTable, SHARD_LEASES } from "../../../src/platform/cluster/storage.js";

/** FNV-1a 32-bit, from its definition (offset basis 2166136261, prime 16777619), in BigInt arithmetic. */
function fnv1a32(bytes: Iterable<number>): number {
  let hash = 2166136261n;
  for (const byte of bytes) {
    hash ^= BigInt(byte);
    hash = (hash * 16777619n) % 2n ** 32n;
  }
  return Number(hash);
}

const utf8 = (text: string) => new TextEncoder().encode(text);

describe("shareOf", () => {
  it("splits the keys evenly, the first members taking one more", () => {
    expect([0, 1, 2].map((rank) => shareOf(256, 3, rank))).toEqual([86, 85, 85]);
    expect(shareOf(256, 1, 0)).toBe(256);
    expect([0, 1].map((rank) => shareOf(256, 2, rank))).toEqual([128, 128]);
    expect([0, 1, 2, 3, 4].map((rank) => shareOf(256, 5, rank))).toEqual([52, 51, 51, 51, 51]);
    expect([0, 1, 2].map((rank) => shareOf(2, 3, rank))).toEqual([1, 1, 0]);
    for (let members = 1; members <= 20; members++) {
      let total = 0;
      for (let rank = 0; rank < members; rank++) total += shareOf(256, members, rank);
      expect(total).toBe(256);
    }
  });

  it("gives every key to a member alone in a cluster of none (not yet listed)", () => {
    expect(shareOf(256, 0, 0)).toBe(256);
    expect(shareOf(7, 0, -1)).toBe(7);
  });
});

describe("shardOf", () => {
  it("is FNV-1a 32-bit of the UTF-8 name, mod 256", () => {
    expect(SHARD_COUNT).toBe(256);
    expect(shardOf("")).toBe(0x811c9dc5 % 256);
    // The published test vectors of FNV-1a 32.
    expect(fnv1a32(utf8("a"))).toBe(0xe40c292c);
    expect(fnv1a32(utf8("foobar"))).toBe(0xbf9cf968);
    expect(shardOf("a")).toBe(0xe40c292c % 256);
    expect(shardOf("foobar")).toBe(0xbf9cf968 % 256);
    for (const name of ["web-frontend", "db.primary:5432", "x".repeat(255), "check-0", "check-1"]) {
      expect(shardOf(name)).toBe(fnv1a32(utf8(name)) % 256);
    }
  });

  it("hashes the UTF-8 bytes of non-ASCII names, not their UTF-16 code units", () => {
    for (const name of ["é", "café-api", "日本語のチェック", "emoji-🚀"]) {
      const shard = shardOf(name);
      expect(shard).toBe(fnv1a32(utf8(name)) % 256);
      expect(shard).toBeGreaterThanOrEqual(0);
      expect(shard).toBeLessThan(256);
    }
    // Where bytes and code units give different shards, the bytes win.
    const codeUnits = (text: string) => [...text].flatMap((_, index) => [text.charCodeAt(index) & 0xff]);
    expect(fnv1a32(utf8("é")) % 256).not.toBe(fnv1a32(codeUnits("é")) % 256);
    expect(shardOf("é")).toBe(fnv1a32([0xc3, 0xa9]) % 256);
  });

  it("spreads names over every shard", () => {
    const seen = new Set<number>();
    for (let index = 0; index < 5_000; index++) seen.add(shardOf(`check-${index}`));
    expect(seen.size).toBe(256);
  });
});

interface Row {
  owner: string | null;
  epoch: number;
  expiresAt: number | null;
}

/**
 * A lease table in memory with the semantics of ClusterStore's queries, and a clock the test
 * moves (the same clock serves as the database's `now()` and the instances' monotonic clock).
 */
class FakeLeases implements LeaseQueries {
  readonly rows = new Map<string | number, Row>();
  now = 1_000;
  calls: string[] = [];

  async ensureKeys<K extends string | number>(_table: LeaseTable, keys: readonly K[]): Promise<void> {
    for (const key of keys) if (!this.rows.has(key)) this.rows.set(key, { owner: null, epoch: 0, expiresAt: null });
  }

  async renew<K>(_table: LeaseTable, owner: string, leaseMs: number): Promise<Array<HeldLease<K>>> {
    this.calls.push(`renew ${owner}`);
    const renewed: Array<HeldLease<K>> = [];
    for (const [key, row] of this.rows) {
      if (row.owner === owner && row.expiresAt !== null && row.expiresAt > this.now) {
        row.expiresAt = this.now + leaseMs;
        renewed.push({ key: key as K, epoch: row.epoch });
      }
    }
    return renewed;
  }

  async release<K extends string | number>(_table: LeaseTable, owner: string, keys: readonly K[]): Promise<void> {
    this.calls.push(`release ${owner} ${keys.length}`);
    for (const key of keys) {
      const row = this.rows.get(key);
      if (row !== undefined && row.owner === owner) {
        row.owner = null;
        row.expiresAt = null;
      }
    }
  }

  async take<K extends string | number>(
    _table: LeaseTable,
    owner: string,
    keys: readonly K[],
    count: number,
    leaseMs: number,
  ): Promise<Array<HeldLease<K>>> {
    this.calls.push(`take ${owner} ${count}`);
    const taken: Array<HeldLease<K>> = [];
    for (const key of keys) {
      if (taken.length >= count) break;
      const row = this.rows.get(key);
      if (row === undefined) continue;
      if (row.owner === null || row.expiresAt === null || row.expiresAt <= this.now) {
        row.owner = owner;
        row.epoch += 1;
        row.expiresAt = this.now + leaseMs;
        taken.push({ key, epoch: row.epoch });
      }
    }
    return taken;
  }

  async nextExpiry<K extends string | number>(
    _table: LeaseTable,
    owner: string,
    keys: readonly K[],
  ): Promise<number | undefined> {
    let first: number | undefined;
    for (const key of keys) {
      const row = this.rows.get(key);
      if (row === undefined || row.owner === null || row.owner === owner || row.expiresAt === null) continue;
      if (first === undefined || row.expiresAt < first) first = row.expiresAt;
    }
    return first === undefined ? undefined : first - this.now;
  }

  /** The live owner of each key, by the table. */
  liveOwners(): Map<string, Array<string | number>> {
    const owners = new Map<string, Array<string | number>>();
    for (const [key, row] of this.rows) {
      if (row.owner === null || row.expiresAt === null || row.expiresAt <= this.now) continue;
      owners.set(row.owner, [...(owners.get(row.owner) ?? []), key]);
    }
    return owners;
  }
}

const LEASE_MS = 10_000;
const ALL = Array.from({ length: 256 }, (_, shard) => shard);

function member(queries: FakeLeases, id: string): LeaseSet<number> {
  return new LeaseSet<number>(
    SHARD_LEASES,
    id,
    LEASE_MS,
    queries,
    () => ALL,
    () => queries.now,
  );
}

/** A listener recording what it was told, keys sorted. */
function recorder() {
  const gained: number[][] = [];
  const lost: number[][] = [];
  const all: string[] = [];
  const listener: LeaseListener<number> = {
    gained(keys) {
      gained.push([...keys].sort((a, b) => a - b));
      all.push(`gained ${keys.length}`);
    },
    lost(keys) {
      lost.push([...keys].sort((a, b) => a - b));
      all.push(`lost ${keys.length}`);
    },
  };
  return { listener, gained, lost, all };
}

/** A listener keeping the set of keys it was told it holds. */
function follower(): LeaseListener<number> & { keys: Set<number>; events: Array<["gained" | "lost", number[]]> } {
  const keys = new Set<number>();
  const events: Array<["gained" | "lost", number[]]> = [];
  return {
    keys,
    events,
    gained(gained) {
      events.push(["gained", [...gained].sort((a, b) => a - b)]);
      for (const key of gained) {
        expect(keys.has(key)).toBe(false);
        keys.add(key);
      }
    },
    lost(lost) {
      events.push(["lost", [...lost].sort((a, b) => a - b)]);
      for (const key of lost) {
        expect(keys.has(key)).toBe(true);
        keys.delete(key);
      }
    },
  };
}

/** One heartbeat of each member in turn, the members list sorted. */
async function round(queries: FakeLeases, sets: ReadonlyArray<LeaseSet<number>>, members?: readonly string[]) {
  const ids = members ?? sets.map((set) => set.owner).sort();
  const expiries: Array<number | undefined> = [];
  for (const set of sets) expiries.push(await set.balance(ids, queries.now));
  return expiries;
}

/** Checks that every shard is held by exactly one of `sets`, by the sets and by the table. */
function expectPartition(queries: FakeLeases, sets: ReadonlyArray<LeaseSet<number>>) {
  const seen = new Map<number, string>();
  for (const set of sets) {
    for (const key of set.held()) {
      expect(seen.get(key), `shard ${key} held by ${seen.get(key)} and ${set.owner}`).toBeUndefined();
      seen.set(key, set.owner);
      expect(set.owns(key)).toBe(true);
      expect(queries.rows.get(key)?.owner).toBe(set.owner);
    }
  }
  expect(seen.size).toBe(256);
  const byTable = queries.liveOwners();
  for (const set of sets)
    expect([...(byTable.get(set.owner) ?? [])].sort((a, b) => +a - +b)).toEqual(set.held().sort((a, b) => a - b));
}

describe("LeaseSet", () => {
  it("converges to 86/85/85 among three members, every shard owned by exactly one", async () => {
    const queries = new FakeLeases();
    const sets = ["c", "a", "b"].map((id) => member(queries, id));
    await round(queries, sets);
    const bySize = Object.fromEntries(sets.map((set) => [set.owner, set.size]));
    expect(bySize).toEqual({ a: 86, b: 85, c: 85 });
    expectPartition(queries, sets);
    // Stable afterwards: heartbeats renew, nothing moves.
    const before = sets.map((set) => set.held().sort((x, y) => x - y));
    for (let beat = 0; beat < 5; beat++) {
      queries.now += 2_000;
      await round(queries, sets);
    }
    expect(sets.map((set) => set.held().sort((x, y) => x - y))).toEqual(before);
    expectPartition(queries, sets);
  });

  it("makes the members over their share release down to it when members join", async () => {
    const queries = new FakeLeases();
    const a = member(queries, "a");
    const b = member(queries, "b");
    const c = member(queries, "c");
    const listenA = follower();
    const listenB = follower();
    const listenC = follower();
    a.listen(listenA);
    b.listen(listenB);
    c.listen(listenC);

    // Alone: every shard.
    expect(await a.balance(["a"], queries.now)).toBeUndefined();
    expect(a.size).toBe(256);
    expect(listenA.events).toEqual([["gained", ALL]]);

    // b joins: it finds nothing free and is told when the first of a's leases ends.
    queries.now += 2_000;
    const wait = await b.balance(["a", "b"], queries.now);
    expect(b.size).toBe(0);
    expect(wait).toBe(LEASE_MS - 2_000);
    // a releases down to 128 (the highest keys), then b takes them.
    expect(await a.balance(["a", "b"], queries.now)).toBeUndefined();
    expect(a.size).toBe(128);
    expect(listenA.events[1]).toEqual(["lost", ALL.slice(128)]);
    await b.balance(["a", "b"], queries.now);
    expect(b.size).toBe(128);
    expect(listenB.events).toEqual([["gained", ALL.slice(128)]]);
    expectPartition(queries, [a, b]);

    // c joins.
    queries.now += 2_000;
    await round(queries, [c, a, b], ["a", "b", "c"]);
    queries.now += 2_000;
    await round(queries, [c, a, b], ["a", "b", "c"]);
    expect([a.size, b.size, c.size]).toEqual([86, 85, 85]);
    expectPartition(queries, [a, b, c]);
    // What each listener was told matches what each holds.
    expect([...listenA.keys].sort((x, y) => x - y)).toEqual(a.held().sort((x, y) => x - y));
    expect([...listenB.keys].sort((x, y) => x - y)).toEqual(b.held().sort((x, y) => x - y));
    expect([...listenC.keys].sort((x, y) => x - y)).toEqual(c.held().sort((x, y) => x - y));
    // Every epoch increased once per change of hands: a held 0..255 (1), b took 128..255 (2), c took some (2 or 3).
    for (const key of c.held()) expect(queries.rows.get(key)?.epoch).toBeGreaterThanOrEqual(2);
  });

  it("takes the shards of a dead member only after its lease expired", async () => {
    const queries = new FakeLeases();
    const a = member(queries, "a");
    const b = member(queries, "b");
    const c = member(queries, "c");
    await round(queries, [a, b, c]);
    expectPartition(queries, [a, b, c]);
    const dead = c.held();
    const deadUntil = queries.now + LEASE_MS;

    // c stops heartbeating; the database no longer lists it among the live members.
    const gainedByA = follower();
    a.listen(gainedByA);
    const taken = () => dead.filter((key) => a.owns(key) || b.owns(key));
    for (let elapsed = 2_000; elapsed < LEASE_MS; elapsed += 2_000) {
      queries.now += 2_000;
      const [waitA, waitB] = await round(queries, [a, b], ["a", "b"]);
      expect(taken()).toEqual([]);
      // Under its share, each is told when c's first lease ends.
      expect(waitA).toBe(deadUntil - queries.now);
      expect(waitB).toBe(deadUntil - queries.now);
    }
    // One millisecond before: still c's.
    queries.now = deadUntil - 1;
    await round(queries, [a, b], ["a", "b"]);
    expect(taken()).toEqual([]);
    // At its expiry: split between a and b, 128 each.
    queries.now = deadUntil;
    await round(queries, [a, b], ["a", "b"]);
    expect(a.size).toBe(128);
    expect(b.size).toBe(128);
    expect(taken().sort((x, y) => x - y)).toEqual(dead.sort((x, y) => x - y));
    expectPartition(queries, [a, b]);
    expect(gainedByA.events.flatMap(([, keys]) => keys).every((key) => dead.includes(key))).toBe(true);
    for (const key of dead) expect(queries.rows.get(key)?.epoch).toBe(2);
  });

  it("stops owning when its lease passes without a renewal, and tells the listeners on expire()", async () => {
    const queries = new FakeLeases();
    const a = member(queries, "a");
    const listener = follower();
    a.listen(listener);
    const startedAt = queries.now;
    await a.balance(["a"], startedAt);
    expect(a.owns(0)).toBe(true);
    expect(a.owns(255)).toBe(true);

    // The database is unreachable from now on: no renewal.
    queries.now = startedAt + LEASE_MS - 1;
    expect(a.owns(0)).toBe(true);
    await a.expire();
    expect(listener.events).toHaveLength(1);
    queries.now = startedAt + LEASE_MS;
    expect(a.owns(0)).toBe(false);
    expect(a.held()).toHaveLength(256); // held, not yet noticed as lapsed
    await a.expire();
    expect(listener.events).toEqual([
      ["gained", ALL],
      ["lost", ALL],
    ]);
    expect(a.size).toBe(0);
    expect(a.owns(0)).toBe(false);
    // A second expire() has nothing more to say.
    await a.expire();
    expect(listener.events).toHaveLength(2);
  });

  it("measures its lease from before the renewal was sent", async () => {
    const queries = new FakeLeases();
    const a = member(queries, "a");
    const startedAt = queries.now;
    queries.now += 300; // the queries took 300 ms
    await a.balance(["a"], startedAt);
    queries.now = startedAt + LEASE_MS - 1;
    expect(a.owns(7)).toBe(true);
    queries.now = startedAt + LEASE_MS;
    // The database still counts 300 ms more; this instance already let go.
    expect(a.owns(7)).toBe(false);
    expect(queries.rows.get(7)?.expiresAt).toBe(startedAt + 300 + LEASE_MS);
  });

  it("gives up lapsed leases found at the next renewal, telling the listeners", async () => {
    const queries = new FakeLeases();
    const a = member(queries, "a");
    const b = member(queries, "b");
    const listenA = follower();
    a.listen(listenA);
    await a.balance(["a"], queries.now);
    // a misses its heartbeats; b takes everything once a's leases expired.
    queries.now += LEASE_MS;
    await b.balance(["b"], queries.now);
    expect(b.size).toBe(256);
    // a comes back: its renewal finds nothing; it loses every shard, then aims at its share.
    queries.now += 1_000;
    await a.balance(["a", "b"], queries.now);
    expect(listenA.events[1]).toEqual(["lost", ALL]);
    expect(a.size).toBe(0);
    await b.balance(["a", "b"], queries.now);
    await a.balance(["a", "b"], queries.now);
    expect([a.size, b.size]).toEqual([128, 128]);
    expectPartition(queries, [a, b]);
  });

  it("releases everything on releaseAll(), listeners first", async () => {
    const queries = new FakeLeases();
    const a = member(queries, "a");
    const order: string[] = [];
    a.listen({
      gained: () => {},
      lost: (keys) => {
        order.push(`lost ${keys.length}, table owner ${queries.rows.get(keys[0] as number)?.owner}`);
      },
    });
    await a.balance(["a"], queries.now);
    await a.releaseAll();
    expect(order).toEqual(["lost 256, table owner a"]);
    expect(a.size).toBe(0);
    expect(queries.liveOwners().size).toBe(0);
  });

  it("calls gained and lost with the keys, and counts rebalances", async () => {
    const queries = new FakeLeases();
    const a = member(queries, "a");
    const record = recorder();
    a.listen(record.listener);
    let rebalances = 0;
    a.onRebalance = () => {
      rebalances++;
    };
    await a.balance(["a"], queries.now);
    await a.balance(["a", "b", "c"], queries.now);
    expect(record.gained).toEqual([ALL]);
    expect(record.lost).toEqual([ALL.slice(86)]);
    expect(record.all).toEqual(["gained 256", "lost 170"]);
    expect(rebalances).toBe(2);
    expect(a.held().sort((x, y) => x - y)).toEqual(ALL.slice(0, 86));
    // Nothing changes: no call, no rebalance.
    await a.balance(["a", "b", "c"], queries.now);
    expect(record.all).toHaveLength(2);
    expect(rebalances).toBe(2);
  });

  it("goes on balancing when a listener throws, reporting it to onError", async () => {
    const queries = new FakeLeases();
    const a = member(queries, "a");
    const errors: unknown[] = [];
    a.onError = (error) => errors.push(error);
    const boom = new Error("listener failed");
    a.listen({
      gained: () => {
        throw boom;
      },
      lost: async () => {
        throw boom;
      },
    });
    const after = follower();
    a.listen(after);
    await a.balance(["a", "b"], queries.now);
    expect(a.size).toBe(128);
    expect(errors).toEqual([boom]);
    expect(after.keys.size).toBe(128);
    await a.balance(["a", "b", "c", "d"], queries.now);
    expect(a.size).toBe(64);
    expect(errors).toEqual([boom, boom]);
    expect(after.keys.size).toBe(64);
    expect(queries.liveOwners().get("a")).toHaveLength(64);
    await a.expire();
    queries.now += LEASE_MS;
    await a.expire();
    expect(errors).toHaveLength(3);
    expect(after.keys.size).toBe(0);
  });

  it("works with string keys that come and go (streams)", async () => {
    const queries = new FakeLeases();
    let names = ["alerts", "metrics", "logs"];
    const table: LeaseTable = { table: "stream_leases", key: "name", keyType: "text" };
    const a = new LeaseSet<string>(
      table,
      "a",
      LEASE_MS,
      queries,
      () => [],
      () => queries.now,
    );
    a.setKeys(() => names);
    const lost: string[][] = [];
    a.listen({ gained: () => {}, lost: (keys) => void lost.push([...keys]) });
    await a.balance(["a"], queries.now);
    expect(a.held().sort()).toEqual(["alerts", "logs", "metrics"]);
    names = ["alerts", "logs", "new"];
    await a.balance(["a"], queries.now);
    // "metrics" is no longer wanted: released; "new" comes at the next heartbeat.
    expect(lost).toEqual([["metrics"]]);
    expect(queries.rows.get("metrics")?.owner).toBeNull();
    await a.balance(["a"], queries.now);
    expect(a.held().sort()).toEqual(["alerts", "logs", "new"]);
  });
});

describe("LeaseSet after a restart under the same id", () => {
  it("takes back, and tells its listeners of, the leases its previous process still holds", async () => {
    const queries = new FakeLeases();
    const before = member(queries, "a");
    await round(queries, [before]);
    expect(before.size).toBe(256);
    // The process restarts within the lease: a new set under the same id, nothing held locally.
    queries.now += 3_000;
    const after = member(queries, "a");
    const record = recorder();
    after.listen(record.listener);
    await round(queries, [after]);
    expect(after.size).toBe(256);
    expect(record.gained.flat().sort((x, y) => x - y)).toEqual(ALL);
    expect(ALL.every((shard) => after.owns(shard))).toBe(true);
  });
});
