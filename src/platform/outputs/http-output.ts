/**
 * The `http` output (docs/outputs.md): POSTs the events as they are in the stream, in one of four
 * formats: `json` (one JSON array per batch), `ndjson` (one JSON event per line), `slack` (one POST
 * per event, `{"text": <summary>}`, for Slack, Mattermost, Rocket.Chat and Discord's `/slack`
 * webhooks) and `text` (one POST per event, the summary as plain text, for ntfy).
 */
import type { OutputDefinition } from "./config.js";
import type { Encoded, Transport, Unit } from "./delivery.js";
import type { Event } from "./event.js";
import { HttpTarget } from "./http-target.js";
import { summaryOf } from "./summary.js";

/** The definition of an `http` output. */
export type HttpOutputDefinition = Extract<OutputDefinition, { type: "http" }>;

/** A format of the `http` output. */
export type HttpFormat = HttpOutputDefinition["format"];

/** The Content-Type of each format. */
export const CONTENT_TYPES: Readonly<Record<HttpFormat, string>> = {
  json: "application/json",
  ndjson: "application/x-ndjson",
  slack: "application/json",
  text: "text/plain; charset=utf-8",
};

/**
 * A batch as the requests of `format`: one body for `json` and `ndjson` (every line, the last one
 * included, ends with `\n`), one body per event for `slack` and `text`.
 */
export function encodeHttpBatch(format: HttpFormat, batch: readonly Event[]): Encoded<string> {
  switch (format) {
    case "json":
      return { units: [{ payload: JSON.stringify(batch), events: batch.length }], rejected: 0 };
    case "ndjson": {
      let body = "";
      for (const event of batch) body += `${JSON.stringify(event)}\n`;
      return { units: [{ payload: body, events: batch.length }], rejected: 0 };
    }
    case "slack":
      return { units: batch.map((event) => one(JSON.stringify({ text: summaryOf(event) }))), rejected: 0 };
    case "text":
      return { units: batch.map((event) => one(summaryOf(event))), rejected: 0 };
  }
}

function one(payload: string): Unit<string> {
  return { payload, events: 1 };
}

/** The transport of an `http` output. */
export function httpTransport(definition: HttpOutputDefinition): Transport<string> {
  const format = definition.format;
  const target = new HttpTarget({
    url: definition.url,
    headers: definition.headers,
    protocolHeaders: { "content-type": CONTENT_TYPES[format] },
    timeoutMs: definition.timeout.milliseconds,
  });
  return {
    encode: (batch) => encodeHttpBatch(format, batch),
    send: (payload, signal) => target.post(payload, signal),
    close: (force) => target.close(force),
  };
}
