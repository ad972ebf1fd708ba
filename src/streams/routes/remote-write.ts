/**
 * The Prometheus remote write routes (docs/streams.md): `POST /api/v1/tsdb/remote-write/<name>`
 * and `/api/v1/prometheus/remote-write/<name>`, a snappy block of a protobuf `WriteRequest`.
 *
 * The usual request is handled synchronously: no promise between the body and the streams on this
 * hot path. A block announcing more than {@link INLINE_DECODED_BYTES} is decompressed off the event
 * loop and decoded a slice per turn of it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from "fastify";
import type * as Snappy from "snappy";
import { errorMessage, InvalidError, TooLargeError, UnsupportedMediaTypeError } from "../../platform/errors.js";
import { lazyLibrary } from "../../platform/lazy.js";
import type { Stream, StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import type { IngestionCounters } from "../metrics.js";
import { type RefusedSamples, RemoteWriteDecoder, RemoteWriteError } from "../remote-write-decoder.js";
import { deliverSliced } from "../slices.js";
import * as api from "./ingestion-api.js";
import { guardedOptions, type NamedRoute, streamTargets } from "./request.js";

/** snappy, loaded with the first remote write (a native addon: start-up skips it). */
const snappy = lazyLibrary<typeof Snappy>("snappy");

/**
 * Decoded bodies up to this many bytes are decoded at once (a few milliseconds at worst); larger
 * ones are decompressed off the event loop and decoded a slice per turn of it.
 */
export const INLINE_DECODED_BYTES = 256 * 1024;

/** What the remote write handler needs. */
export interface RemoteWriteOptions {
  readonly engine: StreamEngine;
  /** Largest body, compressed or decompressed, in bytes. */
  readonly bodyLimit: number;
  /** `remote_write_samples_total{stream}`. */
  readonly samples: IngestionCounters["samples"];
  readonly guard: preHandlerHookHandler | undefined;
}

/**
 * The uncompressed length a snappy block announces (its varint preamble), or `undefined` when the
 * preamble is malformed (https://github.com/google/snappy/blob/main/format_description.txt).
 */
export function snappyUncompressedLength(block: Uint8Array): number | undefined {
  let length = 0;
  for (const [i, byte] of block.subarray(0, 5).entries()) {
    length += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return length;
  }
  return undefined;
}

const INVALID_BODY = "invalid remote write body";

/** snappy answers a Buffer when asked to (`asBuffer`), typed as `string | Buffer`. */
function bytesOf(value: string | Buffer): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value);
}

/**
 * The snappy block of a request, checked before it is decompressed.
 * @throws UnsupportedMediaTypeError for remote write 2.0 or a body that is not protobuf;
 *   InvalidError when it is not a snappy block; TooLargeError when it announces more than `bodyLimit`
 */
function snappyBlock(request: FastifyRequest, bodyLimit: number): { body: Buffer; length: number } {
  const contentType = request.headers["content-type"] ?? "";
  if (/proto\s*=\s*io\.prometheus\.write\.v2/i.test(contentType)) {
    throw new UnsupportedMediaTypeError(
      "remote write 2.0 is not supported; configure Prometheus with protobuf_message: prometheus.WriteRequest",
    );
  }
  const body = request.body;
  if (!(body instanceof Buffer))
    throw new UnsupportedMediaTypeError("remote write needs Content-Type: application/x-protobuf");
  const length = snappyUncompressedLength(body);
  if (length === undefined) throw new InvalidError(`${INVALID_BODY}: not a snappy block`);
  if (length > bodyLimit) {
    throw new TooLargeError(`decompressed request body is larger than the limit of ${bodyLimit} bytes`);
  }
  return { body, length };
}

/** A {@link RemoteWriteError} as the 400 it answers; any other error as it is. */
function refusal(error: unknown): unknown {
  return error instanceof RemoteWriteError ? new InvalidError(`${INVALID_BODY}: ${error.message}`) : error;
}

/** Registers both remote write routes (the same handler). */
export function remoteWriteRoutes(app: FastifyInstance, options: RemoteWriteOptions): void {
  const { engine, bodyLimit, samples } = options;
  const decoder = new RemoteWriteDecoder(engine.limits.event);

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

  /** A large remote write: decompressed off the event loop, decoded a slice per turn. */
  const sliced = async (name: string, streams: () => readonly Stream[], body: Buffer, reply: FastifyReply) => {
    let raw: Buffer;
    try {
      raw = bytesOf(await snappy().uncompress(body, { asBuffer: true }));
    } catch (error) {
      throw new InvalidError(`${INVALID_BODY}: ${errorMessage(error)}`);
    }
    const events: Event[] = [];
    // A decoder of its own, the shared one not being reentrant (this request awaits), with its caches.
    const own = decoder.fork();
    try {
      await own.decodeSliced(raw, (event) => events.push(event));
    } catch (error) {
      throw refusal(error);
    }
    return afterDecoding(name, streams, events, own.refused, reply);
  };

  const remoteWrite = (request: FastifyRequest<NamedRoute>, reply: FastifyReply) => {
    const { name } = request.params;
    const streams = streamTargets(engine, name);
    const { body, length } = snappyBlock(request, bodyLimit);
    if (length > INLINE_DECODED_BYTES) return sliced(name, streams, body, reply);
    let raw: Buffer;
    try {
      raw = bytesOf(snappy().uncompressSync(body));
    } catch (error) {
      throw new InvalidError(`${INVALID_BODY}: ${errorMessage(error)}`);
    }
    const events: Event[] = [];
    try {
      decoder.decode(raw, (event) => events.push(event));
    } catch (error) {
      throw refusal(error);
    }
    return afterDecoding(name, streams, events, decoder.refused, reply);
  };
  // The route's own limit too, so that a 413 names the limit that applied.
  const routeOptions = { ...guardedOptions(bodyLimit, options.guard), config: { openapi: api.remoteWrite } };
  app.post<NamedRoute>("/api/v1/tsdb/remote-write/:name", routeOptions, remoteWrite);
  app.post<NamedRoute>("/api/v1/prometheus/remote-write/:name", routeOptions, remoteWrite);
}
