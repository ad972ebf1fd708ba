/**
 * What the status page's routes say of themselves in `GET /openapi.json` (docs/api.md): they are
 * public, whatever `security.require-token` says.
 */
import type { RouteDescription } from "../../platform/openapi.js";
import { INCIDENT_STATES, UPTIME_PERIODS } from "./view.js";

const RATIO = { type: ["number", "null"], minimum: 0, maximum: 1 };
const TIME = { type: "string", format: "date-time" };

/** A check as the page shows it: nothing but its name, description, state and uptime. */
const STATUS_CHECK = {
  type: "object",
  properties: {
    name: { type: "string" },
    description: { type: "string" },
    state: { type: "string", enum: ["up", "down", "unknown"] },
    since: { anyOf: [TIME, { type: "null" }] },
    checked: { anyOf: [TIME, { type: "null" }] },
    uptime: {
      type: "object",
      properties: Object.fromEntries(UPTIME_PERIODS.map((period) => [period, RATIO])),
      additionalProperties: false,
    },
    daily: {
      type: "array",
      items: {
        type: "object",
        properties: { day: { type: "string", format: "date" }, ratio: RATIO },
        required: ["day", "ratio"],
        additionalProperties: false,
      },
    },
    "response-times": {
      type: "array",
      items: {
        type: "object",
        properties: { time: TIME, duration: { type: "number", minimum: 0 } },
        required: ["time", "duration"],
        additionalProperties: false,
      },
    },
    heartbeat: {
      type: "string",
      enum: ["new", "up", "started", "late", "down"],
      description: "heartbeat checks only: the heartbeat's state",
    },
  },
  required: ["name", "description", "state", "since", "checked", "uptime", "daily", "response-times"],
  additionalProperties: false,
};

/** A maintenance window of shown checks, ongoing or within 7 days. */
const STATUS_MAINTENANCE = {
  type: "object",
  properties: {
    name: { type: "string" },
    start: TIME,
    end: TIME,
    ongoing: { type: "boolean" },
    checks: { type: "array", items: { type: "string" }, description: "the shown checks it covers" },
  },
  required: ["name", "start", "end", "ongoing", "checks"],
  additionalProperties: false,
};

const INCIDENT_STATE = { type: "string", enum: [...INCIDENT_STATES] };

/** An incident as the page shows it: a few updates, long messages cut. */
const STATUS_INCIDENT = {
  type: "object",
  properties: {
    id: { type: "string", format: "uuid" },
    title: { type: "string" },
    status: INCIDENT_STATE,
    started: TIME,
    resolved: { anyOf: [TIME, { type: "null" }] },
    checks: { type: "array", items: { type: "string" }, description: "the shown checks it concerns" },
    updates: {
      type: "array",
      description: "newest first: the last 5 of an open incident, the last one of a resolved one",
      items: {
        type: "object",
        properties: { time: TIME, status: INCIDENT_STATE, message: { type: "string" } },
        required: ["time", "status", "message"],
        additionalProperties: false,
      },
    },
    earlier: { type: "integer", minimum: 0, description: "older updates left out" },
  },
  required: ["id", "title", "status", "started", "resolved", "checks", "updates", "earlier"],
  additionalProperties: false,
};

/** `GET /status/data`: what the page shows. */
const STATUS_DATA = {
  type: "object",
  properties: {
    title: { type: "string" },
    description: { type: "string" },
    incidents: {
      type: "array",
      items: STATUS_INCIDENT,
      description: "open ones first, then those resolved within 14 days",
    },
    generated: TIME,
    periods: { type: "array", items: { type: "string", enum: [...UPTIME_PERIODS] } },
    days: { type: "integer", minimum: 0 },
    maintenance: { type: "array", items: STATUS_MAINTENANCE },
    groups: {
      type: "array",
      items: {
        type: "object",
        properties: { name: { type: ["string", "null"] }, checks: { type: "array", items: STATUS_CHECK } },
        required: ["name", "checks"],
        additionalProperties: false,
      },
    },
  },
  required: ["title", "description", "incidents", "generated", "periods", "days", "maintenance", "groups"],
  additionalProperties: false,
};

/** `GET /status`, `?refresh` bounded by `minSeconds` and `maxSeconds`. */
export function pageDescription(minSeconds: number, maxSeconds: number): RouteDescription {
  return {
    summary: "the public status page (HTML, complete without JavaScript)",
    query: {
      refresh: {
        type: "integer",
        minimum: minSeconds,
        maximum: maxSeconds,
        description: "seconds between the page's refreshes",
      },
    },
    success: { mediaType: "text/html", schema: { type: "string" } },
    security: "none",
  };
}

export const STATUS_DATA_ROUTE: RouteDescription = {
  summary: "the data of the status page, as JSON",
  success: { schema: STATUS_DATA },
  security: "none",
};

export const STATUS_FEED_ROUTE: RouteDescription = {
  summary: "the Atom feed (RFC 4287) of a status page: its incidents and maintenance windows",
  success: { mediaType: "application/atom+xml", schema: { type: "string" } },
  security: "none",
};

export const STATUS_SCRIPT_ROUTE: RouteDescription = {
  summary: "the status page's script, which refreshes the page",
  success: [
    { mediaType: "text/javascript", schema: { type: "string" } },
    { status: 304, description: "not modified: If-None-Match holds the script's ETag" },
  ],
  // 404: the build did not make the script.
  errors: [404],
  security: "none",
};
