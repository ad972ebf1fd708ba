/**
 * What the streams routes share to read a request: the `:name` route parameter, the streams it
 * names (one stream, or the default streams for `default`), a JSON object body.
 */
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import type { FastifyRequest, preHandlerHookHandler } from "fastify";
import {
  errnoCode,
  errorMessage,
  InvalidError,
  NotFoundError,
  TooLargeError,
  UnsupportedMediaTypeError,
} from "../../platform/errors.js";
import { isPlainObject } from "../../platform/validation.js";
import type { Stream, StreamEngine } from "../engine.js";
import { DEFAULT_STREAM } from "../names.js";

const gunzipAsync = promisify(gunzip);

/**
 * A request's body as its `Content-Encoding` says (RFC 9110 §8.4): as it came without one (or with
 * `identity`), gunzipped for `gzip`, at once when it is not compressed.
 * @param bodyLimit largest decompressed body, in bytes
 * @throws UnsupportedMediaTypeError for another encoding; TooLargeError when it gunzips to more than
 *   `bodyLimit` bytes; InvalidError when it is not gzip
 */
export function decodedBody(request: FastifyRequest, body: Buffer, bodyLimit: number): Buffer | Promise<Buffer> {
  const encoding = (request.headers["content-encoding"] ?? "identity").toLowerCase();
  if (encoding === "identity") return body;
  if (encoding !== "gzip") {
    throw new UnsupportedMediaTypeError(`unsupported Content-Encoding ${encoding}; use gzip or none`);
  }
  return gunzipBody(body, bodyLimit);
}

async function gunzipBody(body: Buffer, bodyLimit: number): Promise<Buffer> {
  try {
    return await gunzipAsync(body, { maxOutputLength: bodyLimit });
  } catch (error) {
    if (errnoCode(error) === "ERR_BUFFER_TOO_LARGE") {
      throw new TooLargeError(`decompressed request body is larger than the limit of ${bodyLimit} bytes`);
    }
    throw new InvalidError(`invalid gzip body: ${errorMessage(error)}`);
  }
}

/** The parameters of a route whose path ends in `:name`. */
export interface NameParams {
  readonly name: string;
}

/** The route generic of a route whose path ends in `:name`. */
export interface NamedRoute {
  readonly Params: NameParams;
}

/** The 404 of an unknown stream. */
export function streamNotFound(name: string): NotFoundError {
  return new NotFoundError(`stream ${name} not found`);
}

/**
 * The streams a request names, as a function looked up again before each chunk of a large push (a
 * stream removed meanwhile is noticed). Looked up once here, so that an unknown stream is a 404
 * before the body is read.
 * @throws NotFoundError `stream <name> not found`, now or at a later look-up
 */
export function streamTargets(engine: StreamEngine, name: string): () => readonly Stream[] {
  const lookUp = (): readonly Stream[] => {
    if (name === DEFAULT_STREAM) return engine.defaults;
    const stream = engine.get(name);
    if (stream === undefined) throw streamNotFound(name);
    return [stream];
  };
  lookUp();
  return lookUp;
}

/** Route options with the body limit and, when tokens are required, the guard. */
export function guardedOptions(bodyLimit: number, guard: preHandlerHookHandler | undefined) {
  return guard === undefined ? { bodyLimit } : { bodyLimit, preHandler: guard };
}

/** The message of a body that is not a JSON object. */
export const NOT_AN_OBJECT = "request body must be a JSON object";

/**
 * A parsed body that must be a JSON object.
 * @throws InvalidError `request body must be a JSON object`
 */
export function bodyObject(body: unknown): Record<string, unknown> {
  if (!isPlainObject(body)) throw new InvalidError(NOT_AN_OBJECT);
  return body;
}
