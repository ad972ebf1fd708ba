/**
 * What the incident routes say of themselves in `GET /openapi.json` (docs/api.md). No `security`:
 * like every healthcheck route, they ask for a token exactly when `security.require-token` is on.
 */
import type { RouteDescription } from "../../platform/openapi.js";
import type { JsonSchema, Validator } from "../../platform/validation.js";
import { INCIDENT_STATUSES } from "./incident.js";

const MESSAGE: JsonSchema = { type: "object", properties: { message: { type: "string" } }, required: ["message"] };
const TIME: JsonSchema = { type: "string", format: "date-time" };
const STATUS: JsonSchema = { type: "string", enum: [...INCIDENT_STATUSES] };

/** An incident as the API returns it. */
export const INCIDENT: JsonSchema = {
  type: "object",
  properties: {
    id: { type: "string", format: "uuid" },
    title: { type: "string" },
    status: { ...STATUS, description: "the status of the latest update" },
    checks: { type: "array", items: { type: "string" } },
    pages: { type: "array", items: { type: "string" }, description: 'slugs of the pages showing it ("" is /status)' },
    created: TIME,
    updated: TIME,
    resolved: { anyOf: [TIME, { type: "null" }] },
    updates: {
      type: "array",
      description: "the timeline, oldest first; the first holds the message the incident was created with",
      items: {
        type: "object",
        properties: { time: TIME, status: STATUS, message: { type: "string" } },
        required: ["time", "status", "message"],
        additionalProperties: false,
      },
    },
  },
  required: ["id", "title", "status", "checks", "pages", "created", "updated", "resolved", "updates"],
  additionalProperties: false,
};

/** `POST /incident`, its body checked by `body`. */
export function createIncidentDescription(body: Validator<unknown>): RouteDescription {
  return {
    summary: "open an incident on status pages",
    body,
    example: {
      title: "Slow checkout",
      status: "investigating",
      message: "Payments take up to a minute; we are looking into it.",
      checks: [],
      pages: [],
    },
    success: {
      status: 201,
      schema: { type: "object", properties: { id: { type: "string", format: "uuid" } }, required: ["id"] },
    },
    // At most 10 000 incidents are kept.
    errors: [409],
  };
}

/** `POST /incident/<id>/update`, its body checked by `body`. */
export function updateIncidentDescription(body: Validator<unknown>): RouteDescription {
  return {
    summary: "add an update to an incident's timeline (status resolved closes it)",
    body,
    example: { status: "resolved", message: "Payments are back to normal." },
    success: { schema: MESSAGE },
    // At most 100 updates per incident.
    errors: [409],
  };
}

/** `GET /incident`, `limit` bounded by `maxLimit`. */
export function listIncidentsDescription(maxLimit: number, defaultLimit: number): RouteDescription {
  return {
    summary: "list incidents, most recently updated first",
    query: {
      "status-page": { type: "string", description: 'only those a page shows, by its slug ("" is /status)' },
      since: { ...TIME, description: "only those updated at or after this time" },
      limit: { type: "integer", minimum: 1, maximum: maxLimit, default: defaultLimit },
    },
    success: { schema: { type: "array", items: INCIDENT } },
  };
}

export const GET_INCIDENT: RouteDescription = {
  summary: "show an incident and its timeline",
  success: { schema: INCIDENT },
};

export const DELETE_INCIDENT: RouteDescription = {
  summary: "delete an incident and its timeline",
  success: { schema: MESSAGE },
};
