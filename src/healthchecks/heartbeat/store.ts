/**
 * The heartbeats' tables (docs/healthchecks.md, "Heartbeat checks"), their migration and every
 * query on them. Times are milliseconds since the epoch.
 *
 * - `healthcheck_heartbeat`: per heartbeat name, the key generated for a configuration-file
 *   heartbeat that gives none (stable across restarts and instances), and the state that survives
 *   a restart (state, last ping, next expected time, open runs) as JSON.
 * - `healthcheck_heartbeat_ping`: cluster mode, pings received by an instance that does not judge
 *   the heartbeat, waiting for its owner to apply them and delete them in the transaction that
 *   writes the state counting them (docs/cluster.md).
 */
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Generated, Kysely } from "kysely";
import { type Database, migrationDialect, type PlatformTables } from "../../platform/database.js";
import { runDdl } from "../../platform/ddl.js";
import type { HeartbeatSnapshot, HeartbeatState, OpenRun, PingSignal } from "./tracker.js";
import { HEARTBEAT_STATES } from "./tracker.js";

/** The heartbeats' tables. */
export type HeartbeatTables = {
  healthcheck_heartbeat: {
    name: string;
    /** The key of a configuration-file heartbeat without one; NULL otherwise. */
    generated_key: string | null;
    /** {@link HeartbeatSnapshot} as JSON text; NULL when none is kept. */
    snapshot: string | null;
    updated_at: number;
  };
  healthcheck_heartbeat_ping: {
    id: Generated<number>;
    name: string;
    /** `success`, `start`, `fail`, `log` or an exit status (`0` to `255`). */
    signal: string;
    rid: string | null;
    body: string;
    time: number;
  };
};

/** The migration of the heartbeats' tables (storage.ts lists it as healthchecks-0007-heartbeats). */
export function heartbeatMigration(db: Kysely<unknown>): Promise<void> {
  const sqlite = migrationDialect(db) === "sqlite";
  return runDdl(db, [
    `create table healthcheck_heartbeat (name varchar(255) primary key, generated_key varchar(128),
      snapshot text, updated_at bigint not null)`,
    `create table healthcheck_heartbeat_ping (
      id ${sqlite ? "integer primary key autoincrement" : "bigserial primary key"},
      name varchar(255) not null, signal varchar(16) not null, rid varchar(64), body text not null,
      time bigint not null)`,
    "create index healthcheck_heartbeat_ping_name on healthcheck_heartbeat_ping (name, id)",
  ]);
}

/** A ping waiting in the database for the owner of its heartbeat. */
export interface StoredPing {
  readonly id: number;
  readonly name: string;
  readonly signal: PingSignal;
  readonly rid?: string;
  readonly body: string;
  readonly timeMs: number;
}

/** The text of a signal in `healthcheck_heartbeat_ping.signal`. */
export function signalText(signal: PingSignal): string {
  return signal.kind === "exit" ? String(signal.status) : signal.kind;
}

/** The signal of a stored text, undefined when unreadable. */
export function signalFromText(text: string): PingSignal | undefined {
  if (text === "success" || text === "start" || text === "fail" || text === "log") return { kind: text };
  const status = Number(text);
  return Number.isInteger(status) && status >= 0 && status <= 255 ? { kind: "exit", status } : undefined;
}

function isState(value: unknown): value is HeartbeatState {
  return HEARTBEAT_STATES.some((state) => state === value);
}

/** A stored snapshot read back, undefined when it is not one (a row written by a future version). */
export function parseSnapshot(text: string | null): HeartbeatSnapshot | undefined {
  if (text === null) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null) return undefined;
    const { state, lastPingMs, expectedMs, runs } = value as Record<string, unknown>;
    if (!isState(state) || !Array.isArray(runs)) return undefined;
    const open: OpenRun[] = [];
    for (const run of runs) {
      if (typeof run !== "object" || run === null || typeof run.startMs !== "number") continue;
      open.push(typeof run.rid === "string" ? { rid: run.rid, startMs: run.startMs } : { startMs: run.startMs });
    }
    return {
      state,
      ...(typeof lastPingMs === "number" ? { lastPingMs } : {}),
      ...(typeof expectedMs === "number" && Number.isFinite(expectedMs) ? { expectedMs } : {}),
      runs: open,
    };
  } catch {
    return undefined;
  }
}

type Tables = PlatformTables & HeartbeatTables;

/** Names per IN list and rows per statement: well under the bind-parameter limits. */
const CHUNK = 500;
/**
 * Rows per statement of the state writes, which come every second while pings arrive: statements of
 * SQLite run on the event loop, so a second's thousand states go as ten short writes with answers to
 * requests between them, not one long one.
 */
const WRITE_CHUNK = 100;

/** Reads and writes the heartbeats' tables. */
export class HeartbeatStore {
  readonly #db: Kysely<Tables>;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<HeartbeatTables>();
  }

  /** Every kept snapshot (start-up), or those of `names`, by name. */
  async snapshots(names?: readonly string[]): Promise<Map<string, HeartbeatSnapshot>> {
    const found = new Map<string, HeartbeatSnapshot>();
    const parts = names === undefined ? [undefined] : chunk([...names]);
    for (const part of parts) {
      if (part !== undefined && part.length === 0) continue;
      let query = this.#db
        .selectFrom("healthcheck_heartbeat")
        .select(["name", "snapshot"])
        .where("snapshot", "is not", null);
      if (part !== undefined) query = query.where("name", "in", part);
      for (const row of await query.execute()) {
        const snapshot = parseSnapshot(row.snapshot);
        if (snapshot !== undefined) found.set(row.name, snapshot);
      }
    }
    return found;
  }

  /**
   * Writes snapshots (undefined: forget the heartbeat's state, it was deleted), in name order like
   * every writer of the table, so concurrent writers never deadlock.
   */
  async saveSnapshots(
    entries: ReadonlyArray<readonly [string, HeartbeatSnapshot | undefined]>,
    nowMs: number,
  ): Promise<void> {
    await upsertSnapshots(this.#db, entries, nowMs);
  }

  /**
   * The generated key of each of `names`, `candidates` being written for those without one yet:
   * the first writer wins, so every instance and every restart reads the same key.
   * @param candidates new keys by name
   */
  async generatedKeys(candidates: ReadonlyMap<string, string>, nowMs: number): Promise<Map<string, string>> {
    const names = [...candidates.keys()].sort();
    const keys = new Map<string, string>();
    for (const part of chunk(names)) {
      await this.#db
        .insertInto("healthcheck_heartbeat")
        .values(
          part.map((name) => ({
            name,
            generated_key: candidates.get(name) ?? null,
            snapshot: null,
            updated_at: nowMs,
          })),
        )
        .onConflict((conflict) => conflict.column("name").doNothing())
        .execute();
      // A row that existed without a key (the state of a former API heartbeat) takes one.
      for (const name of part) {
        await this.#db
          .updateTable("healthcheck_heartbeat")
          .set({ generated_key: candidates.get(name) ?? null })
          .where("name", "=", name)
          .where("generated_key", "is", null)
          .execute();
      }
      const rows = await this.#db
        .selectFrom("healthcheck_heartbeat")
        .select(["name", "generated_key"])
        .where("name", "in", part)
        .execute();
      for (const row of rows) if (row.generated_key !== null) keys.set(row.name, row.generated_key);
    }
    return keys;
  }

  /** Cluster mode: keeps a ping for the owner of its heartbeat. Resolves once it is stored. */
  async addPing(
    name: string,
    signal: PingSignal,
    rid: string | undefined,
    body: string,
    timeMs: number,
  ): Promise<void> {
    await this.#db
      .insertInto("healthcheck_heartbeat_ping")
      .values({ name, signal: signalText(signal), rid: rid ?? null, body, time: timeMs })
      .execute();
  }

  /**
   * Cluster mode: takes the waiting pings of the heartbeats `names` (those this instance judges),
   * oldest first, and hands them to `apply`, which applies them and answers the snapshots that
   * include their effect and the pings it could not apply (their heartbeat moved away meanwhile).
   * In one transaction, the pings are deleted, the snapshots written and the pings given back kept:
   * a ping leaves the table only together with the state that counts it, so an owner killed or a
   * database failing in between loses nothing (the next owner takes the pings again), and a row
   * comes back to exactly one taker, whatever the concurrency (DELETE … RETURNING under row locks).
   * @returns the number of pings applied
   */
  async takePings(names: readonly string[], apply: (pings: StoredPing[]) => AppliedPings): Promise<number> {
    if (names.length === 0) return 0;
    return this.#db.transaction().execute(async (trx) => {
      const mine = [];
      for (const part of chunk([...names].sort())) {
        mine.push(
          ...(await trx.deleteFrom("healthcheck_heartbeat_ping").where("name", "in", part).returningAll().execute()),
        );
      }
      if (mine.length === 0) return 0;
      mine.sort((a, b) => Number(a.id) - Number(b.id));
      const pings: StoredPing[] = [];
      for (const row of mine) {
        const signal = signalFromText(row.signal);
        if (signal === undefined) continue;
        pings.push({
          id: Number(row.id),
          name: row.name,
          signal,
          ...(row.rid === null ? {} : { rid: row.rid }),
          body: row.body,
          timeMs: Number(row.time),
        });
      }
      const { snapshots, kept, nowMs } = apply(pings);
      await upsertSnapshots(trx, snapshots, nowMs);
      for (const part of chunk([...kept])) {
        await trx
          .insertInto("healthcheck_heartbeat_ping")
          .values(
            part.map((ping) => ({
              id: ping.id,
              name: ping.name,
              signal: signalText(ping.signal),
              rid: ping.rid ?? null,
              body: ping.body,
              time: ping.timeMs,
            })),
          )
          .execute();
      }
      return pings.length - kept.length;
    });
  }
}

/** What the applier of taken pings answers ({@link HeartbeatStore.takePings}). */
export interface AppliedPings {
  /** The snapshots of the heartbeats the pings changed, written with the deletion. */
  readonly snapshots: ReadonlyArray<readonly [string, HeartbeatSnapshot | undefined]>;
  /** Pings not applied here (their heartbeat is no longer judged here): they stay in the table. */
  readonly kept: readonly StoredPing[];
  /** The write time (`updated_at`), milliseconds since the epoch. */
  readonly nowMs: number;
}

/**
 * Writes snapshots (undefined: forget the heartbeat's state), in name order like every writer of
 * the table, so concurrent writers never deadlock.
 */
async function upsertSnapshots(
  db: Kysely<Tables>,
  entries: ReadonlyArray<readonly [string, HeartbeatSnapshot | undefined]>,
  nowMs: number,
): Promise<void> {
  const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [index, part] of chunk(sorted, WRITE_CHUNK).entries()) {
    if (index > 0) await yieldToEventLoop();
    await db
      .insertInto("healthcheck_heartbeat")
      .values(
        part.map(([name, snapshot]) => ({
          name,
          generated_key: null,
          snapshot: snapshot === undefined ? null : JSON.stringify(snapshot),
          updated_at: nowMs,
        })),
      )
      .onConflict((conflict) =>
        conflict.column("name").doUpdateSet((update) => ({
          snapshot: update.ref("excluded.snapshot"),
          updated_at: update.ref("excluded.updated_at"),
        })),
      )
      .execute();
  }
}

function chunk<T>(items: T[], size: number = CHUNK): T[][] {
  const parts: T[][] = [];
  for (let index = 0; index < items.length; index += size) parts.push(items.slice(index, index + size));
  return parts;
}
