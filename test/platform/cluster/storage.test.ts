import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ClusterStore, type HeldLease, SHARD_LEASES, STREAM_LEASES } from "../../../src/platform/cluster/storage.js";
import { type Database, openDatabase } from "../../../src/platform/database.js";
import { allMigrations } from "../../../src/server.js";
import { createTestDatabase, POSTGRES_URL, type TestDatabase } from "../../support/databases.js";

const CLUSTER_TABLES = ["cluster_members", "healthcheck_shard_leases", "stream_leases"];
const LEASE_MS = 10_000;
const ALL = Array.from({ length: 256 }, (_, shard) => shard);

if (POSTGRES_URL === undefined) {
  console.warn(
    "test/platform/cluster/storage.test.ts: VIGIE_TEST_POSTGRES_URL is not set; the PostgreSQL tests are skipped",
  );
}

const keysOf = <K>(leases: ReadonlyArray<HeldLease<K>>) => leases.map((lease) => lease.key);
const sorted = (keys: readonly number[]) => [...keys].sort((a, b) => a - b);

describe("cluster tables on SQLite", () => {
  let test: TestDatabase;
  let database: Database;
  beforeAll(async () => {
    test = await createTestDatabase("sqlite");
    database = await openDatabase(test.url, allMigrations());
  });
  afterAll(async () => {
    await database?.close();
    await test?.drop();
  });

  it("creates the three tables, empty", async () => {
    const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(
      database.kysely,
    );
    const names = rows.map((row) => row.name);
    for (const table of CLUSTER_TABLES) {
      expect(names).toContain(table);
      const count = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(database.kysely);
      expect(Number(count.rows[0]?.n)).toBe(0);
    }
  });
});

describe.skipIf(POSTGRES_URL === undefined)("ClusterStore on PostgreSQL", () => {
  let test: TestDatabase;
  let database: Database;
  let storage: ClusterStore;

  beforeAll(async () => {
    test = await createTestDatabase("postgres");
    database = await openDatabase(test.url, allMigrations());
    storage = new ClusterStore(database.kysely);
  });
  afterAll(async () => {
    await database?.close();
    await test?.drop();
  });
  beforeEach(async () => {
    for (const table of CLUSTER_TABLES) await sql`delete from ${sql.table(table)}`.execute(database.kysely);
  });

  /** Moves the heartbeat of `id` into the past by the database's clock. */
  const ageHeartbeat = (id: string, milliseconds: number) =>
    sql`update cluster_members set heartbeat_at = now() - ${milliseconds} * interval '1 millisecond' where id = ${id}`.execute(
      database.kysely,
    );

  /** Moves the expiry of a lease into the past (or future) by the database's clock. */
  const expireLease = (shard: number, inMilliseconds: number) =>
    sql`update healthcheck_shard_leases set expires_at = now() + ${inMilliseconds} * interval '1 millisecond' where shard = ${shard}`.execute(
      database.kysely,
    );

  it("creates the three tables", async () => {
    const { rows } = await sql<{ name: string }>`
      select table_name as name from information_schema.tables where table_schema = 'public'
    `.execute(database.kysely);
    for (const table of CLUSTER_TABLES) expect(rows.map((row) => row.name)).toContain(table);
  });

  it("lists the members whose heartbeat is within the lease, sorted, by the database's clock", async () => {
    const started = new Date("2026-01-02T03:04:05.000Z");
    await storage.heartbeat("b", "http://b:8080", started);
    await storage.heartbeat("a", "http://a:8080", started);
    await storage.heartbeat("c", "http://c:8080", started);
    let alive = await storage.aliveMembers(LEASE_MS);
    expect(alive.map((member) => member.id)).toEqual(["a", "b", "c"]);
    expect(alive[0]).toMatchObject({ id: "a", url: "http://a:8080", startedAt: "2026-01-02T03:04:05.000Z" });
    expect(Number.isNaN(Date.parse(alive[0]?.heartbeatAt ?? ""))).toBe(false);

    // b fell silent for longer than the lease: not alive; c just within it.
    await ageHeartbeat("b", LEASE_MS + 1_000);
    await ageHeartbeat("c", LEASE_MS - 2_000);
    alive = await storage.aliveMembers(LEASE_MS);
    expect(alive.map((member) => member.id)).toEqual(["a", "c"]);
    // A heartbeat brings b back, with its new URL.
    await storage.heartbeat("b", "http://b2:8080", started);
    alive = await storage.aliveMembers(LEASE_MS);
    expect(alive.map((member) => member.id)).toEqual(["a", "b", "c"]);
    expect(alive[1]?.url).toBe("http://b2:8080");

    // Silent for ten leases: the row is deleted on the way.
    await ageHeartbeat("c", 10 * LEASE_MS + 1_000);
    await storage.aliveMembers(LEASE_MS);
    const { rows } = await sql<{ id: string }>`select id from cluster_members order by id`.execute(database.kysely);
    expect(rows.map((row) => row.id)).toEqual(["a", "b"]);

    // A graceful stop deletes the row at once.
    await storage.leave("a");
    expect((await storage.aliveMembers(LEASE_MS)).map((member) => member.id)).toEqual(["b"]);
  });

  it("stores fingerprints and lists the other live members'", async () => {
    await storage.heartbeat("a", "http://a", new Date());
    await storage.heartbeat("b", "http://b", new Date());
    await storage.heartbeat("c", "http://c", new Date());
    await storage.setFingerprint("a", '{"x":"1"}');
    await storage.setFingerprint("b", '{"x":"2"}');
    await storage.setFingerprint("c", '{"x":"3"}');
    await ageHeartbeat("c", LEASE_MS + 1);
    expect(await storage.fingerprints("a", LEASE_MS)).toEqual([{ id: "b", fingerprint: '{"x":"2"}' }]);
  });

  it("creates lease rows once (ensureKeys is idempotent)", async () => {
    await storage.ensureKeys(SHARD_LEASES, ALL);
    await storage.ensureKeys(SHARD_LEASES, ALL);
    await storage.ensureKeys(SHARD_LEASES, [0, 1, 2]);
    await storage.ensureKeys(SHARD_LEASES, []);
    const taken = await storage.take(SHARD_LEASES, "a", [5], 1, LEASE_MS);
    expect(taken).toEqual([{ key: 5, epoch: 1 }]);
    // A later ensureKeys does not reset the row.
    await storage.ensureKeys(SHARD_LEASES, [5]);
    const { rows } = await sql<{ n: string; owners: string }>`
      select count(*) as n, count(owner) as owners from healthcheck_shard_leases
    `.execute(database.kysely);
    expect(Number(rows[0]?.n)).toBe(256);
    expect(Number(rows[0]?.owners)).toBe(1);
    expect((await storage.holdings<number>(SHARD_LEASES)).get("a")).toEqual([5]);

    await storage.ensureKeys(STREAM_LEASES, ["alerts", "metrics.cpu"]);
    await storage.ensureKeys(STREAM_LEASES, ["alerts"]);
    const streams = await sql<{ name: string }>`select name from stream_leases order by name`.execute(database.kysely);
    expect(streams.rows.map((row) => row.name)).toEqual(["alerts", "metrics.cpu"]);
    // The partition of a stream of the longest name: 128 characters and `#63`.
    const partition = `${"p".repeat(128)}#63`;
    await storage.ensureKeys(STREAM_LEASES, [partition]);
    expect((await storage.take(STREAM_LEASES, "a", [partition], 1, LEASE_MS)).map((lease) => lease.key)).toEqual([
      partition,
    ]);
  });

  it("takes only free or expired leases, up to the count, with a new epoch each time", async () => {
    await storage.ensureKeys(SHARD_LEASES, ALL);
    const a = await storage.take(SHARD_LEASES, "a", ALL, 100, LEASE_MS);
    expect(a).toHaveLength(100);
    expect(a.every((lease) => lease.epoch === 1)).toBe(true);
    // Only among the keys given, only what is free.
    const b = await storage.take(SHARD_LEASES, "b", ALL, 200, LEASE_MS);
    expect(b).toHaveLength(156);
    expect(new Set([...keysOf(a), ...keysOf(b)]).size).toBe(256);
    expect(await storage.take(SHARD_LEASES, "c", ALL, 10, LEASE_MS)).toEqual([]);
    expect(await storage.take(SHARD_LEASES, "c", ALL, 0, LEASE_MS)).toEqual([]);
    expect(await storage.take(SHARD_LEASES, "c", [], 10, LEASE_MS)).toEqual([]);

    // One of a's leases expires: c takes it, epoch 2; a's renewal no longer returns it.
    const moved = a[0]?.key as number;
    await expireLease(moved, -1);
    expect(await storage.take(SHARD_LEASES, "c", ALL, 10, LEASE_MS)).toEqual([{ key: moved, epoch: 2 }]);
    const renewed = await storage.renew<number>(SHARD_LEASES, "a", LEASE_MS);
    expect(sorted(keysOf(renewed))).toEqual(sorted(keysOf(a).filter((key) => key !== moved)));
    // Released, then taken back by a: epoch 3.
    await storage.release(SHARD_LEASES, "c", [moved]);
    expect(await storage.take(SHARD_LEASES, "a", [moved], 1, LEASE_MS)).toEqual([{ key: moved, epoch: 3 }]);
  });

  it("never gives one lease to two concurrent takers", async () => {
    const second = await openDatabase(test.url, allMigrations());
    try {
      const other = new ClusterStore(second.kysely);
      for (let attempt = 0; attempt < 5; attempt++) {
        await sql`delete from healthcheck_shard_leases`.execute(database.kysely);
        await storage.ensureKeys(SHARD_LEASES, ALL);
        const [a, b, c] = await Promise.all([
          storage.take(SHARD_LEASES, "a", ALL, 200, LEASE_MS),
          other.take(SHARD_LEASES, "b", ALL, 200, LEASE_MS),
          storage.take(SHARD_LEASES, "c", ALL, 200, LEASE_MS),
        ]);
        const all = [...keysOf(a), ...keysOf(b), ...keysOf(c)];
        expect(new Set(all).size).toBe(all.length);
        for (const [owner, leases] of [
          ["a", a],
          ["b", b],
          ["c", c],
        ] as const) {
          for (const lease of leases) expect(lease.epoch).toBe(1);
          expect(sorted((await storage.holdings<number>(SHARD_LEASES)).get(owner) ?? [])).toEqual(
            sorted(keysOf(leases)),
          );
        }
        // Each one-key race has one winner.
        await storage.release(SHARD_LEASES, "a", keysOf(a));
        await storage.release(SHARD_LEASES, "b", keysOf(b));
        await storage.release(SHARD_LEASES, "c", keysOf(c));
        const races = await Promise.all(
          [0, 1, 2, 3].map((index) =>
            (index % 2 === 0 ? storage : other).take(SHARD_LEASES, `r${index}`, [42], 1, LEASE_MS),
          ),
        );
        expect(races.flat()).toHaveLength(1);
        expect(races.flat()[0]?.epoch).toBe(2);
      }
    } finally {
      await second.close();
    }
  });

  it("renews only the unexpired leases of the owner", async () => {
    await storage.ensureKeys(SHARD_LEASES, ALL);
    await storage.take(SHARD_LEASES, "a", [1, 2, 3], 3, LEASE_MS);
    await storage.take(SHARD_LEASES, "b", [4], 1, LEASE_MS);
    await expireLease(3, -1);
    await expireLease(1, 500);
    const renewed = await storage.renew<number>(SHARD_LEASES, "a", LEASE_MS);
    expect(renewed.map((lease) => lease.key).sort()).toEqual([1, 2]);
    expect(renewed.every((lease) => lease.epoch === 1)).toBe(true);
    const { rows } = await sql<{ ms: string }>`
      select extract(epoch from (expires_at - now())) * 1000 as ms from healthcheck_shard_leases where shard = 1
    `.execute(database.kysely);
    expect(Number(rows[0]?.ms)).toBeGreaterThan(LEASE_MS - 2_000);
    expect(await storage.renew(SHARD_LEASES, "nobody", LEASE_MS)).toEqual([]);
  });

  it("releases only the owner's leases", async () => {
    await storage.ensureKeys(SHARD_LEASES, ALL);
    await storage.take(SHARD_LEASES, "a", [1, 2], 2, LEASE_MS);
    await storage.take(SHARD_LEASES, "b", [3], 1, LEASE_MS);
    await storage.release(SHARD_LEASES, "a", [1, 3]);
    await storage.release(SHARD_LEASES, "a", []);
    const holdings = await storage.holdings<number>(SHARD_LEASES);
    expect(holdings.get("a")).toEqual([2]);
    expect(holdings.get("b")).toEqual([3]);
    // Released: free at once.
    expect(await storage.take(SHARD_LEASES, "c", [1], 1, LEASE_MS)).toEqual([{ key: 1, epoch: 2 }]);
  });

  it("lists live holdings by owner, sorted, expired ones left out", async () => {
    await storage.ensureKeys(SHARD_LEASES, ALL);
    await storage.take(SHARD_LEASES, "a", [9, 3, 7], 3, LEASE_MS);
    await storage.take(SHARD_LEASES, "b", [200], 1, LEASE_MS);
    await expireLease(7, -1);
    const holdings = await storage.holdings<number>(SHARD_LEASES);
    expect(holdings.get("a")).toEqual([3, 9]);
    expect(holdings.get("b")).toEqual([200]);
    expect(holdings.size).toBe(2);

    await storage.ensureKeys(STREAM_LEASES, ["b.stream", "a.stream"]);
    await storage.take(STREAM_LEASES, "x", ["a.stream", "b.stream"], 2, LEASE_MS);
    expect((await storage.holdings<string>(STREAM_LEASES)).get("x")).toEqual(["a.stream", "b.stream"]);
  });

  it("tells how long until another owner's first lease among the keys ends", async () => {
    await storage.ensureKeys(SHARD_LEASES, ALL);
    expect(await storage.nextExpiry(SHARD_LEASES, "a", ALL)).toBeUndefined();
    expect(await storage.nextExpiry(SHARD_LEASES, "a", [])).toBeUndefined();
    await storage.take(SHARD_LEASES, "b", [10, 11], 2, LEASE_MS);
    await storage.take(SHARD_LEASES, "a", [12], 1, LEASE_MS);
    await expireLease(11, 3_000);
    await expireLease(12, 1_000); // a's own: not counted
    const wait = await storage.nextExpiry(SHARD_LEASES, "a", ALL);
    expect(wait).toBeGreaterThan(2_000);
    expect(wait).toBeLessThanOrEqual(3_000);
    // Only among the keys given.
    const onlyTen = await storage.nextExpiry(SHARD_LEASES, "a", [10, 12]);
    expect(onlyTen).toBeGreaterThan(LEASE_MS - 2_000);
    expect(onlyTen).toBeLessThanOrEqual(LEASE_MS);
    expect(await storage.nextExpiry(SHARD_LEASES, "a", [12, 13])).toBeUndefined();
    // Already expired: zero or less, so the caller looks at once.
    await expireLease(10, -500);
    expect(await storage.nextExpiry(SHARD_LEASES, "a", [10])).toBeLessThanOrEqual(0);
  });
});
