/**
 * The `influxdb` output (docs/outputs.md): line protocol
 * (https://docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/), one point per event,
 * to InfluxDB 2 and 3 (`POST <url>/api/v2/write?org=&bucket=&precision=ns`, with `bucket`) or
 * InfluxDB 1 (`POST <url>/write?db=`, with `database`).
 *
 * A point: measurement = `service`; tags = the listed fields (`tags`, default `[host]`) present as
 * non-empty strings, numbers or booleans, sorted by key; fields `metric` (a float, when numeric),
 * `state` and `description` (strings, when present); timestamp = `time` in nanoseconds (now
 * without one). An event without `service`, or with none of the three fields, is no point.
 */
import * as v from "../validation.js";
import type { OutputDefinition } from "./config.js";
import { authorizationOf, CREDENTIAL_SECRETS, credentialsShape } from "./credentials.js";
import { nanosecondsText } from "./dates.js";
import type { Encoded, Transport } from "./delivery.js";
import { type Event, metricOf, timeOf } from "./event.js";
import { headers, httpUrl } from "./fields.js";
import { HttpTarget } from "./http-target.js";
import { scalarText } from "./summary.js";

const NAME = v.string({ min: 1, max: 256 });

/** The keys of an `influxdb` output, besides the common ones. */
export const influxdbShape = {
  /** InfluxDB's base URL (`http://127.0.0.1:8086`); the write path is added. */
  url: v.required(httpUrl),
  headers: v.withDefault(headers, {}),
  /** InfluxDB 2 and 3: the bucket written to (then the v2 write API is used). */
  bucket: v.optional(NAME),
  /** InfluxDB 2: the organization (name or ID) of the bucket. */
  org: v.optional(NAME),
  /** InfluxDB 1: the database written to (then the v1 write API is used). */
  database: v.optional(NAME),
  /** The event fields that become tags. */
  tags: v.withDefault(v.array(v.string({ min: 1, max: 128 }), { max: 64 }), ["host"]),
  ...credentialsShape,
};

/** The keys of an `influxdb` output that may come from `<key>-env` or `<key>-file`. */
export const INFLUXDB_SECRETS = CREDENTIAL_SECRETS;

/** The definition of an `influxdb` output. */
export type InfluxdbOutputDefinition = Extract<OutputDefinition, { type: "influxdb" }>;

/**
 * Refuses a definition that names no target or two: `bucket` (v2 API) or `database` (v1 API),
 * and `org` only with `bucket`.
 * @throws v.ValidationError naming the key at fault
 */
export function checkInfluxdbTarget(
  definition: {
    readonly bucket?: string | undefined;
    readonly database?: string | undefined;
    readonly org?: string | undefined;
  },
  path: string,
): void {
  if (definition.bucket === undefined && definition.database === undefined)
    throw new v.ValidationError(v.childPath(path, "bucket"), "is required (or database, for InfluxDB 1)");
  if (definition.bucket !== undefined && definition.database !== undefined)
    throw new v.ValidationError(
      v.childPath(path, "database"),
      "takes one of bucket (InfluxDB 2 and 3) and database (InfluxDB 1)",
    );
  if (definition.org !== undefined && definition.bucket === undefined)
    throw new v.ValidationError(v.childPath(path, "org"), "goes with bucket (InfluxDB 2), not database");
}

/** Line breaks: line protocol has no way to write one inside a name or a value. */
const LINE_BREAKS = /[\r\n]+/g;
/** Backslashes at the end of a name or tag value, which would escape the separator after them. */
const TRAILING_BACKSLASHES = /\\+$/;

/** A measurement: commas and spaces escaped (line protocol's special characters). */
export function escapeMeasurement(text: string): string {
  return text.replace(LINE_BREAKS, " ").replace(TRAILING_BACKSLASHES, "").replace(/[, ]/g, "\\$&");
}

/** A tag key, tag value or field key: commas, equals signs and spaces escaped. */
export function escapeKey(text: string): string {
  return text.replace(LINE_BREAKS, " ").replace(TRAILING_BACKSLASHES, "").replace(/[,= ]/g, "\\$&");
}

/** A string field value, quoted: double quotes and backslashes escaped. */
export function quoteString(text: string): string {
  return `"${text.replace(LINE_BREAKS, " ").replace(/["\\]/g, "\\$&")}"`;
}

/**
 * The line of an event (without its `\n`), or `undefined` when it is no point: no `service`, none
 * of `metric`, `state` and `description`, or a time that is negative or past year 2262.
 */
export function pointLine(event: Event, tags: readonly string[], nowSeconds: number): string | undefined {
  const service = scalarText(event.service);
  const measurement = service === undefined ? "" : escapeMeasurement(service);
  if (measurement === "") return undefined;
  let fields = "";
  const metric = metricOf(event);
  if (metric !== undefined) fields = `metric=${metric}`;
  const state = scalarText(event.state);
  if (state !== undefined) fields += `${fields === "" ? "" : ","}state=${quoteString(state)}`;
  const description = event.description;
  if (typeof description === "string") fields += `${fields === "" ? "" : ","}description=${quoteString(description)}`;
  if (fields === "") return undefined;
  const timestamp = nanosecondsText(timeOf(event) ?? nowSeconds);
  if (timestamp === undefined) return undefined;
  return `${measurement}${tagSet(event, tags)} ${fields} ${timestamp}`;
}

/** `,key=value…` of the listed fields present (empty values left out: InfluxDB refuses them), sorted by key. */
function tagSet(event: Event, tags: readonly string[]): string {
  const pairs: string[] = [];
  for (const field of tags) {
    const value = scalarText(event[field]);
    if (value === undefined) continue;
    const key = escapeKey(field);
    const escaped = escapeKey(value);
    if (key !== "" && escaped !== "") pairs.push(`${key}=${escaped}`);
  }
  // InfluxDB writes fastest with tags sorted by key; keys are distinct, so sorting pairs sorts keys.
  if (pairs.length > 1) pairs.sort();
  let set = "";
  for (const pair of pairs) set += `,${pair}`;
  return set;
}

/** A batch as one line protocol body (every line ends with `\n`); events that are no point are rejected. */
export function encodeInfluxBatch(
  batch: readonly Event[],
  tags: readonly string[],
  nowSeconds: number,
): Encoded<string> {
  let body = "";
  let points = 0;
  for (const event of batch) {
    const line = pointLine(event, tags, nowSeconds);
    if (line === undefined) continue;
    body += `${line}\n`;
    points += 1;
  }
  const rejected = batch.length - points;
  if (points === 0) return { units: [], rejected };
  return { units: [{ payload: body, events: points }], rejected };
}

/** The write path (and query) under a base URL's path: v2 with `bucket`, v1 with `database`. */
export function writePath(
  basePath: string,
  definition: Pick<InfluxdbOutputDefinition, "bucket" | "org" | "database">,
): string {
  const base = basePath.replace(/\/+$/, "");
  if (definition.bucket === undefined) return `${base}/write?db=${encodeURIComponent(definition.database ?? "")}`;
  const org = definition.org === undefined ? "" : `org=${encodeURIComponent(definition.org)}&`;
  return `${base}/api/v2/write?${org}bucket=${encodeURIComponent(definition.bucket)}&precision=ns`;
}

/** The transport of an `influxdb` output. */
export function influxdbTransport(definition: InfluxdbOutputDefinition): Transport<string> {
  const tags = definition.tags;
  const target = new HttpTarget({
    url: definition.url,
    path: (basePath) => writePath(basePath, definition),
    headers: definition.headers,
    protocolHeaders: { "content-type": "text/plain; charset=utf-8", ...authorizationOf(definition, "Token") },
    timeoutMs: definition.timeout.milliseconds,
  });
  return {
    encode: (batch) => encodeInfluxBatch(batch, tags, Date.now() / 1000),
    send: (payload, signal) => target.post(payload, signal),
    close: (force) => target.close(force),
  };
}
