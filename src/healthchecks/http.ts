/**
 * The http executor (docs/healthchecks.md): one request through undici, judged on its status and,
 * with body-regexp, on its body. The whole exchange (connect, TLS handshake, headers, body read) is
 * bounded by the check's timeout.
 *
 * It uses undici's dispatcher handler interface rather than `request()`: the verdict is settled at
 * the check's timeout whatever phase undici is in (`request()` only honours an abort once the
 * connection is up), and no response stream is built for a body that is mostly discarded, which
 * matters at thousands of runs per second (docs/healthchecks.md). The timeouts of all exchanges
 * wait in one {@link DeadlineQueue} (one timer, not one per run).
 */
import { isIP } from "node:net";
import type { Agent, Dispatcher } from "undici";
import { errorMessage } from "../platform/errors.js";
import { escapeHtml } from "../platform/html.js";
import { compileLinearRegex, type LinearRegex } from "../platform/regex.js";
import { isStaleConnection } from "../platform/stale-connection.js";
import { loadedUndici, loadUndici, type Undici } from "../platform/undici.js";
import { type DeadlineQueue, type Expiring, SHARED_DEADLINES } from "./deadline.js";
import type { HttpDefinition } from "./definition.js";
import { failure, type Outcome, SUCCESS } from "./outcome.js";
import { hasTlsFiles, readTlsFiles, TLS_FILE_PATHS, type TlsFileLocation, type TlsFiles } from "./tls-files.js";

/** The User-Agent of http checks (docs/healthchecks.md), unless the check sets its own. */
export const USER_AGENT = "vigie-healthcheck";

/** Redirects followed when `redirect` is true (docs/healthchecks.md). */
export const MAX_REDIRECTS = 10;

/** Bytes of a failing response's body quoted in the failure message (docs/healthchecks.md). */
export const FAILURE_BODY_BYTES = 1000;

/** Bytes of the body that body-regexp is matched against; the rest is not read. */
export const MATCHED_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Bytes of a successful body read (and dropped) when no body-regexp needs it: enough for the
 * connection to be reused after a typical health page; a longer body is cut.
 */
const DISCARDED_BODY_BYTES = 64 * 1024;

/**
 * Connection pools kept at most (one per origin, docs/healthchecks.md); beyond, the least recently
 * used one is closed once its requests are done.
 */
const MAX_POOLS = 256;

/**
 * How long a pool keeps an idle connection, in milliseconds, when the server does not say (a
 * `Keep-Alive: timeout=` hint wins, less a second): longer than undici's 4 s, so that the checks of
 * an origin keep their connections between bursts rather than open new ones (docs/healthchecks.md).
 * A server that closes a kept connection as a request goes out costs one retry
 * ({@link isStaleConnection}), as Go's and curl's clients do.
 */
const KEEP_ALIVE_TIMEOUT_MS = 30_000;

/**
 * undici's connect timeout of the pools, in milliseconds: a check gives up on a connection attempt
 * at its own timeout; the socket of that attempt is freed at the latest after this.
 */
const CONNECT_TIMEOUT_MS = 30_000;

/**
 * Connections one pool opens to its origin at most: enough for the bursts of a busy origin (10 000
 * checks at 10 s against one server need one or two at a time), few enough that a target sees a
 * handful of connections, not one per check (docs/healthchecks.md). Requests beyond wait for a free
 * connection, within their check's timeout.
 */
export const MAX_CONNECTIONS_PER_ORIGIN = 32;

/**
 * The path of the request: the check's path with its `query` merged into the query string; the
 * `query` values win over parameters of the same name already in the path.
 */
export function requestPath(definition: Pick<HttpDefinition, "path" | "query">): string {
  const query = definition.query;
  if (query === undefined || Object.keys(query).length === 0) return definition.path;
  const url = new URL(definition.path, "http://vigie.invalid");
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  return `${url.pathname}${url.search}`;
}

/**
 * The headers of a definition's requests as undici's flat list (`[name, value, name, value, …]`),
 * built once per definition: undici reads such a list without enumerating an object's keys.
 */
function requestHeaders(definition: HttpDefinition): string[] {
  const headers: string[] = [];
  let userAgent = true;
  for (const [key, value] of Object.entries(definition.headers ?? {})) {
    const lower = key.toLowerCase();
    if (lower === "user-agent") userAgent = false;
    if (lower === "host" && definition.host !== undefined) continue;
    headers.push(key, value);
  }
  if (userAgent) headers.push("user-agent", USER_AGENT);
  if (definition.host !== undefined) headers.push("host", definition.host);
  return headers;
}

/**
 * The TLS name an https check verifies, when undici must be told: `server-name`, else the target
 * when a `host` override would otherwise take its place; `undefined` leaves undici's default (the
 * target, or the Host override for an IP target).
 */
export function serverName(definition: Pick<HttpDefinition, "server-name" | "host" | "target">): string | undefined {
  if (definition["server-name"] !== undefined) return definition["server-name"];
  if (definition.host !== undefined && isIP(definition.target) === 0) return definition.target;
  return undefined;
}

/** Dispatch options with the two undici options its types do not list. */
type RequestOptions = Dispatcher.DispatchOptions & { servername?: string; throwOnMaxRedirect?: boolean };

/**
 * What a definition sends, where, and what its body must match: computed once per definition
 * (definitions are immutable) and found with one lookup per run (a native profile showed the
 * lookups of each run, docs/benchmarks.md).
 */
interface Prepared {
  readonly options: RequestOptions;
  /** {@link poolKey}. */
  readonly poolKey: string;
  /** The compiled body-regexp. */
  readonly patterns: readonly LinearRegex[];
}

const PREPARED = new WeakMap<HttpDefinition, Prepared>();

function preparedOf(definition: HttpDefinition): Prepared {
  let prepared = PREPARED.get(definition);
  if (prepared === undefined) {
    const options = requestOptions(definition);
    prepared = { options, poolKey: poolKey(definition, options), patterns: bodyPatterns(definition) };
    PREPARED.set(definition, prepared);
  }
  return prepared;
}

/** What a definition sends. */
function requestOptions(definition: HttpDefinition): RequestOptions {
  const host = isIP(definition.target) === 6 ? `[${definition.target}]` : definition.target;
  const options: RequestOptions = {
    origin: `${definition.protocol}://${host}:${definition.port}`,
    path: requestPath(definition),
    method: definition.method,
    headers: requestHeaders(definition),
    // Encoded once: undici would encode a string body again at each request.
    body: definition.body === undefined ? null : Buffer.from(definition.body),
  };
  // server-name defaults to the target (docs/healthchecks.md). undici would verify the Host header
  // when one is set, so a host-name target is named explicitly then; an IP target (not a TLS
  // name, RFC 6066 §3) leaves the Host override to be verified. An explicit name applies to
  // every hop of a redirect.
  const name = serverName(definition);
  if (name !== undefined) options.servername = name;
  if (definition.redirect) options.throwOnMaxRedirect = true;
  return options;
}

/**
 * The body-regexp of a definition, compiled with RE2 (linear time, docs/security.md). The definition
 * was validated, so every pattern compiles.
 */
function bodyPatterns(definition: HttpDefinition): readonly LinearRegex[] {
  return (definition["body-regexp"] ?? []).map(compileLinearRegex);
}

/**
 * Where a check's requests go: a keep-alive pool of its origin, and with `redirect`, an agent over
 * such pools that follows redirects.
 */
interface Dispatchers {
  readonly agent: Agent;
  readonly direct: Dispatcher;
  readonly redirecting: Dispatcher;
  /** When it was last used, for the eviction of the least recently used (a counter). */
  used: number;
}

/**
 * The pool key of a definition: its origin (scheme, host, port) and its TLS options and
 * source-ip (docs/healthchecks.md), which the connections of a pool have in common.
 */
function poolKey(definition: HttpDefinition, options: RequestOptions): string {
  return [
    options.origin,
    definition.insecure ? "insecure" : "verified",
    options.servername ?? "",
    definition["source-ip"] ?? "",
    connectTimeout(definition),
  ].join("|");
}

/**
 * undici's connect timeout of a definition's pool, in milliseconds: {@link CONNECT_TIMEOUT_MS}, or
 * the check's timeout when longer (such checks share pools with those of the same timeout).
 */
function connectTimeout(definition: HttpDefinition): number {
  return Math.max(CONNECT_TIMEOUT_MS, definition.timeout.milliseconds);
}

/** The pools of a definition, made with `undici` (loaded on the first request, platform/undici.ts). */
function createDispatchers(undici: Undici, definition: HttpDefinition, files?: TlsFiles): Dispatchers {
  const { Agent, interceptors } = undici;
  const agent = new Agent({
    // The check's timeout bounds the attempt (Exchange); undici's connect timeout frees the
    // socket of an attempt that the check gave up on.
    connect: { rejectUnauthorized: !definition.insecure, timeout: connectTimeout(definition), ...files },
    connections: MAX_CONNECTIONS_PER_ORIGIN,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // No timers of undici's per request: the check's timeout (Exchange) bounds the headers and the
    // body, and its abort destroys the connection of a stuck request.
    headersTimeout: 0,
    bodyTimeout: 0,
    ...(definition["source-ip"] === undefined ? {} : { localAddress: definition["source-ip"] }),
  });
  return {
    agent,
    direct: agent,
    redirecting: agent.compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTS })),
    used: 0,
  };
}

const NO_PATTERNS: readonly LinearRegex[] = [];

/** Aborts undici's side of an exchange whose verdict is already settled. */
class Settled extends Error {
  constructor() {
    super("the healthcheck has settled");
    this.name = "Settled";
  }
}

// undici's redirect handler reports too many redirects with this message.
const MAX_REDIRECTS_MESSAGE = "max redirects";

/** Methods a client may send again after a connection failure (RFC 9110 §9.2.2). */
const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);

/** One request of an http check, from dispatch to verdict; it waits for its timeout in a {@link DeadlineQueue}. */
class Exchange implements Dispatcher.DispatchHandler, Expiring {
  heapIndex = -1;
  /** Its neighbours in its executor's {@link InFlight} list, while it is in flight. */
  previousInFlight: Exchange | undefined;
  nextInFlight: Exchange | undefined;
  inFlight = false;
  expiresAt: number;
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  #status = 0;
  /** Body bytes to keep: the failure quote, the regexp input, or none. */
  #keep = 0;
  /** The body kept so far; allocated only when some is kept. */
  #chunks: Buffer[] | undefined;
  #length = 0;
  /** Where to send the request again, once, after a stale kept connection ({@link isStaleConnection}). */
  #retryDispatcher: Dispatcher | undefined;
  #retryOptions: RequestOptions | undefined;

  /** The compiled body-regexp, set as the request is sent. */
  patterns: readonly LinearRegex[] = NO_PATTERNS;
  /** The agent of this exchange alone (client certificate files), destroyed once it settles. */
  own: Agent | undefined;

  /**
   * @param list the exchanges in flight, which it joins until it settles
   * @param resolve called once with the verdict
   */
  constructor(
    readonly definition: HttpDefinition,
    private readonly deadlines: DeadlineQueue,
    private readonly list: InFlight,
    private readonly resolve: (outcome: Outcome) => void,
  ) {
    this.expiresAt = deadlines.now() + definition.timeout.milliseconds;
    deadlines.add(this);
    list.add(this);
  }

  /** The timeout has passed (called by the deadline queue). */
  expire(): void {
    this.#fail(`timeout after ${this.definition.timeout.text}`);
  }

  /** Gives up (the module is stopping). */
  stop(): void {
    this.#fail("the healthchecks module is stopping");
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#settled) controller.abort(new Settled());
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#status = statusCode;
    if (!this.definition["valid-status"].includes(statusCode)) this.#keep = FAILURE_BODY_BYTES;
    else if ((this.definition["body-regexp"]?.length ?? 0) > 0) this.#keep = MATCHED_BODY_BYTES;
    if (this.#keep > 0) this.#chunks = [];
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#length += chunk.length;
    if (this.#chunks !== undefined) this.#chunks.push(chunk);
    // Enough read: stop here rather than download the rest.
    if (this.#length >= (this.#keep > 0 ? this.#keep : DISCARDED_BODY_BYTES)) {
      this.#judge();
      controller.abort(new Settled());
    }
  }

  onResponseEnd(): void {
    this.#judge();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (error instanceof Settled) return;
    const dispatcher = this.#retryDispatcher;
    const options = this.#retryOptions;
    if (dispatcher !== undefined && options !== undefined && this.#status === 0 && isStaleConnection(error)) {
      // The kept connection was closed by the server as the request went out: once more, on a
      // new connection, within the same timeout; after undici is done with the closed one.
      this.#retryDispatcher = undefined;
      this.#controller = undefined;
      setImmediate(() => {
        if (!this.#settled) dispatcher.dispatch(options, this);
      });
      return;
    }
    if (error instanceof Error && error.message === MAX_REDIRECTS_MESSAGE) {
      this.#fail(`more than ${MAX_REDIRECTS} redirects`);
    } else {
      this.#fail(errorMessage(error));
    }
  }

  /**
   * Sends the request through `dispatcher`, and once more when its connection turns out closed
   * before any response (idempotent methods only, RFC 9110 §9.2.2).
   */
  send(dispatcher: Dispatcher, options: RequestOptions): void {
    if (IDEMPOTENT_METHODS.has(this.definition.method)) {
      this.#retryDispatcher = dispatcher;
      this.#retryOptions = options;
    }
    dispatcher.dispatch(options, this);
  }

  /** Fails before undici could start (invalid options, unreadable TLS files). */
  fail(reason: string): void {
    this.#fail(reason);
  }

  /** Whether the verdict is in (the timeout or a stop may come before the request starts). */
  get settled(): boolean {
    return this.#settled;
  }

  /** The first `limit` bytes of the body. */
  #body(limit: number): Buffer {
    return Buffer.concat(this.#chunks ?? []).subarray(0, limit);
  }

  #judge(): void {
    if (this.#settled) return;
    if (!this.definition["valid-status"].includes(this.#status)) {
      // Decoded as UTF-8: a character cut at the end is replaced.
      const body = escapeHtml(this.#body(FAILURE_BODY_BYTES).toString("utf8"));
      this.#settle(failure(`HTTP request failed: status ${this.#status}. Body: '${body}'`));
      return;
    }
    const patterns = this.patterns;
    if (patterns.length > 0) {
      // RE2 reads the UTF-8 bytes as they came: no decoding of up to 10 MiB first.
      const body = this.#body(MATCHED_BODY_BYTES);
      for (const pattern of patterns) {
        if (!pattern.test(body)) {
          this.#settle(failure(`body does not match regexp ${pattern.source}`));
          return;
        }
      }
    }
    this.#settle(SUCCESS);
  }

  #fail(reason: string): void {
    if (this.#settled) return;
    this.#settle(failure(`HTTP request failed: ${reason}`));
    // A timeout or a stop: free undici's side too (before the request started, onRequestStart does).
    this.#controller?.abort(new Settled());
  }

  #settle(outcome: Outcome): void {
    this.#settled = true;
    this.deadlines.remove(this);
    this.list.delete(this);
    this.#chunks = undefined;
    this.own?.destroy().catch(() => {});
    this.resolve(outcome);
  }
}

/**
 * The exchanges in flight of an executor, to stop them: a list linked through the exchanges
 * themselves. A `Set` with one add and one delete per run kept most of what each run allocated
 * (the exchange, undici's request, the parsed headers) alive across a young-generation collection:
 * with 1 000 runs a second, about 3 MB survived each scavenge and was promoted, making each
 * scavenge some 20 times longer than the bare undici loop's and feeding the old-generation
 * collections; with this list, about 50 KB survive (docs/benchmarks.md).
 */
class InFlight {
  #head: Exchange | undefined;

  add(exchange: Exchange): void {
    exchange.inFlight = true;
    exchange.previousInFlight = undefined;
    exchange.nextInFlight = this.#head;
    if (this.#head !== undefined) this.#head.previousInFlight = exchange;
    this.#head = exchange;
  }

  delete(exchange: Exchange): void {
    if (!exchange.inFlight) return;
    exchange.inFlight = false;
    const { previousInFlight: previous, nextInFlight: next } = exchange;
    if (previous === undefined) this.#head = next;
    else previous.nextInFlight = next;
    if (next !== undefined) next.previousInFlight = previous;
    exchange.previousInFlight = undefined;
    exchange.nextInFlight = undefined;
  }

  /** The exchanges in flight now (a copy: stopping one removes it from the list). */
  list(): Exchange[] {
    const exchanges: Exchange[] = [];
    for (let exchange = this.#head; exchange !== undefined; exchange = exchange.nextInFlight) exchanges.push(exchange);
    return exchanges;
  }
}

/** Options of an {@link HttpExecutor}. */
export interface HttpExecutorOptions {
  /** Where the timeouts of the exchanges wait; default the process's shared queue. */
  readonly deadlines?: DeadlineQueue;
}

/**
 * Runs http checks. Checks without client certificate files share one keep-alive pool per origin
 * and TLS options ({@link poolKey}; docs/healthchecks.md), of at most
 * {@link MAX_CONNECTIONS_PER_ORIGIN} connections; checks with files get an Agent of their own per
 * execution, so renewed files are read. Call {@link HttpExecutor.close} when done.
 */
export class HttpExecutor {
  readonly #deadlines: DeadlineQueue;
  /** Shared dispatchers by pool key. */
  readonly #shared = new Map<string, Dispatchers>();
  #uses = 0;
  readonly #inFlight = new InFlight();
  readonly #watched = new WeakSet<AbortSignal>();

  constructor(options: HttpExecutorOptions = {}) {
    this.#deadlines = options.deadlines ?? SHARED_DEADLINES;
  }

  #sharedDispatchers(undici: Undici, definition: HttpDefinition, key: string): Dispatchers {
    let dispatchers = this.#shared.get(key);
    if (dispatchers === undefined) {
      dispatchers = createDispatchers(undici, definition);
      if (this.#shared.size >= MAX_POOLS) this.#evict();
      this.#shared.set(key, dispatchers);
    }
    dispatchers.used = ++this.#uses;
    return dispatchers;
  }

  /** Closes the least recently used pool, gracefully: requests in flight on it finish first. */
  #evict(): void {
    let oldest: [string, Dispatchers] | undefined;
    for (const entry of this.#shared) if (oldest === undefined || entry[1].used < oldest[1].used) oldest = entry;
    if (oldest === undefined) return;
    this.#shared.delete(oldest[0]);
    oldest[1].agent.close().catch(() => {});
  }

  /** Stops every exchange in flight when `stop` aborts; one listener per signal, not per run. */
  #watch(stop: AbortSignal): void {
    if (this.#watched.has(stop)) return;
    this.#watched.add(stop);
    stop.addEventListener(
      "abort",
      () => {
        for (const exchange of this.#inFlight.list()) exchange.stop();
      },
      { once: true },
    );
  }

  /**
   * Executes one http check. Never throws.
   *
   * @param stop aborted when the module stops; the request is abandoned
   * @param files how `key`, `cert` and `cacert` lead to files: paths as given (configuration-file
   *   checks, the default) or names under `healthchecks.tls-directory` (API checks, docs/security.md)
   * @returns success when the status is in valid-status and every body-regexp matches; otherwise a
   *   failure such as `HTTP request failed: status 500. Body: '...'` (first 1000 bytes of the body,
   *   HTML-escaped), `HTTP request failed: connect ECONNREFUSED 127.0.0.1:9999`, `HTTP request
   *   failed: timeout after 2s`, `HTTP request failed: cannot read cert client.pem: larger than 1
   *   MiB` or `body does not match regexp <r>`
   */
  run(definition: HttpDefinition, stop?: AbortSignal, files: TlsFileLocation = TLS_FILE_PATHS): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => this.start(definition, stop, files, resolve));
  }

  /**
   * Executes one http check as {@link HttpExecutor.run} does, and calls `onOutcome` once with its
   * outcome, possibly before it returns (a check that cannot start): no promise per run, for the
   * periodic checks. Never throws.
   */
  start(
    definition: HttpDefinition,
    stop: AbortSignal | undefined,
    files: TlsFileLocation,
    onOutcome: (outcome: Outcome) => void,
  ): void {
    if (stop?.aborted) {
      onOutcome(failure("HTTP request failed: the healthchecks module is stopping"));
      return;
    }
    if (stop !== undefined) this.#watch(stop);
    // The exchange's timeout starts here: reading the TLS files is part of the bounded execution.
    const exchange = new Exchange(definition, this.#deadlines, this.#inFlight, onOutcome);
    if (!hasTlsFiles(definition)) {
      this.#dispatch(exchange, undefined);
      return;
    }
    readTlsFiles(definition, files).then(
      (contents) => this.#dispatch(exchange, contents),
      // A TlsFileError reads `cannot read cert /etc/x.pem: ENOENT` or `... : not a regular file`.
      (error: unknown) => exchange.fail(errorMessage(error)),
    );
  }

  /** Sends the exchange's request: through the shared pool of its origin, or with `files`, an agent of its own. */
  #dispatch(exchange: Exchange, files: TlsFiles | undefined): void {
    if (exchange.settled) return;
    const undici = loadedUndici();
    if (undici === undefined) {
      // The process's first request: undici is imported now, within the exchange's timeout.
      loadUndici().then(
        () => this.#dispatch(exchange, files),
        (error: unknown) => exchange.fail(errorMessage(error)),
      );
      return;
    }
    const definition = exchange.definition;
    try {
      const prepared = preparedOf(definition);
      exchange.patterns = prepared.patterns;
      let dispatchers: Dispatchers;
      if (files !== undefined) {
        dispatchers = createDispatchers(undici, definition, files);
        exchange.own = dispatchers.agent;
      } else {
        dispatchers = this.#sharedDispatchers(undici, definition, prepared.poolKey);
      }
      exchange.send(definition.redirect ? dispatchers.redirecting : dispatchers.direct, prepared.options);
    } catch (error) {
      exchange.fail(errorMessage(error));
    }
  }

  /** Stops the exchanges in flight and closes every shared connection. */
  async close(): Promise<void> {
    for (const exchange of this.#inFlight.list()) exchange.stop();
    const agents = [...this.#shared.values()].map((dispatchers) => dispatchers.agent);
    this.#shared.clear();
    await Promise.all(agents.map((agent) => agent.destroy().catch(() => {})));
  }
}
