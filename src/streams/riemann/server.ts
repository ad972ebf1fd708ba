/**
 * The Riemann protocol input (streams-io.md §5): a TCP server, or TLS with `tls-cert`/`tls-key`
 * (and client certificates required with `tls-ca`), that reads length-prefixed `Msg` frames and
 * answers each with one reply, in order.
 *
 * Each connection is handled in order: a frame is decoded, its events pushed and its reply written
 * before the next frame is looked at; a message of many events is handled a slice per turn of the
 * event loop, its connection paused meanwhile (see RiemannHandler). When the socket's write buffer is full
 * (`write` returns false: the client does not read its replies fast enough) reading pauses until
 * `drain`, so a fast client is slowed by TCP back-pressure and nothing is buffered without bound:
 * per connection, at most one partial frame (up to `max-frame-size`), the chunk being read and the
 * socket's own buffers. A partial frame is held for {@link FRAME_TIMEOUT_MS} at most, counted from
 * its first bytes: a client that sends a length and then trickles or stops gets an error reply and
 * is closed, so that `max-connections` slow clients cannot pin `max-frame-size` each for ever. A
 * connection with nothing buffered has no deadline (collectd stays connected, idle, between its
 * intervals).
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
import type { RiemannSettings } from "../config.js";
import type { StreamEngine } from "../engine.js";
import type { RiemannMetrics } from "../metrics.js";
import { CLOSE_GRACE_MS, Connection } from "./connection.js";
import { RiemannHandler, reasonOf } from "./handler.js";

/** What the server needs besides its settings and the engine. */
export interface RiemannServerOptions {
  readonly metrics: RiemannMetrics;
  readonly logger: FastifyBaseLogger;
  /**
   * How long a frame may take to arrive once its first bytes did, in milliseconds; default
   * {@link FRAME_TIMEOUT_MS}. Not a setting: tests shorten it.
   */
  readonly frameTimeoutMs?: number;
}

/** How long a TLS client may take to complete its handshake, in milliseconds. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/**
 * How long a frame may take to arrive once its first bytes did, in milliseconds: past it, the
 * client gets an error reply and the connection is closed. 16 MiB (the default `max-frame-size`)
 * within 30 s needs about 4.5 Mbit/s; collectd and riemann-client send a message in one write.
 */
export const FRAME_TIMEOUT_MS = 30_000;

/** The Riemann protocol input of one Vigie instance. */
export class RiemannServer {
  readonly #settings: RiemannSettings;
  readonly #handler: RiemannHandler;
  readonly #logger: FastifyBaseLogger;
  readonly #metrics: RiemannMetrics;
  readonly #frameTimeoutMs: number;
  readonly #connections = new Set<Connection>();
  /** Every accepted TCP socket, TLS handshakes in progress included, so that close() ends them all. */
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #closing = false;
  #lastDropWarning = Number.NEGATIVE_INFINITY;
  #closed: Promise<void> | undefined;

  constructor(settings: RiemannSettings, engine: StreamEngine, options: RiemannServerOptions) {
    this.#settings = settings;
    this.#handler = new RiemannHandler(settings, engine, options.metrics);
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#frameTimeoutMs = options.frameTimeoutMs ?? FRAME_TIMEOUT_MS;
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
        server = createTlsServer(
          { ...tls, allowHalfOpen: true, noDelay: true, handshakeTimeout: HANDSHAKE_TIMEOUT_MS },
          onConnection,
        );
      } catch (error) {
        throw new Error(`streams.riemann: invalid TLS files (${this.#tlsFiles()}): ${reasonOf(error)}`);
      }
      // A failed handshake (no or a wrong client certificate, not TLS at all) is the client's problem.
      server.on("tlsClientError", (error) => this.#logger.debug({ err: error }, "riemann: TLS handshake failed"));
    }
    // Each connection may hold a partial frame of up to max-frame-size: their number is bounded too.
    server.maxConnections = this.#settings["max-connections"];
    server.on("drop", () => this.#warnDropped());
    server.on("connection", (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once("close", () => this.#sockets.delete(socket));
    });
    const { host, port } = this.#settings;
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error) =>
        reject(new Error(`streams.riemann: cannot listen on ${host}:${port}: ${reasonOf(error)}`)),
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

  /** Logs connections refused over `max-connections`, at most once a minute. */
  #warnDropped(): void {
    const now = Date.now();
    if (now - this.#lastDropWarning < 60_000) return;
    this.#lastDropWarning = now;
    this.#logger.warn(
      { limit: this.#settings["max-connections"] },
      "riemann: connection refused, streams.riemann.max-connections reached",
    );
  }

  #tlsFiles(): string {
    const settings = this.#settings;
    return (["tls-cert", "tls-key", "tls-ca"] as const)
      .filter((name) => settings[name] !== undefined)
      .map((name) => `${name} ${settings[name]}`)
      .join(", ");
  }

  #accept(socket: Socket): void {
    if (this.#closing) {
      socket.destroy();
      return;
    }
    const limits = { maxFrameSize: this.#settings["max-frame-size"], frameTimeoutMs: this.#frameTimeoutMs };
    const connection = new Connection(socket, this.#handler, limits, this.#logger, () => {
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
    throw new Error(`streams.riemann.${name}: cannot read ${file}: ${reasonOf(error)}`);
  }
}

export { CLOSE_GRACE_MS };
