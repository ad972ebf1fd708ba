/**
 * POSTs to one receiver over one keep-alive undici Agent (docs/outputs.md), and classifies the
 * answer for the delivery model: 2xx sent; 429 and 5xx retried (with `Retry-After`); anything else
 * refused, with the first bytes of the answer for the log.
 *
 * A URL's `user:password@` becomes an `Authorization: Basic` header (RFC 7617) and is removed from
 * the URL handed to undici, so that no error or log line built from it can carry the password.
 */
import { Agent } from "undici";
import { ANSWER_SNIPPET_BYTES, type AttemptResult, SENT } from "./delivery.js";
import { parseRetryAfter } from "./retry.js";

/** The User-Agent of outputs' requests, unless the output's `headers` set one. */
export const USER_AGENT = "vigie";

/** Where and how an {@link HttpTarget} posts. */
export interface HttpTargetOptions {
  /** The configured URL, possibly with `user:password@`. */
  readonly url: string;
  /** The request path from the URL's path (e.g. Alertmanager's `/api/v2/alerts` under a prefix); the URL's own path by default. */
  readonly path?: (pathname: string) => string;
  /** The output's configured `headers` (names in any case). */
  readonly headers: Readonly<Record<string, string>>;
  /** The headers of the output type's protocol (`Content-Type` …): they replace configured ones of the same name. */
  readonly protocolHeaders: Readonly<Record<string, string>>;
  /** Connect, headers and body deadline of undici, in milliseconds (the delivery model bounds the whole attempt too). */
  readonly timeoutMs: number;
}

/** A URL without its user info, and the `Authorization: Basic` value the user info stood for. */
export function splitCredentials(url: string): { readonly url: URL; readonly authorization: string | undefined } {
  const parsed = new URL(url);
  if (parsed.username === "" && parsed.password === "") return { url: parsed, authorization: undefined };
  const user = percentDecoded(parsed.username);
  const password = percentDecoded(parsed.password);
  parsed.username = "";
  parsed.password = "";
  return { url: parsed, authorization: `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}` };
}

/** WHATWG URLs keep user info percent-encoded; a malformed escape is taken as written. */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * The request headers, names in lower case: the configured ones, then the protocol's (which win),
 * `Authorization` from the URL unless configured, and a User-Agent unless configured.
 */
export function requestHeaders(
  configured: Readonly<Record<string, string>>,
  protocol: Readonly<Record<string, string>>,
  authorization: string | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(configured)) headers[name.toLowerCase()] = value;
  for (const [name, value] of Object.entries(protocol)) headers[name.toLowerCase()] = value;
  if (authorization !== undefined && headers.authorization === undefined) headers.authorization = authorization;
  headers["user-agent"] ??= USER_AGENT;
  return headers;
}

/** One receiver: its origin, path, headers and keep-alive connection pool. */
export class HttpTarget {
  readonly #agent: Agent;
  readonly #origin: string;
  readonly #path: string;
  readonly #headers: Record<string, string>;

  constructor(options: HttpTargetOptions) {
    const { url, authorization } = splitCredentials(options.url);
    this.#origin = url.origin;
    this.#path = `${options.path === undefined ? url.pathname : options.path(url.pathname)}${url.search}`;
    this.#headers = requestHeaders(options.headers, options.protocolHeaders, authorization);
    this.#agent = new Agent({
      // One batch is in flight at a time: one connection, kept alive. Without this limit undici
      // opens a second one when the next batch leaves in the same turn as the previous answer.
      connections: 1,
      // undici would otherwise keep a hopeless connect alive for its own 10 s after the attempt ended.
      connect: { timeout: options.timeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  /**
   * POSTs `body` and reads the answer.
   * @throws whatever undici throws on a network error or an abort (the delivery model retries it)
   */
  async post(body: string | Uint8Array, signal: AbortSignal): Promise<AttemptResult> {
    const answer = await this.#agent.request({
      origin: this.#origin,
      path: this.#path,
      method: "POST",
      headers: this.#headers,
      body,
      signal,
    });
    const status = answer.statusCode;
    if (status >= 200 && status < 300) {
      // Reading the answer to its end lets the connection serve the next batch; a failure now
      // changes nothing: the receiver has taken the batch.
      await answer.body.dump().catch(() => {});
      return SENT;
    }
    if (status === 429 || status >= 500) {
      const retryAfterMs = parseRetryAfter(answer.headers["retry-after"], Date.now());
      await answer.body.dump().catch(() => {});
      return retryAfterMs === undefined
        ? { kind: "retry", reason: `HTTP ${status}` }
        : { kind: "retry", reason: `HTTP ${status}`, retryAfterMs };
    }
    return { kind: "rejected", reason: `HTTP ${status}`, answer: await readStart(answer.body, ANSWER_SNIPPET_BYTES) };
  }

  /** Closes the connections: at once with `force`, else once the request in flight (if any) ended. */
  async close(force: boolean): Promise<void> {
    await (force ? this.#agent.destroy() : this.#agent.close()).catch(() => {});
  }
}

/** The first `limit` bytes of a body as text (a cut character becomes U+FFFD); the rest is not read. */
async function readStart(body: AsyncIterable<Uint8Array>, limit: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    // Leaving the loop early destroys the body: a long answer is never read in full.
    for await (const chunk of body) {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= limit) break;
    }
  } catch {
    // What arrived before the error is enough for the log.
  }
  return Buffer.concat(chunks).subarray(0, limit).toString("utf8");
}
