/**
 * The `prometheus-remote-write` output (docs/outputs.md): Prometheus remote write 1.0, a
 * snappy-compressed protobuf `WriteRequest` (proto/remote-write.proto) per batch.
 *
 * The mapping is the reverse of the remote write input's (docs/outputs.md), so that a series that came
 * in by remote write goes out with the same name and labels: one sample per event that has a finite
 * numeric `metric` and `time`; `__name__` = `service` (or `name` when there is no `service`); labels
 * = every other top-level string field except `description`, names sanitised ({@link labelName}),
 * on a clash the field first in name order winning ({@link pickLabel}), sorted by name; timestamp =
 * round(time × 1000) ms; samples of one series sorted by time.
 */
import { fileURLToPath } from "node:url";
import type ProtobufJs from "protobufjs";
import type * as Snappy from "snappy";
import { lazily, lazyLibrary } from "../lazy.js";
import type { OutputDefinition } from "./config.js";
import type { Encoded, Transport } from "./delivery.js";
import { type Event, metricOf, timeOf } from "./event.js";
import { HttpTarget } from "./http-target.js";
import { type LabelSource, labelName, pickLabel } from "./label-name.js";

/** The definition of a `prometheus-remote-write` output. */
export type RemoteWriteOutputDefinition = Extract<OutputDefinition, { type: "prometheus-remote-write" }>;

/** The headers of remote write 1.0 (https://prometheus.io/docs/specs/remote_write_spec/). */
export const REMOTE_WRITE_HEADERS: Readonly<Record<string, string>> = {
  "content-encoding": "snappy",
  "content-type": "application/x-protobuf",
  "x-prometheus-remote-write-version": "0.1.0",
};

// The schema lives in proto/ at the root, three levels up from both src/platform/outputs/ and dist/platform/outputs/.
// Loaded with the first batch: a server without a remote-write output never loads protobufjs nor snappy.
const writeRequest = lazily(() =>
  lazyLibrary<typeof ProtobufJs>("protobufjs")()
    .loadSync(fileURLToPath(new URL("../../../proto/remote-write.proto", import.meta.url)))
    .lookupType("prometheus.WriteRequest"),
);
const snappy = lazyLibrary<typeof Snappy>("snappy");

/** A label of a series. */
export interface Label {
  readonly name: string;
  readonly value: string;
}

/** A sample: a value and its timestamp in milliseconds since the Unix epoch. */
export interface Sample {
  readonly value: number;
  readonly timestamp: number;
}

/** A series: its labels sorted by name (`__name__` among them) and its samples sorted by time. */
export interface Series {
  readonly labels: Label[];
  readonly samples: Sample[];
}

/** The series of a batch, in the order of their first sample, and the events that are no sample. */
export interface Samples {
  readonly timeseries: Series[];
  /** Events without a finite `metric` and `time`, or without a string `service` or `name`. */
  readonly rejected: number;
  /** Samples in `timeseries`. */
  readonly count: number;
}

function byName(a: Label, b: Label): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function byTime(a: Sample, b: Sample): number {
  return a.timestamp - b.timestamp;
}

/**
 * The value an event field gives as a label, or `undefined` when it gives none: the field that
 * names the series and `description` are no labels, and empty values are left out (Prometheus
 * treats an empty label as an absent one).
 */
function labelValue(event: Event, field: string, nameField: string): string | undefined {
  if (field === nameField || field === "description") return undefined;
  const value = event[field];
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * The labels of an event's series, sorted by name; `undefined` when it has no name. Fields whose
 * names sanitise alike keep one label, that of the field whose own name sorts first
 * ({@link pickLabel}); a field whose name sanitises to `__name__` is left out.
 */
function labelsOf(event: Event): Label[] | undefined {
  const service = event.service;
  const name = event.name;
  let nameField: string;
  let metricName: string;
  if (typeof service === "string") {
    nameField = "service";
    metricName = service;
  } else if (typeof name === "string") {
    nameField = "name";
    metricName = name;
  } else {
    return undefined;
  }
  const labels: Label[] = [{ name: "__name__", value: metricName }];
  for (const field in event) {
    const value = labelValue(event, field, nameField);
    if (value === undefined) continue;
    const label = labelName(field);
    if (label === undefined) continue;
    // Valid field names are their own label names and cannot clash (an object's keys are
    // distinct); only a renamed field, or one called __name__, can: such events take the path
    // that settles clashes, the others skip its map.
    if (label !== field || label === "__name__") return pickedLabelsOf(event, nameField, metricName);
    labels.push({ name: label, value });
  }
  return labels.sort(byName);
}

/** {@link labelsOf} for an event whose sanitised field names may clash. */
function pickedLabelsOf(event: Event, nameField: string, metricName: string): Label[] {
  const picked = new Map<string, LabelSource>();
  for (const field in event) {
    const value = labelValue(event, field, nameField);
    if (value === undefined) continue;
    const label = labelName(field);
    // __name__ is the series' name: no field takes it over.
    if (label !== undefined && label !== "__name__") pickLabel(picked, label, field, value);
  }
  const labels: Label[] = [{ name: "__name__", value: metricName }];
  for (const [label, { value }] of picked) labels.push({ name: label, value });
  return labels.sort(byName);
}

/**
 * A key that identifies a series by its sorted labels. Sanitised names cannot hold `=`; a length
 * prefix on each value keeps the key exact whatever the values hold.
 */
function seriesKey(labels: readonly Label[]): string {
  let key = "";
  for (const { name, value } of labels) key += `${name}=${value.length}:${value}`;
  return key;
}

/**
 * Groups a batch into series (docs/outputs.md). An event is a sample when its `metric` and `time`
 * are finite numbers, its timestamp (round(time × 1000) ms) is a safe integer, and it has a string
 * `service` or `name`; any other event is counted in `rejected`.
 */
export function samplesOf(batch: readonly Event[]): Samples {
  const series = new Map<string, Series>();
  let rejected = 0;
  for (const event of batch) {
    const value = metricOf(event);
    const time = timeOf(event);
    const timestamp = time === undefined ? Number.NaN : Math.round(time * 1000);
    const labels = value === undefined || !Number.isSafeInteger(timestamp) ? undefined : labelsOf(event);
    if (labels === undefined || value === undefined) {
      rejected += 1;
      continue;
    }
    const key = seriesKey(labels);
    const found = series.get(key);
    if (found === undefined) series.set(key, { labels, samples: [{ value, timestamp }] });
    else found.samples.push({ value, timestamp });
  }
  const timeseries = [...series.values()];
  for (const { samples } of timeseries) {
    // Array.prototype.sort is stable: samples with the same time keep the stream's order.
    if (samples.length > 1) samples.sort(byTime);
  }
  return { timeseries, rejected, count: batch.length - rejected };
}

/** A `WriteRequest` as protobuf bytes (not compressed), encoded by protobufjs from the schema. */
export function encodeWriteRequest(timeseries: readonly Series[]): Uint8Array {
  return writeRequest().encode({ timeseries }).finish();
}

/** A batch as one snappy-compressed `WriteRequest`; no unit when no event is a sample. */
export function encodeRemoteWriteBatch(batch: readonly Event[]): Encoded<Buffer> {
  const { timeseries, rejected, count } = samplesOf(batch);
  if (count === 0) return { units: [], rejected };
  return { units: [{ payload: snappy().compressSync(encodeWriteRequest(timeseries)), events: count }], rejected };
}

/** The transport of a `prometheus-remote-write` output. */
export function remoteWriteTransport(definition: RemoteWriteOutputDefinition): Transport<Buffer> {
  const target = new HttpTarget({
    url: definition.url,
    headers: definition.headers,
    protocolHeaders: REMOTE_WRITE_HEADERS,
    timeoutMs: definition.timeout.milliseconds,
  });
  return {
    encode: encodeRemoteWriteBatch,
    send: (payload, signal) => target.post(payload, signal),
    close: (force) => target.close(force),
  };
}
