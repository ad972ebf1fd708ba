/**
 * HTTP errors: every error response is `{"error": "<one readable sentence>"}` with the status of
 * platform.md §4; unknown routes answer 404 naming method and path, known paths with a wrong method
 * 405; unexpected failures 500 with a request id and never a stack trace.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ValidationError } from "./validation.js";

/** An error with an HTTP status, answered as `{"error": message}`. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    /** Extra response headers (`Retry-After`, `Allow`). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** 400 for a request field that broke a rule: `field author: must be ...` (platform.md §4). */
export function fieldError(error: ValidationError): HttpError {
  return new HttpError(400, error.path === "" ? `request body ${error.rule}` : `field ${error.message}`);
}

/** The message of a body that is not JSON (platform.md §4). */
export const INVALID_JSON = "request body is not valid JSON";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

function send(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).type("application/json; charset=utf-8").send({ error: message });
}

/** Maps Fastify's own errors (body parsing, limits) to the statuses and wording of the spec. */
function frameworkError(error: FastifyError, request: FastifyRequest): [number, string] | undefined {
  switch (error.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return [400, INVALID_JSON];
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return [413, `request body is larger than the limit of ${request.routeOptions.bodyLimit} bytes`];
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return [415, `unsupported media type ${request.headers["content-type"] ?? "(none)"}`];
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return [400, "request body length does not match Content-Length"];
    default:
      if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        return [error.statusCode, error.message];
      }
      return undefined;
  }
}

/**
 * Installs the error handler and the not-found handler on the root instance, so every module
 * answers errors the same way.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof HttpError) {
      reply.headers(error.headers);
      return send(reply, error.statusCode, error.message);
    }
    if (error instanceof ValidationError) return send(reply, 400, fieldError(error).message);
    const known = frameworkError(error, request);
    if (known !== undefined) return send(reply, known[0], known[1]);
    request.log.error({ err: error }, "request failed");
    return send(reply, 500, `internal error (request id ${request.id})`);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?", 1)[0] as string;
    const allowed = METHODS.filter(
      (method) => method !== request.method && app.findRoute({ method, url: path }) !== null,
    );
    if (allowed.length > 0) {
      reply.header("Allow", allowed.join(", "));
      return send(reply, 405, `method ${request.method} not allowed on ${path}`);
    }
    return send(reply, 404, `route ${request.method} ${path} not found`);
  });
}
