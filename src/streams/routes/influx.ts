/**
 * The InfluxDB line protocol routes (docs/inputs.md): `POST /api/v1/influx/write?db=<stream>`, the
 * path InfluxDB 1.x clients (Telegraf's `[[outputs.influxdb]]`) write to under a base URL, and
 * `POST /api/v1/influx/api/v2/write?bucket=<stream>` (InfluxDB 2.x clients, Telegraf's
 * `[[outputs.influxdb_v2]]`). `precision` (`ns` by default, `us`, `ms`, `s`, and 1.x's `n`, `u`,
 * `m`, `h`) is the unit of the timestamps. Without `db`/`bucket` the events go to the default
 * streams; an unknown stream is a 404 before the body is decoded.
 *
 * Each field of each line becomes an event (influx-line.ts). As InfluxDB does, the valid lines of
 * a body are written even when others are malformed; the answer is then a 400 naming the first
 * malformed line and how many there were. 204 otherwise. The body is any content type (Telegraf
 * says `text/plain`), plain or gzipped (`Content-Encoding: gzip`), at most
 * `streams.ingestion-body-limit` bytes, compressed or not. A large body is read a slice per turn of
 * the event loop, and its events pushed a chunk per turn. With `security.require-token`, both
 * take a token as every API route does; the 2.x path also reads `Authorization: Token <token>`,
 * the scheme of InfluxDB 2.x clients.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from "fastify";
import { InvalidError } from "../../platform/errors.js";
import type { RouteDescription } from "../../platform/openapi.js";
import { queryError, queryOf, queryString } from "../../platform/query.js";
import type { StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import { withinBounds } from "../event-bounds.js";
import { LineProtocolReader, PRECISIONS } from "../influx-line.js";
import type { InfluxMetrics } from "../metrics.js";
import { DEFAULT_STREAM } from "../names.js";
import { deliverSliced, TurnClock } from "../slices.js";
import { decodedBody, streamTargets } from "./request.js";

/** Lines read between two looks at the clock. */
const LINES_PER_CHECK = 256;

/** What the routes need. */
export interface InfluxRoutesOptions {
  readonly engine: StreamEngine;
  /** Largest body, compressed or decompressed, in bytes (`streams.ingestion-body-limit`). */
  readonly bodyLimit: number;
  readonly metrics: InfluxMetrics;
  readonly guard: preHandlerHookHandler | undefined;
}

const PRECISION_RULE = `must be one of ${Object.keys(PRECISIONS).join(", ")}`;

function describe(version: 1 | 2): RouteDescription {
  const stream = {
    type: "string",
    description: "the stream that receives the events; default: the default streams",
  } as const;
  return {
    summary: `InfluxDB ${version}.x line protocol write: one event per field of each line`,
    body: {
      mediaType: "text/plain",
      schema: { type: "string", description: "lines of InfluxDB line protocol; any content type is read as such" },
    },
    example: "cpu,host=web-1,cpu=cpu0 usage_user=12.5,usage_system=3i 1700000000000000000\n",
    query: {
      ...(version === 1 ? { db: stream } : { bucket: stream, org: { type: "string", description: "ignored" } }),
      precision: { type: "string", enum: Object.keys(PRECISIONS), default: "ns" },
    },
    headers: {
      "Content-Encoding": { enum: ["identity", "gzip"], default: "identity", description: "gzip: the body is gzipped" },
    },
    success: { status: 204, description: "every line was written" },
    // 404: the stream named by db or bucket does not exist; 503: in a cluster, an owner is unreachable.
    errors: [404, 503],
  };
}

/**
 * The body as text (at once when it is not compressed), gunzipped when it says so.
 * @throws UnsupportedMediaTypeError for an encoding other than gzip; TooLargeError when it gunzips to
 *   more than `bodyLimit`; InvalidError when it is not gzip
 */
function bodyText(request: FastifyRequest, bodyLimit: number): string | Promise<string> {
  const body = request.body instanceof Buffer ? request.body : Buffer.alloc(0);
  const decoded = decodedBody(request, body, bodyLimit);
  return decoded instanceof Promise ? decoded.then((bytes) => bytes.toString("utf8")) : decoded.toString("utf8");
}

/** `Authorization: Token <token>` (InfluxDB 2.x's scheme) as `Bearer <token>`, for the API guard. */
const tokenScheme: preHandlerHookHandler = (request, _reply, done) => {
  const header = request.headers.authorization;
  if (header !== undefined && /^token\s/i.test(header)) request.headers.authorization = `Bearer ${header.slice(6)}`;
  done();
};

/** Registers both write routes, in a context of their own that reads every body as raw bytes. */
export async function influxRoutes(app: FastifyInstance, options: InfluxRoutesOptions): Promise<void> {
  const { engine, bodyLimit, metrics } = options;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit }, (_request, body, done) => done(null, body));

  const write = async (request: FastifyRequest, reply: FastifyReply, streamParameter: "db" | "bucket") => {
    const query = queryOf(request.query);
    const name = queryString(query, streamParameter) || DEFAULT_STREAM;
    const precision = queryString(query, "precision") ?? "ns";
    const unit = PRECISIONS[precision];
    if (unit === undefined || !Object.hasOwn(PRECISIONS, precision)) throw queryError("precision", PRECISION_RULE);
    const streams = streamTargets(engine, name);
    const body = bodyText(request, bodyLimit);
    const text = typeof body === "string" ? body : await body;
    const reader = new LineProtocolReader(text, unit, Date.now() / 1000);
    const events: Event[] = [];
    const emit = (event: Event) => events.push(event);
    const clock = new TurnClock();
    while (!reader.read(LINES_PER_CHECK, emit)) if (clock.due()) await clock.turn();
    const admitted = withinBounds(events, engine.limits.event, (bound) => engine.refuse(name, "influx", bound));
    const pending = deliverSliced(engine, streams, admitted);
    if (pending !== undefined) await pending;
    metrics("ok", reader.lines);
    const error = reader.firstError;
    if (error === undefined) return reply.code(204).send();
    metrics("malformed", reader.malformed);
    const others = reader.malformed - 1;
    throw new InvalidError(
      `invalid line protocol: ${error.message}${others > 0 ? ` (and ${others} more malformed lines)` : ""}; the valid lines were written`,
    );
  };
  const guard = options.guard;
  const routeOptions = (version: 1 | 2) => ({
    bodyLimit,
    config: { openapi: describe(version) },
    // InfluxDB 2.x clients send their token as `Authorization: Token <token>`: read as Bearer.
    ...(guard === undefined ? {} : { preHandler: version === 1 ? [guard] : [tokenScheme, guard] }),
  });
  app.post("/api/v1/influx/write", routeOptions(1), (request, reply) => write(request, reply, "db"));
  app.post("/api/v1/influx/api/v2/write", routeOptions(2), (request, reply) => write(request, reply, "bucket"));
}
