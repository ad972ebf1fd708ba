/**
 * The `matrix` output (docs/notifiers.md): one `m.room.message` per event, sent with the
 * client-server API's `PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}`
 * (Matrix specification, "Sending events to a room"), authenticated by an access token. The body is
 * the plain text; `formatted_body` the HTML (`format: org.matrix.custom.html`).
 *
 * The transaction ID is made once per message, when it is encoded: a retry reuses it, so that the
 * homeserver, which deduplicates on it, posts the message once whatever the retries.
 */

import { createHash, randomUUID } from "node:crypto";
import * as v from "../../validation.js";
import type { OutputDefinition } from "../config.js";
import type { Transport } from "../delivery.js";
import type { Event } from "../event.js";
import { httpUrl } from "../fields.js";
import { HttpTarget } from "../http-target.js";
import { DEFAULT_HTML } from "./html-template.js";
import { onePerEvent } from "./service.js";
import { textField, withServiceReason } from "./service-reason.js";
import { DEFAULT_TEXT, HTML_ESCAPE, NO_ESCAPE, render, template, templateView } from "./template.js";

/** A room ID (`!opaque:server`, or `!opaque` in recent room versions); aliases (`#room:server`) cannot be sent to. */
const roomId: v.Validator<string> = (value, path) => {
  const text = v.string({ min: 2, max: 255 })(value, path);
  if (!text.startsWith("!") || /[\s/]/.test(text)) {
    throw new v.ValidationError(path, "must be a room ID (!opaque:example.org), not an alias", value);
  }
  return text;
};

/** An access token: one line of printable characters, never echoed. */
const accessToken: v.Validator<string> = v.secret((value, path) => {
  const text = v.string({ min: 1, max: 4096 })(value, path);
  if (/[\s\0]/.test(text)) throw new v.ValidationError(path, "must be a token without spaces or line breaks");
  return text;
});

/** The keys of a `matrix` output besides the common ones (docs/notifiers.md). */
export const matrixShape = {
  /** The homeserver's client-server API base URL (`https://matrix.example.org`). */
  homeserver: v.required(httpUrl),
  /** The room the messages go to. */
  "room-id": v.required(roomId),
  /** The access token of the account that posts (a secret). */
  "access-token": v.required(accessToken),
  /** The plain `body`. */
  template: v.withDefault(template, DEFAULT_TEXT),
  /** The `formatted_body`; its variables are HTML-escaped. */
  "html-template": v.withDefault(template, DEFAULT_HTML),
} as const;

/** The keys of `matrix` outputs that are secrets, also read from `<key>-env` and `<key>-file`. */
export const MATRIX_SECRETS = ["access-token"] as const;

/** The definition of a `matrix` output. */
export type MatrixOutputDefinition = Extract<OutputDefinition, { type: "matrix" }>;

/** One message ready to go: its transaction ID and its JSON body. */
export interface MatrixMessage {
  readonly transaction: string;
  readonly body: string;
}

/**
 * The transaction ID of a message: the alert's key (hashed: it may hold any character) as a
 * prefix, then a random part, so that no two messages share one.
 */
export function transactionId(key: string): string {
  return `vigie.${createHash("sha256").update(key).digest("hex").slice(0, 16)}.${randomUUID()}`;
}

/** The message of one event: `m.text` with `body` (text) and `formatted_body` (HTML). */
export function matrixMessage(event: Event, definition: MatrixOutputDefinition, publicUrl: string): MatrixMessage {
  const view = templateView(event, publicUrl);
  return {
    transaction: transactionId(view.key),
    body: JSON.stringify({
      msgtype: "m.text",
      body: render(definition.template, view, NO_ESCAPE),
      format: "org.matrix.custom.html",
      formatted_body: render(definition["html-template"], view, HTML_ESCAPE),
    }),
  };
}

/** The service's reason of a refusal: `{"errcode": "M_FORBIDDEN", "error": "…"}`. */
function matrixReason(answer: Record<string, unknown>): string | undefined {
  const parts = [textField(answer, "errcode"), textField(answer, "error")].filter((part) => part !== undefined);
  return parts.length === 0 ? undefined : parts.join(": ");
}

/**
 * The transport of a `matrix` output.
 * @param publicUrl `http.public-url`, the `{{url}}` of events that carry none
 */
export function matrixTransport(definition: MatrixOutputDefinition, publicUrl = ""): Transport<MatrixMessage> {
  const target = new HttpTarget({
    url: definition.homeserver,
    headers: {},
    protocolHeaders: {
      "content-type": "application/json",
      authorization: `Bearer ${definition["access-token"]}`,
    },
    timeoutMs: definition.timeout.milliseconds,
  });
  const base = target.basePath.replace(/\/+$/, "");
  const room = encodeURIComponent(definition["room-id"]);
  return {
    encode: onePerEvent((event) => matrixMessage(event, definition, publicUrl)),
    async send(message, signal) {
      const path = `${base}/_matrix/client/v3/rooms/${room}/send/m.room.message/${encodeURIComponent(message.transaction)}`;
      return withServiceReason(await target.post(message.body, signal, { method: "PUT", path }), matrixReason);
    },
    close: (force) => target.close(force),
  };
}
