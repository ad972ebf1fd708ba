/**
 * Ingestion routes of the streams module: Prometheus remote write (streams.md §8) and OTLP/HTTP
 * traces (§9). Registered in their own Fastify context, because they read raw bodies (protobuf,
 * snappy, gzip) where the rest of Vigie reads JSON.
 */
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from "fastify";
import { uncompressSync } from "snappy";
import { HttpError } from "../../platform/errors.js";
import type { Stream, StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import type { IngestionCounters } from "../metrics.js";
import { DEFAULT_STREAM } from "../names.js";
import { decodeJsonTraces, decodeProtobufTraces, EMPTY_PROTOBUF_RESPONSE, OtlpError } from "../otlp.js";
import { RemoteWriteDecoder, RemoteWriteError } from "../remote-write-decoder.js";

const gunzipAsync = promisify(gunzip);

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
  const decoder = new RemoteWriteDecoder();

  // Raw bodies: Buffers for protobuf and, on these routes only, for JSON (OTLP/JSON may be gzipped).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ["application/x-protobuf", "application/json"],
    { parseAs: "buffer", bodyLimit },
    (_request, body, done) => done(null, body),
  );

  const targets = (name: string): readonly Stream[] => {
    if (name === DEFAULT_STREAM) return engine.defaults;
    const stream = engine.get(name);
    if (stream === undefined) throw new HttpError(404, `stream ${name} not found`);
    return [stream];
  };

  // Synchronous handler: no promise between the body and the streams on this hot path.
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
    // In cluster mode, events for a stream owned elsewhere are answered once its owner has them.
    const forwarded = engine.deliver(streams, events);
    if (forwarded !== undefined) {
      return forwarded.then(() => {
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
    let events: Event[];
    try {
      events = json ? decodeJsonTraces((body as Buffer).toString("utf8")) : decodeProtobufTraces(body as Buffer);
    } catch (error) {
      if (error instanceof OtlpError) throw new HttpError(400, `invalid OTLP traces request: ${error.message}`);
      throw error;
    }
    const forwarded = engine.deliver(streams, events);
    if (forwarded !== undefined) await forwarded;
    spans(name).inc(events.length);
    // An empty ExportTraceServiceResponse, in the request's encoding (OTLP/HTTP).
    if (json) return reply.code(200).type("application/json").send("{}");
    return reply.code(200).type("application/x-protobuf").send(EMPTY_PROTOBUF_RESPONSE);
  });
}
