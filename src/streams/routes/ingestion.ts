/**
 * Ingestion routes of the streams module (docs/streams.md): Prometheus remote write
 * (remote-write.ts), OTLP/HTTP traces (otlp-traces.ts), metrics and logs (otlp-signals.ts). Registered in their own Fastify context,
 * because they read raw bodies (protobuf, snappy, gzip) where the rest of Vigie reads JSON.
 *
 * Every event is held to the event bounds (`streams.max-event-*`): a sample of a series, or a
 * span, data point or log record, beyond one is dropped and counted in `stream_dropped_events_total{stream,action,reason}`
 * (action `remote-write` or `otlp`), and the others are pushed. A small body is decoded at once; a
 * large one is decompressed off the event loop and decoded a slice per turn of it, and the events
 * of a large request are pushed a chunk per turn (slices.ts).
 */
import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import type { StreamEngine } from "../engine.js";
import type { IngestionCounters } from "../metrics.js";
import { otlpSignalRoutes } from "./otlp-signals.js";
import { otlpTracesRoute } from "./otlp-traces.js";
import { remoteWriteRoutes } from "./remote-write.js";

/** What the ingestion routes need. */
export interface IngestionOptions {
  readonly engine: StreamEngine;
  readonly counters: IngestionCounters;
  /** Largest body, compressed or decompressed, in bytes. */
  readonly bodyLimit: number;
  readonly guard: preHandlerHookHandler | undefined;
}

/** Registers the remote-write and OTLP routes. */
export async function ingestionRoutes(app: FastifyInstance, options: IngestionOptions): Promise<void> {
  const { engine, bodyLimit, guard } = options;
  // Raw bodies: Buffers for protobuf and, on these routes only, for JSON (OTLP/JSON may be gzipped).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ["application/x-protobuf", "application/json"],
    { parseAs: "buffer", bodyLimit },
    (_request, body, done) => done(null, body),
  );
  remoteWriteRoutes(app, { engine, bodyLimit, samples: options.counters.samples, guard });
  otlpTracesRoute(app, { engine, bodyLimit, spans: options.counters.spans, guard });
  const { dataPoints, logRecords } = options.counters;
  otlpSignalRoutes(app, { engine, bodyLimit, dataPoints, logRecords, guard });
}
