/**
 * The incident routes (docs/healthchecks.md): `POST /incident`, `POST /incident/:id/update`,
 * `GET /incident`, `GET /incident/:id` and `DELETE /incident/:id`. index.ts registers them beside
 * the other healthcheck routes, behind the same guard (`security.require-token`).
 */
import type { FastifyInstance } from "fastify";
import { queryError, queryInteger, queryOf, queryString, queryTime } from "../../platform/query.js";
import { rfc3339 } from "../../platform/time.js";
import { type Incident, incidentBody, resolvedMs, statusOf, updateBody } from "./incident.js";
import type { Incidents } from "./index.js";
import {
  createIncidentDescription,
  DELETE_INCIDENT,
  GET_INCIDENT,
  listIncidentsDescription,
  updateIncidentDescription,
} from "./routes-api.js";

/** `GET /incident` answers at most this many. */
const MAX_LIMIT = 1_000;
const DEFAULT_LIMIT = 100;

/** An incident as the API shows it: times in RFC 3339, its timeline oldest first. */
export function incidentView(incident: Incident) {
  const resolved = resolvedMs(incident);
  const first = incident.updates[0];
  const last = incident.updates[incident.updates.length - 1];
  return {
    id: incident.id,
    title: incident.title,
    status: statusOf(incident),
    checks: incident.checks,
    pages: incident.pages,
    created: rfc3339(first?.timeMs ?? 0),
    updated: rfc3339(last?.timeMs ?? 0),
    resolved: resolved === undefined ? null : rfc3339(resolved),
    updates: incident.updates.map((update) => ({
      time: rfc3339(update.timeMs),
      status: update.status,
      message: update.message,
    })),
  };
}

/** What the routes work with. */
export interface IncidentRoutesOptions {
  readonly incidents: Incidents;
  /** The slugs of the configured pages. */
  readonly pages: ReadonlySet<string>;
}

/** Registers the incident routes on `app`. */
export function registerIncidentRoutes(app: FastifyInstance, options: IncidentRoutesOptions): void {
  const { incidents, pages } = options;

  app.post("/incident", { config: { openapi: createIncidentDescription(incidentBody) } }, async (request, reply) => {
    const id = await incidents.create(incidentBody(request.body, ""));
    return reply.code(201).send({ id });
  });

  app.post<{ Params: { id: string } }>(
    "/incident/:id/update",
    { config: { openapi: updateIncidentDescription(updateBody) } },
    async (request) => {
      const { id } = request.params;
      await incidents.update(id, updateBody(request.body, ""));
      return { message: `Incident ${id} successfully updated` };
    },
  );

  app.get("/incident", { config: { openapi: listIncidentsDescription(MAX_LIMIT, DEFAULT_LIMIT) } }, async (request) => {
    const query = queryOf(request.query);
    const page = queryString(query, "status-page");
    if (page !== undefined && !pages.has(page)) {
      throw queryError("status-page", `no status page has the slug ${JSON.stringify(page.slice(0, 64))}`);
    }
    const sinceMs = queryTime(query, "since");
    const limit = queryInteger(query, "limit", { min: 1, max: MAX_LIMIT }) ?? DEFAULT_LIMIT;
    const listed = await incidents.list({
      ...(page === undefined ? {} : { page }),
      ...(sinceMs === undefined ? {} : { sinceMs }),
      limit,
    });
    return listed.map(incidentView);
  });

  app.get<{ Params: { id: string } }>("/incident/:id", { config: { openapi: GET_INCIDENT } }, async (request) =>
    incidentView(await incidents.get(request.params.id)),
  );

  app.delete<{ Params: { id: string } }>("/incident/:id", { config: { openapi: DELETE_INCIDENT } }, async (request) => {
    const { id } = request.params;
    await incidents.remove(id);
    return { message: `Successfully deleted incident ${id}` };
  });
}
