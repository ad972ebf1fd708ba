/**
 * The alert routes of the healthchecks module (docs/alerts.md): `GET /alerts` (the triggered
 * alerts) and `GET /alerts/history` (the notifications sent or suppressed, newest first). Behind
 * the same guard as the other healthcheck reads (index.ts registers them with the API).
 */
import type { FastifyInstance } from "fastify";
import type { RouteDescription } from "../platform/openapi.js";
import { rfc3339 } from "../platform/time.js";
import type { JsonSchema } from "../platform/validation.js";
import type { AlertEvaluator } from "./alerts/evaluator.js";
import type { AlertStore } from "./alerts/store.js";
import { HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT, parseHistoryQuery } from "./routes.js";

const TIME: JsonSchema = { type: "string", format: "date-time" };

const TRIGGERED: JsonSchema = {
  type: "array",
  items: {
    type: "object",
    properties: {
      check: { type: "string" },
      output: { type: "string" },
      since: { ...TIME, description: "when the alert triggered" },
      "last-sent": {
        anyOf: [TIME, { type: "null" }],
        description: "when its trigger or last reminder was sent; null while a dependency holds it back",
      },
    },
    required: ["check", "output", "since", "last-sent"],
    additionalProperties: false,
  },
};

const HISTORY: JsonSchema = {
  type: "object",
  properties: {
    notifications: {
      type: "array",
      items: {
        type: "object",
        properties: {
          check: { type: "string" },
          output: { type: "string" },
          timestamp: { ...TIME, description: "when the transition happened" },
          status: { type: "string", enum: ["triggered", "reminder", "resolved"] },
          state: { type: "string", enum: ["critical", "ok"] },
          outcome: { type: "string", enum: ["delivered", "failed", "dropped", "suppressed"] },
          reason: { type: "string", description: "why it failed, was dropped or was suppressed" },
        },
        required: ["check", "output", "timestamp", "status", "state", "outcome"],
        additionalProperties: false,
      },
    },
  },
  required: ["notifications"],
  additionalProperties: false,
};

const LIST_ALERTS: RouteDescription = {
  summary: "list the triggered alerts of the healthchecks, by check and output",
  success: { schema: TRIGGERED },
};

const ALERT_HISTORY: RouteDescription = {
  summary: "list the alert notifications sent or suppressed, newest first, with how their delivery ended",
  query: {
    since: { ...TIME, description: "only notifications at or after this time" },
    until: { ...TIME, description: "only notifications at or before this time" },
    limit: { type: "integer", minimum: 1, maximum: HISTORY_MAX_LIMIT, default: HISTORY_DEFAULT_LIMIT },
  },
  success: { schema: HISTORY },
};

/** What the alert routes work with. */
export interface AlertRoutesOptions {
  readonly evaluator: AlertEvaluator;
  readonly store: AlertStore;
}

/** Registers GET `/alerts` and GET `/alerts/history`. */
export function registerAlertRoutes(app: FastifyInstance, { evaluator, store }: AlertRoutesOptions): void {
  app.get("/alerts", { config: { openapi: LIST_ALERTS } }, async () =>
    (await evaluator.triggered()).map((alert) => ({
      check: alert.check,
      output: alert.output,
      since: rfc3339(alert.sinceMs),
      "last-sent": alert.lastSentMs === undefined ? null : rfc3339(alert.lastSentMs),
    })),
  );

  app.get("/alerts/history", { config: { openapi: ALERT_HISTORY } }, async (request) => {
    const query = parseHistoryQuery(request.query);
    await evaluator.settled();
    const entries = await store.history(query);
    return {
      notifications: entries.map((entry) => ({
        check: entry.check,
        output: entry.output,
        timestamp: rfc3339(entry.timeMs),
        status: entry.status,
        state: entry.status === "resolved" ? "ok" : "critical",
        outcome: entry.outcome,
        ...(entry.reason === undefined ? {} : { reason: entry.reason }),
      })),
    };
  });
}
