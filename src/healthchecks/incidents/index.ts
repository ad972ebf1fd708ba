/**
 * Incidents of the status pages (docs/healthchecks.md): created, updated and deleted through the
 * API, stored in the database, shown by the pages they name and in their Atom feeds.
 *
 * Cluster mode: nothing is cached here. Every API call reads the database, and each page reads its
 * incidents when it computes its answers (at most once a second, status-page/routes.ts), so every
 * instance shows a change within a second without any message between them.
 */
import { randomUUID } from "node:crypto";
import type { Database } from "../../platform/database.js";
import { ConflictError, NotFoundError } from "../../platform/errors.js";
import {
  checkNames,
  type Incident,
  type IncidentInput,
  type IncidentNames,
  isIncidentId,
  MAX_INCIDENTS,
  MAX_UPDATES,
  RESOLVED_SHOWN_MS,
  type UpdateInput,
} from "./incident.js";
import { type IncidentQuery, IncidentStore } from "./storage.js";

export {
  type Incident,
  type IncidentStatus,
  type IncidentUpdate,
  latestUpdate,
  RESOLVED_SHOWN_MS,
  resolvedMs,
  shownIncidents,
  statusOf,
} from "./incident.js";

/** Incidents a page reads at most (open ones and those resolved within 14 days). */
export const MAX_PAGE_INCIDENTS = 50;

/** The incidents of one server, stored in its database. */
export class Incidents {
  readonly #store: IncidentStore;
  readonly #names: IncidentNames;

  /** `names`: what an incident may name (registered checks, configured pages). */
  constructor(database: Database, names: IncidentNames) {
    this.#store = new IncidentStore(database);
    this.#names = names;
  }

  /**
   * Stores a new incident.
   * @returns its id
   * @throws ValidationError for a check or page that does not exist (a 400);
   *   ConflictError when {@link MAX_INCIDENTS} are stored
   */
  async create(input: IncidentInput, nowMs: number = Date.now()): Promise<string> {
    const pages = input.pages ?? [...this.#names.pages];
    checkNames({ checks: input.checks, pages }, this.#names);
    if ((await this.#store.count()) >= MAX_INCIDENTS) {
      throw new ConflictError(`at most ${MAX_INCIDENTS} incidents are kept: delete old ones first`);
    }
    const id = randomUUID();
    await this.#store.insert({
      id,
      title: input.title,
      checks: input.checks,
      pages,
      updates: [{ status: input.status, message: input.message, timeMs: nowMs }],
    });
    return id;
  }

  /**
   * Appends an update to the incident `id`.
   * @throws NotFoundError `incident <id> not found`; ConflictError when it has {@link MAX_UPDATES} updates
   */
  async update(id: string, input: UpdateInput, nowMs: number = Date.now()): Promise<void> {
    if (!isIncidentId(id)) throw notFound(id);
    const outcome = await this.#store.addUpdate(id, { ...input, timeMs: nowMs }, MAX_UPDATES);
    if (outcome === "missing") throw notFound(id);
    if (outcome === "full") {
      throw new ConflictError(`incident ${id} has ${MAX_UPDATES} updates already: create a new incident`);
    }
  }

  /**
   * The incident `id`.
   * @throws NotFoundError `incident <id> not found`
   */
  async get(id: string): Promise<Incident> {
    const incident = isIncidentId(id) ? await this.#store.get(id) : undefined;
    if (incident === undefined) throw notFound(id);
    return incident;
  }

  /** Incidents as `query` asks, most recently updated first. */
  list(query: IncidentQuery): Promise<Incident[]> {
    return this.#store.list(query);
  }

  /** What the page `slug` shows at `nowMs`: open incidents and those resolved within 14 days. */
  forPage(slug: string, nowMs: number): Promise<Incident[]> {
    return this.#store.list({
      page: slug,
      openOrResolvedSinceMs: nowMs - RESOLVED_SHOWN_MS,
      limit: MAX_PAGE_INCIDENTS,
    });
  }

  /**
   * Deletes the incident `id`.
   * @throws NotFoundError `incident <id> not found`
   */
  async remove(id: string): Promise<void> {
    if (!isIncidentId(id) || !(await this.#store.delete(id))) throw notFound(id);
  }
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`incident ${id} not found`);
}
