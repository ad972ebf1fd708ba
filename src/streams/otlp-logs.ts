/**
 * OpenTelemetry logs over OTLP/HTTP: `ExportLogsServiceRequest` bodies as OTLP/JSON (lowerCamelCase
 * fields, hex ids, 64-bit integers as strings or numbers, enums as integers or names) or protobuf
 * (schema: proto/otlp-logs.proto; decoded by hand, record by record, each measured as it is read),
 * turned into one event per log record as otlp-signals.ts describes.
 */
import { fileURLToPath } from "node:url";
import type ProtobufJs from "protobufjs";
import { lazily, lazyLibrary } from "../platform/lazy.js";
import type { Event } from "./event.js";
import { type EventBound, type EventBounds, EventMeter, exceededBound } from "./event-bounds.js";
import { anyValue, enumIndex, hexId, type Json, keyValues, list, record, seconds } from "./otlp.js";
import { INDEX, overBoundOf, type Patterns } from "./otlp-json-parts.js";
import { type LogRecord, logRecordEvent, type OtlpOrigin, type OtlpResponse, originOfJson } from "./otlp-signals.js";
import {
  hex,
  OtlpValueReader,
  OVER,
  occurrences,
  type Region,
  scopeLevels,
  seconds as secondsOfNanoseconds,
  utf8,
} from "./otlp-wire.js";
import { FIXED64, LENGTH_DELIMITED, VARINT, WireCursor } from "./protobuf-wire.js";

// The schema lives in proto/ at the root, two levels up from both src/streams/ and dist/streams/.

/** `ExportLogsServiceResponse`, to answer in protobuf. */
export const LOGS_RESPONSE: OtlpResponse = {
  type: lazily(() =>
    lazyLibrary<typeof ProtobufJs>("protobufjs")()
      .loadSync(fileURLToPath(new URL("../../proto/otlp-logs.proto", import.meta.url)))
      .lookupType("vigie.otlp.logs.ExportLogsServiceResponse"),
  ),
  rejectedField: "rejectedLogRecords",
};

/** What the mapping reads of a request, for a large body's skeleton (otlp-json-parts.ts). */
export const LOGS_PATTERNS: Patterns = [
  ["resourceLogs", INDEX, "resource"],
  ["resourceLogs", INDEX, "scopeLogs", INDEX, "scope"],
  ["resourceLogs", INDEX, "scopeLogs", INDEX, "logRecords", INDEX],
];

/** `SeverityNumber` names (OTLP/JSON may spell an enum by name). */
const SEVERITY_NAMES: Readonly<Record<string, number>> = Object.fromEntries(
  ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"].flatMap((level, index) =>
    ["", "2", "3", "4"].map((suffix, step) => [`SEVERITY_NUMBER_${level}${suffix}`, index * 4 + step + 1]),
  ),
);

/**
 * The events of a parsed OTLP/JSON request (or of a large body's skeleton), one per log record, in
 * order; a record over an event bound gives the bound instead.
 * @throws OtlpError for an invalid id or time, or values nested too deep
 */
export function* logEventsOfJson(request: Json, bounds: EventBounds): Generator<Event | EventBound> {
  for (const resourceLogs of list(request.resourceLogs)) {
    const { resource, scopeLogs } = record(resourceLogs);
    const resourceAttributes = keyValues(record(resource).attributes, 1);
    for (const scopeLogsItem of list(scopeLogs)) {
      const { scope, logRecords } = record(scopeLogsItem);
      const origin = originOfJson(resourceAttributes, scope);
      const over = overBoundOf(resource, scope);
      for (const item of list(logRecords)) {
        const itemOver = over ?? overBoundOf(item);
        if (itemOver !== undefined) {
          yield itemOver;
          continue;
        }
        const log = record(item);
        const logRecord: LogRecord = {
          attributes: keyValues(log.attributes, 1),
          time: seconds(log.timeUnixNano),
          observedTime: seconds(log.observedTimeUnixNano),
          severityNumber: enumIndex(log.severityNumber, SEVERITY_NAMES),
          severityText: typeof log.severityText === "string" ? log.severityText : "",
          // The body becomes the event's `description`: a value one level down.
          body: log.body === undefined ? undefined : anyValue(log.body, 2),
          traceId: hexId(log.traceId),
          spanId: hexId(log.spanId),
          eventName: typeof log.eventName === "string" ? log.eventName : "",
        };
        const event = logRecordEvent(origin, logRecord);
        yield exceededBound(event, bounds) ?? event;
      }
    }
  }
}

/**
 * Decodes `ExportLogsServiceRequest` bodies into one event per log record, each held to the event
 * bounds (a record over one gives the bound instead of its event). Singular fields keep their last
 * occurrence, repeated ones every occurrence in order, unknown fields are skipped. Not reentrant:
 * a request decoded in slices needs an instance of its own.
 */
export class OtlpLogsDecoder {
  /** Reads the body being decoded (its buffer) and measures each item's event (its meter). */
  readonly #values: OtlpValueReader;

  constructor(readonly bounds: EventBounds) {
    this.#values = new OtlpValueReader(new EventMeter(bounds));
  }

  /**
   * The events of a request, one per log record in order (or the bound it exceeded), read as the
   * caller iterates.
   * @throws OtlpError (as the iteration goes) for values nested too deep; WireError when the
   *   bytes are not a valid request
   */
  *events(body: Uint8Array): Generator<Event | EventBound, void, void> {
    this.#values.buffer = body;
    for (const { origin, over, shared, region } of scopeLevels(body, this.#values)) {
      for (const log of occurrences(body, region.start, region.end, 2)) {
        yield over ?? this.#record(log, origin, shared);
      }
    }
    this.#values.buffer = new Uint8Array(0);
  }

  /**
   * A `LogRecord` as an event, or the bound it exceeds: times (1, 11), severity number (2) and
   * text (3), body (5), attributes (6), trace and span ids (9, 10), event name (12).
   */
  #record(region: Region, origin: OtlpOrigin, shared: { fields: number; size: number }): Event | EventBound {
    const buffer = this.#values.buffer;
    const meter = this.#values.meter;
    meter.start();
    meter.merge(shared.fields, shared.size);
    const log = { time: 0n, observed: 0n, severity: 0, text: "", traceId: "", spanId: "", eventName: "" };
    const attributes: Json = {};
    let body: Region | undefined;
    const wire = new WireCursor(buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      const type = tag & 7;
      if (type === FIXED64 && (field === 1 || field === 11)) {
        if (field === 1) log.time = wire.fixed64();
        else log.observed = wire.fixed64();
      } else if (type === VARINT && field === 2) {
        log.severity = wire.varint() | 0;
      } else if (type === LENGTH_DELIMITED && (field === 3 || field === 5 || field === 6 || field >= 9)) {
        const at = wire.bytes();
        const end = wire.position;
        if (field === 6) {
          if (this.#values.keyValue(at, end, 1, attributes) === OVER) return meter.exceeded ?? "max-event-size";
        } else if (field === 3) log.text = utf8(buffer, at, end);
        else if (field === 5) body = { start: at, end };
        else if (field === 9) log.traceId = hex(buffer, at, end);
        else if (field === 10) log.spanId = hex(buffer, at, end);
        else if (field === 12) log.eventName = utf8(buffer, at, end);
      } else {
        wire.skip(type);
      }
    }
    const bodyValue = body === undefined ? undefined : this.#values.anyValue(body.start, body.end, 2);
    if (bodyValue === OVER) return meter.exceeded ?? "max-event-size";
    const event = logRecordEvent(origin, {
      attributes,
      time: secondsOfNanoseconds(log.time),
      observedTime: secondsOfNanoseconds(log.observed),
      severityNumber: log.severity,
      severityText: log.text,
      body: bodyValue,
      traceId: log.traceId,
      spanId: log.spanId,
      eventName: log.eventName,
    });
    return exceededBound(event, this.bounds) ?? event;
  }
}
