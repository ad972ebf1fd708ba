/**
 * Results as stream events (docs/healthchecks.md): `healthchecks.streams` receives every periodic
 * result as one event, through the platform's event sink (docs/streams.md), so that the streams and
 * their outputs do the alerting. One-off results are not pushed.
 */
import type { EventSink, SinkEvent } from "../platform/events.js";
import type { Definition } from "./definition.js";
import { gapMs, rhythmOf } from "./heartbeat/schedule.js";
import type { HealthcheckResult } from "./results.js";

/** The host of a check's events: its target (http, tcp, tls), its domain (dns), `localhost` (command). */
export function hostOf(definition: Definition): string {
  switch (definition.kind) {
    case "http":
    case "tcp":
    case "tls":
      return definition.target;
    case "dns":
      return definition.domain;
    case "command":
      return "localhost";
    case "heartbeat":
      return "heartbeat";
  }
}

/** Bounds the first 64 KiB of an event's description (a heartbeat's ping body may hold 100 KiB). */
const MAX_DESCRIPTION_BYTES = 64 * 1024;

/**
 * How long an event lives, seconds: twice the interval, or for a heartbeat the time to its next
 * expected ping (the period, or the gap of its schedule) plus the grace.
 */
function ttlOf(definition: Definition, timeMs: number): number {
  if (definition.kind !== "heartbeat") return (2 * (definition.interval?.milliseconds ?? 0)) / 1000;
  return (gapMs(rhythmOf(definition), timeMs) + definition.grace.milliseconds) / 1000;
}

/** `text` cut to its first {@link MAX_DESCRIPTION_BYTES} bytes of UTF-8 (whole characters). */
export function boundedDescription(text: string): string {
  // A UTF-16 unit is at most 3 bytes of UTF-8: shorter texts fit without measuring.
  if (text.length * 3 <= MAX_DESCRIPTION_BYTES) return text;
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= MAX_DESCRIPTION_BYTES) return text;
  let end = MAX_DESCRIPTION_BYTES;
  // Back to the start of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

/**
 * The event of a periodic result: `service` the check's name, `host` ({@link hostOf}), `state`
 * `ok` or `critical`, `metric` the execution time in seconds, `description` the (redacted) result
 * message, `time` the end of the execution in Unix seconds, `ttl` twice the interval in seconds (a
 * check that stops reporting expires), `tags` `["healthcheck", "<kind>"]`, and each label as a
 * top-level field that never overrides the fields above; during a maintenance window of the check,
 * `maintenance` true as well (absent otherwise).
 * @param labels the check's labels as results show them (URL passwords redacted)
 * @param timeMs the result's time in milliseconds since the epoch, when the caller has it
 */
export function resultEvent(
  definition: Definition,
  result: HealthcheckResult,
  labels: Readonly<Record<string, string>> | undefined,
  timeMs: number = Date.parse(result.timestamp),
): SinkEvent {
  const event: SinkEvent = {
    ...labels,
    service: definition.name,
    host: hostOf(definition),
    state: result.success ? "ok" : "critical",
    metric: result.duration / 1000,
    description: boundedDescription(result.message),
    time: timeMs / 1000,
    ttl: ttlOf(definition, timeMs),
    tags: ["healthcheck", definition.kind],
  };
  if (result.maintenance === true) event.maintenance = true;
  return event;
}

/**
 * Pushes each periodic result into the configured streams (`default` = every default stream).
 * Never throws nor awaits: an unknown stream is counted and logged by the sink, and the check runs
 * on.
 */
export class ResultPublisher {
  constructor(
    readonly sink: EventSink,
    /** `healthchecks.streams`. */
    readonly streams: readonly string[],
  ) {}

  /** Whether any stream is configured (nothing is built otherwise). */
  get enabled(): boolean {
    return this.streams.length > 0;
  }

  /** Pushes the event of `result` into every configured stream, in the order of the list. */
  publish(
    definition: Definition,
    result: HealthcheckResult,
    labels?: Readonly<Record<string, string>>,
    timeMs?: number,
  ): void {
    if (this.streams.length === 0) return;
    const events = [resultEvent(definition, result, labels, timeMs)];
    for (const stream of this.streams) this.sink.push(stream, events);
  }
}
