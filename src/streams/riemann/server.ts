/**
 * The Riemann protocol input (docs/streams.md): a TCP server, or TLS with `tls-cert`/`tls-key`
 * (and client certificates required with `tls-ca`), that reads length-prefixed `Msg` frames and
 * answers each with one reply, in order.
 *
 * Each connection is handled in order: a frame is decoded, its events pushed and its reply written
 * before the next frame is looked at; a message of many events is handled a slice per turn of the
 * event loop, its connection paused meanwhile (see RiemannHandler). When the socket's write buffer is full
 * (`write` returns false: the client does not read its replies fast enough) reading pauses until
 * `drain`, so a fast client is slowed by TCP back-pressure.
 *
 * Nothing is held without bound, and no client can take the input for itself:
 * - connections: at most `max-connections`, and at most `max-connections-per-address` from one
 *   client address, TLS handshakes in progress included; beyond either, a new connection is
 *   closed as it arrives, counted, and logged at most once a minute;
 * - TLS handshakes: one not finished within `handshake-timeout`, or failed, destroys its socket at
 *   once, which frees its slot (Node only reports such a socket; left alone, a client that never
 *   speaks TLS would hold its slot for good);
 * - a frame whose rest does not arrive within `frame-timeout` of its first bytes: the client gets
 *   an error reply and the connection is closed (destroyed within {@link CLOSE_GRACE_MS} if the
 *   client does not close its side), so that slow clients cannot pin `max-frame-size` each for
 *   ever. A connection with nothing buffered has no deadline (collectd stays connected, idle,
 *   between its intervals);
 * - bytes held for clients, all connections together (frames partly received, frames not handled
 *   yet or being handled, replies not read yet): at most `max-buffered-bytes`; beyond, the
 *   connection that waited longest on its client is closed (see ByteBudget).
 *
 * Bad input never takes the process down: an undecodable frame gets an error reply and the
 * connection goes on (the framing is intact); a frame longer than `max-frame-size` gets an error
 * reply, then the connection is closed (the rest of the stream cannot be trusted); a peer that
 * closes mid-frame gets an error reply when it still reads, and is cleaned up either way. Socket
 * errors are logged at debug level only.
 */
import { readFile } from "node:fs/promises";
import { createServer as createTcpServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type TlsOptions } from "node:tls";
import type { FastifyBaseLogger } from "fastify";
import { errorMessage } from "../../platform/errors.js";
import type { RiemannSettings } from "../config.js";
import type { StreamEngine } from "../engine.js";
import type { RiemannMetrics, RiemannRefusal } from "../metrics.js";
import { ByteBudget } from "./budget.js";
import { CLOSE_GRACE_MS, Connection, type ConnectionContext } from "./connection.js";
import { RiemannHandler } from "./handler.js";

/** What the server needs besides its settings and the engine. */
export interface RiemannServerOptions {
  readonly metrics: RiemannMetrics;
  readonly logger: FastifyBaseLogger;
}

/** How often a warning about one bound is logged at most, in milliseconds. */
const WARNING_INTERVAL_MS = 60_000;

/** The Riemann protocol input of one Vigie instance. */
export class RiemannServer {
  readonly #settings: RiemannSettings;
  readonly #handler: RiemannHandler;
  readonly #logger: FastifyBaseLogger;
  readonly #metrics: RiemannMetrics;
  readonly #context: ConnectionContext;
  readonly #connections = new Set<Connection>();
  /** Every accepted TCP socket, TLS handshakes in progress included, so that close() ends them all. */
  readonly #sockets = new Set<Socket>();
  /** Open TCP sockets by client address (TLS handshakes in progress included). */
  readonly #perAddress = new Map<string, number>();
  /** When a warning about each bound was last logged (Date.now(), milliseconds). */
  readonly #lastWarnings = new Map<string, number>();
  #server: Server | undefined;
  #closing = false;
  #closed: Promise<void> | undefined;

  constructor(settings: RiemannSettings, engine: StreamEngine, options: RiemannServerOptions) {
    this.#settings = settings;
    this.#handler = new RiemannHandler(settings, engine, options.metrics);
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    const metrics = options.metrics;
    this.#context = {
      handler: this.#handler,
      logger: options.logger,
      metrics,
      budget: new ByteBudget(
        settings["max-buffered-bytes"],
        () => this.#connections,
        (delta) => metrics.buffered(delta),
      ),
      maxFrameSize: settings["max-frame-size"],
      frameTimeout: settings["frame-timeout"],
      warn: (bound, fields, message) => this.#warn(bound, fields, message),
    };
  }

  /** Bytes the connections hold for their clients now, all together (see `max-buffered-bytes`). */
  get buffered(): number {
    return this.#context.budget.total;
  }

  /**
   * Reads the TLS files if any and listens on `host:port`.
   * @returns the bound port (the one chosen by the system when `port` is 0)
   * @throws Error naming the setting and the file when a TLS file cannot be read or is not a valid
   *   PEM certificate or key, or naming the address when it cannot be listened on (in use, not local)
   */
  async listen(): Promise<number> {
    if (this.#server !== undefined) throw new Error("the Riemann input is already listening");
    const tls = await this.#tlsOptions();
    const onConnection = (socket: Socket) => this.#accept(socket);
    let server: Server;
    if (tls === undefined) {
      server = createTcpServer({ allowHalfOpen: true, noDelay: true }, onConnection);
    } else {
      try {
        const handshakeTimeout = this.#settings["handshake-timeout"].milliseconds;
        server = createTlsServer({ ...tls, allowHalfOpen: true, noDelay: true, handshakeTimeout }, onConnection);
      } catch (error) {
        throw new Error(`streams.riemann: invalid TLS files (${this.#tlsFiles()}): ${errorMessage(error)}`);
      }
      server.on("tlsClientError", (error: NodeJS.ErrnoException, socket: Socket) =>
        this.#handshakeFailed(error, socket),
      );
    }
    // Each connection may hold a partial frame of up to max-frame-size: their number is bounded too.
    server.maxConnections = this.#settings["max-connections"];
    server.on("drop", () => this.#refuse("max-connections", this.#settings["max-connections"]));
    // Before anything else sees the socket (the TLS layer, #accept): a refused one goes no further.
    server.prependListener("connection", (socket: Socket) => this.#admit(socket));
    const { host, port } = this.#settings;
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error) =>
        reject(new Error(`streams.riemann: cannot listen on ${host}:${port}: ${errorMessage(error)}`)),
      );
      server.listen(port, host, () => resolve());
    });
    server.removeAllListeners("error");
    // After listening, errors are those of accepting (too many open files): logged, never fatal.
    server.on("error", (error) => this.#logger.error({ err: error }, "riemann: server error"));
    this.#server = server;
    const address = server.address();
    return typeof address === "object" && address !== null ? address.port : port;
  }

  /**
   * Stops accepting connections and ends the open ones after the frame being handled (frames
   * received but not handled yet are dropped, unanswered); a message being handled in slices stops
   * at its next slice, unanswered, its remaining events not pushed (the module drains its queues
   * and outputs next). Resolves when every connection is closed, at most {@link CLOSE_GRACE_MS}
   * after the call.
   */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    this.#closing = true;
    this.#handler.stop();
    const server = this.#server;
    if (server === undefined) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    const connections = [...this.#connections];
    for (const connection of connections) connection.close();
    // Connections end themselves within the grace period; this also ends TLS handshakes that are
    // still in progress, which no Connection holds yet.
    const stragglers = setTimeout(() => {
      for (const socket of this.#sockets) socket.destroy();
    }, CLOSE_GRACE_MS);
    await Promise.all([closed, ...connections.map((connection) => connection.closed)]);
    clearTimeout(stragglers);
  }

  async #tlsOptions(): Promise<TlsOptions | undefined> {
    const settings = this.#settings;
    const certFile = settings["tls-cert"];
    const keyFile = settings["tls-key"];
    const caFile = settings["tls-ca"];
    if (certFile === undefined || keyFile === undefined) return undefined;
    const [cert, key] = await Promise.all([readSetting("tls-cert", certFile), readSetting("tls-key", keyFile)]);
    if (caFile === undefined) return { cert, key };
    // Client certificates are required and must chain to this CA: they stand for the token that
    // the protocol cannot carry (security.require-token).
    return { cert, key, ca: await readSetting("tls-ca", caFile), requestCert: true, rejectUnauthorized: true };
  }

  /**
   * A new TCP socket: closed at once when the server is closing or its client address already has
   * `max-connections-per-address` open, else counted until it closes.
   */
  #admit(socket: Socket): void {
    const address = socket.remoteAddress;
    if (this.#closing || address === undefined) {
      // No address: the client is already gone.
      socket.destroy();
      return;
    }
    const open = this.#perAddress.get(address) ?? 0;
    const limit = this.#settings["max-connections-per-address"];
    if (open >= limit) {
      socket.destroy();
      this.#refuse("max-connections-per-address", limit);
      return;
    }
    this.#perAddress.set(address, open + 1);
    this.#sockets.add(socket);
    socket.once("close", () => {
      this.#sockets.delete(socket);
      const left = (this.#perAddress.get(address) ?? 1) - 1;
      if (left === 0) this.#perAddress.delete(address);
      else this.#perAddress.set(address, left);
    });
  }

  /**
   * A TLS handshake timed out or failed (no or a wrong client certificate, not TLS at all): the
   * client's problem, logged at debug level, but its socket is destroyed here, at once, for Node
   * only reports it and would leave it open, holding its slot for good. A client that went away
   * before its handshake (a reset, or refused by #admit) is not counted.
   */
  #handshakeFailed(error: NodeJS.ErrnoException, socket: Socket): void {
    socket.destroy();
    this.#logger.debug({ err: error, remote: socket.remoteAddress }, "riemann: TLS handshake failed");
    if (error.code === "ECONNRESET") return;
    if (error.code === "ERR_TLS_HANDSHAKE_TIMEOUT") {
      this.#metrics.refused("handshake-timeout");
    } else {
      this.#metrics.refused("tls-handshake");
    }
  }

  /** Counts a connection refused by a bound, and logs it at most once a minute per bound. */
  #refuse(bound: RiemannRefusal, limit: number): void {
    this.#metrics.refused(bound);
    this.#warn(
      bound,
      { limit },
      `riemann: connection refused, streams.riemann.${bound} reached (logged at most once a minute)`,
    );
  }

  /** Logs a warning about `bound`, unless one was logged less than a minute ago. */
  #warn(bound: string, fields: Record<string, unknown>, message: string): void {
    const now = Date.now();
    if (now - (this.#lastWarnings.get(bound) ?? Number.NEGATIVE_INFINITY) < WARNING_INTERVAL_MS) return;
    this.#lastWarnings.set(bound, now);
    this.#logger.warn(fields, message);
  }

  #tlsFiles(): string {
    const settings = this.#settings;
    return (["tls-cert", "tls-key", "tls-ca"] as const)
      .filter((name) => settings[name] !== undefined)
      .map((name) => `${name} ${settings[name]}`)
      .join(", ");
  }

  /** A connection ready for frames (TCP: admitted; TLS: its handshake done). */
  #accept(socket: Socket): void {
    if (socket.destroyed) return; // refused by #admit
    if (this.#closing) {
      socket.destroy();
      return;
    }
    const connection = new Connection(socket, this.#context, () => {
      this.#connections.delete(connection);
      this.#metrics.connections(-1);
    });
    this.#connections.add(connection);
    this.#metrics.connections(1);
  }
}

/** Reads a file named by a setting. @throws Error naming the setting and the file */
async function readSetting(name: string, file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    throw new Error(`streams.riemann.${name}: cannot read ${file}: ${errorMessage(error)}`);
  }
}

export { CLOSE_GRACE_MS };
