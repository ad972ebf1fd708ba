/**
 * The OTLP/HTTP traces route (docs/streams.md): `POST /api/v1/opentelemetry/v1/traces/<name>`, an
 * `ExportTraceServiceRequest` as protobuf or JSON, plain or gzipped. Each span becomes an event;
 * the answer is an empty `ExportTraceServiceResponse` in the request's encoding.
 */
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from "fastify";
import { InvalidError, UnsupportedMediaTypeError } from "../../platform/errors.js";
import type { StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import type { EventBounds } from "../event-bounds.js";
import { type EventBound, exceededBound } from "../event-bounds.js";
import type { IngestionCounters } from "../metrics.js";
import { decodeJsonTraces, EMPTY_PROTOBUF_RESPONSE, OtlpError } from "../otlp.js";
import { decodeLargeJsonTraces } from "../otlp-json.js";
import { OtlpProtobufDecoder } from "../otlp-protobuf.js";
import { deliverSliced } from "../slices.js";
import { otlpTraces } from "./ingestion-api.js";
import { INLINE_DECODED_BYTES } from "./remote-write.js";
import { decodedBody, guardedOptions, type NamedRoute, streamTargets } from "./request.js";

/** OTLP/JSON bodies up to this many bytes are parsed at once (as pushes are, push.ts). */
export const INLINE_JSON_BYTES = 64 * 1024;

/** What the traces route needs. */
export interface OtlpTracesOptions {
  readonly engine: StreamEngine;
  /** Largest body, compressed or decompressed, in bytes. */
  readonly bodyLimit: number;
  /** `otlp_spans_total{stream}`. */
  readonly spans: IngestionCounters["spans"];
  readonly guard: preHandlerHookHandler | undefined;
}

/** Dropped spans, by the bound they exceeded. */
type Refused = Map<EventBound, number>;

/** OTLP/JSON: a small body parsed at once, a large one scanned a slice per turn (otlp-json.ts). */
async function jsonTraces(body: Buffer, bounds: EventBounds, refused: Refused): Promise<Event[]> {
  if (body.length > INLINE_JSON_BYTES) return decodeLargeJsonTraces(body, bounds, refused);
  const events: Event[] = [];
  for (const event of decodeJsonTraces(body.toString("utf8"))) {
    const bound = exceededBound(event, bounds);
    if (bound === undefined) events.push(event);
    else refused.set(bound, (refused.get(bound) ?? 0) + 1);
  }
  return events;
}

/**
 * The body of an OTLP request (traces, metrics, logs), gunzipped when it says so.
 * @param signal what the route takes, for messages: `traces`, `metrics`, `logs`
 * @throws UnsupportedMediaTypeError for a body of another type, or an encoding other than gzip;
 *   TooLargeError when it gunzips to more than `bodyLimit`; InvalidError when it is not gzip
 */
export async function otlpBody(request: FastifyRequest, bodyLimit: number, signal: string): Promise<Buffer> {
  const body = request.body;
  if (!(body instanceof Buffer)) {
    throw new UnsupportedMediaTypeError(`OTLP ${signal} need Content-Type application/x-protobuf or application/json`);
  }
  return decodedBody(request, body, bodyLimit);
}

/** Registers the traces route. */
export function otlpTracesRoute(app: FastifyInstance, options: OtlpTracesOptions): void {
  const { engine, bodyLimit, spans } = options;
  const decoder = new OtlpProtobufDecoder(engine.limits.event);

  /** OTLP protobuf: decoded span by span, a large body a slice per turn (otlp-protobuf.ts). */
  const protobufTraces = async (body: Buffer, refused: Refused): Promise<Event[]> => {
    const events: Event[] = [];
    const emit = (event: Event) => events.push(event);
    if (body.length > INLINE_DECODED_BYTES) {
      const own = new OtlpProtobufDecoder(engine.limits.event); // not reentrant: one per sliced request
      await own.decodeSliced(body, emit);
      for (const [bound, count] of own.refused) refused.set(bound, count);
    } else {
      decoder.decode(body, emit);
      for (const [bound, count] of decoder.refused) refused.set(bound, count);
    }
    return events;
  };

  /** The spans of a body as events, those beyond a bound counted in `refused`. */
  const decode = async (body: Buffer, json: boolean, refused: Refused): Promise<Event[]> => {
    try {
      return json ? await jsonTraces(body, engine.limits.event, refused) : await protobufTraces(body, refused);
    } catch (error) {
      if (error instanceof OtlpError) throw new InvalidError(`invalid OTLP traces request: ${error.message}`);
      throw error;
    }
  };

  const path = "/api/v1/opentelemetry/v1/traces/:name";
  const routeOptions = { ...guardedOptions(bodyLimit, options.guard), config: { openapi: otlpTraces } };
  app.post<NamedRoute>(path, routeOptions, async (request, reply) => {
    const { name } = request.params;
    const streams = streamTargets(engine, name);
    const body = await otlpBody(request, bodyLimit, "traces");
    const json = (request.headers["content-type"] ?? "").toLowerCase().startsWith("application/json");
    const refused: Refused = new Map();
    const events = await decode(body, json, refused);
    for (const [bound, count] of refused) engine.refuse(name, "otlp", bound, count);
    const pending = deliverSliced(engine, streams, events);
    if (pending !== undefined) await pending;
    spans(name).inc(events.length);
    // An empty ExportTraceServiceResponse, in the request's encoding (OTLP/HTTP).
    if (json) return reply.code(200).type("application/json").send("{}");
    return reply.code(200).type("application/x-protobuf").send(EMPTY_PROTOBUF_RESPONSE);
  });
}
