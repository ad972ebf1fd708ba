/**
 * The `pagerduty` output (docs/notifiers.md): PagerDuty Events API v2, one `POST /v2/enqueue` per
 * event. A trigger or a reminder is a `trigger` (a reminder is a trigger again: PagerDuty adds it
 * to the open incident), a resolve a `resolve`; all of them carry the alert's key as `dedup_key`,
 * so that PagerDuty keeps one incident per alert.
 *
 * PagerDuty answers 202 when it took the event, 400 when the event is invalid (its `message` and
 * `errors` say why), 429 when the rate is exceeded (retried).
 */

import { createHash } from "node:crypto";
import * as v from "../../validation.js";
import type { OutputDefinition } from "../config.js";
import type { Transport } from "../delivery.js";
import type { Event } from "../event.js";
import { httpUrl } from "../fields.js";
import { HttpTarget } from "../http-target.js";
import { onePerEvent } from "./service.js";
import { textField, withServiceReason } from "./service-reason.js";
import {
  DEFAULT_TEXT,
  DEFAULT_TITLE,
  NO_ESCAPE,
  render,
  type TemplateView,
  template,
  templateView,
} from "./template.js";

/** A routing key (an integration key of a service): one token, never echoed. */
const routingKey: v.Validator<string> = v.secret((value, path) => {
  const text = v.string({ min: 1, max: 256 })(value, path);
  if (/[\s\0]/.test(text)) throw new v.ValidationError(path, "must be a key without spaces or line breaks");
  return text;
});

/** The Events API's address (PagerDuty's; an EU account uses https://events.eu.pagerduty.com). */
export const PAGERDUTY_API_URL = "https://events.pagerduty.com";

/** The keys of a `pagerduty` output besides the common ones (docs/notifiers.md). */
export const pagerdutyShape = {
  /** The integration key of the PagerDuty service (a secret). */
  "routing-key": v.required(routingKey),
  /** The Events API's base URL; events go to `<api-url>/v2/enqueue`. */
  "api-url": v.withDefault(httpUrl, PAGERDUTY_API_URL),
  /** The incident's `summary`. */
  "title-template": v.withDefault(template, DEFAULT_TITLE),
  /** The text of the incident's details (`custom_details.text`). */
  template: v.withDefault(template, DEFAULT_TEXT),
} as const;

/** The keys of `pagerduty` outputs that are secrets, also read from `<key>-env` and `<key>-file`. */
export const PAGERDUTY_SECRETS = ["routing-key"] as const;

/** The definition of a `pagerduty` output. */
export type PagerdutyOutputDefinition = Extract<OutputDefinition, { type: "pagerduty" }>;

/** PagerDuty's severities. */
type Severity = "critical" | "error" | "warning" | "info";

/**
 * The severity of a state: `ok` is `info`; `critical`, `error`, `warning` and `info` are
 * themselves (`warn` is `warning`); any other state is `critical`.
 */
export function severityOf(state: string): Severity {
  switch (state) {
    case "ok":
    case "info":
      return "info";
    case "warning":
    case "warn":
      return "warning";
    case "error":
      return "error";
    default:
      return "critical";
  }
}

/** Limits of the Events API, in characters. */
const MAX_SUMMARY = 1024;
const MAX_DEDUP_KEY = 255;

/** The alert's key as a `dedup_key`; a key too long is replaced by its SHA-256 (still stable). */
export function dedupKey(key: string): string {
  return key.length <= MAX_DEDUP_KEY ? key : `sha256:${createHash("sha256").update(key).digest("hex")}`;
}

/** Where the problem is: the event's `host`, else the alert's name. */
function sourceOf(event: Event, view: TemplateView): string {
  return typeof event.host === "string" && event.host !== "" ? event.host : view.name;
}

/**
 * The Events API v2 body of one event: `resolve` when its status is `resolved`, else `trigger` with
 * `payload` (`summary` from `title-template`, `source`, `severity` from the state, `timestamp` the
 * alert's `since`, `custom_details`) and a link to `url`.
 */
export function pagerdutyEvent(event: Event, definition: PagerdutyOutputDefinition, publicUrl: string): string {
  const view = templateView(event, publicUrl);
  const common = { routing_key: definition["routing-key"], dedup_key: dedupKey(view.key) };
  if (view.status === "resolved") return JSON.stringify({ ...common, event_action: "resolve" });
  const summary = render(definition["title-template"], view, NO_ESCAPE).replace(/\s+/g, " ").trim();
  return JSON.stringify({
    ...common,
    event_action: "trigger",
    payload: {
      summary: (summary === "" ? view.name : summary).slice(0, MAX_SUMMARY),
      source: sourceOf(event, view),
      severity: severityOf(view.state),
      ...(view.since === "" ? {} : { timestamp: view.since }),
      custom_details: {
        status: view.status,
        state: view.state,
        message: view.message,
        since: view.since,
        duration: view.duration,
        labels: view.labels,
        text: render(definition.template, view, NO_ESCAPE),
      },
    },
    client: "Vigie",
    ...(view.url === "" ? {} : { client_url: view.url }),
  });
}

/** The service's reason of a refusal: `{"message": "Event object is invalid", "errors": [...]}`. */
function pagerdutyReason(answer: Record<string, unknown>): string | undefined {
  const errors = Array.isArray(answer.errors) ? answer.errors.filter((item) => typeof item === "string") : [];
  const parts = [textField(answer, "message"), ...errors].filter((part) => part !== undefined);
  return parts.length === 0 ? undefined : parts.join("; ");
}

/**
 * The transport of a `pagerduty` output.
 * @param publicUrl `http.public-url`, the link of events that carry no `url`
 */
export function pagerdutyTransport(definition: PagerdutyOutputDefinition, publicUrl = ""): Transport<string> {
  const target = new HttpTarget({
    url: definition["api-url"],
    path: (pathname) => `${pathname.replace(/\/+$/, "")}/v2/enqueue`,
    headers: {},
    protocolHeaders: { "content-type": "application/json" },
    timeoutMs: definition.timeout.milliseconds,
  });
  return {
    encode: onePerEvent((event) => pagerdutyEvent(event, definition, publicUrl)),
    send: async (body, signal) => withServiceReason(await target.post(body, signal), pagerdutyReason),
    close: (force) => target.close(force),
  };
}
