/**
 * The cluster's tables (docs/cluster.md): members with their heartbeats, and leases (of
 * the 256 healthcheck shards and of streams). The migrations run on both databases so that a
 * database can move from one instance to several; on SQLite the tables simply stay empty. Every
 * query runs on PostgreSQL only, and every time comparison uses the database's clock (`now()`),
 * never an instance's own.
 */

import { type Migration, type QueryExecutorProvider, SqliteAdapter, sql } from "kysely";
import { runDdl } from "../ddl.js";

/** The platform's migrations for the cluster tables. */
export const clusterMigrations: Readonly<Record<string, Migration>> = {
  "platform-0002-cluster": {
    up: (db) =>
      runDdl(db, [
        // fingerprint: what each instance loaded from its configuration file, to log the checks
        // that differ between instances.
        `create table cluster_members (id varchar(100) primary key, url text not null,
          started_at timestamptz not null, heartbeat_at timestamptz not null, fingerprint text)`,
        `create table healthcheck_shard_leases (shard integer primary key, owner varchar(100),
          epoch bigint default 0 not null, expires_at timestamptz)`,
        `create table stream_leases (name varchar(128) primary key, owner varchar(100),
          epoch bigint default 0 not null, expires_at timestamptz)`,
      ]),
  },
  // A partition of a stream is leased as `<name>#<k>`: 128 characters of name and `#63`. SQLite has
  // no ALTER COLUMN, nor needs one: it does not enforce varchar lengths. (The dialect is read here
  // as database.ts's migrationDialect does: that file imports this one.)
  "platform-0004-stream-partition-leases": {
    up: (db) =>
      runDdl(
        db,
        db.getExecutor().adapter instanceof SqliteAdapter
          ? []
          : ["alter table stream_leases alter column name type varchar(140)"],
      ),
  },
};

/** A live member as `GET /cluster` shows it. Times are ISO-8601 strings. */
export interface MemberRow {
  readonly id: string;
  readonly url: string;
  readonly startedAt: string;
  readonly heartbeatAt: string;
  /** Milliseconds until the member counts as dead without another heartbeat (database clock). */
  readonly expiresInMs: number;
}

/** A lease held: its key and its epoch (which increases each time the lease changes hands). */
export interface HeldLease<K> {
  readonly key: K;
  readonly epoch: number;
}

/** The two lease tables and the SQL type of their keys. */
export interface LeaseTable {
  readonly table: "healthcheck_shard_leases" | "stream_leases";
  readonly key: "shard" | "name";
  readonly keyType: "integer" | "text";
}

export const SHARD_LEASES: LeaseTable = { table: "healthcheck_shard_leases", key: "shard", keyType: "integer" };
export const STREAM_LEASES: LeaseTable = { table: "stream_leases", key: "name", keyType: "text" };

/** The cluster's queries, PostgreSQL only. Durations in milliseconds. */
export class ClusterStore {
  constructor(readonly db: QueryExecutorProvider) {}

  /** Creates or refreshes this instance's row, its heartbeat being the database's `now()`. */
  async heartbeat(id: string, url: string, startedAt: Date): Promise<void> {
    await sql`
      insert into cluster_members (id, url, started_at, heartbeat_at)
      values (${id}, ${url}, ${startedAt.toISOString()}, now())
      on conflict (id) do update set url = excluded.url, started_at = excluded.started_at, heartbeat_at = now()
    `.execute(this.db);
  }

  /** Stores what this instance loaded from its configuration file (JSON), for comparison. */
  async setFingerprint(id: string, fingerprint: string): Promise<void> {
    await sql`update cluster_members set fingerprint = ${fingerprint} where id = ${id}`.execute(this.db);
  }

  /** The fingerprints of the live members other than `id`. */
  async fingerprints(id: string, leaseMs: number): Promise<Array<{ id: string; fingerprint: string }>> {
    const { rows } = await sql<{ id: string; fingerprint: string }>`
      select id, fingerprint from cluster_members
      where id <> ${id} and fingerprint is not null and heartbeat_at > now() - ${leaseMs} * interval '1 millisecond'
    `.execute(this.db);
    return rows;
  }

  /**
   * The members whose last heartbeat is within `leaseMs` by the database's clock, sorted by id;
   * rows silent for ten leases are deleted on the way (members that died long ago).
   */
  async aliveMembers(leaseMs: number): Promise<MemberRow[]> {
    await sql`delete from cluster_members where heartbeat_at < now() - ${leaseMs * 10} * interval '1 millisecond'`.execute(
      this.db,
    );
    const { rows } = await sql<{ id: string; url: string; started_at: Date; heartbeat_at: Date; ms: number | string }>`
      select id, url, started_at, heartbeat_at,
        extract(epoch from (heartbeat_at + ${leaseMs} * interval '1 millisecond' - now())) * 1000 as ms
      from cluster_members
      where heartbeat_at > now() - ${leaseMs} * interval '1 millisecond'
      order by id
    `.execute(this.db);
    return rows.map((row) => ({
      id: row.id,
      url: row.url,
      startedAt: new Date(row.started_at).toISOString(),
      heartbeatAt: new Date(row.heartbeat_at).toISOString(),
      expiresInMs: Number(row.ms),
    }));
  }

  /** Removes this instance's row (graceful stop). */
  async leave(id: string): Promise<void> {
    await sql`delete from cluster_members where id = ${id}`.execute(this.db);
  }

  /** Creates the lease rows of keys that have none yet (unowned). */
  async ensureKeys<K extends string | number>(table: LeaseTable, keys: readonly K[]): Promise<void> {
    if (keys.length === 0) return;
    await sql`
      insert into ${sql.table(table.table)} (${sql.ref(table.key)})
      select * from unnest(${keys}::${sql.raw(table.keyType)}[])
      on conflict do nothing
    `.execute(this.db);
  }

  /** Extends every lease `owner` holds by `leaseMs`; returns those it still holds. */
  async renew<K>(table: LeaseTable, owner: string, leaseMs: number): Promise<Array<HeldLease<K>>> {
    const { rows } = await sql<{ key: K; epoch: number }>`
      update ${sql.table(table.table)} set expires_at = now() + ${leaseMs} * interval '1 millisecond'
      where owner = ${owner} and expires_at > now()
      returning ${sql.ref(table.key)} as key, epoch
    `.execute(this.db);
    return rows.map((row) => ({ key: row.key, epoch: Number(row.epoch) }));
  }

  /** Gives up leases `owner` holds (they become free at once). */
  async release<K extends string | number>(table: LeaseTable, owner: string, keys: readonly K[]): Promise<void> {
    if (keys.length === 0) return;
    await sql`
      update ${sql.table(table.table)} set owner = null, expires_at = null
      where owner = ${owner} and ${sql.ref(table.key)} = any(${keys}::${sql.raw(table.keyType)}[])
    `.execute(this.db);
  }

  /**
   * Takes up to `count` leases among `keys` that are free or expired, each with a new epoch.
   * Concurrent takers skip each other's rows (`FOR UPDATE SKIP LOCKED`), so a lease has one owner.
   */
  async take<K extends string | number>(
    table: LeaseTable,
    owner: string,
    keys: readonly K[],
    count: number,
    leaseMs: number,
  ): Promise<Array<HeldLease<K>>> {
    if (count <= 0 || keys.length === 0) return [];
    const { rows } = await sql<{ key: K; epoch: number }>`
      update ${sql.table(table.table)} set owner = ${owner}, epoch = epoch + 1,
        expires_at = now() + ${leaseMs} * interval '1 millisecond'
      where ${sql.ref(table.key)} in (
        select ${sql.ref(table.key)} from ${sql.table(table.table)}
        where ${sql.ref(table.key)} = any(${keys}::${sql.raw(table.keyType)}[])
          and (owner is null or expires_at is null or expires_at <= now())
        order by random() limit ${count}
        for update skip locked
      )
      returning ${sql.ref(table.key)} as key, epoch
    `.execute(this.db);
    return rows.map((row) => ({ key: row.key, epoch: Number(row.epoch) }));
  }

  /**
   * Milliseconds until the first lease among `keys` held by an instance other than `owner` ends
   * (by the database's clock), or undefined when there is none: a taker waits for exactly that.
   */
  async nextExpiry<K extends string | number>(
    table: LeaseTable,
    owner: string,
    keys: readonly K[],
  ): Promise<number | undefined> {
    if (keys.length === 0) return undefined;
    const { rows } = await sql<{ ms: number | string | null }>`
      select extract(epoch from (min(expires_at) - now())) * 1000 as ms from ${sql.table(table.table)}
      where owner is not null and owner <> ${owner} and expires_at is not null
        and ${sql.ref(table.key)} = any(${keys}::${sql.raw(table.keyType)}[])
    `.execute(this.db);
    const ms = rows[0]?.ms;
    return ms === null || ms === undefined ? undefined : Number(ms);
  }

  /** The live leases by owner: how many, and their keys. */
  async holdings<K>(table: LeaseTable): Promise<Map<string, K[]>> {
    const { rows } = await sql<{ owner: string; key: K }>`
      select owner, ${sql.ref(table.key)} as key from ${sql.table(table.table)}
      where owner is not null and expires_at > now()
      order by key
    `.execute(this.db);
    const byOwner = new Map<string, K[]>();
    for (const row of rows) {
      const keys = byOwner.get(row.owner);
      if (keys === undefined) byOwner.set(row.owner, [row.key]);
      else keys.push(row.key);
    }
    return byOwner;
  }
}
