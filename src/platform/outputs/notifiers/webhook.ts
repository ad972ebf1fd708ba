/**
 * The `webhook` output (docs/notifiers.md): one request per event, for any service that takes JSON
 * or text (Teams, Gotify, Pushover, Opsgenie…): `method` (POST or PUT) to `url` with `headers`, the
 * body rendered from `template`, or the event itself as JSON without one. When `content-type` is
 * JSON, the template's variables are escaped as the content of a JSON string, so that
 * `"text": "{{message}}"` stays valid JSON whatever the message holds.
 */
import * as v from "../../validation.js";
import type { OutputDefinition } from "../config.js";
import type { Transport } from "../delivery.js";
import type { Event } from "../event.js";
import { headers, httpUrl } from "../fields.js";
import { HttpTarget } from "../http-target.js";
import { type NotifierOptions, onePerEvent } from "./service.js";
import { type Escape, JSON_ESCAPE, NO_ESCAPE, render, template, templateView } from "./template.js";

/** The methods a webhook may use. */
export const WEBHOOK_METHODS = ["POST", "PUT"] as const;

/** A media type (RFC 9110 §8.3.1), parameters allowed; never a line break. */
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[\x20-\x7e]*)?$/;

/** The keys of a `webhook` output, besides the common ones. */
export const webhookShape = {
  /** Where the request goes; `user:password@` is sent as `Authorization: Basic`. */
  url: v.required(httpUrl),
  method: v.withDefault(v.oneOf(WEBHOOK_METHODS), "POST"),
  /** Headers of every request (the values are never echoed). */
  headers: v.withDefault(headers, {}),
  /** The body (mustache); without one, the event as JSON. */
  template: v.optional(template),
  "content-type": v.withDefault(
    v.string({ max: 256, pattern: MEDIA_TYPE, rule: "must be a media type such as application/json" }),
    "application/json",
  ),
};

/** The keys of a `webhook` output that may come from `<key>-env` or `<key>-file`. */
export const WEBHOOK_SECRETS = ["url"] as const;

/** The definition of a `webhook` output. */
export type WebhookOutputDefinition = Extract<OutputDefinition, { type: "webhook" }>;

/** Whether a content type is JSON: `application/json` or a `+json` type (RFC 6839 §3.1). */
export function isJsonContentType(contentType: string): boolean {
  const media = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return media === "application/json" || media.endsWith("+json");
}

/**
 * The body of one event: `template` rendered with its variables escaped by `escapeText`, or the event
 * as JSON when there is no template.
 * @param url the `url` of events that have none (`http.public-url`)
 */
export function webhookBody(event: Event, bodyTemplate: string | undefined, escapeText: Escape, url: string): string {
  if (bodyTemplate === undefined) return JSON.stringify(event);
  return render(bodyTemplate, templateView(event, url), escapeText);
}

/** The transport of a `webhook` output: one request per event. */
export function webhookTransport(definition: WebhookOutputDefinition, options: NotifierOptions): Transport<string> {
  const contentType = definition["content-type"];
  const escapeText = isJsonContentType(contentType) ? JSON_ESCAPE : NO_ESCAPE;
  const target = new HttpTarget({
    url: definition.url,
    method: definition.method,
    headers: definition.headers,
    protocolHeaders: { "content-type": contentType },
    timeoutMs: definition.timeout.milliseconds,
  });
  return {
    encode: onePerEvent((event) => webhookBody(event, definition.template, escapeText, options.publicUrl)),
    send: (payload, signal) => target.send(payload, signal),
    close: (force) => target.close(force),
  };
}
