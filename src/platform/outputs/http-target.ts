/**
 * POSTs to one receiver over one keep-alive undici Agent (docs/outputs.md), and classifies the
 * answer for the delivery model: 2xx sent; 429 and 5xx retried (with `Retry-After`); anything else
 * refused, with the first bytes of the answer for the log.
 *
 * A URL's `user:password@` becomes an `Authorization: Basic` header (RFC 7617) and is removed from
 * the URL handed to undici, so that no error or log line built from it can carry the password.
 *
 * Notifier types (notifiers/) also choose the method, add headers per request and read the answer
 * the way their service words it ({@link AnswerReader}): Telegram's `description`, Slack's text.
 */
import type { Agent, Dispatcher } from "undici";
import { loadedUndici, loadUndici, type Undici } from "../undici.js";
import { ANSWER_SNIPPET_BYTES, type AttemptResult, SENT } from "./delivery.js";
import { type Answer, type AnswerReader, HttpExchange } from "./http-exchange.js";

export type { Answer, AnswerReader } from "./http-exchange.js";

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
  /** The request method; `POST` by default. */
  readonly method?: "POST" | "PUT";
  /** How the service's answers are read; without one, only the status counts ({@link statusOutcome}). */
  readonly readAnswer?: AnswerReader;
  /** Bytes of an answer given to the {@link AnswerReader}: {@link ANSWER_READ_BYTES} by default (a bulk API answers per document). */
  readonly answerBytes?: number;
}

/** Bytes of an answer's body an {@link AnswerReader} is given (the rest is read and discarded). */
export const ANSWER_READ_BYTES = 4096;

/**
 * The outcome the status alone gives: 2xx sent; 429 and 5xx retried (honouring `Retry-After`);
 * anything else refused for good. `detail`, the service's own words, follows `HTTP <status>` in
 * the reason.
 */
export function statusOutcome(answer: Answer, detail?: string): AttemptResult {
  const { status } = answer;
  if (status >= 200 && status < 300) return SENT;
  const reason = detail === undefined || detail === "" ? `HTTP ${status}` : `HTTP ${status}: ${oneLine(detail)}`;
  if (status === 429 || status >= 500) {
    return answer.retryAfterMs === undefined
      ? { kind: "retry", reason }
      : { kind: "retry", reason, retryAfterMs: answer.retryAfterMs };
  }
  return { kind: "rejected", reason, answer: answer.text.slice(0, ANSWER_SNIPPET_BYTES) };
}

/** Longest service reason kept in a log line, in characters. */
const REASON_MAX_CHARACTERS = 200;

/** A service's reason on one line of at most {@link REASON_MAX_CHARACTERS} characters. */
function oneLine(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return flat.length > REASON_MAX_CHARACTERS ? `${flat.slice(0, REASON_MAX_CHARACTERS)}…` : flat;
}

/** What one request of an {@link HttpTarget} may change: the method, the path (and query). */
export interface RequestOverrides {
  readonly method?: "POST" | "PUT";
  /** The whole request path, starting with `/`; the target's own by default. */
  readonly path?: string;
  /** How this request's answer is read (one that depends on what was sent); the target's own by default. */
  readonly readAnswer?: AnswerReader;
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

/**
 * A request path with the configured URL's query (`?a=1`, or empty) added: after `&` when the
 * path has a query of its own already (Elasticsearch's `/_bulk?filter_path=…`, InfluxDB's
 * `/write?db=…`), so both reach the receiver (RFC 3986 §3.4: one query per URI).
 */
export function withQuery(path: string, search: string): string {
  if (search === "") return path;
  return path.includes("?") ? `${path}&${search.slice(1)}` : `${path}${search}`;
}

/** One receiver: its origin, path, headers and keep-alive connection pool. */
export class HttpTarget {
  #agent: Agent | undefined;
  /** Set by close(): no pool is made after it (a request then fails as on a closed pool). */
  #closed = false;
  readonly #timeoutMs: number;
  readonly #origin: string;
  readonly #path: string;
  readonly #basePath: string;
  readonly #headers: Record<string, string>;
  readonly #method: "POST" | "PUT";
  readonly #readAnswer: AnswerReader | undefined;
  readonly #answerBytes: number;

  constructor(options: HttpTargetOptions) {
    const { url, authorization } = splitCredentials(options.url);
    this.#origin = url.origin;
    this.#path = withQuery(options.path === undefined ? url.pathname : options.path(url.pathname), url.search);
    this.#headers = requestHeaders(options.headers, options.protocolHeaders, authorization);
    this.#method = options.method ?? "POST";
    this.#readAnswer = options.readAnswer;
    this.#answerBytes = options.answerBytes ?? ANSWER_READ_BYTES;
    this.#basePath = url.pathname;
    this.#timeoutMs = options.timeoutMs;
  }

  /** The pool, made on the first request: undici is loaded then (platform/undici.ts). */
  #pool(undici: Undici): Agent {
    if (this.#closed && this.#agent === undefined) throw new undici.errors.ClientClosedError();
    this.#agent ??= new undici.Agent({
      // One batch is in flight at a time: one connection, kept alive. Without this limit undici
      // opens a second one when the next batch leaves in the same turn as the previous answer.
      connections: 1,
      // undici would otherwise keep a hopeless connect alive for its own 10 s after the attempt ended.
      connect: { timeout: this.#timeoutMs },
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs,
    });
    return this.#agent;
  }

  /**
   * POSTs `body` (or sends it as `request` says) and reads the answer.
   * @param request another method, or a path of this request's own under the target's path
   *   (Matrix puts each message at `…/send/m.room.message/<transaction>`)
   * @returns a promise rejected with undici's error on a network error or an abort (the delivery
   *   model retries it)
   */
  post(body: string | Uint8Array, signal: AbortSignal, request?: RequestOverrides): Promise<AttemptResult> {
    return this.send(body, signal, undefined, request);
  }

  /**
   * Sends `body` with the target's method and headers, plus `extraHeaders` (names in lower case,
   * they replace the others), and reads the answer (through the target's {@link AnswerReader} when
   * it has one).
   * @param request another method, or a path of this request's own
   * @returns a promise rejected with undici's error on a network error, an abort of `signal` or an
   *   invalid header value (the delivery model retries it)
   */
  send(
    body: string | Uint8Array,
    signal: AbortSignal,
    extraHeaders?: Readonly<Record<string, string>>,
    request: RequestOverrides = {},
  ): Promise<AttemptResult> {
    const options: Dispatcher.DispatchOptions = {
      origin: this.#origin,
      path: request.path ?? this.#path,
      method: request.method ?? this.#method,
      headers: extraHeaders === undefined ? this.#headers : { ...this.#headers, ...extraHeaders },
      body,
    };
    const readAnswer = request.readAnswer ?? this.#readAnswer;
    const undici = loadedUndici();
    if (undici === undefined) {
      // The process's first request: undici is imported now, then the request leaves.
      return loadUndici().then(() => this.send(body, signal, extraHeaders, request));
    }
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      this.#pool(undici).dispatch(options, new HttpExchange(signal, readAnswer, this.#answerBytes, resolve, reject));
    });
  }

  /** The path of the configured URL (`/` at least), for targets that build each request's path under it. */
  get basePath(): string {
    return this.#basePath;
  }

  /** Closes the connections: at once with `force`, else once the request in flight (if any) ended. */
  async close(force: boolean): Promise<void> {
    this.#closed = true;
    const agent = this.#agent;
    if (agent !== undefined) await (force ? agent.destroy() : agent.close()).catch(() => {});
  }
}
