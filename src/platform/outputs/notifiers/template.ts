/**
 * Message templates of the notifier types (docs/notifications.md), rendered by mustache, a
 * maintained logic-less engine: `{{name}}`, sections over `alerts`, no code. A template is parsed
 * when the configuration is validated, so a broken one is a configuration error naming its key.
 */
import Mustache from "mustache";
import { string, ValidationError, type Validator } from "../../validation.js";
import type { Event } from "../event.js";

/** A template checked at validation (unbalanced sections, unclosed tags). */
export const template: Validator<string> = (value, path) => {
  const text = string({ min: 1, max: 16 * 1024 })(value, path);
  try {
    Mustache.parse(text);
  } catch (error) {
    throw new ValidationError(
      path,
      `is not a valid template: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return text;
};

/** How a template escapes a `{{variable}}` for its destination (`{{{variable}}}` never escapes). */
export type Escape = (text: string) => string;

/** No escaping: plain text bodies, e-mail text, ntfy. */
export const NO_ESCAPE: Escape = (text) => text;

/** HTML text (Telegram's `parse_mode: HTML`, e-mail HTML, Matrix `formatted_body`). */
export const HTML_ESCAPE: Escape = (text) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Slack's mrkdwn: only `&`, `<` and `>` are escaped (Slack shows other entities as they are). */
export const SLACK_ESCAPE: Escape = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Inside a JSON string literal (webhook templates that build JSON): the literal's content, unquoted. */
export const JSON_ESCAPE: Escape = (text) => JSON.stringify(text).slice(1, -1);

/** Renders `text` with `view`, escaping variables with `escape`. */
export function render(text: string, view: TemplateView, escapeText: Escape): string {
  return Mustache.render(text, view, undefined, { escape: escapeText });
}

/** One alert as templates see it (docs/notifications.md lists the variables). */
export interface AlertView {
  readonly name: string;
  /** `critical` or `ok` (or the event's own state for a stream event). */
  readonly state: string;
  /** `triggered`, `reminder` or `resolved`. */
  readonly status: string;
  readonly message: string;
  /** RFC 3339. */
  readonly since: string;
  /** Seconds, as text. */
  readonly duration: string;
  readonly url: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The alert's stable key (`<check>/<output>`), or the event's host and service. */
  readonly key: string;
  /** Whether the state is `critical` (for sections: `{{#critical}}…{{/critical}}`). */
  readonly critical: boolean;
}

/** What a template renders: one alert, or a group (`grouped`, `count`, `alerts`) with the first one's fields. */
export interface TemplateView extends AlertView {
  readonly grouped: boolean;
  readonly count: number;
  readonly alerts: readonly AlertView[];
}

function text(value: unknown, fallback: string): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return fallback;
}

function labelsOf(value: unknown): Record<string, string> {
  const labels: Record<string, string> = {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) return labels;
  for (const [key, item] of Object.entries(value)) if (typeof item === "string") labels[key] = item;
  return labels;
}

/**
 * One event as an alert: a notification (see `notificationEvent`) has every field; an event from
 * a stream gives `service` (else `host`) as `name`, its `state`, `description` as `message` and its
 * `time` as `since`; its `status` is `resolved` when the state is `ok`, else `triggered`.
 */
export function alertView(event: Event, url: string): AlertView {
  const state = text(event.state, "critical");
  const time = typeof event.time === "number" ? new Date(event.time * 1000).toISOString() : "";
  const name = text(event.service, text(event.host, "vigie"));
  return {
    name,
    state,
    status: text(event.status, state === "ok" ? "resolved" : "triggered"),
    message: text(event.description, ""),
    since: text(event.since, time),
    duration: text(event.duration, "0"),
    url: text(event.url, url),
    labels: labelsOf(event.labels),
    key: text(event.key, `${text(event.host, "")}/${name}`),
    critical: state !== "ok",
  };
}

/**
 * The view of one event: a grouped notification (`alerts` a list of events) renders as a group,
 * with its first alert's fields at the top; any other event as itself.
 */
export function templateView(event: Event, url: string): TemplateView {
  const group = Array.isArray(event.alerts) ? event.alerts : undefined;
  if (group === undefined || group.length === 0) {
    const alert = alertView(event, url);
    return { ...alert, grouped: false, count: 1, alerts: [alert] };
  }
  const alerts: AlertView[] = [];
  for (const item of group) {
    if (typeof item === "object" && item !== null && !Array.isArray(item)) alerts.push(alertView(item, url));
  }
  const first = alerts[0] ?? alertView(event, url);
  return { ...first, critical: alerts.some((alert) => alert.critical), grouped: true, count: alerts.length, alerts };
}

/** The default one-line title of every type. */
export const DEFAULT_TITLE =
  "{{#grouped}}{{count}} alerts: {{#alerts}}{{name}} {{status}}; {{/alerts}}{{/grouped}}{{^grouped}}{{name}} is {{state}} ({{status}}){{/grouped}}";

/** The default message text of every type. */
export const DEFAULT_TEXT = `{{#grouped}}{{count}} alerts:
{{#alerts}}- {{name}} is {{state}} ({{status}}){{#message}}: {{message}}{{/message}}
{{/alerts}}{{/grouped}}{{^grouped}}{{name}} is {{state}} ({{status}}){{#message}}: {{message}}{{/message}}{{/grouped}}
{{url}}`;
