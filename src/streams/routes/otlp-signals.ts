/**
 * The OTLP/HTTP metrics and logs routes (docs/streams.md): `POST
 * /api/v1/opentelemetry/v1/metrics/<name>` (`ExportMetricsServiceRequest`, one event per data
 * point) and `…/v1/logs/<name>` (`ExportLogsServiceRequest`, one event per log record), as protobuf
 * or JSON, plain or gzipped. The answer is the export response in the request's encoding: empty
 * when every item was taken, with a partial success counting those dropped for an event bound.
 */
import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import { InvalidError } from "../../platform/errors.js";
import type { RouteDescription } from "../../platform/openapi.js";
import type { StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import { boundProblem, type EventBound, type EventBounds } from "../event-bounds.js";
import type { CounterByName } from "../metrics.js";
import { OtlpError, parseJsonRequest } from "../otlp.js";
import { jsonSkeleton, type Patterns } from "../otlp-json-parts.js";
import { LOGS_PATTERNS, LOGS_RESPONSE, logEventsOfJson, OtlpLogsDecoder } from "../otlp-logs.js";
import { METRICS_PATTERNS, METRICS_RESPONSE, metricEventsOfJson } from "../otlp-metrics.js";
import { OtlpMetricsDecoder } from "../otlp-metrics-protobuf.js";
import { collectEvents, jsonResponse, type OtlpDecoded, type OtlpResponse, protobufResponse } from "../otlp-signals.js";
import { invalidProtobuf } from "../otlp-wire.js";
import { deliverSliced } from "../slices.js";
import { otlpLogs, otlpMetrics } from "./ingestion-api.js";
import { INLINE_JSON_BYTES, otlpBody } from "./otlp-traces.js";
import { INLINE_DECODED_BYTES } from "./remote-write.js";
import { guardedOptions, type NamedRoute, streamTargets } from "./request.js";

/** What the metrics and logs routes need. */
export interface OtlpSignalsOptions {
  readonly engine: StreamEngine;
  /** Largest body, compressed or decompressed, in bytes. */
  readonly bodyLimit: number;
  /** `otlp_data_points_total{stream}`. */
  readonly dataPoints: CounterByName;
  /** `otlp_log_records_total{stream}`. */
  readonly logRecords: CounterByName;
  readonly guard: preHandlerHookHandler | undefined;
}

/** One signal: its path, what it decodes, how it answers. */
interface Signal {
  /** `metrics` or `logs`: the path's last part before the stream name, and in messages. */
  readonly name: string;
  /** What one item is called in the partial success message: `data points`, `log records`. */
  readonly items: string;
  readonly response: OtlpResponse;
  readonly openapi: RouteDescription;
  /** What the OTLP/JSON mapping reads, for a large body's skeleton. */
  readonly patterns: Patterns;
  readonly json: (request: Record<string, unknown>, bounds: EventBounds) => Iterable<Event | EventBound>;
  /** A decoder of protobuf bodies (one per request: they are not reentrant). */
  readonly protobuf: (bounds: EventBounds) => { events(body: Uint8Array): Iterable<Event | EventBound> };
  readonly counter: CounterByName;
}

/** Why items were dropped, for the partial success: each bound exceeded and how many. */
function refusalMessage(refused: Map<EventBound, number>, bounds: EventBounds, items: string): string {
  const reasons = [...refused].map(
    ([bound, count]) => `${count} ${items} dropped: the event ${boundProblem(bound, bounds)}`,
  );
  return reasons.join("; ");
}

function signalRoute(app: FastifyInstance, options: OtlpSignalsOptions, signal: Signal): void {
  const { engine, bodyLimit } = options;
  const path = `/api/v1/opentelemetry/v1/${signal.name}/:name`;
  const routeOptions = { ...guardedOptions(bodyLimit, options.guard), config: { openapi: signal.openapi } };
  app.post<NamedRoute>(path, routeOptions, async (request, reply) => {
    const { name } = request.params;
    const streams = streamTargets(engine, name);
    const body = await otlpBody(request, bodyLimit, signal.name);
    const json = (request.headers["content-type"] ?? "").toLowerCase().startsWith("application/json");
    const bounds = engine.limits.event;
    let decoded: OtlpDecoded;
    try {
      const large = body.length > (json ? INLINE_JSON_BYTES : INLINE_DECODED_BYTES);
      let items: Iterable<Event | EventBound>;
      if (!json) items = signal.protobuf(bounds).events(body);
      else if (large) items = signal.json(await jsonSkeleton(body, signal.patterns, bounds), bounds);
      else items = signal.json(parseJsonRequest(body.toString("utf8")), bounds);
      decoded = await collectEvents(items, bounds, large, Date.now() / 1000);
    } catch (error) {
      const invalid = invalidProtobuf(error);
      if (invalid instanceof OtlpError) {
        throw new InvalidError(`invalid OTLP ${signal.name} request: ${invalid.message}`);
      }
      throw invalid;
    }
    const { events, refused } = decoded;
    let rejected = 0;
    for (const [bound, count] of refused) {
      engine.refuse(name, "otlp", bound, count);
      rejected += count;
    }
    const pending = deliverSliced(engine, streams, events);
    if (pending !== undefined) await pending;
    signal.counter(name).inc(events.length);
    const message = rejected === 0 ? "" : refusalMessage(refused, bounds, signal.items);
    if (json)
      return reply
        .code(200)
        .type("application/json")
        .send(jsonResponse(signal.response, rejected, message));
    return reply
      .code(200)
      .type("application/x-protobuf")
      .send(protobufResponse(signal.response, rejected, message));
  });
}

/** Registers the metrics and logs routes. */
export function otlpSignalRoutes(app: FastifyInstance, options: OtlpSignalsOptions): void {
  signalRoute(app, options, {
    name: "metrics",
    items: "data points",
    response: METRICS_RESPONSE,
    openapi: otlpMetrics,
    json: metricEventsOfJson,
    patterns: METRICS_PATTERNS,
    protobuf: (bounds) => new OtlpMetricsDecoder(bounds),
    counter: options.dataPoints,
  });
  signalRoute(app, options, {
    name: "logs",
    items: "log records",
    response: LOGS_RESPONSE,
    openapi: otlpLogs,
    json: logEventsOfJson,
    patterns: LOGS_PATTERNS,
    protobuf: (bounds) => new OtlpLogsDecoder(bounds),
    counter: options.logRecords,
  });
}
