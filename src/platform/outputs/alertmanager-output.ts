/**
 * The `alertmanager` output (docs/outputs.md): `POST <url>/api/v2/alerts` with one alert per event
 * (Alertmanager's API v2, https://github.com/prometheus/alertmanager/blob/main/api/v2/openapi.yaml).
 *
 * An event whose state is `ok` resolves its alert (`endsAt` = its time); any other state fires with
 * `endsAt` = time + ttl (never before `startsAt`: a negative ttl resolves at once), so an alert that
 * stops being sent resolves by itself. The labels do not depend on the state, so both refer to the
 * same alert.
 */
import type { OutputDefinition } from "./config.js";
import { MAX_DATE_SECONDS } from "./dates.js";
import type { Encoded, Transport } from "./delivery.js";
import { DEFAULT_TTL_SECONDS, type Event, metricOf, timeOf } from "./event.js";
import { HttpTarget } from "./http-target.js";
import { type LabelSource, labelName, pickLabel } from "./label-name.js";
import { scalarText, summaryOf } from "./summary.js";

/** The definition of an `alertmanager` output. */
export type AlertmanagerOutputDefinition = Extract<OutputDefinition, { type: "alertmanager" }>;

/** A `postableAlert` of Alertmanager's API v2. */
export interface Alert {
  /** `alertname` (the event's service) first, then the configured fields present as non-empty strings. */
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
  /**
   * Event fields copied as labels (`labels` of the definition), names sanitised as label names; of
   * fields whose names sanitise alike, the one first in name order wins ({@link pickLabel}).
   */
  readonly labels: readonly string[];
  /** `generator-url` of the definition. */
  readonly generatorUrl?: string;
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
  // Alertmanager refuses an alert that ends before it starts, and with it the whole request (400)
  // although it keeps the batch's other alerts: a negative ttl ends the alert at its start instead.
  const ends = event.state === "ok" ? time : time + Math.max(ttl, 0);
  if (Math.abs(time) > MAX_DATE_SECONDS || Math.abs(ends) > MAX_DATE_SECONDS) return undefined;

  const picked = new Map<string, LabelSource>();
  for (const field of settings.labels) {
    const value = event[field];
    const name = labelName(field);
    // Alertmanager ignores empty labels; `alertname` is the service whatever field sanitises to it.
    if (typeof value !== "string" || value === "" || name === undefined || name === "alertname") continue;
    pickLabel(picked, name, field, value);
  }
  const labels: Record<string, string> = { alertname: service };
  for (const [name, { value }] of picked) labels[name] = value;
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
