/**
 * The `ntfy` output (docs/notifiers.md): one publish per event (https://docs.ntfy.sh/publish/),
 * `POST <topic URL>` with the message as the plain-text body and the headers `Title`, `Priority`
 * (`urgent` while critical, `default` once ok), `Tags` (an emoji per state) and `Click` (the
 * `url`). A title outside ASCII is sent as an RFC 2047 encoded word, which ntfy decodes. `token`
 * goes as `Authorization: Bearer`. ntfy answers a refusal with JSON whose `error` is the reason
 * logged.
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
  stringField,
  type Templates,
  templateKeys,
  templatesOf,
  truncate,
  truncateBytes,
} from "./service.js";
import { NO_ESCAPE, render, templateView } from "./template.js";

/** The keys of an `ntfy` output, besides the common ones. */
export const ntfyShape = {
  /** The topic's URL (`https://ntfy.sh/<topic>`). */
  url: v.required(httpUrl),
  /** An access token (a secret), sent as `Authorization: Bearer`. */
  token: v.optional(v.secret(v.string({ min: 1, max: 512, pattern: /^[\x21-\x7e]+$/, rule: "must be a token" }))),
  ...templateKeys,
};

/** The keys of an `ntfy` output that may come from `<key>-env` or `<key>-file`. */
export const NTFY_SECRETS = ["url", "token"] as const;

/** The definition of an `ntfy` output. */
export type NtfyOutputDefinition = Extract<OutputDefinition, { type: "ntfy" }>;

/** ntfy's largest message, in bytes (a longer one would become an attachment). */
const MESSAGE_MAX_BYTES = 4096;
/** The longest title kept, in characters. */
const TITLE_MAX = 250;

/** The tag of each state: ntfy shows a tag that names an emoji as that emoji. */
const CRITICAL_TAG = "rotating_light";
const OK_TAG = "white_check_mark";

/** White space and control characters, which a header value cannot hold. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
const CONTROL_OR_SPACE = /[\s\x00-\x1f\x7f]+/g;

/** One publish: the body and the headers that vary per message. */
export interface NtfyMessage {
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * A header value: as it is in ASCII, else an RFC 2047 encoded word (`=?UTF-8?B?…?=`, RFC 2047 §2),
 * which ntfy decodes; line breaks are already gone.
 */
export function headerText(text: string): string {
  if (/^[ -~]*$/.test(text)) return text;
  return `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`;
}

/**
 * The publish of one event: the rendered `template` as the body (plain text, variables as they
 * are, cut to 4096 bytes) and the rendered `title-template` as `Title`.
 * @param url the `url` of events that have none (`http.public-url`)
 */
export function ntfyMessage(event: Event, templates: Templates, url: string): NtfyMessage {
  const view = templateView(event, url);
  const title = render(templates.title, view, NO_ESCAPE).replace(CONTROL_OR_SPACE, " ").trim();
  const body = render(templates.text, view, NO_ESCAPE).trim();
  const headers: Record<string, string> = {
    priority: view.critical ? "urgent" : "default",
    tags: view.critical ? CRITICAL_TAG : OK_TAG,
  };
  if (title !== "") headers.title = headerText(truncate(title, TITLE_MAX));
  if (isHttpUrl(view.url)) headers.click = headerText(view.url);
  // An empty body would publish ntfy's own "triggered" text.
  return { body: truncateBytes(body === "" ? title || view.name : body, MESSAGE_MAX_BYTES), headers };
}

/** ntfy's answer: the `error` of its JSON is the reason. */
export function readNtfyAnswer(answer: Answer): AttemptResult {
  return statusOutcome(answer, stringField(jsonObject(answer.text), "error"));
}

/** The transport of an `ntfy` output: one request per event. */
export function ntfyTransport(definition: NtfyOutputDefinition, options: NotifierOptions): Transport<NtfyMessage> {
  const templates = templatesOf(definition);
  const token = definition.token;
  const target = new HttpTarget({
    url: definition.url,
    headers: {},
    protocolHeaders: {
      "content-type": "text/plain; charset=utf-8",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    timeoutMs: definition.timeout.milliseconds,
    readAnswer: readNtfyAnswer,
  });
  return {
    encode: onePerEvent((event) => ntfyMessage(event, templates, options.publicUrl)),
    send: (payload, signal) => target.send(payload.body, signal, payload.headers),
    close: (force) => target.close(force),
  };
}
