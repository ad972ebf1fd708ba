/**
 * The `loki` output (docs/outputs.md): `POST <url>/loki/api/v1/push` with Loki's JSON push body
 * (https://grafana.com/docs/loki/latest/reference/loki-http-api/#ingest-logs),
 * `{"streams":[{"stream":{<labels>},"values":[["<ns>","<line>"],…]}]}`.
 *
 * The listed event fields (`labels`, default `[host, service]`) present as strings, numbers or
 * booleans become the stream's labels, names sanitised as Prometheus label names ({@link labelName},
 * on a clash the field first in name order winning); the log line is the whole event as JSON. The
 * events of a batch are grouped by label set, each stream's entries in time order. Loki refuses a
 * stream without labels: an event that has none of the fields goes to the stream
 * `{source="vigie"}`. `tenant` is sent as `X-Scope-OrgID`.
 */
import * as v from "../validation.js";
import type { OutputDefinition } from "./config.js";
import { authorizationOf, CREDENTIAL_SECRETS, credentialsShape } from "./credentials.js";
import { nanosecondsText } from "./dates.js";
import type { Encoded, Transport } from "./delivery.js";
import { type Event, timeOf } from "./event.js";
import { headers, httpUrl } from "./fields.js";
import { HttpTarget } from "./http-target.js";
import { type LabelSource, labelName, pickLabel } from "./label-name.js";
import { scalarText } from "./summary.js";

/** The keys of a `loki` output, besides the common ones. */
export const lokiShape = {
  /** Loki's base URL (`http://127.0.0.1:3100`); the push path is added. */
  url: v.required(httpUrl),
  headers: v.withDefault(headers, {}),
  /** The event fields that become labels. */
  labels: v.withDefault(v.array(v.string({ min: 1, max: 128 }), { max: 64 }), ["host", "service"]),
  /** The tenant of a multi-tenant Loki, sent as `X-Scope-OrgID`. */
  tenant: v.optional(v.string({ min: 1, max: 256, pattern: /^[\x21-\x7e]+$/, rule: "must be printable ASCII" })),
  ...credentialsShape,
};

/** The keys of a `loki` output that may come from `<key>-env` or `<key>-file`. */
export const LOKI_SECRETS = CREDENTIAL_SECRETS;

/** The definition of a `loki` output. */
export type LokiOutputDefinition = Extract<OutputDefinition, { type: "loki" }>;

/** The labels of an event that gives none of the listed fields (Loki refuses a stream without labels). */
export const FALLBACK_LABELS: Readonly<Record<string, string>> = Object.freeze({ source: "vigie" });

/** One entry of a stream: its timestamp in seconds (for sorting) and `[ns, line]`. */
interface Entry {
  readonly time: number;
  readonly value: readonly [string, string];
}

/** A stream of a push body under construction. */
interface Stream {
  readonly stream: Readonly<Record<string, string>>;
  readonly entries: Entry[];
}

/** The labels of an event: the listed fields present as scalars, names sanitised; none gives {@link FALLBACK_LABELS}. */
export function lokiLabels(event: Event, fields: readonly string[]): Readonly<Record<string, string>> {
  const picked = new Map<string, LabelSource>();
  for (const field of fields) {
    const value = scalarText(event[field]);
    const name = labelName(field);
    // Loki drops empty labels, and refuses names starting with __ (reserved for its own).
    if (value === undefined || value === "" || name === undefined || name.startsWith("__")) continue;
    pickLabel(picked, name, field, value);
  }
  if (picked.size === 0) return FALLBACK_LABELS;
  const labels: Record<string, string> = {};
  for (const name of [...picked.keys()].sort()) labels[name] = picked.get(name)?.value ?? "";
  return labels;
}

/** A key identifying a label set (names sorted): a length prefix on each part keeps it exact. */
function labelsKey(labels: Readonly<Record<string, string>>): string {
  let key = "";
  for (const name in labels) {
    const value = labels[name] ?? "";
    key += `${name.length}:${name}${value.length}:${value}`;
  }
  return key;
}

function byTime(a: Entry, b: Entry): number {
  return a.time - b.time;
}

/**
 * A batch as one push body: events grouped by label set (streams in the order of their first
 * event), entries sorted by time (stable: equal times keep the stream's order). An event's time is
 * `nowSeconds` when it has none; an event whose time is negative or past year 2262 is rejected.
 */
export function encodeLokiBatch(
  batch: readonly Event[],
  fields: readonly string[],
  nowSeconds: number,
): Encoded<string> {
  const streams = new Map<string, Stream>();
  let rejected = 0;
  for (const event of batch) {
    const time = timeOf(event) ?? nowSeconds;
    const nanoseconds = nanosecondsText(time);
    if (nanoseconds === undefined) {
      rejected += 1;
      continue;
    }
    const labels = lokiLabels(event, fields);
    const key = labelsKey(labels);
    let stream = streams.get(key);
    if (stream === undefined) {
      stream = { stream: labels, entries: [] };
      streams.set(key, stream);
    }
    stream.entries.push({ time, value: [nanoseconds, JSON.stringify(event)] });
  }
  const sent = batch.length - rejected;
  if (sent === 0) return { units: [], rejected };
  const body = {
    streams: [...streams.values()].map(({ stream, entries }) => {
      if (entries.length > 1) entries.sort(byTime);
      return { stream, values: entries.map((entry) => entry.value) };
    }),
  };
  return { units: [{ payload: JSON.stringify(body), events: sent }], rejected };
}

/** The push path under a base URL's path (`/`, `/loki/` or `/loki`). */
export function pushPath(basePath: string): string {
  return `${basePath.replace(/\/+$/, "")}/loki/api/v1/push`;
}

/** The transport of a `loki` output. */
export function lokiTransport(definition: LokiOutputDefinition): Transport<string> {
  const fields = definition.labels;
  const target = new HttpTarget({
    url: definition.url,
    path: pushPath,
    headers: definition.headers,
    protocolHeaders: {
      "content-type": "application/json",
      ...(definition.tenant === undefined ? {} : { "x-scope-orgid": definition.tenant }),
      ...authorizationOf(definition, "Bearer"),
    },
    timeoutMs: definition.timeout.milliseconds,
  });
  return {
    encode: (batch) => encodeLokiBatch(batch, fields, Date.now() / 1000),
    send: (payload, signal) => target.post(payload, signal),
    close: (force) => target.close(force),
  };
}
