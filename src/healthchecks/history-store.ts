/**
 * The storage of the history of results (docs/healthchecks.md, "History and uptime"): every
 * statement on `healthcheck_history` and `healthcheck_history_check`, the tables storage.ts
 * creates. Times are milliseconds since the epoch.
 */
import type SQLite from "better-sqlite3";
import { CompiledQuery, type Kysely, sql } from "kysely";
import type { Database, DatabaseDialect, PlatformTables } from "../platform/database.js";
import { valuesList } from "../platform/database.js";
import { chunks, type HealthcheckTables } from "./storage.js";

type Tables = PlatformTables & HealthcheckTables;

/** One column per field, one index per result: what the history buffers and writes. */
export interface HistoryColumns {
  readonly checkIds: readonly number[];
  /** Milliseconds since the epoch. */
  readonly times: readonly number[];
  /** Whole milliseconds. */
  readonly durations: readonly number[];
  /** NULL for a success. */
  readonly messages: readonly (string | null)[];
  /** 1 for a result of a maintenance window, 2 for a heartbeat's log ping, NULL otherwise. */
  readonly maintenance: readonly (1 | 2 | null)[];
}

/** A stored result. */
export interface HistoryRow {
  /** Milliseconds since the epoch. */
  readonly time: number;
  /** Whole milliseconds. */
  readonly duration: number;
  /** NULL for a success. */
  readonly message: string | null;
  /** 1 (or true) for a result of a maintenance window, NULL otherwise. */
  readonly maintenance: number | null;
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
 * Rows per multi-row INSERT of the history on PostgreSQL, and per transaction on SQLite: 5
 * parameters a row, so 10 000 parameters, well below PostgreSQL's limit (65 535). One second of
 * 10 000 checks at 10 s (1 000 results) is one statement, or one transaction.
 */
export const HISTORY_INSERT_ROWS = 2_000;

/**
 * Rows of the INSERTs kept prepared on SQLite, largest first: any number of rows is written as a
 * few statements of these fixed shapes (1 000 rows: 1 × 512, 3 × 128, 3 × 32, 1 × 8), so that each
 * shape is parsed once per process rather than once per second.
 */
export const SQLITE_CHUNK_ROWS: readonly number[] = [512, 128, 32, 8, 1];

/**
 * The multi-row INSERT of `rows` rows, with the placeholders of `dialect`. Written as text rather
 * than with Kysely's builder: this statement runs every second with thousands of values, for which
 * the builder would make and compile a node per value.
 *
 * A conflict (the same check and millisecond twice, only possible when two instances sharing
 * PostgreSQL run the same check) keeps the first row, on both databases: `on conflict do nothing`
 * on PostgreSQL, `insert or ignore` on SQLite. The latter also makes the statement one that cannot
 * abort half-way, so that inside a transaction SQLite keeps no statement journal (a copy of every
 * page before the statement changes it, to undo that statement alone): with it, writing 1 000 rows
 * into a table of a million took 25 % more CPU. Its other effect, a row breaking NOT NULL skipped
 * rather than failing the statement, would take a check, time or duration that is NULL or NaN,
 * which results never have.
 */
function insertHistoryText(rows: number, dialect: DatabaseDialect): string {
  const columns = "healthcheck_history (check_id, time, duration, message, maintenance)";
  const values = valuesList(rows, 5, dialect);
  return dialect === "sqlite"
    ? `insert or ignore into ${columns} values ${values}`
    : `insert into ${columns} values ${values} on conflict do nothing`;
}

/** Copies rows `[start, end)` of `rows` into `parameters` from index 0, five values a row. */
function fillParameters(parameters: unknown[], rows: HistoryColumns, start: number, end: number): void {
  let at = 0;
  for (let row = start; row < end; row++) {
    parameters[at++] = rows.checkIds[row];
    parameters[at++] = rows.times[row];
    parameters[at++] = rows.durations[row];
    parameters[at++] = rows.messages[row];
    parameters[at++] = rows.maintenance[row] ?? null;
  }
}

/**
 * A prune's delete of one check's oldest rows on SQLite (the same statement as on PostgreSQL,
 * through Kysely there), with six parameters: check id, cutoff, check id, cutoff, the offset of
 * the boundary row (at most this many rows plus one are deleted), cutoff.
 */
const PRUNE_CHECK_SQLITE = `
  delete from healthcheck_history
  where check_id = ? and time < ?
    and time <= coalesce((
      select h.time from healthcheck_history h
      where h.check_id = ? and h.time < ?
      order by h.time limit 1 offset ?
    ), ?)`;

/** One prepared INSERT of a fixed number of rows and the parameter array it reuses. */
interface PreparedInsert {
  readonly statement: SQLite.Statement<unknown[]>;
  readonly parameters: unknown[];
}

/**
 * The history's INSERTs on SQLite, run on better-sqlite3 itself rather than through Kysely.
 * Kysely's SQLite driver prepares every statement it runs, and the text of a multi-row INSERT
 * changes with the number of rows, so SQLite parsed thousands of placeholders every second (3 %
 * of the CPU of 10 000 checks at 10 s, in a native profile). Here each size of
 * {@link SQLITE_CHUNK_ROWS} is prepared once, on first use, with a parameter array reused; the
 * chunks of one call share one transaction (one commit). Called only inside
 * `kysely.connection().execute()`, which holds Kysely's single connection: no Kysely transaction
 * is open around it, and none starts during it.
 */
class SqliteHistoryInserts {
  readonly #connection: SQLite.Database;
  readonly #prepared = new Map<number, PreparedInsert>();
  readonly #transaction: (rows: HistoryColumns, start: number, end: number) => void;

  constructor(connection: SQLite.Database) {
    this.#connection = connection;
    // better-sqlite3's transaction: begin, the function, commit; a rollback when it throws.
    this.#transaction = connection.transaction((rows: HistoryColumns, start: number, end: number) => {
      this.#insert(rows, start, end);
    });
  }

  /**
   * Inserts rows `[start, end)` of `rows` in one transaction.
   * @throws Error when SQLite fails (nothing of these rows is kept then)
   */
  run(rows: HistoryColumns, start: number, end: number): void {
    try {
      this.#transaction(rows, start, end);
    } finally {
      // The arrays would otherwise hold the last messages until the next write.
      for (const { parameters } of this.#prepared.values()) parameters.fill(null);
    }
  }

  #insert(rows: HistoryColumns, start: number, end: number): void {
    let row = start;
    for (const size of SQLITE_CHUNK_ROWS) {
      if (end - row < size) continue;
      const { statement, parameters } = this.#insertOf(size);
      for (; end - row >= size; row += size) {
        fillParameters(parameters, rows, row, row + size);
        statement.run(parameters);
      }
    }
  }

  #insertOf(size: number): PreparedInsert {
    let prepared = this.#prepared.get(size);
    if (prepared === undefined) {
      prepared = {
        statement: this.#connection.prepare<unknown[]>(insertHistoryText(size, "sqlite")),
        parameters: new Array(size * 5).fill(null),
      };
      this.#prepared.set(size, prepared);
    }
    return prepared;
  }
}

/**
 * The history of results (docs/healthchecks.md): every statement on `healthcheck_history` and
 * `healthcheck_history_check`. Reads take the check's name and find its id in the same statement or
 * one before; history.ts does the buffering, timing and shaping.
 */
export class HistoryStore {
  readonly #db: Kysely<Tables>;
  /** The INSERTs on SQLite; undefined on PostgreSQL, where they go through Kysely. */
  readonly #sqliteInserts: SqliteHistoryInserts | undefined;
  /** The INSERT of a full statement on PostgreSQL, made once. */
  readonly #fullInsert: string;
  /** The better-sqlite3 connection under Kysely; undefined on PostgreSQL. */
  readonly #sqlite: SQLite.Database | undefined;
  /** {@link PRUNE_CHECK_SQLITE}, prepared at the first prune (the table exists by then). */
  #pruneStatement: SQLite.Statement<unknown[]> | undefined;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<HealthcheckTables>();
    this.#sqlite = database.sqlite;
    this.#sqliteInserts = database.sqlite === undefined ? undefined : new SqliteHistoryInserts(database.sqlite);
    this.#fullInsert = insertHistoryText(HISTORY_INSERT_ROWS, "postgres");
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
   * Inserts results, {@link HISTORY_INSERT_ROWS} rows per transaction: on PostgreSQL one statement
   * each, on SQLite a few prepared statements of fixed sizes ({@link SQLITE_CHUNK_ROWS}). A backlog
   * is several transactions, so that it never holds the write lock for long.
   *
   * @param rows columns of equal length
   * @param between awaited between two transactions (history.ts yields to the event loop there)
   * @throws Error when a transaction fails (the transactions before it are kept)
   */
  async insert(rows: HistoryColumns, between: () => Promise<void> = async () => {}): Promise<void> {
    const count = rows.checkIds.length;
    const sqlite = this.#sqliteInserts;
    for (let start = 0; start < count; start += HISTORY_INSERT_ROWS) {
      if (start > 0) await between();
      const end = Math.min(count, start + HISTORY_INSERT_ROWS);
      if (sqlite !== undefined) {
        await this.#db.connection().execute(async () => sqlite.run(rows, start, end));
        continue;
      }
      const parameters: unknown[] = new Array((end - start) * 5);
      fillParameters(parameters, rows, start, end);
      const text = end - start === HISTORY_INSERT_ROWS ? this.#fullInsert : insertHistoryText(end - start, "postgres");
      await this.#db.executeQuery(CompiledQuery.raw(text, parameters));
    }
  }

  /**
   * Results of `name` with `sinceMs <= time <= untilMs`, newest first.
   * @param limit at most this many rows
   */
  async list(name: string, sinceMs: number, untilMs: number, limit: number): Promise<HistoryRow[]> {
    const { rows } = await sql<HistoryRow>`
      select h.time, h.duration, h.message, h.maintenance
      from healthcheck_history h
      where h.check_id = (select c.id from healthcheck_history_check c where c.name = ${name})
        and h.time >= ${sinceMs} and h.time <= ${untilMs}
      order by h.time desc
      limit ${limit}`.execute(this.#db);
    return rows;
  }

  /**
   * Results and successes of `name` in each period `(nowMs - period, nowMs]`, results of maintenance
   * windows left out (docs/healthchecks.md: maintenance time does not count). One pass over the
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
          where h.check_id = ${id} and h.time > ${nowMs - period} and h.time <= ${nowMs - (periodsMs[index - 1] ?? 0)}
            and h.maintenance is null`,
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
   * first, results of maintenance windows left out (as if the check had not run then). A run
   * already going on at `fromMs` starts at its first result after `fromMs`.
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
          where h.check_id = ${id} and h.maintenance is null and h.time > ${fromMs} and h.time < ${before} and h.message is not null
          order by h.time desc limit 1
        ), previous as (
          select latest.time as last, (
            select h.time from healthcheck_history h
            where h.check_id = ${id} and h.maintenance is null and h.time > ${fromMs} and h.time < latest.time and h.message is null
            order by h.time desc limit 1
          ) as success
          from latest
        ), opening as (
          select previous.last, previous.success, (
            select h.time from healthcheck_history h
            where h.check_id = ${id} and h.maintenance is null and h.time > coalesce(previous.success, ${fromMs}) and h.time <= previous.last
            order by h.time limit 1
          ) as start
          from previous
        )
        select opening.success, opening.start,
          (select h.message from healthcheck_history h where h.check_id = ${id} and h.maintenance is null and h.time = opening.start) as message,
          (select h.time from healthcheck_history h
            where h.check_id = ${id} and h.maintenance is null and h.time > opening.last and h.time <= ${nowMs}
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
   * Results and successes of each of `names` per UTC day, over `[fromMs, nowMs]`, grouped in SQL,
   * results of maintenance windows left out. Days without results are absent.
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
            and h.maintenance is null
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
   * Up to `limit` checks of ids greater than `afterId`, ascending: how a prune walks every check.
   * `stale` says whether the check has a result older than `cutoffMs` (milliseconds since the
   * epoch): one probe of the primary key per check, in the same statement, so that a prune runs a
   * delete only for the checks that have something to delete (after a restart, none of 10 000).
   */
  async checkIdsAfter(
    afterId: number,
    limit: number,
    cutoffMs: number,
  ): Promise<Array<{ id: number; name: string; stale: boolean }>> {
    const { rows } = await sql<{ id: number; name: string; stale: number | boolean }>`
      select c.id, c.name, exists (
        select 1 from healthcheck_history h where h.check_id = c.id and h.time < ${cutoffMs}
      ) as stale
      from healthcheck_history_check c
      where c.id > ${afterId}
      order by c.id
      limit ${limit}`.execute(this.#db);
    // SQLite answers 0/1 for a boolean expression, PostgreSQL true/false.
    return rows.map((row) => ({ id: Number(row.id), name: row.name, stale: row.stale === true || row.stale === 1 }));
  }

  /**
   * Deletes at most `maxRows` of the oldest results of check `id` older than `cutoffMs` (one range
   * of the primary key: a bounded delete that never holds the write lock for long).
   *
   * @returns the number of rows deleted; `maxRows` means there may be more
   */
  async pruneCheck(id: number, cutoffMs: number, maxRows: number): Promise<number> {
    const sqlite = this.#sqlite;
    if (sqlite !== undefined) {
      // One statement prepared once: a prune runs it once per check (10 000 with 10 000 checks),
      // and Kysely's driver would parse and plan it again each time.
      return await this.#db.connection().execute(async () => {
        this.#pruneStatement ??= sqlite.prepare<unknown[]>(PRUNE_CHECK_SQLITE);
        return this.#pruneStatement.run(id, cutoffMs, id, cutoffMs, maxRows - 1, cutoffMs).changes;
      });
    }
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
