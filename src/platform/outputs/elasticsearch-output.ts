/**
 * The `elasticsearch` output, for Elasticsearch and OpenSearch (docs/outputs.md): `POST
 * <url>/_bulk` with an NDJSON body (`Content-Type: application/x-ndjson`), two lines per event:
 * `{"index":{"_index":"<index>"}}` (or `create`, which data streams require) and the event as JSON
 * with an `@timestamp` (RFC 3339, from its `time`) unless it has one. `{date}` in the index name
 * becomes the UTC date of the event's time, `YYYY.MM.DD`.
 *
 * A bulk request answers 200 even when some documents failed (`"errors": true`, a status per
 * item, https://www.elastic.co/guide/en/elasticsearch/reference/current/docs-bulk.html): the
 * documents refused for good (a 4xx other than 429: a mapping conflict) are counted
 * `dropped-rejected`, and only those that met a 429 or a 5xx are sent again, with the usual backoff.
 */
import * as v from "../validation.js";
import type { OutputDefinition } from "./config.js";
import { apiKeyShape, authorizationOf, CREDENTIAL_SECRETS, credentialsShape } from "./credentials.js";
import { dottedDate, MAX_DATE_SECONDS } from "./dates.js";
import { type AttemptResult, type Encoded, SENT, type Transport } from "./delivery.js";
import { type Event, timeOf } from "./event.js";
import { headers, httpUrl } from "./fields.js";
import { type Answer, HttpTarget, statusOutcome } from "./http-target.js";

/** The marker of an index name replaced by the event's UTC date. */
const DATE_MARKER = "{date}";

/**
 * Index names as Elasticsearch and OpenSearch accept them (lowercase; none of `\ / * ? " < > | , #
 * :` nor a space; not starting with `-`, `_` or `+`; not `.` or `..`), `{date}` markers allowed.
 */
const INDEX_NAME = /^(?![-_+])(?!\.{1,2}$)(?:[^A-Z\\/*?"<>|,# :{}]|\{date\})+$/;

/** The keys of an `elasticsearch` output, besides the common ones. */
export const elasticsearchShape = {
  /** The cluster's base URL (`http://127.0.0.1:9200`); `/_bulk` is added. */
  url: v.required(httpUrl),
  headers: v.withDefault(headers, {}),
  /** The index (or data stream) name; `{date}` is replaced by the event's UTC date, `YYYY.MM.DD`. */
  index: v.withDefault(
    v.string({
      min: 1,
      max: 200,
      pattern: INDEX_NAME,
      rule: 'must be an index name: lowercase, none of \\ / * ? " < > | , # : nor a space, not starting with - _ +, {date} the only marker',
    }),
    "vigie-{date}",
  ),
  /** The bulk action: `index`, or `create` (which data streams require). */
  action: v.withDefault(v.oneOf(["index", "create"]), "index"),
  ...credentialsShape,
  ...apiKeyShape,
};

/** The keys of an `elasticsearch` output that may come from `<key>-env` or `<key>-file`. */
export const ELASTICSEARCH_SECRETS = [...CREDENTIAL_SECRETS, "api-key"] as const;

/** The definition of an `elasticsearch` output. */
export type ElasticsearchOutputDefinition = Extract<OutputDefinition, { type: "elasticsearch" }>;

/**
 * One bulk request: the two lines of each document still to send. On a partial failure the
 * transport keeps only the documents worth another try, so a retry never indexes one twice.
 */
export interface BulkRequest {
  documents: string[];
}

/** What each document of a batch goes with. */
export interface BulkSettings {
  /** The index name, `{date}` markers included. */
  readonly index: string;
  readonly action: "index" | "create";
}

/**
 * The two NDJSON lines of an event (each ending with `\n`), or `undefined` when its time (now
 * without one) is no date: out of a JavaScript Date's range or of years 0000–9999 when the index
 * name has `{date}`.
 */
export function bulkDocument(event: Event, settings: BulkSettings, nowSeconds: number): string | undefined {
  const time = timeOf(event) ?? nowSeconds;
  if (Math.abs(time) > MAX_DATE_SECONDS) return undefined;
  let index = settings.index;
  if (index.includes(DATE_MARKER)) {
    const date = dottedDate(time);
    if (date === undefined) return undefined;
    index = index.replaceAll(DATE_MARKER, date);
  }
  let document = JSON.stringify(event);
  if (event["@timestamp"] === undefined) {
    // Spliced into the event's JSON rather than spread into a copy of it: one object less per event.
    const timestamp = `"@timestamp":"${new Date(time * 1000).toISOString()}"`;
    document = document === "{}" ? `{${timestamp}}` : `{${timestamp},${document.slice(1)}`;
  }
  return `{${JSON.stringify(settings.action)}:{"_index":${JSON.stringify(index)}}}\n${document}\n`;
}

/** A batch as one bulk request; events whose time is no date are rejected. */
export function encodeBulkBatch(
  batch: readonly Event[],
  settings: BulkSettings,
  nowSeconds: number,
): Encoded<BulkRequest> {
  const documents: string[] = [];
  for (const event of batch) {
    const document = bulkDocument(event, settings, nowSeconds);
    if (document !== undefined) documents.push(document);
  }
  const rejected = batch.length - documents.length;
  if (documents.length === 0) return { units: [], rejected };
  return { units: [{ payload: { documents }, events: documents.length }], rejected };
}

/** One item of a bulk answer (`filter_path` keeps its status and error type). */
interface BulkItem {
  readonly status?: unknown;
  readonly error?: { readonly type?: unknown };
}

/** The items of a bulk answer, each the value under its action (`{"index": {…}}`), or `undefined` when unreadable. */
function bulkItems(text: string): BulkItem[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null || !("items" in parsed) || !Array.isArray(parsed.items)) {
    return undefined;
  }
  return parsed.items.map((item: unknown) =>
    typeof item === "object" && item !== null ? (Object.values(item)[0] as BulkItem) : {},
  );
}

/**
 * Reads a bulk answer for `request`: a 2xx without `"errors": true` is sent; with it, each item's
 * status decides — 2xx sent, 429 and 5xx kept in `request` for another try, anything else refused
 * for good. Any other status is read as for every HTTP output ({@link statusOutcome}).
 */
export function readBulkAnswer(request: BulkRequest, answer: Answer): AttemptResult {
  if (answer.status < 200 || answer.status >= 300) return statusOutcome(answer);
  if (!/"errors"\s*:\s*true/.test(answer.text)) return SENT;
  const items = bulkItems(answer.text);
  if (items === undefined || items.length !== request.documents.length) {
    // Which documents failed is unknown: sending them all again would index the others twice.
    return {
      kind: "rejected",
      reason: "HTTP 200 with errors, and no readable status per document",
      answer: answer.text.slice(0, 200),
    };
  }
  const retried: string[] = [];
  let sent = 0;
  let rejected = 0;
  let errorType = "";
  for (const [position, item] of items.entries()) {
    const status = typeof item.status === "number" ? item.status : 0;
    if (status >= 200 && status < 300) {
      sent += 1;
      continue;
    }
    if (errorType === "" && typeof item.error?.type === "string") errorType = item.error.type;
    if (status === 429 || status >= 500) retried.push(request.documents[position] ?? "");
    else rejected += 1;
  }
  const detail = `${rejected + retried.length} of ${items.length} documents failed${errorType === "" ? "" : ` (${errorType})`}`;
  if (retried.length === 0) return rejected === 0 ? SENT : { kind: "sent", rejected, reason: `HTTP 200: ${detail}` };
  request.documents = retried;
  return { kind: "retry", reason: `HTTP 200: ${detail}`, settled: { sent, rejected } };
}

/** Bytes of a bulk answer read per document: the filtered answer gives about 60 per item. */
const ANSWER_BYTES_PER_DOCUMENT = 256;

/** The bulk path under a base URL's path, the answer filtered to what is read. */
export function bulkPath(basePath: string): string {
  return `${basePath.replace(/\/+$/, "")}/_bulk?filter_path=errors,items.*.status,items.*.error.type`;
}

/** The transport of an `elasticsearch` output. */
export function elasticsearchTransport(definition: ElasticsearchOutputDefinition): Transport<BulkRequest> {
  const settings: BulkSettings = { index: definition.index, action: definition.action };
  const target = new HttpTarget({
    url: definition.url,
    path: bulkPath,
    headers: definition.headers,
    protocolHeaders: { "content-type": "application/x-ndjson", ...authorizationOf(definition, "Bearer") },
    timeoutMs: definition.timeout.milliseconds,
    answerBytes: 4096 + ANSWER_BYTES_PER_DOCUMENT * definition["batch-size"],
  });
  return {
    encode: (batch) => encodeBulkBatch(batch, settings, Date.now() / 1000),
    send: (payload, signal) =>
      target.post(payload.documents.join(""), signal, { readAnswer: (answer) => readBulkAnswer(payload, answer) }),
    close: (force) => target.close(force),
  };
}
