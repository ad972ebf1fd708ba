/**
 * The ping routes of heartbeat checks (docs/healthchecks.md, "Heartbeat checks"): public, without
 * a token (the key is the capability), GET, POST and HEAD on `/ping/<key>`,
 * `/ping/<key>/<start|fail|log|0-255>`, with an optional `?rid=<uuid>`. Answers are plain text for
 * curl and wget: `200 OK`, `404 not found` (the same for a key that never existed and a deleted
 * one), `429` with `Retry-After`. Any body of any media type is read as bytes, its first 100 KiB
 * kept and the rest read and dropped (never a 413 nor a 415); `503` when a ping received for
 * another instance could not be stored for it. No Origin refusal: only the Host
 * rule of every route applies (curl sends no Origin; a key is all a ping needs anyway).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { RouteDescription } from "../../platform/openapi.js";
import { bodyText, isRid, MAX_PING_BODY_BYTES, signalOf } from "./pings.js";
import type { ModuleHeartbeats, PingAnswer } from "./wiring.js";

const TEXT = "text/plain; charset=utf-8";

/** The media type every ping body is read as, whatever the client sent (or did not send). */
const RAW = "application/octet-stream";

const ANSWER = { type: "string" } as const;

/** What the ping routes say of themselves in `GET /openapi.json`. */
function description(summary: string): RouteDescription {
  return {
    summary,
    security: "none",
    body: {
      mediaType: "*/*",
      schema: { type: "string", description: "kept as the result message (100 KiB at most, the rest dropped)" },
    },
    query: { rid: { type: "string", format: "uuid", description: "pairs a start with its end when runs overlap" } },
    success: { mediaType: "text/plain", schema: ANSWER, description: "OK" },
    errors: [400, 404, 429, 503],
  };
}

const PING = description("report a heartbeat's success (the key is the capability; no token)");
const PING_SIGNAL = description(
  "report a heartbeat's start, failure, log line or exit status (0 success, 1-255 failure)",
);

/**
 * Reads a request body as at most {@link MAX_PING_BODY_BYTES} bytes: the rest is read and dropped,
 * so that a job whose output is longer than that still reports.
 */
function readBounded(payload: NodeJS.ReadableStream, done: (error: Error | null, body?: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let kept = 0;
  payload.on("data", (chunk: Buffer) => {
    if (kept >= MAX_PING_BODY_BYTES) return;
    const part = chunk.length > MAX_PING_BODY_BYTES - kept ? chunk.subarray(0, MAX_PING_BODY_BYTES - kept) : chunk;
    chunks.push(part);
    kept += part.length;
  });
  payload.on("end", () => done(null, Buffer.concat(chunks, kept)));
  payload.on("error", (error: Error) => done(error));
}

function text(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type(TEXT).header("cache-control", "no-store").send(body);
}

/** Registers the ping routes on `app` (outside the API guard). */
export async function registerPingRoutes(app: FastifyInstance, heartbeats: ModuleHeartbeats): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(RAW, (_request, payload, done) => readBounded(payload, done));
    // Every media type, none and a malformed Content-Type included, is read as bytes (no 415).
    scope.addHook("preParsing", async (request) => {
      request.headers["content-type"] = RAW;
    });
    const handle = async (
      request: FastifyRequest<{ Params: { key: string; signal?: string } }>,
      reply: FastifyReply,
    ) => {
      const signal = signalOf(request.params.signal);
      const query = request.query as Record<string, unknown>;
      if (signal === undefined) return text(reply, 404, "not found\n");
      const rid = typeof query.rid === "string" ? query.rid : undefined;
      if (query.rid !== undefined && (rid === undefined || !isRid(rid))) {
        return text(reply, 400, "invalid rid: must be a UUID given once\n");
      }
      const body = Buffer.isBuffer(request.body) ? bodyText(request.body) : "";
      let answer: PingAnswer;
      try {
        answer = await heartbeats.ping(request.params.key, signal, rid?.toLowerCase(), body);
      } catch (error) {
        // Cluster mode: the ping could not be stored for the instance that judges it. Not answered
        // 200, so curl --retry and vigie run try again.
        request.log.warn({ err: error }, "could not store a heartbeat ping for its owner");
        reply.header("retry-after", "1");
        return text(reply, 503, "unavailable, try again\n");
      }
      if (answer.kind === "unknown") return text(reply, 404, "not found\n");
      if (answer.kind === "limited") {
        reply.header("retry-after", String(answer.retryAfter));
        return text(reply, 429, "too many pings: at most 10 per second per key\n");
      }
      return text(reply, 200, "OK\n");
    };
    const config = (openapi: RouteDescription) => ({ openapi, allowOrigin: () => true });
    scope.route({ method: ["GET", "POST"], url: "/ping/:key", config: config(PING), handler: handle });
    scope.route({ method: ["GET", "POST"], url: "/ping/:key/:signal", config: config(PING_SIGNAL), handler: handle });
  });
}
