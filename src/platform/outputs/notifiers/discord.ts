/**
 * The `discord` output (docs/notifiers.md): one POST per event to a Discord webhook
 * (https://discord.com/developers/docs/resources/webhook#execute-webhook): `content` is the title,
 * and one embed, red while critical and green once ok, holds the text and the fields. Mentions are
 * disabled (`allowed_mentions`), so a check's message never pings `@everyone`. Discord answers a
 * refusal with JSON whose `message` is the reason logged; a 429 carries `retry_after` (seconds).
 */
import * as v from "../../validation.js";
import type { OutputDefinition } from "../config.js";
import type { AttemptResult, Transport } from "../delivery.js";
import type { Event } from "../event.js";
import { httpUrl } from "../fields.js";
import { type Answer, HttpTarget, statusOutcome } from "../http-target.js";
import {
  isHttpUrl,
  jsonObject,
  type NotifierOptions,
  onePerEvent,
  secondsField,
  stringField,
  type Templates,
  templateKeys,
  templatesOf,
  truncate,
} from "./service.js";
import { render, type TemplateView, templateView } from "./template.js";

/** The keys of a `discord` output, besides the common ones. */
export const discordShape = {
  /** The webhook's URL (`https://discord.com/api/webhooks/<id>/<token>`): its path is the secret. */
  "webhook-url": v.required(httpUrl),
  ...templateKeys,
};

/** The keys of a `discord` output that may come from `<key>-env` or `<key>-file`. */
export const DISCORD_SECRETS = ["webhook-url"] as const;

/** The definition of a `discord` output. */
export type DiscordOutputDefinition = Extract<OutputDefinition, { type: "discord" }>;

/** The embed's colour while critical (red) and once ok (green), as RGB integers. */
export const CRITICAL_COLOR = 0xd92d20;
export const OK_COLOR = 0x2e9e5b;

/** Discord's limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits), in characters. */
const CONTENT_MAX = 2000;
const DESCRIPTION_MAX = 4096;
const FIELD_NAME_MAX = 256;
const FIELD_VALUE_MAX = 1024;
const FIELDS_MAX = 25;

/**
 * Discord's markdown: a backslash before each character that starts a style, a quote, a heading, a
 * list or a link; Discord shows any punctuation after a backslash as itself. A variable that is a
 * whole http(s) URL (`{{url}}`) is left as it is: Discord links it before reading any markdown,
 * and a backslash would become part of the link.
 */
export const DISCORD_ESCAPE = (text: string): string =>
  !/\s/.test(text) && isHttpUrl(text) ? text : text.replace(/[\\*_~`|>#\-[\]()<]/g, "\\$&");

/** An embed field. */
interface DiscordField {
  readonly name: string;
  readonly value: string;
  readonly inline: true;
}

/** The one embed of a message. */
interface DiscordEmbed {
  readonly description?: string;
  readonly color: number;
  readonly fields: readonly DiscordField[];
  readonly timestamp?: string;
  readonly url?: string;
}

/** The JSON body of a webhook execution. */
export interface DiscordMessage {
  readonly content: string;
  readonly embeds: readonly [DiscordEmbed];
  readonly allowed_mentions: { readonly parse: readonly [] };
}

function field(name: string, value: string): DiscordField {
  return {
    name: truncate(DISCORD_ESCAPE(name), FIELD_NAME_MAX),
    value: truncate(DISCORD_ESCAPE(value), FIELD_VALUE_MAX),
    inline: true,
  };
}

/** State and status (or the number of alerts), duration, then labels; Discord refuses empty values. */
function fieldsOf(view: TemplateView): DiscordField[] {
  const fields = view.grouped
    ? [field("Alerts", String(view.count)), field("State", view.critical ? "critical" : "ok")]
    : [field("State", view.state), field("Status", view.status), field("Duration", `${view.duration} s`)];
  for (const [name, value] of Object.entries(view.labels)) {
    if (fields.length >= FIELDS_MAX) break;
    if (name !== "" && value !== "") fields.push(field(name, value));
  }
  return fields;
}

/** `since` as the embed's ISO 8601 timestamp, when it is a date. */
function timestampOf(since: string): string | undefined {
  const time = Date.parse(since);
  return since === "" || Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

/**
 * The message of one event: `content` is the rendered `title-template`, the embed's description
 * the rendered `template` (variables escaped for Discord's markdown by {@link DISCORD_ESCAPE}).
 * @param url the `url` of events that have none (`http.public-url`)
 */
export function discordMessage(event: Event, templates: Templates, url: string): DiscordMessage {
  const view = templateView(event, url);
  const title = render(templates.title, view, DISCORD_ESCAPE).replace(/\s+/g, " ").trim();
  const text = render(templates.text, view, DISCORD_ESCAPE).trim();
  const timestamp = timestampOf(view.since);
  const embed: DiscordEmbed = {
    ...(text === "" ? {} : { description: truncate(text, DESCRIPTION_MAX) }),
    color: view.critical ? CRITICAL_COLOR : OK_COLOR,
    fields: fieldsOf(view),
    ...(timestamp === undefined ? {} : { timestamp }),
    // Discord refuses the whole message when the link is not an http(s) URL.
    ...(isHttpUrl(view.url) ? { url: view.url } : {}),
  };
  return {
    content: truncate(title === "" ? DISCORD_ESCAPE(view.name) : title, CONTENT_MAX),
    embeds: [embed],
    allowed_mentions: { parse: [] },
  };
}

/** Discord's answer: the `message` of its JSON is the reason; a 429's `retry_after` the wait when no `Retry-After` came. */
export function readDiscordAnswer(answer: Answer): AttemptResult {
  const body = jsonObject(answer.text);
  const message = stringField(body, "message");
  const retryAfterMs = answer.retryAfterMs ?? secondsField(body, "retry_after");
  return statusOutcome({ ...answer, retryAfterMs }, message);
}

/** The transport of a `discord` output: one request per event. */
export function discordTransport(definition: DiscordOutputDefinition, options: NotifierOptions): Transport<string> {
  const templates = templatesOf(definition);
  const target = new HttpTarget({
    url: definition["webhook-url"],
    headers: {},
    protocolHeaders: { "content-type": "application/json" },
    timeoutMs: definition.timeout.milliseconds,
    readAnswer: readDiscordAnswer,
  });
  return {
    encode: onePerEvent((event) => JSON.stringify(discordMessage(event, templates, options.publicUrl))),
    send: (payload, signal) => target.send(payload, signal),
    close: (force) => target.close(force),
  };
}
