/**
 * The `slack` output (docs/notifiers.md): one POST per event to a Slack incoming webhook
 * (https://api.slack.com/messaging/webhooks), `text` plus Block Kit `blocks` (a header with the
 * title, the text, and the fields). Mattermost and Rocket.Chat take the same JSON and show `text`.
 * Slack answers a refusal with a short text (`invalid_payload`, `no_service`), which is the reason
 * logged.
 */
import * as v from "../../validation.js";
import type { OutputDefinition } from "../config.js";
import type { Transport } from "../delivery.js";
import type { Event } from "../event.js";
import { httpUrl } from "../fields.js";
import { HttpTarget, statusOutcome } from "../http-target.js";
import { type NotifierOptions, onePerEvent, type Templates, templateKeys, templatesOf, truncate } from "./service.js";
import { NO_ESCAPE, render, SLACK_ESCAPE, type TemplateView, templateView } from "./template.js";

/** The keys of a `slack` output, besides the common ones. */
export const slackShape = {
  /** The incoming webhook's URL: its path is the secret. */
  "webhook-url": v.required(httpUrl),
  ...templateKeys,
};

/** The keys of a `slack` output that may come from `<key>-env` or `<key>-file`. */
export const SLACK_SECRETS = ["webhook-url"] as const;

/** The definition of a `slack` output. */
export type SlackOutputDefinition = Extract<OutputDefinition, { type: "slack" }>;

/** Slack's limits (https://api.slack.com/reference/block-kit/blocks), in characters. */
const HEADER_MAX = 150;
const SECTION_MAX = 3000;
const FIELD_MAX = 2000;
const FIELDS_MAX = 10;
const TEXT_MAX = 40_000;

/** A Block Kit text object. */
interface SlackText {
  readonly type: "plain_text" | "mrkdwn";
  readonly text: string;
}

/** The blocks a message uses. */
type SlackBlock =
  | { readonly type: "header"; readonly text: SlackText }
  | { readonly type: "section"; readonly text: SlackText }
  | { readonly type: "section"; readonly fields: readonly SlackText[] };

/** The JSON body of an incoming webhook. */
export interface SlackMessage {
  readonly text: string;
  readonly blocks: readonly SlackBlock[];
}

function field(name: string, value: string): SlackText {
  return { type: "mrkdwn", text: truncate(`*${SLACK_ESCAPE(name)}*\n${SLACK_ESCAPE(value)}`, FIELD_MAX) };
}

/** The fields block: state and status (or the number of alerts), since, duration, then labels. */
function fieldsOf(view: TemplateView): SlackText[] {
  const fields = view.grouped
    ? [field("Alerts", String(view.count)), field("State", view.critical ? "critical" : "ok")]
    : [field("State", view.state), field("Status", view.status)];
  if (!view.grouped) {
    if (view.since !== "") fields.push(field("Since", view.since));
    fields.push(field("Duration", `${view.duration} s`));
  }
  for (const [name, value] of Object.entries(view.labels)) {
    if (fields.length >= FIELDS_MAX) break;
    if (value !== "") fields.push(field(name, value));
  }
  return fields;
}

/**
 * The message of one event: `text` is the rendered `template` (mrkdwn, variables escaped for it),
 * the header the rendered `title-template` (plain text), then the text again as a section (Slack
 * shows `text` only in notifications once there are blocks) and the fields.
 * @param url the `url` of events that have none (`http.public-url`)
 */
export function slackMessage(event: Event, templates: Templates, url: string): SlackMessage {
  const view = templateView(event, url);
  const title = render(templates.title, view, NO_ESCAPE).replace(/\s+/g, " ").trim();
  const text = render(templates.text, view, SLACK_ESCAPE).trim();
  const blocks: SlackBlock[] = [];
  // Slack refuses an empty text object: an empty part is left out.
  if (title !== "") blocks.push({ type: "header", text: { type: "plain_text", text: truncate(title, HEADER_MAX) } });
  if (text !== "") blocks.push({ type: "section", text: { type: "mrkdwn", text: truncate(text, SECTION_MAX) } });
  blocks.push({ type: "section", fields: fieldsOf(view) });
  return { text: truncate(text === "" ? SLACK_ESCAPE(title) || view.name : text, TEXT_MAX), blocks };
}

/** The transport of a `slack` output: one request per event; Slack's answer text is the reason of a refusal. */
export function slackTransport(definition: SlackOutputDefinition, options: NotifierOptions): Transport<string> {
  const templates = templatesOf(definition);
  const target = new HttpTarget({
    url: definition["webhook-url"],
    headers: {},
    protocolHeaders: { "content-type": "application/json" },
    timeoutMs: definition.timeout.milliseconds,
    readAnswer: (answer) => statusOutcome(answer, answer.text),
  });
  return {
    encode: onePerEvent((event) => JSON.stringify(slackMessage(event, templates, options.publicUrl))),
    send: (payload, signal) => target.send(payload, signal),
    close: (force) => target.close(force),
  };
}
