/**
 * The maintenance windows created through the API (docs/healthchecks.md): every statement on
 * `healthcheck_maintenance`, the table the module's storage.ts creates. Shared by the instances of
 * a cluster through the database. Times are milliseconds since the epoch.
 */
import type { Kysely } from "kysely";
import type { Database, PlatformTables } from "../../platform/database.js";
import type { HealthcheckTables } from "../storage.js";
import type { ApiWindow } from "./calendar.js";

type Tables = PlatformTables & HealthcheckTables;

/** The selectors of a stored row, or undefined when its JSON is not a list of strings. */
function checksOf(text: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    if (Array.isArray(parsed) && parsed.length > 0 && parsed.every((item) => typeof item === "string")) return parsed;
  } catch {
    // Not JSON: the row is skipped.
  }
  return undefined;
}

/** The stored API windows. */
export class MaintenanceStore {
  readonly #db: Kysely<Tables>;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<HealthcheckTables>();
  }

  /**
   * The windows that have not ended at `nowMs`, by name. A row whose selectors do not parse is
   * left out.
   * @throws Error when the database fails
   */
  async list(nowMs: number): Promise<ApiWindow[]> {
    const rows = await this.#db
      .selectFrom("healthcheck_maintenance")
      .select(["name", "checks", "start_time", "end_time"])
      .where("end_time", ">", nowMs)
      .orderBy("name")
      .execute();
    return rows.flatMap((row) => {
      const checks = checksOf(row.checks);
      return checks === undefined
        ? []
        : [{ name: row.name, checks, startMs: Number(row.start_time), endMs: Number(row.end_time) }];
    });
  }

  /** How many windows have not ended at `nowMs`. */
  async count(nowMs: number): Promise<number> {
    const row = await this.#db
      .selectFrom("healthcheck_maintenance")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .where("end_time", ">", nowMs)
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  /**
   * Adds `window` unless a window of its name is stored (several instances may try at once: the
   * primary key decides).
   * @returns false when the name is taken
   */
  async insert(window: ApiWindow, nowMs: number): Promise<boolean> {
    const result = await this.#db
      .insertInto("healthcheck_maintenance")
      .values({
        name: window.name,
        checks: JSON.stringify(window.checks),
        start_time: window.startMs,
        end_time: window.endMs,
        created_at: nowMs,
      })
      .onConflict((conflict) => conflict.column("name").doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** Deletes the window `name`; false when none was stored. */
  async delete(name: string): Promise<boolean> {
    const result = await this.#db.deleteFrom("healthcheck_maintenance").where("name", "=", name).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Deletes the windows that ended at or before `nowMs` (their results are marked already). */
  async deleteEnded(nowMs: number): Promise<number> {
    const result = await this.#db
      .deleteFrom("healthcheck_maintenance")
      .where("end_time", "<=", nowMs)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
