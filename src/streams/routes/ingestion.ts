/**
 * Ingestion routes of the streams module: Prometheus remote write (streams.md §8) and OTLP/HTTP
 * traces (§9). Registered in their own Fastify context, because they read raw bodies (protobuf,
 * snappy, gzip) where the rest of Vigie reads JSON.
 *
 * Every event is held to the event bounds (`streams.max-event-*`): a sample of a series, or a
 * span, beyond one is dropped and counted in `stream_dropped_events_total{stream,action,reason}`
 * (action `remote-write` or `otlp`), and the others are pushed. A small body is decoded at once; a
 * large one is decompressed off the event loop and decoded a slice per turn of it, and the events
 * of a large request are pushed a chunk per turn (slices.ts).
 */
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from "fastify";
import { uncompress, uncompressSync } from "snappy";
import { HttpError } from "../../platform/errors.js";
import type { Stream, StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import { type EventBound, exceededBound } from "../event-bounds.js";
import type { IngestionCounters } from "../metrics.js";
import { DEFAULT_STREAM } from "../names.js";
import { decodeJsonTraces, EMPTY_PROTOBUF_RESPONSE, OtlpError } from "../otlp.js";
import { decodeLargeJsonTraces } from "../otlp-json.js";
import { OtlpProtobufDecoder } from "../otlp-protobuf.js";
import { type RefusedSamples, RemoteWriteDecoder, RemoteWriteError } from "../remote-write-decoder.js";
import { deliverSliced } from "../slices.js";

const gunzipAsync = promisify(gunzip);

/**
 * Decoded bodies up to this many bytes are decoded at once (a few milliseconds at worst); larger
 * ones are decompressed off the event loop and decoded a slice per turn of it.
 */
export const INLINE_DECODED_BYTES = 256 * 1024;

/** OTLP/JSON bodies up to this many bytes are parsed at once (as pushes are, push.ts). */
const INLINE_JSON_BYTES = 64 * 1024;

/** What the ingestion routes need. */
export interface IngestionOptions {
  readonly engine: StreamEngine;
  readonly counters: IngestionCounters;
  /** Largest body, compressed or decompressed, in bytes. */
  readonly bodyLimit: number;
  readonly guard: preHandlerHookHandler | undefined;
}

/**
 * The uncompressed length a snappy block announces (its varint preamble), or `undefined` when the
 * preamble is malformed (https://github.com/google/snappy/blob/main/format_description.txt).
 */
export function snappyUncompressedLength(block: Uint8Array): number | undefined {
  let length = 0;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const byte = block[i] as number;
    length += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return length;
  }
  return undefined;
}

/** Registers the remote-write and OTLP routes. */
export async function ingestionRoutes(app: FastifyInstance, options: IngestionOptions): Promise<void> {
  const { engine, bodyLimit, guard } = options;
  const { samples, spans } = options.counters;
  const decoder = new RemoteWriteDecoder(engine.limits.event);
  const otlpDecoder = new OtlpProtobufDecoder(engine.limits.event);

  // Raw bodies: Buffers for protobuf and, on these routes only, for JSON (OTLP/JSON may be gzipped).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ["application/x-protobuf", "application/json"],
    { parseAs: "buffer", bodyLimit },
    (_request, body, done) => done(null, body),
  );

  /** The streams a request names, looked up again before each chunk of a large push. */
  const targets = (name: string) => {
    const lookUp = (): readonly Stream[] => {
      if (name === DEFAULT_STREAM) return engine.defaults;
      const stream = engine.get(name);
      if (stream === undefined) throw new HttpError(404, `stream ${name} not found`);
      return [stream];
    };
    lookUp(); // an unknown stream is a 404 before the body is decoded
    return lookUp;
  };

  // Synchronous handler for the usual request: no promise between the body and the streams on
  // this hot path. A large one is decompressed off the event loop and decoded in slices.
  const remoteWrite = (request: FastifyRequest, reply: FastifyReply) => {
    const { name } = request.params as { name: string };
    const streams = targets(name);
    const contentType = request.headers["content-type"] ?? "";
    if (/proto\s*=\s*io\.prometheus\.write\.v2/i.test(contentType)) {
      throw new HttpError(
        415,
        "remote write 2.0 is not supported; configure Prometheus with protobuf_message: prometheus.WriteRequest",
      );
    }
    const body = request.body;
    if (!(body instanceof Buffer)) throw new HttpError(415, "remote write needs Content-Type: application/x-protobuf");
    const length = snappyUncompressedLength(body);
    if (length === undefined) throw new HttpError(400, "invalid remote write body: not a snappy block");
    if (length > bodyLimit) {
      throw new HttpError(413, `decompressed request body is larger than the limit of ${bodyLimit} bytes`);
    }
    if (length > INLINE_DECODED_BYTES) return remoteWriteSliced(name, streams, body, reply);
    let raw: Buffer;
    try {
      raw = uncompressSync(body) as Buffer;
    } catch (error) {
      throw new HttpError(400, `invalid remote write body: ${(error as Error).message}`);
    }
    const events: Event[] = [];
    try {
      decoder.decode(raw, (event) => events.push(event));
    } catch (error) {
      if (error instanceof RemoteWriteError) throw new HttpError(400, `invalid remote write body: ${error.message}`);
      throw error;
    }
    return afterDecoding(name, streams, events, decoder.refused, reply);
  };

  /** A large remote write: decompressed off the event loop, decoded a slice per turn. */
  const remoteWriteSliced = async (
    name: string,
    streams: () => readonly Stream[],
    body: Buffer,
    reply: FastifyReply,
  ) => {
    let raw: Buffer;
    try {
      raw = (await uncompress(body, { asBuffer: true })) as Buffer;
    } catch (error) {
      throw new HttpError(400, `invalid remote write body: ${(error as Error).message}`);
    }
    const events: Event[] = [];
    // A decoder of its own: the shared one is not reentrant, and this request awaits.
    const own = new RemoteWriteDecoder(engine.limits.event);
    try {
      await own.decodeSliced(raw, (event) => events.push(event));
    } catch (error) {
      if (error instanceof RemoteWriteError) throw new HttpError(400, `invalid remote write body: ${error.message}`);
      throw error;
    }
    return afterDecoding(name, streams, events, own.refused, reply);
  };

  /** Counts what was refused, pushes the events (in slices when many) and answers 204. */
  const afterDecoding = (
    name: string,
    streams: () => readonly Stream[],
    events: Event[],
    refused: RefusedSamples,
    reply: FastifyReply,
  ) => {
    for (const [bound, count] of refused) engine.refuse(name, "remote-write", bound, count);
    // In cluster mode, events for a stream owned elsewhere are answered once its owner has them.
    const pending = deliverSliced(engine, streams, events);
    if (pending !== undefined) {
      return pending.then(() => {
        samples(name).inc(events.length);
        return reply.code(204).send();
      });
    }
    samples(name).inc(events.length);
    reply.code(204).send();
  };
  // The route's own limit too, so that a 413 names the limit that applied.
  const remoteWriteOptions = guard === undefined ? { bodyLimit } : { bodyLimit, preHandler: guard };
  app.post("/api/v1/tsdb/remote-write/:name", remoteWriteOptions, remoteWrite);
  app.post("/api/v1/prometheus/remote-write/:name", remoteWriteOptions, remoteWrite);

  /** OTLP/JSON: a small body parsed at once, a large one scanned a slice per turn (otlp-json.ts). */
  const jsonTraces = async (body: Buffer, refused: Map<EventBound, number>): Promise<Event[]> => {
    if (body.length > INLINE_JSON_BYTES) return decodeLargeJsonTraces(body, engine.limits.event, refused);
    const events: Event[] = [];
    for (const event of decodeJsonTraces(body.toString("utf8"))) {
      const bound = exceededBound(event, engine.limits.event);
      if (bound === undefined) events.push(event);
      else refused.set(bound, (refused.get(bound) ?? 0) + 1);
    }
    return events;
  };

  /** OTLP protobuf: decoded span by span, a large body a slice per turn (otlp-protobuf.ts). */
  const protobufTraces = async (body: Buffer, refused: Map<EventBound, number>): Promise<Event[]> => {
    const events: Event[] = [];
    const emit = (event: Event) => events.push(event);
    if (body.length > INLINE_DECODED_BYTES) {
      const own = new OtlpProtobufDecoder(engine.limits.event); // not reentrant: one per sliced request
      await own.decodeSliced(body, emit);
      for (const [bound, count] of own.refused) refused.set(bound, count);
    } else {
      otlpDecoder.decode(body, emit);
      for (const [bound, count] of otlpDecoder.refused) refused.set(bound, count);
    }
    return events;
  };

  app.post("/api/v1/opentelemetry/v1/traces/:name", remoteWriteOptions, async (request, reply) => {
    const { name } = request.params as { name: string };
    const streams = targets(name);
    let body = request.body;
    if (!(body instanceof Buffer)) {
      throw new HttpError(415, "OTLP traces need Content-Type application/x-protobuf or application/json");
    }
    const encoding = (request.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding === "gzip") {
      try {
        body = await gunzipAsync(body, { maxOutputLength: bodyLimit });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ERR_BUFFER_TOO_LARGE") {
          throw new HttpError(413, `decompressed request body is larger than the limit of ${bodyLimit} bytes`);
        }
        throw new HttpError(400, `invalid gzip body: ${(error as Error).message}`);
      }
    } else if (encoding !== "identity") {
      throw new HttpError(415, `unsupported Content-Encoding ${encoding}; use gzip or none`);
    }
    const json = (request.headers["content-type"] ?? "").toLowerCase().startsWith("application/json");
    const refused = new Map<EventBound, number>();
    let events: Event[];
    try {
      events = json ? await jsonTraces(body as Buffer, refused) : await protobufTraces(body as Buffer, refused);
    } catch (error) {
      if (error instanceof OtlpError) throw new HttpError(400, `invalid OTLP traces request: ${error.message}`);
      throw error;
    }
    for (const [bound, count] of refused) engine.refuse(name, "otlp", bound, count);
    const pending = deliverSliced(engine, streams, events);
    if (pending !== undefined) await pending;
    spans(name).inc(events.length);
    // An empty ExportTraceServiceResponse, in the request's encoding (OTLP/HTTP).
    if (json) return reply.code(200).type("application/json").send("{}");
    return reply.code(200).type("application/x-protobuf").send(EMPTY_PROTOBUF_RESPONSE);
  });
}
