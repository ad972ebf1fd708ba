/**
 * The alerts' tables (docs/alerts.md), their migration and every query on them. Times are
 * milliseconds since the epoch; booleans are INTEGER 0/1, the same on SQLite and PostgreSQL.
 *
 * - `healthcheck_alert_state`: one row per (check, output) that ever transitioned, written at each
 *   transition only (never per result), read at start-up and when this instance takes over a
 *   check (cluster mode), so that a trigger is neither sent twice nor forgotten. The output `""`
 *   marks a check without alerts of its own that is down for its dependents (cluster mode).
 * - `healthcheck_alert_history`: each notification sent (with how its delivery ended) or
 *   suppressed, kept as long as the result history.
 *
 * Writes go through a queue (writes.ts) that writes the rows of a short period together; every
 * read here writes what is queued first, so it sees each transition already decided.
 */
import type SQLite from "better-sqlite3";
import { CompiledQuery, type Generated, type Kysely, type Transaction } from "kysely";
import type { Database, DatabaseDialect, PlatformTables } from "../../platform/database.js";
import { migrationDialect, valuesList } from "../../platform/database.js";
import { runDdl } from "../../platform/ddl.js";
import type { AlertHistoryEntry, AlertStateStore, EvaluatorLogger, HistoryOutcome, StoredAlert } from "./evaluator.js";
import { type AlertBatchWriter, type AlertWriteBatch, AlertWriteQueue, type StateWrite } from "./writes.js";

/** The alerts' tables. */
export type AlertTables = {
  healthcheck_alert_state: {
    check_name: string;
    output: string;
    triggered: number;
    since: number;
    last_due: number;
    last_sent: number | null;
    notified: number;
    updated_at: number;
  };
  healthcheck_alert_history: {
    id: Generated<number>;
    check_name: string;
    output: string;
    time: number;
    /** `triggered`, `reminder` or `resolved`. */
    status: string;
    /** `delivered`, `failed`, `dropped` or `suppressed`. */
    outcome: string;
    /** Why it failed, was dropped or suppressed; NULL when delivered. */
    reason: string | null;
  };
};

/** The migration of the alerts' tables (storage.ts lists it). */
export function alertMigration(db: Kysely<unknown>): Promise<void> {
  const sqlite = migrationDialect(db) === "sqlite";
  return runDdl(db, [
    `create table healthcheck_alert_state (check_name varchar(255) not null, output varchar(128) not null,
      triggered integer not null, since bigint not null, last_due bigint not null, last_sent bigint,
      notified integer not null, updated_at bigint not null,
      constraint healthcheck_alert_state_pkey primary key (check_name, output))`,
    `create table healthcheck_alert_history (
      id ${sqlite ? "integer primary key autoincrement" : "bigserial primary key"},
      check_name varchar(255) not null, output varchar(128) not null, time bigint not null,
      status varchar(16) not null, outcome varchar(16) not null, reason text)`,
    "create index healthcheck_alert_history_time on healthcheck_alert_history (time)",
  ]);
}

type Tables = PlatformTables & AlertTables;

/** A period and a limit of the history, newest first. */
export interface AlertHistoryQuery {
  readonly sinceMs?: number;
  readonly untilMs?: number;
  readonly limit: number;
}

const OUTCOMES: readonly HistoryOutcome[] = ["delivered", "failed", "dropped", "suppressed"];
const STATUSES = ["triggered", "reminder", "resolved"] as const;

/** Options of {@link AlertStore}. */
export interface AlertStoreOptions {
  /** Where a batch that failed is reported (its rows are then written one by one). */
  readonly logger?: EvaluatorLogger;
  /** Milliseconds a write waits for others before they are written together; default 100. */
  readonly flushDelayMs?: number;
}

/** Rows per statement of a batch on PostgreSQL: well under its 65 535 bind parameters. */
const WRITE_CHUNK = 100;

/** The stored alert states and notification history. */
export class AlertStore implements AlertStateStore, AlertBatchWriter {
  readonly #db: Kysely<Tables>;
  readonly #dialect: DatabaseDialect;
  readonly #queue: AlertWriteQueue;
  /** The batches' statements on SQLite; undefined on PostgreSQL, where they go through Kysely. */
  readonly #sqlite: SqliteAlertWrites | undefined;

  constructor(database: Database, options: AlertStoreOptions = {}) {
    this.#db = database.kysely.withTables<AlertTables>();
    this.#dialect = database.dialect;
    this.#sqlite = database.sqlite === undefined ? undefined : new SqliteAlertWrites(database.sqlite);
    this.#queue = new AlertWriteQueue(this, { logger: options.logger, flushDelayMs: options.flushDelayMs });
  }

  /** Every stored state, or those of the checks `names` (after the queued writes). */
  async loadStates(names?: readonly string[]): Promise<StoredAlert[]> {
    await this.#queue.flush();
    let query = this.#db.selectFrom("healthcheck_alert_state").selectAll();
    if (names !== undefined) {
      if (names.length === 0) return [];
      query = query.where("check_name", "in", names);
    }
    const rows = await query.execute();
    return rows.map((row) => ({
      check: row.check_name,
      output: row.output,
      triggered: row.triggered === 1,
      sinceMs: row.since,
      lastDueMs: row.last_due,
      ...(row.last_sent === null ? {} : { lastSentMs: row.last_sent }),
      notified: row.notified === 1,
    }));
  }

  /**
   * Writes one alert's state (replacing the stored one) with the other writes of a short period.
   * Resolves once it is committed; rejects if it could not be written.
   */
  saveState(state: StoredAlert, nowMs: number): Promise<void> {
    return this.#queue.saveState(state, nowMs);
  }

  /** Deletes the state of one alert (its check or its alert was removed), queued like {@link saveState}. */
  deleteState(check: string, output: string): Promise<void> {
    return this.#queue.deleteState(check, output, Date.now());
  }

  /** Records one notification, queued like {@link saveState}. */
  addHistory(entry: AlertHistoryEntry): Promise<void> {
    return this.#queue.addHistory(entry);
  }

  /** Writes the queued writes now; resolves once every write queued so far has ended. */
  flush(): Promise<void> {
    return this.#queue.flush();
  }

  /** The names of the checks with a triggered alert (or down for their dependents). */
  async downChecks(): Promise<string[]> {
    await this.#queue.flush();
    const rows = await this.#db
      .selectFrom("healthcheck_alert_state")
      .select("check_name")
      .distinct()
      .where("triggered", "=", 1)
      .execute();
    return rows.map((row) => row.check_name);
  }

  /**
   * Writes a batch of the queue in one transaction: states upserted (sorted by check and output,
   * the same order in every instance, so concurrent writers never deadlock), deleted, then the
   * history rows. On SQLite, prepared statements of one row each (at most 500 rows, a few
   * milliseconds); on PostgreSQL, multi-row statements of {@link WRITE_CHUNK} rows, their text
   * written here rather than built by Kysely (its tree of nodes per row cost about half the CPU).
   * @throws Error when the database fails (nothing of the batch is kept then)
   */
  async writeBatch(batch: AlertWriteBatch): Promise<void> {
    const sqlite = this.#sqlite;
    if (sqlite !== undefined) {
      const sorted = [...batch.states].sort(byKey);
      await this.#db.connection().execute(async () => sqlite.run(sorted, batch.history));
      return;
    }
    const upserts: Upsert[] = [];
    const deletes: StateWrite[] = [];
    for (const write of [...batch.states].sort(byKey)) {
      if (write.state === undefined) deletes.push(write);
      else upserts.push({ state: write.state, nowMs: write.nowMs });
    }
    await this.#db.transaction().execute(async (trx) => {
      for (let index = 0; index < upserts.length; index += WRITE_CHUNK) {
        const part = upserts.slice(index, index + WRITE_CHUNK);
        await trx.executeQuery(
          CompiledQuery.raw(upsertStatesText(part.length, "postgres"), part.flatMap(stateParameters)),
        );
      }
      for (const write of deletes) await deleteOne(trx, write.check, write.output);
      for (let index = 0; index < batch.history.length; index += WRITE_CHUNK) {
        const part = batch.history.slice(index, index + WRITE_CHUNK);
        await trx.executeQuery(
          CompiledQuery.raw(insertHistoryText(part.length, "postgres"), part.flatMap(historyParameters)),
        );
      }
    });
  }

  /** Writes one state or deletion on its own (a failed batch's rows, one by one). */
  async writeState(write: StateWrite): Promise<void> {
    if (write.state === undefined) await deleteOne(this.#db, write.check, write.output);
    else {
      const parameters = stateParameters({ state: write.state, nowMs: write.nowMs });
      await this.#db.executeQuery(CompiledQuery.raw(upsertStatesText(1, this.#dialect), parameters));
    }
  }

  /** Writes one history row on its own (a failed batch's rows, one by one). */
  async writeHistory(entry: AlertHistoryEntry): Promise<void> {
    await this.#db.executeQuery(CompiledQuery.raw(insertHistoryText(1, this.#dialect), historyParameters(entry)));
  }

  /** The notifications of a period, newest first. */
  async history(query: AlertHistoryQuery): Promise<AlertHistoryEntry[]> {
    await this.#queue.flush();
    let select = this.#db
      .selectFrom("healthcheck_alert_history")
      .selectAll()
      .orderBy("time", "desc")
      .orderBy("id", "desc")
      .limit(query.limit);
    if (query.sinceMs !== undefined) select = select.where("time", ">=", query.sinceMs);
    if (query.untilMs !== undefined) select = select.where("time", "<=", query.untilMs);
    const rows = await select.execute();
    return rows.map((row) => ({
      check: row.check_name,
      output: row.output,
      timeMs: row.time,
      status: STATUSES.find((status) => status === row.status) ?? "triggered",
      outcome: OUTCOMES.find((outcome) => outcome === row.outcome) ?? "failed",
      ...(row.reason === null ? {} : { reason: row.reason }),
    }));
  }

  /** Deletes the notifications older than `beforeMs`. */
  async pruneHistory(beforeMs: number): Promise<void> {
    await this.#db.deleteFrom("healthcheck_alert_history").where("time", "<", beforeMs).execute();
  }
}

function byKey(a: StateWrite, b: StateWrite): number {
  if (a.check !== b.check) return a.check < b.check ? -1 : 1;
  return a.output < b.output ? -1 : a.output > b.output ? 1 : 0;
}

/** A state to store and its `updated_at` (milliseconds since the epoch). */
interface Upsert {
  readonly state: StoredAlert;
  readonly nowMs: number;
}

async function deleteOne(db: Kysely<Tables> | Transaction<Tables>, check: string, output: string): Promise<void> {
  await db.deleteFrom("healthcheck_alert_state").where("check_name", "=", check).where("output", "=", output).execute();
}

const STATE_COLUMNS = "check_name, output, triggered, since, last_due, last_sent, notified, updated_at";
const HISTORY_COLUMNS = "check_name, output, time, status, outcome, reason";
/** What an upsert of states replaces of a stored row: every column but the key. */
const ON_STATE_CONFLICT = `on conflict (check_name, output) do update set triggered = excluded.triggered,
  since = excluded.since, last_due = excluded.last_due, last_sent = excluded.last_sent,
  notified = excluded.notified, updated_at = excluded.updated_at`;

const DELETE_STATE_SQLITE = "delete from healthcheck_alert_state where check_name = ? and output = ?";

/** The prepared statements of a batch on SQLite. */
interface SqliteStatements {
  readonly upsert: SQLite.Statement<unknown[]>;
  readonly delete: SQLite.Statement<unknown[]>;
  readonly insert: SQLite.Statement<unknown[]>;
}

/**
 * The batches on SQLite, run on better-sqlite3 itself rather than through Kysely, which prepares
 * every statement again and builds each row of a multi-row INSERT as a tree of nodes (115-160 µs
 * of CPU per transition in batches of ten, against 20-40 here). Statements are prepared at the first
 * batch (the tables exist by then). Called only inside `kysely.connection().execute()`, which holds
 * Kysely's single connection: no Kysely transaction is open around it.
 */
class SqliteAlertWrites {
  readonly #connection: SQLite.Database;
  #statements: SqliteStatements | undefined;
  readonly #transaction: (states: readonly StateWrite[], history: readonly AlertHistoryEntry[]) => void;

  constructor(connection: SQLite.Database) {
    this.#connection = connection;
    // better-sqlite3's transaction: begin, the function, commit; a rollback when it throws.
    this.#transaction = connection.transaction((states: readonly StateWrite[], history: readonly AlertHistoryEntry[]) =>
      this.#write(states, history),
    );
  }

  /**
   * Writes `states` and `history` in one transaction.
   * @throws Error when SQLite fails (nothing of them is kept then)
   */
  run(states: readonly StateWrite[], history: readonly AlertHistoryEntry[]): void {
    this.#transaction(states, history);
  }

  #write(states: readonly StateWrite[], history: readonly AlertHistoryEntry[]): void {
    const statements = this.#prepared();
    for (const { check, output, state, nowMs } of states) {
      if (state === undefined) {
        statements.delete.run(check, output);
        continue;
      }
      statements.upsert.run(stateParameters({ state, nowMs }));
    }
    for (const entry of history) statements.insert.run(historyParameters(entry));
  }

  #prepared(): SqliteStatements {
    this.#statements ??= {
      upsert: this.#connection.prepare<unknown[]>(upsertStatesText(1, "sqlite")),
      delete: this.#connection.prepare<unknown[]>(DELETE_STATE_SQLITE),
      insert: this.#connection.prepare<unknown[]>(insertHistoryText(1, "sqlite")),
    };
    return this.#statements;
  }
}

/** Statement texts by dialect and number of rows, written once each (at most {@link WRITE_CHUNK} rows). */
const upsertTexts = new Map<string, string>();
const insertTexts = new Map<string, string>();

/** The upsert of `rows` states; parameters by {@link stateParameters}. */
function upsertStatesText(rows: number, dialect: DatabaseDialect): string {
  const key = `${dialect} ${rows}`;
  let text = upsertTexts.get(key);
  if (text === undefined) {
    text = `insert into healthcheck_alert_state (${STATE_COLUMNS}) values ${valuesList(rows, 8, dialect)} ${ON_STATE_CONFLICT}`;
    upsertTexts.set(key, text);
  }
  return text;
}

function stateParameters({ state, nowMs }: Upsert): unknown[] {
  return [
    state.check,
    state.output,
    state.triggered ? 1 : 0,
    state.sinceMs,
    state.lastDueMs,
    state.lastSentMs ?? null,
    state.notified ? 1 : 0,
    nowMs,
  ];
}

/** The insert of `rows` history rows; parameters by {@link historyParameters}. */
function insertHistoryText(rows: number, dialect: DatabaseDialect): string {
  const key = `${dialect} ${rows}`;
  let text = insertTexts.get(key);
  if (text === undefined) {
    text = `insert into healthcheck_alert_history (${HISTORY_COLUMNS}) values ${valuesList(rows, 6, dialect)}`;
    insertTexts.set(key, text);
  }
  return text;
}

function historyParameters(entry: AlertHistoryEntry): unknown[] {
  return [entry.check, entry.output, entry.timeMs, entry.status, entry.outcome, entry.reason ?? null];
}
