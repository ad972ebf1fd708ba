/**
 * What the maintenance routes say of themselves in `GET /openapi.json` (docs/api.md). No
 * `security`: like every healthcheck route, they ask for a token exactly when
 * `security.require-token` is on.
 */
import type { RouteDescription } from "../../platform/openapi.js";
import type { JsonSchema, Validator } from "../../platform/validation.js";

const MESSAGE: JsonSchema = { type: "object", properties: { message: { type: "string" } }, required: ["message"] };
const TIME: JsonSchema = { type: "string", format: "date-time" };
const SPAN: JsonSchema = {
  anyOf: [
    {
      type: "object",
      properties: { start: TIME, end: TIME },
      required: ["start", "end"],
      additionalProperties: false,
    },
    { type: "null" },
  ],
};

/** A window as `GET /maintenance` lists it. */
const WINDOW: JsonSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    source: { type: "string", enum: ["configuration", "api"] },
    checks: { type: "array", items: { type: "string" }, description: "names or label selectors, as written" },
    selected: { type: "array", items: { type: "string" }, description: "the registered checks they select now" },
    start: { type: "string", description: "an RFC 3339 time (API), or the schedule as written (configuration)" },
    end: { ...TIME, description: "API windows only" },
    duration: { type: "string", description: "configured windows only" },
    timezone: { type: "string", description: "configured windows only" },
    ongoing: { type: "boolean" },
    current: { ...SPAN, description: "the occurrence going on" },
    next: { ...SPAN, description: "the next occurrence that starts after now" },
  },
  required: ["name", "source", "checks", "selected", "start", "ongoing", "current", "next"],
  additionalProperties: false,
};

/** `POST /maintenance`, its body checked by `body`. */
export function createWindowDescription(body: Validator<unknown>): RouteDescription {
  return {
    summary: "plan a maintenance window of some healthchecks",
    body,
    example: {
      name: "database-upgrade",
      checks: ["website", "team=web"],
      start: "2030-05-10T02:00:00+02:00",
      end: "2030-05-10T04:00:00+02:00",
    },
    success: { status: 201, schema: MESSAGE },
    // A name taken (by an API or a configured window), or too many windows planned.
    errors: [409],
  };
}

export const LIST_WINDOWS: RouteDescription = {
  summary: "list the maintenance windows (configuration file and API), whether each is ongoing and when it comes next",
  success: { schema: { type: "array", items: WINDOW } },
};

export const DELETE_WINDOW: RouteDescription = {
  summary: "delete a maintenance window created through the API",
  success: { schema: MESSAGE },
  // A configured window, which only the configuration file removes.
  errors: [409],
};
