/**
 * The error catalogue. Domain and storage code throw one of the errors below, each with a stable
 * code (`VIGIE_ERR_NOT_FOUND`); the HTTP status of each code is set in {@link STATUS_OF} and the
 * response body in {@link errorHandler}, nowhere else. Every error response is
 * `{"error": "<one readable sentence>"}` (Cargo's routes: `{"errors": [{"detail": "<sentence>"}]}`,
 * the format cargo prints) and carries the code in a `Vigie-Error` header, so clients can branch on
 * it without parsing sentences while the bodies stay those documented in docs/api.md.
 *
 * Unknown routes answer 404 naming method and path, known paths with a wrong method 405;
 * unexpected failures 500 with a request id and never a stack trace.
 */
import { maxHeaderSize, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ValidationError } from "./validation.js";

/** Every error code and its HTTP status (RFC 9110 §15; 429 and 431 from RFC 6585). */
export const STATUS_OF = {
  VIGIE_ERR_INVALID: 400,
  VIGIE_ERR_UNAUTHORIZED: 401,
  VIGIE_ERR_FORBIDDEN: 403,
  VIGIE_ERR_NOT_FOUND: 404,
  VIGIE_ERR_METHOD_NOT_ALLOWED: 405,
  VIGIE_ERR_REQUEST_TIMEOUT: 408,
  VIGIE_ERR_CONFLICT: 409,
  VIGIE_ERR_TOO_LARGE: 413,
  VIGIE_ERR_URI_TOO_LONG: 414,
  VIGIE_ERR_UNSUPPORTED_MEDIA_TYPE: 415,
  VIGIE_ERR_MISDIRECTED: 421,
  VIGIE_ERR_UPGRADE_REQUIRED: 426,
  VIGIE_ERR_RATE_LIMITED: 429,
  VIGIE_ERR_HEADERS_TOO_LARGE: 431,
  VIGIE_ERR_INTERNAL: 500,
  VIGIE_ERR_UNAVAILABLE: 503,
} as const;

/** A stable error code, as sent in the `Vigie-Error` response header. */
export type ErrorCode = keyof typeof STATUS_OF;

/** The response header carrying the code of an error. */
export const ERROR_CODE_HEADER = "vigie-error";

/**
 * An error a client is told about: a code of the catalogue and one readable sentence. Domain code
 * throws the subclasses below; the HTTP status is the code's (never chosen by the thrower).
 */
export class VigieError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers (`Retry-After`, `Upgrade`). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = "VigieError";
  }
}

/** Invalid input (400): the message names the field or parameter and the rule it broke. */
export class InvalidError extends VigieError {
  constructor(message: string) {
    super("VIGIE_ERR_INVALID", message);
  }
}

/** Missing or invalid credentials (401). */
export class UnauthorizedError extends VigieError {
  constructor(message: string) {
    super("VIGIE_ERR_UNAUTHORIZED", message);
  }
}

/** Valid credentials, action not allowed (403). */
export class ForbiddenError extends VigieError {
  constructor(message: string) {
    super("VIGIE_ERR_FORBIDDEN", message);
  }
}

/** An unknown resource (404): `comment 6f1c… not found`. */
export class NotFoundError extends VigieError {
  constructor(message: string) {
    super("VIGIE_ERR_NOT_FOUND", message);
  }
}

/** A conflict with what is stored (409): already exists, would remove the last admin. */
export class ConflictError extends VigieError {
  constructor(message: string) {
    super("VIGIE_ERR_CONFLICT", message);
  }
}

/** A request or a part of it larger than a limit (413). */
export class TooLargeError extends VigieError {
  constructor(message: string) {
    super("VIGIE_ERR_TOO_LARGE", message);
  }
}

/** A body of a media type the route does not read (415). */
export class UnsupportedMediaTypeError extends VigieError {
  constructor(message: string) {
    super("VIGIE_ERR_UNSUPPORTED_MEDIA_TYPE", message);
  }
}

/** Too many requests (429); `Retry-After` in whole seconds (RFC 9110 §10.2.3). */
export class RateLimitedError extends VigieError {
  constructor(message: string, retryAfterSeconds: number) {
    super("VIGIE_ERR_RATE_LIMITED", message, { "retry-after": String(retryAfterSeconds) });
  }
}

/** Something the request needs is not reachable now (503): the database, a stream's owner. */
export class UnavailableError extends VigieError {
  constructor(message: string) {
    super("VIGIE_ERR_UNAVAILABLE", message);
  }
}

/** The message of any thrown value: an `Error`'s message, else the value as text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The `code` of a Node.js error (`ENOENT`, `ERR_BUFFER_TOO_LARGE`); `undefined` for anything else. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}

/** 400 for a request field that broke a rule: `field author: must be ...`. */
export function fieldError(error: ValidationError): InvalidError {
  return new InvalidError(error.path === "" ? `request body ${error.rule}` : `field ${error.message}`);
}

/** The message of a body that is not JSON. */
export const INVALID_JSON = "request body is not valid JSON";

/** Builds an error response body from its sentence. */
export type ErrorBody = (message: string) => unknown;

/** Vigie's error body: `{"error": message}`. */
export const vigieErrorBody: ErrorBody = (message) => ({ error: message });

/** Cargo's error body, which cargo prints to its user: `{"errors": [{"detail": message}]}`. */
export const cargoErrorBody: ErrorBody = (detail) => ({ errors: [{ detail }] });

function isErrorCode(name: string): name is ErrorCode {
  return Object.hasOwn(STATUS_OF, name);
}

const CODE_OF_STATUS = new Map<number, ErrorCode>(
  Object.keys(STATUS_OF)
    .filter(isErrorCode)
    .map((code) => [STATUS_OF[code], code]),
);

/** The code of a status Fastify chose; 4xx without an entry are invalid requests. */
function codeOfStatus(status: number): ErrorCode {
  return CODE_OF_STATUS.get(status) ?? (status < 500 ? "VIGIE_ERR_INVALID" : "VIGIE_ERR_INTERNAL");
}

/** What {@link send} needs of a reply: Fastify's, whatever its generic parameters. */
interface Reply<R> {
  code(status: number): Reply<R>;
  header(name: string, value: string): Reply<R>;
  type(contentType: string): Reply<R>;
  send(body: unknown): R;
}

function send<R>(
  reply: Reply<R>,
  body: ErrorBody,
  code: ErrorCode,
  message: string,
  status: number = STATUS_OF[code],
): R {
  return reply.code(status).header(ERROR_CODE_HEADER, code).type("application/json; charset=utf-8").send(body(message));
}

/**
 * Answers the errors Fastify raises before routing (`frameworkErrors`): a path segment longer than
 * `maxSegment` is 414, any other unreadable URL 400.
 */
export function answerRoutingError<R>(error: FastifyError, reply: Reply<R>, maxSegment: number): R {
  if (error.code === "FST_ERR_MAX_PARAM_LENGTH") {
    return send(
      reply,
      vigieErrorBody,
      "VIGIE_ERR_URI_TOO_LONG",
      `a path segment is longer than ${maxSegment} characters`,
    );
  }
  return send(reply, vigieErrorBody, "VIGIE_ERR_INVALID", "the URL is not valid");
}

/** The code and sentence of a request Node's HTTP server could not read (see {@link answerClientError}). */
function clientErrorOf(error: NodeJS.ErrnoException): [ErrorCode, string] {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return ["VIGIE_ERR_HEADERS_TOO_LARGE", `request header fields are larger than ${maxHeaderSize} bytes`];
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return ["VIGIE_ERR_REQUEST_TIMEOUT", "the request was not received in time"];
    default:
      return ["VIGIE_ERR_INVALID", "the request is not valid HTTP"];
  }
}

/**
 * Answers a request Node's HTTP server could not read, before any route (Fastify's
 * `clientErrorHandler`, Node's `clientError` event): header fields over the server's limit 431
 * (RFC 6585 §5), a request not received within the server's timeouts 408 (RFC 9110 §15.5.9),
 * anything else 400, each in Vigie's format with its code. The connection is then closed, as Node's
 * own answer does: what follows on it cannot be read. Nothing is answered on a connection the
 * client reset or that is already gone.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  if (socket.writable) {
    const [code, message] = clientErrorOf(error);
    const status = STATUS_OF[code];
    const body = JSON.stringify(vigieErrorBody(message));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n${ERROR_CODE_HEADER}: ${code}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * Maps Fastify's own errors (body parsing, limits) to a code and a sentence; another 4xx of
 * Fastify's keeps its status and message.
 */
function frameworkError(error: FastifyError, request: FastifyRequest): VigieError | undefined {
  switch (error.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new InvalidError(INVALID_JSON);
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new TooLargeError(`request body is larger than the limit of ${request.routeOptions.bodyLimit} bytes`);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new UnsupportedMediaTypeError(`unsupported media type ${request.headers["content-type"] ?? "(none)"}`);
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new InvalidError("request body length does not match Content-Length");
    default:
      if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        return new VigieError(codeOfStatus(error.statusCode), error.message);
      }
      return undefined;
  }
}

/** The status of a Fastify error: its own for a 4xx without an entry in the catalogue. */
function statusOfFrameworkError(error: FastifyError, known: VigieError): number {
  const status = error.statusCode;
  return status !== undefined && CODE_OF_STATUS.get(status) === undefined ? status : STATUS_OF[known.code];
}

/** Options of {@link errorHandler}. */
export interface ErrorHandlerOptions {
  /** The sentence of a body over the route's limit, instead of the generic one. */
  readonly tooLarge?: (request: FastifyRequest) => string;
}

/**
 * A Fastify error handler answering every error with `body`: catalogue errors with their code,
 * validation errors as 400 naming the field, Fastify's own errors mapped, anything else a logged 500
 * whose body gives only the request id.
 */
export function errorHandler(body: ErrorBody, options: ErrorHandlerOptions = {}) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    if (error instanceof VigieError) return send(reply.headers(error.headers), body, error.code, error.message);
    if (error instanceof ValidationError) return send(reply, body, "VIGIE_ERR_INVALID", fieldError(error).message);
    if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE" && options.tooLarge !== undefined) {
      return send(reply, body, "VIGIE_ERR_TOO_LARGE", options.tooLarge(request));
    }
    const known = frameworkError(error, request);
    if (known !== undefined) return send(reply, body, known.code, known.message, statusOfFrameworkError(error, known));
    request.log.error({ err: error }, "request failed");
    return send(reply, body, "VIGIE_ERR_INTERNAL", `internal error (request id ${request.id})`);
  };
}

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/**
 * A Fastify not-found handler answering with `body`: 405 with `Allow` when `app` has the path for
 * other methods (unless `methodNotAllowed` is false), else 404 naming method and path.
 */
export function notFoundHandler(app: FastifyInstance, body: ErrorBody, methodNotAllowed = true) {
  return (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const [path = ""] = request.url.split("?", 1);
    const allowed = methodNotAllowed
      ? METHODS.filter((method) => method !== request.method && app.findRoute({ method, url: path }) !== null)
      : [];
    if (allowed.length > 0) {
      reply.header("allow", allowed.join(", "));
      return send(reply, body, "VIGIE_ERR_METHOD_NOT_ALLOWED", `method ${request.method} not allowed on ${path}`);
    }
    return send(reply, body, "VIGIE_ERR_NOT_FOUND", `route ${request.method} ${path} not found`);
  };
}

/**
 * Installs the error and not-found handlers on the root instance, so every module answers errors
 * the same way.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(errorHandler(vigieErrorBody));
  app.setNotFoundHandler(notFoundHandler(app, vigieErrorBody));
}
