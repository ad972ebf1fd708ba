/**
 * The stored incidents (docs/healthchecks.md): every statement on `healthcheck_incident`,
 * `healthcheck_incident_page` and `healthcheck_incident_update`, the tables the module's storage.ts
 * creates. Every instance of a cluster reads the same rows. Times are milliseconds since the epoch.
 */
import type { Kysely, Transaction } from "kysely";
import type { Database, PlatformTables } from "../../platform/database.js";
import type { HealthcheckTables } from "../storage.js";
import { INCIDENT_STATUSES, type Incident, type IncidentStatus, type IncidentUpdate } from "./incident.js";

type Tables = PlatformTables & HealthcheckTables;

/** What a listing asks for. */
export interface IncidentQuery {
  /** Only those a page shows (its slug). */
  readonly page?: string;
  /** Only those updated at or after this time. */
  readonly sinceMs?: number;
  /** Only those open, or resolved at or after this time. */
  readonly openOrResolvedSinceMs?: number;
  /** At most this many, most recently updated first. */
  readonly limit: number;
}

function isStatus(text: string): text is IncidentStatus {
  return INCIDENT_STATUSES.some((status) => status === text);
}

/** The strings of a JSON array, or none when the text is not one. */
function namesOf(text: string): string[] {
  try {
    const parsed: unknown = JSON.parse(text);
    if (Array.isArray(parsed)) return parsed.filter((item): item is string => typeof item === "string");
  } catch {
    // Not JSON: no names.
  }
  return [];
}

/** What an incident becomes with one more update. */
function rowAfter(update: IncidentUpdate) {
  return {
    status: update.status,
    updated_at: update.timeMs,
    resolved_at: update.status === "resolved" ? update.timeMs : null,
  };
}

/** The stored incidents. */
export class IncidentStore {
  readonly #db: Kysely<Tables>;
  readonly #postgres: boolean;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<HealthcheckTables>();
    this.#postgres = database.dialect === "postgres";
  }

  /**
   * Stores a new incident, its pages and its first update, in one transaction.
   * @throws Error when the database fails (or the id exists, which a random UUID never does)
   */
  async insert(incident: Incident): Promise<void> {
    const first = incident.updates[0];
    if (first === undefined) throw new Error("an incident needs its first update");
    await this.#db.transaction().execute(async (trx) => {
      await trx
        .insertInto("healthcheck_incident")
        .values({
          id: incident.id,
          title: incident.title,
          checks: JSON.stringify(incident.checks),
          created_at: first.timeMs,
          ...rowAfter(first),
        })
        .execute();
      if (incident.pages.length > 0) {
        await trx
          .insertInto("healthcheck_incident_page")
          .values(incident.pages.map((slug) => ({ incident_id: incident.id, slug })))
          .execute();
      }
      await this.#insertUpdate(trx, incident.id, 0, first);
    });
  }

  async #insertUpdate(trx: Transaction<Tables>, id: string, seq: number, update: IncidentUpdate): Promise<void> {
    await trx
      .insertInto("healthcheck_incident_update")
      .values({ incident_id: id, seq, time: update.timeMs, status: update.status, message: update.message })
      .execute();
  }

  /**
   * Appends an update to the incident `id`, unless it has `maxUpdates` already. Appends to one
   * incident are serialised: PostgreSQL locks its row (from any instance), SQLite runs one write
   * transaction at a time.
   *
   * @returns `missing` when no such incident, `full` at the bound, `added` otherwise
   * @throws Error when the database fails
   */
  async addUpdate(id: string, update: IncidentUpdate, maxUpdates: number): Promise<"added" | "missing" | "full"> {
    return this.#db.transaction().execute(async (trx) => {
      const found = await trx
        .selectFrom("healthcheck_incident")
        .select("id")
        .where("id", "=", id)
        .$if(this.#postgres, (query) => query.forUpdate())
        .executeTakeFirst();
      if (found === undefined) return "missing";
      const counted = await trx
        .selectFrom("healthcheck_incident_update")
        .select((eb) => eb.fn.countAll<number>().as("count"))
        .where("incident_id", "=", id)
        .executeTakeFirst();
      const count = Number(counted?.count ?? 0);
      if (count >= maxUpdates) return "full";
      await this.#insertUpdate(trx, id, count, update);
      await trx.updateTable("healthcheck_incident").set(rowAfter(update)).where("id", "=", id).execute();
      return "added";
    });
  }

  /** The incident `id` with its pages and timeline; undefined when unknown. */
  async get(id: string): Promise<Incident | undefined> {
    const [incident] = await this.#complete(
      await this.#db
        .selectFrom("healthcheck_incident")
        .select(["id", "title", "checks"])
        .where("id", "=", id)
        .execute(),
    );
    return incident;
  }

  /** Incidents as `query` asks, most recently updated first, with their pages and timelines. */
  async list(query: IncidentQuery): Promise<Incident[]> {
    let select = this.#db
      .selectFrom("healthcheck_incident")
      .select(["id", "title", "checks"])
      .orderBy("updated_at", "desc")
      .orderBy("id")
      .limit(query.limit);
    const { page, sinceMs, openOrResolvedSinceMs } = query;
    if (page !== undefined) {
      select = select.where("id", "in", (eb) =>
        eb.selectFrom("healthcheck_incident_page").select("incident_id").where("slug", "=", page),
      );
    }
    if (sinceMs !== undefined) select = select.where("updated_at", ">=", sinceMs);
    if (openOrResolvedSinceMs !== undefined) {
      select = select.where((eb) =>
        eb.or([eb("resolved_at", "is", null), eb("resolved_at", ">=", openOrResolvedSinceMs)]),
      );
    }
    return this.#complete(await select.execute());
  }

  /** Adds the pages and updates of `rows`, in their order. */
  async #complete(rows: readonly { id: string; title: string; checks: string }[]): Promise<Incident[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((row) => row.id);
    const [pages, updates] = await Promise.all([
      this.#db
        .selectFrom("healthcheck_incident_page")
        .select(["incident_id", "slug"])
        .where("incident_id", "in", ids)
        .execute(),
      this.#db
        .selectFrom("healthcheck_incident_update")
        .select(["incident_id", "time", "status", "message"])
        .where("incident_id", "in", ids)
        .orderBy("incident_id")
        .orderBy("seq")
        .execute(),
    ]);
    const pagesOf = new Map<string, string[]>();
    for (const row of pages) pagesOf.set(row.incident_id, [...(pagesOf.get(row.incident_id) ?? []), row.slug]);
    const updatesOf = new Map<string, IncidentUpdate[]>();
    for (const row of updates) {
      if (!isStatus(row.status)) continue;
      const list = updatesOf.get(row.incident_id) ?? [];
      list.push({ status: row.status, message: row.message, timeMs: Number(row.time) });
      updatesOf.set(row.incident_id, list);
    }
    return rows.flatMap((row) => {
      const timeline = updatesOf.get(row.id) ?? [];
      // A row without a readable update cannot be shown: left out rather than failing the page.
      if (timeline.length === 0) return [];
      return [
        {
          id: row.id,
          title: row.title,
          checks: namesOf(row.checks),
          pages: (pagesOf.get(row.id) ?? []).sort(),
          updates: timeline,
        },
      ];
    });
  }

  /** How many incidents are stored. */
  async count(): Promise<number> {
    const row = await this.#db
      .selectFrom("healthcheck_incident")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  /** Deletes the incident `id` with its pages and timeline; false when none was stored. */
  async delete(id: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom("healthcheck_incident_update").where("incident_id", "=", id).execute();
      await trx.deleteFrom("healthcheck_incident_page").where("incident_id", "=", id).execute();
      const result = await trx.deleteFrom("healthcheck_incident").where("id", "=", id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }
}
