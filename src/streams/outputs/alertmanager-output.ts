/**
 * The `alertmanager` output (streams-io.md §2): `POST <url>/api/v2/alerts` with one alert per event
 * (Alertmanager's API v2, https://github.com/prometheus/alertmanager/blob/main/api/v2/openapi.yaml).
 *
 * An event whose state is `ok` resolves its alert (`endsAt` = its time); any other state fires with
 * `endsAt` = time + ttl, so an alert that stops being sent resolves by itself. The labels do not
 * depend on the state, so both refer to the same alert.
 */
import type { OutputDefinition } from "../config.js";
import { DEFAULT_TTL_SECONDS, type Event, metricOf, timeOf } from "../event.js";
import type { Encoded, Transport } from "./delivery.js";
import { HttpTarget } from "./http-target.js";
import { labelName } from "./label-name.js";
import { summaryOf } from "./summary.js";

/** The definition of an `alertmanager` output. */
export type AlertmanagerOutputDefinition = Extract<OutputDefinition, { type: "alertmanager" }>;

/** A `postableAlert` of Alertmanager's API v2. */
export interface Alert {
  /** `alertname` (the event's service) first, then the configured fields present as strings. */
  readonly labels: Record<string, string>;
  /** `summary`, and `state` and `metric` when the event has them. */
  readonly annotations: Record<string, string>;
  /** RFC 3339 (UTC, millisecond precision). */
  readonly startsAt: string;
  /** RFC 3339 (UTC, millisecond precision). */
  readonly endsAt: string;
  readonly generatorURL?: string;
}

/** What goes into every alert of an output. */
export interface AlertSettings {
  /** Event fields copied as labels (`labels` of the definition), names sanitised as label names. */
  readonly labels: readonly string[];
  /** `generator-url` of the definition. */
  readonly generatorUrl?: string;
}

/** The largest time, in seconds, that a JavaScript Date can represent (±8.64 × 10^15 ms). */
const MAX_DATE_SECONDS = 8.64e12;

/** A scalar field as an annotation value. */
function scalarText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
}

/**
 * The alert of an event, or `undefined` when the event cannot be one: no non-empty string
 * `service`, or a time (or time + ttl) beyond what a date can hold.
 * @param nowSeconds Unix time in seconds, the time of events without one
 */
export function alertOf(event: Event, settings: AlertSettings, nowSeconds: number): Alert | undefined {
  const service = event.service;
  if (typeof service !== "string" || service === "") return undefined;
  const time = timeOf(event) ?? nowSeconds;
  const ttl = typeof event.ttl === "number" && Number.isFinite(event.ttl) ? event.ttl : DEFAULT_TTL_SECONDS;
  const ends = event.state === "ok" ? time : time + ttl;
  if (Math.abs(time) > MAX_DATE_SECONDS || Math.abs(ends) > MAX_DATE_SECONDS) return undefined;

  const labels: Record<string, string> = { alertname: service };
  for (const field of settings.labels) {
    const value = event[field];
    const name = labelName(field);
    // Alertmanager ignores empty labels; `alertname` and an earlier field of the same name win.
    if (typeof value !== "string" || value === "" || name === undefined || Object.hasOwn(labels, name)) continue;
    labels[name] = value;
  }
  const annotations: Record<string, string> = { summary: summaryOf(event) };
  const state = scalarText(event.state);
  if (state !== undefined) annotations.state = state;
  const metric = metricOf(event);
  if (metric !== undefined) annotations.metric = String(metric);
  const alert = {
    labels,
    annotations,
    startsAt: new Date(time * 1000).toISOString(),
    endsAt: new Date(ends * 1000).toISOString(),
  };
  return settings.generatorUrl === undefined ? alert : { ...alert, generatorURL: settings.generatorUrl };
}

/** A batch as one body (a JSON array of alerts); events that cannot be alerts are rejected. */
export function encodeAlertBatch(
  batch: readonly Event[],
  settings: AlertSettings,
  nowSeconds: number,
): Encoded<string> {
  const alerts: Alert[] = [];
  for (const event of batch) {
    const alert = alertOf(event, settings, nowSeconds);
    if (alert !== undefined) alerts.push(alert);
  }
  const rejected = batch.length - alerts.length;
  if (alerts.length === 0) return { units: [], rejected };
  return { units: [{ payload: JSON.stringify(alerts), events: alerts.length }], rejected };
}

/** The path of the alerts endpoint under a base URL's path (`/`, `/alertmanager/` or `/alertmanager`). */
export function alertsPath(basePath: string): string {
  return `${basePath.replace(/\/+$/, "")}/api/v2/alerts`;
}

/** The transport of an `alertmanager` output. */
export function alertmanagerTransport(definition: AlertmanagerOutputDefinition): Transport<string> {
  const settings: AlertSettings =
    definition["generator-url"] === undefined
      ? { labels: definition.labels }
      : { labels: definition.labels, generatorUrl: definition["generator-url"] };
  const target = new HttpTarget({
    url: definition.url,
    path: alertsPath,
    headers: definition.headers,
    protocolHeaders: { "content-type": "application/json" },
    timeoutMs: definition.timeout.milliseconds,
  });
  return {
    encode: (batch) => encodeAlertBatch(batch, settings, Date.now() / 1000),
    send: (payload, signal) => target.post(payload, signal),
    close: (force) => target.close(force),
  };
}
