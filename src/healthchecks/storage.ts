/**
 * The healthchecks module's storage (healthchecks.md §7, §9.2): its tables, its migrations and
 * every SQL statement of the module. Column types mean the same on SQLite and PostgreSQL.
 *
 * - `healthcheck_definition`: one row per check created through the API, holding its definition as
 *   JSON, restored at start-up; configuration-file checks are never stored.
 * - `healthcheck_history_check`: a small integer id per check name, so that history rows carry 4
 *   bytes instead of the name.
 * - `healthcheck_history`: every periodic result kept for `healthchecks.history.retention`, keyed by
 *   (check id, time), written in batches by history.ts.
 */
import { CompiledQuery, type Generated, type Kysely, type Migration, sql } from "kysely";
import { type Database, type DatabaseDialect, migrationDialect, type PlatformTables } from "../platform/database.js";
import { type Definition, toJson } from "./definition.js";

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
  };
  /**
   * Cluster mode (scale-out.md §3): the latest result of each check, written by the instance that
   * runs it, read by the others for `GET /result`. Empty on a single instance.
   */
  healthcheck_latest_result: {
    name: string;
    /** The result as `GET /result/<name>` returns it, JSON text. */
    result: string;
    /** Milliseconds since the epoch. */
    updated_at: number;
  };
};

/** Migrations by name, `healthchecks-<number>-<what>`. */
export const healthcheckMigrations: Readonly<Record<string, Migration>> = {
  "healthchecks-0001-definitions": {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("healthcheck_definition")
        // 255 characters at most (healthchecks.md §1); varchar counts characters on PostgreSQL.
        .addColumn("name", "varchar(255)", (column) => column.primaryKey())
        .addColumn("kind", "varchar(16)", (column) => column.notNull())
        // The definition as the API returns it, without `source`, as JSON text.
        .addColumn("definition", "text", (column) => column.notNull())
        .addColumn("created_at", "bigint", (column) => column.notNull())
        .addColumn("updated_at", "bigint", (column) => column.notNull())
        .execute();
    },
  },
  "healthchecks-0002-history": {
    async up(db: Kysely<unknown>): Promise<void> {
      const sqlite = migrationDialect(db) === "sqlite";
      await db.schema
        .createTable("healthcheck_history_check")
        // AUTOINCREMENT on SQLite: a deleted id is never handed to another name, so a process
        // that still holds it in its cache cannot write results under another check's name.
        .addColumn("id", sqlite ? "integer" : "serial", (column) =>
          sqlite ? column.primaryKey().autoIncrement() : column.primaryKey(),
        )
        .addColumn("name", "varchar(255)", (column) => column.notNull().unique())
        .execute();
      // Column order matters on PostgreSQL: two int4 then the int8 pack into 16 bytes without
      // alignment padding (a row: 44 bytes with its header and line pointer). The primary key is
      // the (check, time) index of every read; it has no INCLUDE column because PostgreSQL splits
      // leaf pages where a check's rows grow only for tuples of at most 16 bytes of data, which
      // keeps them about two-thirds full (measured: 42 bytes an entry, against 68 with INCLUDE).
      let table = db.schema
        .createTable("healthcheck_history")
        .addColumn("check_id", "integer", (column) => column.notNull())
        .addColumn("duration", "integer", (column) => column.notNull())
        .addColumn("time", "bigint", (column) => column.notNull())
        .addColumn("message", "text")
        .addPrimaryKeyConstraint("healthcheck_history_pkey", ["check_id", "time"]);
      // SQLite: the rows live in the primary key's B-tree itself (clustered by check and time),
      // with no rowid and no second index: about 22 bytes a row, and a check's rows are adjacent.
      if (sqlite) table = table.modifyEnd(sql`without rowid`);
      await table.execute();
    },
  },
  "healthchecks-0003-latest-results": {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("healthcheck_latest_result")
        .addColumn("name", "varchar(255)", (column) => column.primaryKey())
        .addColumn("result", "text", (column) => column.notNull())
        .addColumn("updated_at", "bigint", (column) => column.notNull())
        .execute();
    },
  },
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

function chunks<T>(items: readonly T[]): T[][] {
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
      if ((error as { code?: unknown }).code !== "40P01" || attempt >= DEADLOCK_ATTEMPTS) throw error;
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
   * Makes the stored checks exactly `definitions` in one transaction (healthchecks.md §6): adds or
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

/** One column per field, one index per result: what the history buffers and writes. */
export interface HistoryColumns {
  readonly checkIds: readonly number[];
  /** Milliseconds since the epoch. */
  readonly times: readonly number[];
  /** Whole milliseconds. */
  readonly durations: readonly number[];
  /** NULL for a success. */
  readonly messages: readonly (string | null)[];
}

/** A stored result. */
export interface HistoryRow {
  /** Milliseconds since the epoch. */
  readonly time: number;
  /** Whole milliseconds. */
  readonly duration: number;
  /** NULL for a success. */
  readonly message: string | null;
}

/** Results and successes of a check within one period. */
export interface HistoryCount {
  readonly total: number;
  readonly successes: number;
}

/** A run of consecutive failures as stored: times in milliseconds since the epoch. */
export interface FailureRun {
  /** Time of the first failure of the run. */
  readonly start: number;
  /** Time of the success that ended it; null while the run goes on. */
  readonly end: number | null;
  /** Message of the first failure of the run. */
  readonly message: string;
}

/** One UTC day of a check. */
export interface DailyCount extends HistoryCount {
  readonly name: string;
  /** Days since the epoch (UTC): `floor(time / 86 400 000)`. */
  readonly day: number;
}

/** One slice of time of a check: its successful results and their summed duration. */
export interface SliceDurations {
  /** Index of the slice from the start of the range. */
  readonly slice: number;
  readonly count: number;
  /** Sum of the durations, whole milliseconds. */
  readonly sum: number;
}

const DAY_MS = 86_400_000;

/**
 * Rows per multi-row INSERT of the history: 4 parameters a row, so 8 000 parameters, well below
 * SQLite's limit (32 766) and PostgreSQL's (65 535). One second of 10 000 checks at 10 s (1 000
 * results) is one statement.
 */
export const HISTORY_INSERT_ROWS = 2_000;

/**
 * `insert ... values (...), (...) on conflict do nothing` for `rows` rows, with the placeholders of
 * `dialect`. Written as text rather than with Kysely's builder: this statement runs every second
 * with thousands of values, for which the builder would make and compile a node per value.
 * A conflict (the same check and millisecond twice, only possible when two instances sharing
 * PostgreSQL run the same check) keeps the first row, on both databases.
 */
function insertHistoryText(rows: number, dialect: DatabaseDialect): string {
  const groups: string[] = new Array(rows);
  for (let row = 0; row < rows; row++) {
    const first = row * 4;
    groups[row] =
      dialect === "sqlite" ? "(?, ?, ?, ?)" : `($${first + 1}, $${first + 2}, $${first + 3}, $${first + 4})`;
  }
  return `insert into healthcheck_history (check_id, time, duration, message) values ${groups.join(", ")} on conflict do nothing`;
}

/**
 * The history of results (healthchecks.md §9.2): every statement on `healthcheck_history` and
 * `healthcheck_history_check`. Reads take the check's name and find its id in the same statement or
 * one before; history.ts does the buffering, timing and shaping.
 */
export class HistoryStore {
  readonly #db: Kysely<Tables>;
  readonly #dialect: DatabaseDialect;
  /** The INSERT of a full chunk, made once. */
  readonly #fullInsert: string;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<HealthcheckTables>();
    this.#dialect = database.dialect;
    this.#fullInsert = insertHistoryText(HISTORY_INSERT_ROWS, database.dialect);
  }

  /**
   * The ids of `names`, creating those that have none (several instances may at once: the unique
   * name decides).
   *
   * @returns id by name, for every name given
   * @throws Error when the database fails
   */
  async checkIds(names: readonly string[]): Promise<Map<string, number>> {
    const ids = new Map<string, number>();
    for (const part of chunks(names)) {
      await this.#db
        .insertInto("healthcheck_history_check")
        .values(part.map((name) => ({ name })))
        .onConflict((conflict) => conflict.column("name").doNothing())
        .execute();
      const rows = await this.#db
        .selectFrom("healthcheck_history_check")
        .select(["id", "name"])
        .where("name", "in", part)
        .execute();
      for (const { id, name } of rows) ids.set(name, id);
    }
    return ids;
  }

  /**
   * Inserts results, {@link HISTORY_INSERT_ROWS} rows per statement, each statement its own
   * transaction (a backlog never holds the write lock for long).
   *
   * @param rows columns of equal length
   * @param between awaited between two statements (history.ts yields to the event loop there)
   * @throws Error when a statement fails (the statements before it are kept)
   */
  async insert(rows: HistoryColumns, between: () => Promise<void> = async () => {}): Promise<void> {
    const count = rows.checkIds.length;
    for (let start = 0; start < count; start += HISTORY_INSERT_ROWS) {
      if (start > 0) await between();
      const end = Math.min(count, start + HISTORY_INSERT_ROWS);
      const parameters: unknown[] = new Array((end - start) * 4);
      let at = 0;
      for (let row = start; row < end; row++) {
        parameters[at++] = rows.checkIds[row];
        parameters[at++] = rows.times[row];
        parameters[at++] = rows.durations[row];
        parameters[at++] = rows.messages[row];
      }
      const text =
        end - start === HISTORY_INSERT_ROWS ? this.#fullInsert : insertHistoryText(end - start, this.#dialect);
      await this.#db.executeQuery(CompiledQuery.raw(text, parameters));
    }
  }

  /**
   * Results of `name` with `sinceMs <= time <= untilMs`, newest first.
   * @param limit at most this many rows
   */
  async list(name: string, sinceMs: number, untilMs: number, limit: number): Promise<HistoryRow[]> {
    const { rows } = await sql<HistoryRow>`
      select h.time, h.duration, h.message
      from healthcheck_history h
      where h.check_id = (select c.id from healthcheck_history_check c where c.name = ${name})
        and h.time >= ${sinceMs} and h.time <= ${untilMs}
      order by h.time desc
      limit ${limit}`.execute(this.#db);
    return rows;
  }

  /**
   * Results and successes of `name` in each period `(nowMs - period, nowMs]`. One pass over the
   * longest period: each segment between two period starts is counted once (the simplest
   * aggregate, several times faster on SQLite than one conditional count per period and row), and
   * the periods add up their segments.
   *
   * @param periodsMs lengths of the periods, milliseconds, shortest first
   * @returns one count per period, in the order given
   */
  async counts(name: string, nowMs: number, periodsMs: readonly number[]): Promise<HistoryCount[]> {
    const id = await this.#idOf(name);
    const segments = new Array<{ total: number; successes: number }>(periodsMs.length);
    if (id !== undefined && periodsMs.length > 0) {
      const parts = periodsMs.map(
        (period, index) => sql`
          select ${sql.lit(index)} as segment, count(*) as total, count(h.message) as failures
          from healthcheck_history h
          where h.check_id = ${id} and h.time > ${nowMs - period} and h.time <= ${nowMs - (periodsMs[index - 1] ?? 0)}`,
      );
      const { rows } = await sql<{ segment: number; total: number; failures: number }>`${sql.join(
        parts,
        sql` union all `,
      )}`.execute(this.#db);
      for (const row of rows) {
        const total = Number(row.total);
        segments[Number(row.segment)] = { total, successes: total - Number(row.failures) };
      }
    }
    let total = 0;
    let successes = 0;
    return periodsMs.map((_period, index) => {
      total += segments[index]?.total ?? 0;
      successes += segments[index]?.successes ?? 0;
      return { total, successes };
    });
  }

  /**
   * The runs of consecutive failures of `name` among its results in `(fromMs, nowMs]`, newest
   * first. A run already going on at `fromMs` starts at its first result after `fromMs`.
   *
   * Walks back from `nowMs` along the primary key, one statement a run: the latest failure before
   * the cursor, the success before it, the first result after that success (the run's first
   * failure) and the result after the latest failure (a success, or none yet: the run goes on);
   * the cursor then moves to that success. The rows between now and the oldest run returned are
   * read once, rather than every row of the period as a window function would.
   *
   * @param max at most this many runs
   */
  async failureRuns(name: string, fromMs: number, nowMs: number, max: number): Promise<FailureRun[]> {
    const id = await this.#idOf(name);
    if (id === undefined) return [];
    const runs: FailureRun[] = [];
    // Results strictly before this time are still to be looked at.
    let before = nowMs + 1;
    while (runs.length < max) {
      const { rows } = await sql<{
        success: number | null;
        start: number;
        message: string | null;
        end_time: number | null;
      }>`
        with latest as (
          select h.time from healthcheck_history h
          where h.check_id = ${id} and h.time > ${fromMs} and h.time < ${before} and h.message is not null
          order by h.time desc limit 1
        ), previous as (
          select latest.time as last, (
            select h.time from healthcheck_history h
            where h.check_id = ${id} and h.time > ${fromMs} and h.time < latest.time and h.message is null
            order by h.time desc limit 1
          ) as success
          from latest
        ), opening as (
          select previous.last, previous.success, (
            select h.time from healthcheck_history h
            where h.check_id = ${id} and h.time > coalesce(previous.success, ${fromMs}) and h.time <= previous.last
            order by h.time limit 1
          ) as start
          from previous
        )
        select opening.success, opening.start,
          (select h.message from healthcheck_history h where h.check_id = ${id} and h.time = opening.start) as message,
          (select h.time from healthcheck_history h
            where h.check_id = ${id} and h.time > opening.last and h.time <= ${nowMs}
            order by h.time limit 1) as end_time
        from opening`.execute(this.#db);
      const run = rows[0];
      if (run === undefined) break;
      runs.push({
        start: Number(run.start),
        end: run.end_time === null ? null : Number(run.end_time),
        message: run.message ?? "",
      });
      if (run.success === null) break;
      before = Number(run.success);
    }
    return runs;
  }

  /**
   * Results and successes of each of `names` per UTC day, over `[fromMs, nowMs]`, grouped in SQL.
   * Days without results are absent.
   */
  async daily(names: readonly string[], fromMs: number, nowMs: number): Promise<DailyCount[]> {
    const counts: DailyCount[] = [];
    for (const part of chunks(names)) {
      const { rows } = await sql<{ name: string; day: number; total: number; failures: number }>`
        select d.name, d.day, count(*) as total, count(d.message) as failures
        from (
          select c.name, h.time / ${sql.lit(DAY_MS)} as day, h.message
          from healthcheck_history h
          join healthcheck_history_check c on c.id = h.check_id
          where c.name in (${sql.join(part)}) and h.time >= ${fromMs} and h.time <= ${nowMs}
        ) d
        group by d.name, d.day`.execute(this.#db);
      for (const row of rows) {
        const total = Number(row.total);
        counts.push({ name: row.name, day: Number(row.day), total, successes: total - Number(row.failures) });
      }
    }
    return counts;
  }

  /**
   * The successful results of `name` in `(sinceMs, nowMs]` grouped into slices of `widthMs`: slice
   * `i` holds the times in `(sinceMs + i × width, sinceMs + (i + 1) × width]`. Empty slices are
   * absent; sorted by slice.
   */
  async durations(name: string, sinceMs: number, nowMs: number, widthMs: number): Promise<SliceDurations[]> {
    // The casts make the division an integer one on SQLite too, which binds numbers as REAL.
    const { rows } = await sql<{ slice: number; count: number; sum: number }>`
      select s.slice, count(*) as count, sum(s.duration) as sum
      from (
        select (h.time - cast(${sinceMs} as bigint) - 1) / cast(${widthMs} as bigint) as slice, h.duration
        from healthcheck_history h
        where h.check_id = (select c.id from healthcheck_history_check c where c.name = ${name})
          and h.time > ${sinceMs} and h.time <= ${nowMs} and h.message is null
      ) s
      group by s.slice
      order by s.slice`.execute(this.#db);
    return rows.map((row) => ({ slice: Number(row.slice), count: Number(row.count), sum: Number(row.sum) }));
  }

  /**
   * When the current state of `name` started: the time of the first result of the run of results
   * with the same success as its latest result at or before `nowMs`.
   *
   * @returns milliseconds since the epoch; undefined when `name` has no result
   */
  async stateSince(name: string, nowMs: number): Promise<number | undefined> {
    const id = await this.#idOf(name);
    if (id === undefined) return undefined;
    const latest = await sql<{ time: number; ok: unknown }>`
      select h.time, h.message is null as ok from healthcheck_history h
      where h.check_id = ${id} and h.time <= ${nowMs}
      order by h.time desc limit 1`.execute(this.#db);
    const last = latest.rows[0];
    if (last === undefined) return undefined;
    // SQLite answers 0/1 for a boolean expression, PostgreSQL true/false.
    const ok = last.ok === true || last.ok === 1;
    // Walks back from the latest result to the first one of the other state (the index, newest first).
    const other = await sql<{ time: number }>`
      select h.time from healthcheck_history h
      where h.check_id = ${id} and h.time < ${Number(last.time)} and ${ok ? sql`h.message is not null` : sql`h.message is null`}
      order by h.time desc limit 1`.execute(this.#db);
    const after = other.rows[0] === undefined ? Number.MIN_SAFE_INTEGER : Number(other.rows[0].time);
    const first = await sql<{ time: number }>`
      select h.time from healthcheck_history h
      where h.check_id = ${id} and h.time > ${after} and h.time <= ${Number(last.time)}
      order by h.time limit 1`.execute(this.#db);
    return first.rows[0] === undefined ? undefined : Number(first.rows[0].time);
  }

  /**
   * Up to `limit` checks (id and name) of ids greater than `afterId`, ascending: how a prune walks
   * every check.
   */
  async checkIdsAfter(afterId: number, limit: number): Promise<Array<{ id: number; name: string }>> {
    const rows = await this.#db
      .selectFrom("healthcheck_history_check")
      .select(["id", "name"])
      .where("id", ">", afterId)
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map((row) => ({ id: Number(row.id), name: row.name }));
  }

  /**
   * Deletes at most `maxRows` of the oldest results of check `id` older than `cutoffMs` (one range
   * of the primary key: a bounded delete that never holds the write lock for long).
   *
   * @returns the number of rows deleted; `maxRows` means there may be more
   */
  async pruneCheck(id: number, cutoffMs: number, maxRows: number): Promise<number> {
    // The boundary is the time of the maxRows-th oldest row below the cutoff (NULL when fewer).
    const result = await sql`
      delete from healthcheck_history
      where check_id = ${id} and time < ${cutoffMs}
        and time <= coalesce((
          select h.time from healthcheck_history h
          where h.check_id = ${id} and h.time < ${cutoffMs}
          order by h.time limit 1 offset ${maxRows - 1}
        ), ${cutoffMs})`.execute(this.#db);
    return Number(result.numAffectedRows ?? 0);
  }

  /**
   * Deletes the ids among `ids` that no result refers to any more (checks deleted, or renamed, for
   * longer than the retention), so that the table of names does not grow with every name ever seen.
   *
   * @returns the ids deleted
   */
  async deleteUnusedChecks(ids: readonly number[]): Promise<number[]> {
    const deleted: number[] = [];
    for (const part of chunks(ids)) {
      const { rows } = await sql<{ id: number }>`
        delete from healthcheck_history_check
        where id in (${sql.join(part)})
          and not exists (select 1 from healthcheck_history h where h.check_id = healthcheck_history_check.id)
        returning id`.execute(this.#db);
      for (const row of rows) deleted.push(Number(row.id));
    }
    return deleted;
  }

  async #idOf(name: string): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom("healthcheck_history_check")
      .select("id")
      .where("name", "=", name)
      .executeTakeFirst();
    return row === undefined ? undefined : Number(row.id);
  }
}
