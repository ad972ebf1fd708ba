/**
 * The `email` output (docs/notifiers.md): one message per event over SMTP (nodemailer), with a
 * plain text and an HTML part. The notifications of one alert share a thread: the trigger's
 * `Message-ID` is derived from the alert's key and `since`, and its reminders and resolve name it
 * in `In-Reply-To` and `References` (RFC 5322 §3.6.4).
 *
 * SMTP replies are classified as RFC 5321 §4.2.1 says: a 4yz reply is a transient failure
 * (retried), a 5yz reply a permanent one (refused, not retried, logged with the server's reply).
 */

import { createHash, randomUUID } from "node:crypto";
import type * as Nodemailer from "nodemailer";
import { lazyLibrary } from "../../lazy.js";
import * as v from "../../validation.js";
import type { OutputDefinition } from "../config.js";
import { type AttemptResult, errorReason, SENT, type Transport } from "../delivery.js";
import type { Event } from "../event.js";
import { DEFAULT_HTML } from "./html-template.js";
import { onePerEvent } from "./service.js";
import { DEFAULT_TEXT, DEFAULT_TITLE, HTML_ESCAPE, NO_ESCAPE, render, template, templateView } from "./template.js";

const SMTP_URL_RULE = "must be an smtp:// or smtps:// URL with a host";

/** `smtp://` (STARTTLS when the server offers it) or `smtps://` (TLS from the start), with `user:password@` when the server asks for a login; never echoed. */
const smtpUrl: v.Validator<string> = v.secret((value, path) => {
  if (typeof value === "string") {
    try {
      const url = new URL(value);
      if ((url.protocol === "smtp:" || url.protocol === "smtps:") && url.hostname !== "") return value;
    } catch {
      // refused below
    }
  }
  throw new v.ValidationError(path, SMTP_URL_RULE);
});

/** `local@domain`, or `Name <local@domain>`: what a header may hold, without line breaks or lists. */
const ADDRESS = /^[^\s@<>,;:"()[\]\\]+@[^\s@<>,;:"()[\]\\]+$/;
const NAMED_ADDRESS = /^([^<>"\r\n\0,;]*)<([^<>]+)>$/;

/** The bare address of a `from`/`to` value (`Name <a@b>` gives `a@b`). */
function bareAddress(value: string): string {
  return NAMED_ADDRESS.exec(value.trim())?.[2] ?? value.trim();
}

const address: v.Validator<string> = (value, path) => {
  const text = v.string({ min: 3, max: 320 })(value, path);
  if (!ADDRESS.test(bareAddress(text)) || /[\r\n\0]/.test(text)) {
    throw new v.ValidationError(path, "must be an e-mail address (a@example.org or Name <a@example.org>)", value);
  }
  return text.trim();
};

/** The keys of an `email` output besides the common ones (docs/notifiers.md). */
export const emailShape = {
  /** The SMTP server: `smtp://[user:password@]host[:port]` (25 by default) or `smtps://…` (465). */
  "smtp-url": v.required(smtpUrl),
  /** Accept any certificate from the SMTP server (a test server, a self-signed relay). */
  "tls-insecure": v.withDefault(v.boolean(), false),
  /** The `From` address; its domain also names the messages (`Message-ID`). */
  from: v.required(address),
  /** The recipients. */
  to: v.required(v.array(address, { min: 1, max: 100 })),
  /** The subject. */
  "title-template": v.withDefault(template, DEFAULT_TITLE),
  /** The plain text part. */
  template: v.withDefault(template, DEFAULT_TEXT),
  /** The HTML part; its variables are HTML-escaped. */
  "html-template": v.withDefault(template, DEFAULT_HTML),
} as const;

/** The keys of `email` outputs that are secrets, also read from `<key>-env` and `<key>-file`. */
export const EMAIL_SECRETS = ["smtp-url"] as const;

/** The definition of an `email` output. */
export type EmailOutputDefinition = Extract<OutputDefinition, { type: "email" }>;

/** One message, as nodemailer takes it. */
export interface EmailMessage {
  readonly from: string;
  readonly to: readonly string[];
  readonly subject: string;
  readonly text: string;
  readonly html: string;
  /** `<…@domain>`, the message's own. */
  readonly messageId: string;
  /** The thread's first message, for reminders and resolves. */
  readonly inReplyTo?: string;
  readonly references?: readonly string[];
}

/** The longest subject, in characters (a subject is a line). */
const MAX_SUBJECT = 250;

/** The domain that names messages: the `from` address's. */
export function domainOf(from: string): string {
  const bare = bareAddress(from);
  return bare.slice(bare.lastIndexOf("@") + 1);
}

/**
 * The `Message-ID` of the first message of an alert's thread: the same for its trigger, its
 * reminders and its resolve (they share the alert's `key` and `since`), distinct for the next time
 * the alert triggers.
 */
export function threadId(key: string, since: string, domain: string): string {
  const digest = createHash("sha256").update(`${key}\0${since}`).digest("hex").slice(0, 40);
  return `<vigie.${digest}@${domain}>`;
}

/**
 * The message of one event: subject, text and HTML from the output's templates, and its place in a
 * thread. A notification (an event with a `key`) that triggers starts its alert's thread; a reminder
 * or a resolve answers it. A grouped notification, or a stream event, stands alone.
 */
export function emailMessage(event: Event, definition: EmailOutputDefinition, publicUrl: string): EmailMessage {
  const view = templateView(event, publicUrl);
  const domain = domainOf(definition.from);
  const subject = render(definition["title-template"], view, NO_ESCAPE).replace(/\s+/g, " ").trim();
  const message = {
    from: definition.from,
    to: definition.to,
    subject: subject.slice(0, MAX_SUBJECT),
    text: render(definition.template, view, NO_ESCAPE),
    html: render(definition["html-template"], view, HTML_ESCAPE),
  };
  if (typeof event.key !== "string" || view.grouped)
    return { ...message, messageId: `<vigie.${randomUUID()}@${domain}>` };
  const thread = threadId(event.key, view.since, domain);
  if (view.status === "triggered") return { ...message, messageId: thread };
  const own = `<vigie.${thread.slice(7, 23)}.${view.status}.${randomUUID()}@${domain}>`;
  return { ...message, messageId: own, inReplyTo: thread, references: [thread] };
}

/** The fields of a nodemailer error that classify it. */
function smtpFields(error: unknown): { code?: string; responseCode?: number; response?: string } {
  if (typeof error !== "object" || error === null) return {};
  const fields: { code?: string; responseCode?: number; response?: string } = {};
  if ("code" in error && typeof error.code === "string") fields.code = error.code;
  if ("responseCode" in error && typeof error.responseCode === "number") fields.responseCode = error.responseCode;
  if ("response" in error && typeof error.response === "string") fields.response = error.response;
  return fields;
}

/** Failures of the message or the configuration that no retry can mend (no SMTP reply involved). */
const PERMANENT_CODES: ReadonlySet<string> = new Set(["EAUTH", "EENVELOPE", "EMESSAGE", "ECONFIG"]);

/** The longest server reply kept in a reason, in characters. */
const MAX_REPLY = 200;

/**
 * How a failed send ended: a 5yz reply is refused (`SMTP 550 …`, the reply as the answer), a 4yz
 * reply retried, a network or TLS error retried, a refused login or envelope without a reply
 * refused. The reason carries the server's reply, never the URL or the password.
 */
export function smtpOutcome(error: unknown): AttemptResult {
  const { code, responseCode, response } = smtpFields(error);
  const reply = (response ?? "").replace(/\s+/g, " ").trim().slice(0, MAX_REPLY);
  if (responseCode !== undefined && responseCode >= 400 && responseCode < 600) {
    const reason = reply.startsWith(String(responseCode)) ? `SMTP ${reply}` : `SMTP ${responseCode} ${reply}`.trim();
    return responseCode >= 500 ? { kind: "rejected", reason, answer: reply } : { kind: "retry", reason };
  }
  if (code !== undefined && PERMANENT_CODES.has(code)) return { kind: "rejected", reason: code, answer: "" };
  return { kind: "retry", reason: errorReason(error) };
}

/** WHATWG URLs keep user info percent-encoded; a malformed escape is taken as written. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The nodemailer SMTP options of `smtp-url` (user info as the login), bounded by `timeoutMs`. */
export function smtpOptions(smtpUrlValue: string, tlsInsecure: boolean, timeoutMs: number) {
  const url = new URL(smtpUrlValue);
  const secure = url.protocol === "smtps:";
  const user = decoded(url.username);
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port === "" ? (secure ? 465 : 25) : Number(url.port),
    // smtp:// upgrades with STARTTLS whenever the server offers it (nodemailer's default).
    secure,
    ...(user === "" ? {} : { auth: { user, pass: decoded(url.password) } }),
    tls: { rejectUnauthorized: !tlsInsecure },
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    // Messages are built from templates only: no attachment or part is ever read from a path or URL.
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
  };
}

/** nodemailer, loaded when the first `email` output or mail queue is made: most servers have none. */
export const nodemailer = lazyLibrary<typeof Nodemailer>("nodemailer");

/**
 * The transport of an `email` output: one message per event, one SMTP session per message.
 * @param publicUrl `http.public-url`, the `{{url}}` of events that carry none
 */
export function emailTransport(definition: EmailOutputDefinition, publicUrl = ""): Transport<EmailMessage> {
  const mailer = nodemailer().createTransport(
    smtpOptions(definition["smtp-url"], definition["tls-insecure"], definition.timeout.milliseconds),
  );
  return {
    encode: onePerEvent((event) => emailMessage(event, definition, publicUrl)),
    async send(message) {
      try {
        // nodemailer takes no AbortSignal: its own timeouts (the output's `timeout`) end a stuck session.
        await mailer.sendMail({ ...message, to: [...message.to], references: message.references?.slice() });
        return SENT;
      } catch (error) {
        return smtpOutcome(error);
      }
    },
    async close() {
      mailer.close();
    },
  };
}
