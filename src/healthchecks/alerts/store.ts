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
 */
import type { Generated, Kysely } from "kysely";
import type { Database, PlatformTables } from "../../platform/database.js";
import { migrationDialect } from "../../platform/database.js";
import { runDdl } from "../../platform/ddl.js";
import type { AlertHistoryEntry, AlertStateStore, HistoryOutcome, StoredAlert } from "./evaluator.js";

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

/** The stored alert states and notification history. */
export class AlertStore implements AlertStateStore {
  readonly #db: Kysely<Tables>;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<AlertTables>();
  }

  /** Every stored state, or those of the checks `names`. */
  async loadStates(names?: readonly string[]): Promise<StoredAlert[]> {
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

  /** Writes one alert's state (replacing the stored one). */
  async saveState(state: StoredAlert, nowMs: number): Promise<void> {
    const values = {
      triggered: state.triggered ? 1 : 0,
      since: state.sinceMs,
      last_due: state.lastDueMs,
      last_sent: state.lastSentMs ?? null,
      notified: state.notified ? 1 : 0,
      updated_at: nowMs,
    };
    await this.#db
      .insertInto("healthcheck_alert_state")
      .values({ check_name: state.check, output: state.output, ...values })
      .onConflict((conflict) => conflict.columns(["check_name", "output"]).doUpdateSet(values))
      .execute();
  }

  /** Deletes the state of one alert (its check or its alert was removed). */
  async deleteState(check: string, output: string): Promise<void> {
    await this.#db
      .deleteFrom("healthcheck_alert_state")
      .where("check_name", "=", check)
      .where("output", "=", output)
      .execute();
  }

  /** The names of the checks with a triggered alert (or down for their dependents). */
  async downChecks(): Promise<string[]> {
    const rows = await this.#db
      .selectFrom("healthcheck_alert_state")
      .select("check_name")
      .distinct()
      .where("triggered", "=", 1)
      .execute();
    return rows.map((row) => row.check_name);
  }

  /** Records one notification. */
  async addHistory(entry: AlertHistoryEntry): Promise<void> {
    await this.#db
      .insertInto("healthcheck_alert_history")
      .values({
        check_name: entry.check,
        output: entry.output,
        time: entry.timeMs,
        status: entry.status,
        outcome: entry.outcome,
        reason: entry.reason ?? null,
      })
      .execute();
  }

  /** The notifications of a period, newest first. */
  async history(query: AlertHistoryQuery): Promise<AlertHistoryEntry[]> {
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
