/**
 * What the routes of routes.ts say of themselves in `GET /openapi.json` (docs/api.md): summaries,
 * examples, query parameters and the schemas of their answers. The bodies are described by the
 * validators the routes check them with (admission.ts, bulk.ts). No `security`: every route asks
 * for a token exactly when `security.require-token` is on.
 */
import type { RouteDescription } from "../platform/openapi.js";
import type { JsonSchema, Validator } from "../platform/validation.js";
import { checksKey } from "./config.js";
import { KINDS, type Kind } from "./definition.js";
import { HEARTBEAT_STATES } from "./heartbeat/tracker.js";

const MESSAGE: JsonSchema = { type: "object", properties: { message: { type: "string" } }, required: ["message"] };

/** An RFC 3339 time with milliseconds, as results carry them. */
const TIME: JsonSchema = { type: "string", format: "date-time" };

/** The mark of a result of a maintenance window (absent otherwise). */
const MAINTENANCE_MARK: JsonSchema = {
  type: "boolean",
  const: true,
  description: "present during a maintenance window of the check: the result is left out of uptime",
};

/** A heartbeat's state (docs/healthchecks.md, "Heartbeat checks"); read-only. */
const HEARTBEAT_STATE: JsonSchema = {
  type: "string",
  enum: [...HEARTBEAT_STATES],
  description: "heartbeat checks only: new, up, started, late or down (read-only)",
};

/**
 * A definition as `GET /healthcheck` shows it: the fields accepted, defaults filled in, durations
 * as their text, secrets as `<redacted>`, plus its kind and where it comes from.
 */
const DEFINITION_VIEW: JsonSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    kind: { type: "string", enum: [...KINDS] },
    source: { type: "string", enum: ["api", "configuration"] },
    description: { type: "string" },
    interval: { type: "string" },
    timeout: { type: "string" },
    "one-off": { type: "boolean" },
    labels: { type: "object", additionalProperties: { type: "string" } },
    key: { type: "string", description: "heartbeat checks: the ping key of /ping/<key> (not redacted)" },
    state: HEARTBEAT_STATE,
  },
  required: ["name", "kind", "source", "description", "one-off"],
};

/** The latest result of a check. */
const RESULT: JsonSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    configuration: DEFINITION_VIEW,
    success: { type: "boolean" },
    timestamp: TIME,
    message: { type: "string", description: "success, or the failure message" },
    duration: { type: "number", minimum: 0, description: "milliseconds" },
    maintenance: MAINTENANCE_MARK,
    state: HEARTBEAT_STATE,
    labels: { type: "object", additionalProperties: { type: "string" } },
  },
  required: ["name", "configuration", "success", "timestamp", "message", "duration"],
  additionalProperties: false,
};

const HISTORY: JsonSchema = {
  type: "object",
  properties: {
    results: {
      type: "array",
      items: {
        type: "object",
        properties: {
          timestamp: TIME,
          success: { type: "boolean" },
          duration: { type: "integer", minimum: 0 },
          message: { type: "string" },
          maintenance: MAINTENANCE_MARK,
          log: {
            type: "boolean",
            const: true,
            description: "a heartbeat's log ping: its body, not a result; left out of uptime",
          },
        },
        required: ["timestamp", "success", "duration", "message"],
        additionalProperties: false,
      },
    },
  },
  required: ["results"],
  additionalProperties: false,
};

const RATIO: JsonSchema = { type: ["number", "null"], minimum: 0, maximum: 1 };

const UPTIME: JsonSchema = {
  type: "object",
  properties: {
    "1h": RATIO,
    "24h": RATIO,
    "7d": RATIO,
    "30d": RATIO,
    incidents: {
      type: "array",
      items: {
        type: "object",
        properties: { start: TIME, end: { anyOf: [TIME, { type: "null" }] }, message: { type: "string" } },
        required: ["start", "end", "message"],
        additionalProperties: false,
      },
    },
  },
  required: ["1h", "24h", "7d", "30d", "incidents"],
  additionalProperties: false,
};

/** A definition of each kind, as a client would post it. */
export const DEFINITION_EXAMPLES: Readonly<Record<Kind, Record<string, unknown>>> = {
  http: {
    name: "website",
    description: "the home page answers",
    target: "127.0.0.1",
    port: 8080,
    path: "/",
    "valid-status": [200],
    interval: "5s",
    timeout: "2s",
    labels: { team: "web" },
  },
  tcp: { name: "database-port", target: "127.0.0.1", port: 5432, interval: "30s", timeout: "2s" },
  dns: { name: "resolver", domain: "localhost", interval: "1m" },
  tls: {
    name: "certificate",
    target: "127.0.0.1",
    port: 443,
    interval: "1h",
    timeout: "5s",
    "expiration-delay": "336h",
  },
  command: { name: "true", command: "true", arguments: [], interval: "1m", timeout: "5s" },
  heartbeat: { name: "nightly-backup", schedule: "30 2 * * *", timezone: "Europe/Paris", grace: "1h" },
};

/** The answer of `POST /healthcheck/heartbeat`: the message and the ping key. */
const HEARTBEAT_CREATED: JsonSchema = {
  type: "object",
  properties: { message: { type: "string" }, key: { type: "string", description: "the ping key: /ping/<key>" } },
  required: ["message", "key"],
};

/** `POST /healthcheck/<kind>`, its body checked by `body`. */
export function createDescription(kind: Kind, body: Validator<unknown>): RouteDescription {
  if (kind === "heartbeat") {
    return {
      summary: "create or replace a heartbeat check (its job pings /ping/<key>)",
      body,
      example: DEFINITION_EXAMPLES[kind],
      success: [{ status: 201, schema: HEARTBEAT_CREATED }],
      // A key another heartbeat uses.
      errors: [409],
    };
  }
  return {
    summary: `create or replace a ${kind} healthcheck, or run it once (one-off)`,
    body,
    example: DEFINITION_EXAMPLES[kind],
    success: [
      { status: 201, schema: MESSAGE },
      // A one-off run that fails answers 500 with the run's message (docs/healthchecks.md).
      { status: 500, description: "a one-off run that failed: the message says why", schema: MESSAGE },
    ],
  };
}

const BULK_EXAMPLE_KINDS: readonly Kind[] = ["http", "tcp"];

/** `POST /healthcheck/bulk`, its body checked by `body`. */
export function bulkDescription(body: Validator<unknown>): RouteDescription {
  return {
    summary: "replace every healthcheck created through the API with those of the payload",
    body,
    example: Object.fromEntries(BULK_EXAMPLE_KINDS.map((kind) => [checksKey(kind), [DEFINITION_EXAMPLES[kind]]])),
    success: { status: 201, schema: MESSAGE },
    // Two heartbeats with one key.
    errors: [409],
  };
}

export const LIST_CHECKS: RouteDescription = {
  summary: "list the healthchecks (configuration file and API), secrets redacted",
  success: { schema: { type: "array", items: DEFINITION_VIEW } },
};

export const GET_CHECK: RouteDescription = {
  summary: "show a healthcheck, secrets redacted",
  success: { schema: DEFINITION_VIEW },
};

export const DELETE_CHECK: RouteDescription = {
  summary: "delete a healthcheck created through the API",
  success: { schema: MESSAGE },
};

export const LIST_RESULTS: RouteDescription = {
  summary: "list the latest result of each healthcheck, sorted by name",
  query: {
    name: { type: "array", items: { type: "string" }, maxItems: 1_000, description: "only these checks" },
    success: { type: "boolean", description: "only the successes, or only the failures" },
  },
  success: { schema: { type: "array", items: RESULT } },
};

export const GET_RESULT: RouteDescription = {
  summary: "show the latest result of a healthcheck",
  success: { schema: RESULT },
};

/** `GET /result/<name>/history`, its limit bounded by `maxLimit` and `defaultLimit`. */
export function historyDescription(defaultLimit: number, maxLimit: number): RouteDescription {
  return {
    summary: "list the stored results of a healthcheck, newest first",
    query: {
      since: { ...TIME, description: "only results at or after this time" },
      until: { ...TIME, description: "only results at or before this time" },
      limit: { type: "integer", minimum: 1, maximum: maxLimit, default: defaultLimit },
    },
    success: { schema: HISTORY },
  };
}

export const GET_UPTIME: RouteDescription = {
  summary: "show the uptime of a healthcheck over 1 h, 24 h, 7 d and 30 d, and its recent incidents",
  success: { schema: UPTIME },
};
