/**
 * The `telegram` output (docs/notifiers.md): one Bot API `sendMessage` per event
 * (https://core.telegram.org/bots/api#sendmessage), `POST <api-url>/bot<token>/sendMessage` with
 * `chat_id`, `text` and `parse_mode: HTML`; template variables are escaped for Telegram's HTML.
 * Telegram answers JSON: `ok: false` (whatever the status) is a refusal whose `description` is the
 * reason logged; a 429 carries `parameters.retry_after` (seconds). The token is in the request's
 * path: neither the path nor the URL is ever logged.
 */
import * as v from "../../validation.js";
import type { OutputDefinition } from "../config.js";
import type { AttemptResult, Transport } from "../delivery.js";
import { ANSWER_SNIPPET_BYTES, SENT } from "../delivery.js";
import type { Event } from "../event.js";
import { httpUrl } from "../fields.js";
import { type Answer, HttpTarget, statusOutcome } from "../http-target.js";
import {
  jsonObject,
  type NotifierOptions,
  onePerEvent,
  secondsField,
  stringField,
  type Templates,
  templateKeys,
  templatesOf,
} from "./service.js";
import { HTML_ESCAPE, render, templateView } from "./template.js";

/** Telegram's Bot API. */
export const TELEGRAM_API_URL = "https://api.telegram.org";

/** A bot token as BotFather gives it (`123456:ABC-DEF…`); it goes into a URL path, so nothing else is taken. */
const BOT_TOKEN = /^[0-9]{1,20}:[A-Za-z0-9_-]{1,200}$/;

/** A chat: its numeric id (negative for groups and channels) or `@channelusername`. */
const chatId: v.Validator<string> = (value, path) => {
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  return v.string({
    min: 1,
    max: 128,
    pattern: /^(-?[0-9]+|@[A-Za-z0-9_]+)$/,
    rule: "must be a chat id (an integer) or @channelusername",
  })(value, path);
};

/** The keys of a `telegram` output, besides the common ones. */
export const telegramShape = {
  /** The bot's token (a secret). */
  token: v.required(
    v.secret(v.string({ pattern: BOT_TOKEN, rule: "must be a bot token (<digits>:<letters, digits, _ and ->)" })),
  ),
  /** Where messages go. */
  "chat-id": v.required(chatId),
  /** The Bot API's base URL (a local Bot API server, a test receiver). */
  "api-url": v.withDefault(httpUrl, TELEGRAM_API_URL),
  ...templateKeys,
};

/** The keys of a `telegram` output that may come from `<key>-env` or `<key>-file`. */
export const TELEGRAM_SECRETS = ["token"] as const;

/** The definition of a `telegram` output. */
export type TelegramOutputDefinition = Extract<OutputDefinition, { type: "telegram" }>;

/** The longest message text, in characters (Telegram counts after entities; the HTML is longer). */
const TEXT_MAX = 4096;

/** The JSON body of `sendMessage`. */
export interface TelegramMessage {
  readonly chat_id: string;
  readonly text: string;
  readonly parse_mode: "HTML";
  readonly link_preview_options: { readonly is_disabled: true };
}

/** An opening or closing tag of Telegram's HTML. */
const TAG = /<(\/?)([a-zA-Z-]+)[^>]*>/g;

/**
 * `html` cut to at most `max` characters, still valid for Telegram: a tag or an entity cut in the
 * middle is removed, `…` marks the cut, and the tags left open are closed.
 */
export function cutHtml(html: string, max: number): string {
  if (html.length <= max) return html;
  for (let limit = max - 1; limit > 0; ) {
    const cut = html
      .slice(0, limit)
      .replace(/<[^>]*$/, "")
      .replace(/&[#a-zA-Z0-9]*$/, "");
    const open: string[] = [];
    for (const [, closing, name] of cut.matchAll(TAG)) {
      if (name === undefined) continue;
      if (closing === "") open.push(name.toLowerCase());
      else if (open.at(-1) === name.toLowerCase()) open.pop();
    }
    const result = `${cut}…${open
      .reverse()
      .map((name) => `</${name}>`)
      .join("")}`;
    if (result.length <= max) return result;
    limit -= result.length - max;
  }
  return "…";
}

/**
 * The `sendMessage` body of one event: the rendered `title-template` in bold, a line break, the
 * rendered `template`; variables escaped for HTML, the whole cut to Telegram's 4096 characters.
 * @param url the `url` of events that have none (`http.public-url`)
 */
export function telegramMessage(event: Event, chat: string, templates: Templates, url: string): TelegramMessage {
  const view = templateView(event, url);
  const title = render(templates.title, view, HTML_ESCAPE).replace(/\s+/g, " ").trim();
  const text = render(templates.text, view, HTML_ESCAPE).trim();
  const whole = title === "" ? text : text === "" ? `<b>${title}</b>` : `<b>${title}</b>\n${text}`;
  return {
    chat_id: chat,
    // Telegram refuses an empty text.
    text: cutHtml(whole === "" ? HTML_ESCAPE(view.name) : whole, TEXT_MAX),
    parse_mode: "HTML",
    link_preview_options: { is_disabled: true },
  };
}

/** Telegram's answer: `ok: false` refuses (its `description` the reason), a 429's `parameters.retry_after` is the wait. */
export function readTelegramAnswer(answer: Answer): AttemptResult {
  const body = jsonObject(answer.text);
  const description = stringField(body, "description");
  if (answer.status >= 200 && answer.status < 300) {
    if (body?.ok !== false) return SENT;
    const reason = description === undefined ? "ok: false" : `ok: false: ${description}`;
    return { kind: "rejected", reason, answer: answer.text.slice(0, ANSWER_SNIPPET_BYTES) };
  }
  const parameters = body?.parameters;
  const retryAfterMs =
    answer.retryAfterMs ?? (v.isPlainObject(parameters) ? secondsField(parameters, "retry_after") : undefined);
  return statusOutcome({ ...answer, retryAfterMs }, description);
}

/** The path of `sendMessage` under the API URL's path (`/` or a prefix). */
export function sendMessagePath(basePath: string, token: string): string {
  return `${basePath.replace(/\/+$/, "")}/bot${token}/sendMessage`;
}

/** The transport of a `telegram` output: one request per event. */
export function telegramTransport(definition: TelegramOutputDefinition, options: NotifierOptions): Transport<string> {
  const templates = templatesOf(definition);
  const chat = definition["chat-id"];
  const target = new HttpTarget({
    url: definition["api-url"],
    path: (pathname) => sendMessagePath(pathname, definition.token),
    headers: {},
    protocolHeaders: { "content-type": "application/json" },
    timeoutMs: definition.timeout.milliseconds,
    readAnswer: readTelegramAnswer,
  });
  return {
    encode: onePerEvent((event) => JSON.stringify(telegramMessage(event, chat, templates, options.publicUrl))),
    send: (payload, signal) => target.send(payload, signal),
    close: (force) => target.close(force),
  };
}
