/**
 * The healthchecks module's storage (docs/healthchecks.md): its tables, its migrations and
 * every SQL statement of the module. Column types mean the same on SQLite and PostgreSQL.
 *
 * - `healthcheck_definition`: one row per check created through the API, holding its definition as
 *   JSON, restored at start-up; configuration-file checks are never stored.
 * - `healthcheck_history_check`: a small integer id per check name, so that history rows carry 4
 *   bytes instead of the name.
 * - `healthcheck_history`: every periodic result kept for `healthchecks.history.retention`, keyed by
 *   (check id, time), written in batches by history.ts.
 * - `healthcheck_alert_state`, `healthcheck_alert_history`: the alerts' state and the notifications
 *   they sent (alerts/store.ts holds their migration and queries).
 * - `healthcheck_incident`, `healthcheck_incident_page`, `healthcheck_incident_update`: incidents,
 *   the pages showing them and their timelines (incidents/storage.ts holds their queries).
 * - `healthcheck_heartbeat`, `healthcheck_heartbeat_ping`: the heartbeats' state and generated keys,
 *   and the pings waiting for their owner in cluster mode (heartbeat/store.ts).
 */

import { type Generated, type Kysely, type Migration, sql } from "kysely";
import { type Database, migrationDialect, type PlatformTables } from "../platform/database.js";
import { runDdl } from "../platform/ddl.js";
import { errnoCode } from "../platform/errors.js";
import { alertMigration } from "./alerts/store.js";
import { type Definition, toJson } from "./definition.js";
import { heartbeatMigration } from "./heartbeat/store.js";

/** The module's tables. Times are milliseconds since the epoch. */
export type HealthcheckTables = {
  healthcheck_definition: {
    name: string;
    kind: string;
    /** {@link toJson} of the definition, as JSON text. */
    definition: string;
    created_at: number;
    updated_at: number;
  };
  /** The id of each check name that has (or recently had) history rows. */
  healthcheck_history_check: {
    /** Assigned by the database, never reused (SQLite AUTOINCREMENT, PostgreSQL serial). */
    id: Generated<number>;
    name: string;
  };
  /**
   * One periodic result. No surrogate key: (check_id, time) is the primary key, since a check's
   * runs never overlap. A success has no message (NULL): its message is always `success`, so
   * `message IS NULL` is the success flag and no column is spent on it.
   */
  healthcheck_history: {
    check_id: number;
    /** End of the execution, milliseconds since the epoch. */
    time: number;
    /** Execution time, whole milliseconds. */
    duration: number;
    /** The (redacted) failure message; NULL for a success. */
    message: string | null;
    /**
     * 1 for a result of a maintenance window, 2 for a heartbeat's log ping (its body in `message`,
     * not a failure): both left out of uptime and incidents. NULL otherwise.
     */
    maintenance: number | null;
  };
  /**
   * Cluster mode (docs/cluster.md): the latest result of each check, written by the instance that
   * runs it, read by the others for `GET /result`. Empty on a single instance.
   */
  healthcheck_latest_result: {
    name: string;
    /** The result as `GET /result/<name>` returns it, JSON text. */
    result: string;
    /** Milliseconds since the epoch. */
    updated_at: number;
  };
  /** Maintenance windows created through the API (docs/healthchecks.md); configured ones are not stored. */
  healthcheck_maintenance: {
    name: string;
    /** The selectors, a JSON array of strings. */
    checks: string;
    /** Milliseconds since the epoch; the window is `[start_time, end_time)`. */
    start_time: number;
    end_time: number;
    created_at: number;
  };
  /** Incidents (docs/healthchecks.md); incidents/storage.ts holds their queries. */
  healthcheck_incident: {
    /** A lower-case UUID. */
    id: string;
    title: string;
    /** The names of the checks it concerns, a JSON array of strings. */
    checks: string;
    /** The status of the latest update. */
    status: string;
    /** Milliseconds since the epoch: the first update, the latest one, and the resolving one (NULL while open). */
    created_at: number;
    updated_at: number;
    resolved_at: number | null;
  };
  /** One row per page showing an incident. */
  healthcheck_incident_page: { incident_id: string; slug: string };
  /** The timeline of each incident: `seq` 0 is the message it was created with. */
  healthcheck_incident_update: {
    incident_id: string;
    seq: number;
    time: number;
    status: string;
    message: string;
  };
};

/** Migrations by name, `healthchecks-<number>-<what>`. */
export const healthcheckMigrations: Readonly<Record<string, Migration>> = {
  "healthchecks-0001-definitions": {
    // name: 255 characters at most (varchar counts characters on PostgreSQL); definition: the
    // definition as the API returns it, without `source`, as JSON text.
    up: (db) =>
      runDdl(db, [
        `create table healthcheck_definition (name varchar(255) primary key, kind varchar(16) not null,
          definition text not null, created_at bigint not null, updated_at bigint not null)`,
      ]),
  },
  "healthchecks-0002-history": {
    up: (db) => {
      const sqlite = migrationDialect(db) === "sqlite";
      return runDdl(db, [
        // AUTOINCREMENT on SQLite: a deleted id is never handed to another name, so a process
        // that still holds it in its cache cannot write results under another check's name.
        `create table healthcheck_history_check (
          id ${sqlite ? "integer primary key autoincrement" : "serial primary key"},
          name varchar(255) not null unique)`,
        // Column order matters on PostgreSQL: two int4 then the int8 pack into 16 bytes without
        // alignment padding (a row: 44 bytes with its header and line pointer). The primary key is
        // the (check, time) index of every read; it has no INCLUDE column because PostgreSQL splits
        // leaf pages where a check's rows grow only for tuples of at most 16 bytes of data, which
        // keeps them about two-thirds full (measured: 42 bytes an entry, against 68 with INCLUDE).
        // SQLite: the rows live in the primary key's B-tree itself (clustered by check and time),
        // with no rowid and no second index: about 22 bytes a row, and a check's rows are adjacent.
        `create table healthcheck_history (check_id integer not null, duration integer not null,
          time bigint not null, message text,
          constraint healthcheck_history_pkey primary key (check_id, time))${sqlite ? " without rowid" : ""}`,
      ]);
    },
  },
  "healthchecks-0003-latest-results": {
    up: (db) =>
      runDdl(db, [
        `create table healthcheck_latest_result (name varchar(255) primary key, result text not null,
          updated_at bigint not null)`,
      ]),
  },
  // Alerts (docs/alerts.md): tables and queries in alerts/store.ts.
  "healthchecks-0004-alerts": { up: alertMigration },
  "healthchecks-0005-maintenance": {
    up: (db) =>
      runDdl(db, [
        `create table healthcheck_maintenance (name varchar(64) primary key, checks text not null,
          start_time bigint not null, end_time bigint not null, created_at bigint not null)`,
        // Nullable and NULL outside maintenance: a NULL costs a bit of the row's null bitmap, which
        // fits in the padding of PostgreSQL's 23-byte row header, so the usual row grows by nothing.
        "alter table healthcheck_history add column maintenance smallint",
      ]),
  },
  // Incidents (docs/healthchecks.md): queries in incidents/storage.ts. Lengths as the API bounds them.
  "healthchecks-0006-incidents": {
    up: (db) =>
      runDdl(db, [
        `create table healthcheck_incident (id varchar(36) primary key, title varchar(255) not null,
          checks text not null, status varchar(16) not null, created_at bigint not null,
          updated_at bigint not null, resolved_at bigint)`,
        "create index healthcheck_incident_updated on healthcheck_incident (updated_at)",
        // By slug first: a page reads its incidents.
        `create table healthcheck_incident_page (incident_id varchar(36) not null, slug varchar(64) not null,
          constraint healthcheck_incident_page_pkey primary key (slug, incident_id))`,
        `create table healthcheck_incident_update (incident_id varchar(36) not null, seq integer not null,
          time bigint not null, status varchar(16) not null, message text not null,
          constraint healthcheck_incident_update_pkey primary key (incident_id, seq))`,
      ]),
  },
  // healthchecks-0006 is the incidents' migration. Heartbeats (docs/healthchecks.md): tables and
  // queries in heartbeat/store.ts.
  "healthchecks-0007-heartbeats": { up: heartbeatMigration },
};

type Tables = PlatformTables & HealthcheckTables;

/** A stored definition, still to be validated by the caller (rules may have changed since). */
export interface StoredDefinition {
  readonly name: string;
  readonly kind: string;
  /** The parsed JSON. */
  readonly definition: unknown;
}

// Rows per INSERT or names per IN list: well below the bind-parameter limits of SQLite (32766) and
// PostgreSQL (65535) with 5 columns a row.
const CHUNK = 500;

/** `items` in groups of at most {@link CHUNK}. */
export function chunks<T>(items: readonly T[]): T[][] {
  const result: T[][] = [];
  for (let index = 0; index < items.length; index += CHUNK) result.push(items.slice(index, index + CHUNK));
  return result;
}

function row(definition: Definition, now: number) {
  return {
    name: definition.name,
    kind: definition.kind,
    definition: JSON.stringify(toJson(definition)),
    created_at: now,
    updated_at: now,
  };
}

async function upsert(db: Kysely<Tables>, definitions: readonly Definition[]): Promise<void> {
  const now = Date.now();
  // Name order, like every other writer of these tables (no lock-order deadlock between instances).
  const sorted = [...definitions].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const part of chunks(sorted)) {
    await db
      .insertInto("healthcheck_definition")
      .values(part.map((definition) => row(definition, now)))
      .onConflict((conflict) =>
        conflict.column("name").doUpdateSet((update) => ({
          kind: update.ref("excluded.kind"),
          definition: update.ref("excluded.definition"),
          updated_at: update.ref("excluded.updated_at"),
        })),
      )
      .execute();
  }
}

/** Attempts of a statement that PostgreSQL chose as a deadlock's victim. */
const DEADLOCK_ATTEMPTS = 5;

/**
 * Runs a statement again when PostgreSQL aborted it to break a deadlock (SQLSTATE 40P01): in
 * cluster mode every instance writes the latest results while a bulk replacement deletes some, and
 * the rows they lock need not come in one order (PostgreSQL's advice: retry the victim).
 */
async function retryOnDeadlock<T>(statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (error) {
      if (errnoCode(error) !== "40P01" || attempt >= DEADLOCK_ATTEMPTS) throw error;
      await new Promise((resume) => setTimeout(resume, 10 * attempt * Math.random()));
    }
  }
}

/** The stored API checks. */
export class HealthcheckStore {
  readonly #db: Kysely<Tables>;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<HealthcheckTables>();
  }

  /**
   * Every stored check, or those of `names`, sorted by name. A row whose JSON does not parse comes
   * with an undefined definition.
   */
  async list(names?: readonly string[]): Promise<StoredDefinition[]> {
    let query = this.#db.selectFrom("healthcheck_definition").select(["name", "kind", "definition"]).orderBy("name");
    if (names !== undefined) {
      if (names.length === 0) return [];
      query = query.where("name", "in", names);
    }
    const rows = await query.execute();
    const stored: StoredDefinition[] = [];
    for (const { name, kind, definition } of rows) {
      try {
        stored.push({ name, kind, definition: JSON.parse(definition) });
      } catch {
        stored.push({ name, kind, definition: undefined });
      }
    }
    return stored;
  }

  /** Adds or replaces one check. */
  async save(definition: Definition): Promise<void> {
    await upsert(this.#db, [definition]);
  }

  /** Deletes one check (and its shared latest result); false when it was not stored. */
  async delete(name: string): Promise<boolean> {
    const result = await this.#db.deleteFrom("healthcheck_definition").where("name", "=", name).executeTakeFirst();
    await this.deleteLatest([name]);
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * Cluster mode (PostgreSQL only): writes the latest results of the checks this instance runs,
   * each replacing the stored one of its check, in one statement of three array parameters.
   * Rows are written in name order, the order every writer and deleter uses, so that concurrent
   * writers and a bulk replacement never wait for each other in a cycle (a deadlock).
   * @param results `[name, result as JSON text]`
   */
  async saveLatest(results: ReadonlyArray<readonly [string, string]>, now: number): Promise<void> {
    const sorted = [...results].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    await retryOnDeadlock(() =>
      sql`
      insert into healthcheck_latest_result (name, result, updated_at)
      select name, result, ${now}::bigint from unnest(${sorted.map(([name]) => name)}::text[], ${sorted.map(([, result]) => result)}::text[]) as t(name, result)
      on conflict (name) do update set result = excluded.result, updated_at = excluded.updated_at
    `.execute(this.#db),
    );
  }

  /** Cluster mode: forgets the latest results of checks that no longer exist. */
  async deleteLatest(names: readonly string[]): Promise<void> {
    const sorted = [...names].sort();
    for (const part of chunks(sorted)) {
      await retryOnDeadlock(() => this.#db.deleteFrom("healthcheck_latest_result").where("name", "in", part).execute());
    }
  }

  /** Cluster mode: every stored latest result, as JSON text by name. */
  async listLatest(): Promise<Array<{ name: string; result: string }>> {
    return this.#db.selectFrom("healthcheck_latest_result").select(["name", "result"]).execute();
  }

  /**
   * Makes the stored checks exactly `definitions` in one transaction (docs/healthchecks.md): adds or
   * replaces each, deletes every other stored check. Nothing changes when it throws.
   */
  async replaceAll(definitions: readonly Definition[]): Promise<void> {
    const absent = await this.#db.transaction().execute(async (transaction) => {
      await upsert(transaction, definitions);
      const wanted = new Set(definitions.map((definition) => definition.name));
      const stored = await transaction.selectFrom("healthcheck_definition").select("name").orderBy("name").execute();
      const gone = stored.map(({ name }) => name).filter((name) => !wanted.has(name));
      for (const part of chunks(gone)) {
        await transaction.deleteFrom("healthcheck_definition").where("name", "in", part).execute();
      }
      return gone;
    });
    // Outside the transaction: the latest results are written every second by every instance.
    await this.deleteLatest(absent);
  }
}
