/**
 * The Graphite plaintext input (docs/inputs.md): a TCP server on `streams.graphite.host:port` that
 * reads `<path> <value> <timestamp>` lines (graphite/line.ts) and pushes one event per line into
 * `streams.graphite.stream`, or the default streams.
 *
 * Bounds and bad input, as Graphite's carbon does where it can:
 * - a malformed line is skipped and counted (`graphite_lines_total{outcome="malformed"}`); the
 *   connection goes on, as carbon's does;
 * - a line longer than `max-line-length` bytes closes the connection (counted in
 *   `graphite_closed_connections_total{reason="max-line-length"}`): what it sent before that line
 *   was taken, the rest is not read; so each connection holds at most one line's bytes;
 * - at most `max-connections` connections; more are closed as they arrive;
 * - the lines of each chunk read are pushed before the next chunk is read: when the streams do not
 *   keep up (a large chunk pushed in slices, or cluster mode waiting for the streams' owners) the
 *   socket is paused, so a fast sender is slowed by TCP back-pressure, never buffered without bound;
 * - an event over the event bounds (`streams.max-event-*`) is dropped and counted in
 *   `stream_dropped_events_total{action="graphite"}`.
 * Idle connections have no deadline: senders such as collectd stay connected between intervals.
 */
import { createServer, type Server, type Socket } from "node:net";
import type { FastifyBaseLogger } from "fastify";
import { errorMessage } from "../../platform/errors.js";
import { compileLinearRegex, type LinearRegex } from "../../platform/regex.js";
import type { GraphiteSettings } from "../config.js";
import type { Stream, StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import { withinBounds } from "../event-bounds.js";
import type { GraphiteMetrics } from "../metrics.js";
import { deliverSliced } from "../slices.js";
import { graphiteEvent } from "./line.js";

/** How often the warning about a missing target stream is logged at most, in milliseconds. */
const WARNING_INTERVAL_MS = 60_000;

/** The end of a line. */
const NEWLINE = 10;

/** What the server needs besides its settings and the engine. */
export interface GraphiteServerOptions {
  readonly metrics: GraphiteMetrics;
  readonly logger: FastifyBaseLogger;
}

/** The address of a peer as users write it: an IPv4 address mapped in IPv6 without its prefix. */
function peerOf(socket: Socket): string {
  const address = socket.remoteAddress ?? "";
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

/** The Graphite plaintext input of one Vigie instance. */
export class GraphiteServer {
  readonly #settings: GraphiteSettings;
  readonly #engine: StreamEngine;
  readonly #metrics: GraphiteMetrics;
  readonly #logger: FastifyBaseLogger;
  readonly #hostPattern: LinearRegex | undefined;
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #lastWarning = Number.NEGATIVE_INFINITY;

  constructor(settings: GraphiteSettings, engine: StreamEngine, options: GraphiteServerOptions) {
    this.#settings = settings;
    this.#engine = engine;
    this.#metrics = options.metrics;
    this.#logger = options.logger;
    const pattern = settings["host-pattern"];
    this.#hostPattern = pattern === undefined ? undefined : compileLinearRegex(pattern);
  }

  /**
   * Listens on `host:port`.
   * @returns the bound port (the one chosen by the system when `port` is 0)
   * @throws Error naming the address when it cannot be listened on (in use, not local)
   */
  async listen(): Promise<number> {
    if (this.#server !== undefined) throw new Error("the Graphite input is already listening");
    const server = createServer({ noDelay: true }, (socket) => this.#accept(socket));
    server.maxConnections = this.#settings["max-connections"];
    server.on("drop", () => this.#metrics.closed("max-connections"));
    const { host, port } = this.#settings;
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error) =>
        reject(new Error(`streams.graphite: cannot listen on ${host}:${port}: ${errorMessage(error)}`)),
      );
      server.listen(port, host, () => resolve());
    });
    server.removeAllListeners("error");
    server.on("error", (error) => this.#logger.error({ err: error }, "graphite: server error"));
    this.#server = server;
    const address = server.address();
    return typeof address === "object" && address !== null ? address.port : port;
  }

  /** Stops accepting connections and closes the open ones; resolves once the server is closed. */
  async close(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    this.#server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  #accept(socket: Socket): void {
    if (this.#server === undefined) {
      socket.destroy();
      return;
    }
    this.#sockets.add(socket);
    this.#metrics.connections(1);
    const peer = peerOf(socket);
    const maxLine = this.#settings["max-line-length"];
    /** The start of a line not ended yet (at most `max-line-length` bytes). */
    let partial: Buffer | undefined;
    socket.on("data", (chunk: Buffer) => {
      const events: Event[] = [];
      let malformed = 0;
      let start = 0;
      for (let end = chunk.indexOf(NEWLINE); end >= 0; end = chunk.indexOf(NEWLINE, start)) {
        let line = chunk.subarray(start, end);
        if (partial !== undefined) {
          line = Buffer.concat([partial, line]);
          partial = undefined;
        }
        start = end + 1;
        if (line.length > maxLine) return this.#tooLong(socket, events, malformed);
        if (line.length === 0 || (line.length === 1 && line[0] === 13)) continue;
        const event = graphiteEvent(line.toString("utf8"), peer, this.#hostPattern);
        if (event === undefined) malformed++;
        else events.push(event);
      }
      const rest = chunk.subarray(start);
      if ((partial?.length ?? 0) + rest.length > maxLine) return this.#tooLong(socket, events, malformed);
      if (rest.length > 0) partial = partial === undefined ? Buffer.from(rest) : Buffer.concat([partial, rest]);
      this.#take(socket, events, malformed);
    });
    socket.on("error", (error) => this.#logger.debug({ err: error, remote: peer }, "graphite: socket error"));
    socket.once("close", () => {
      this.#sockets.delete(socket);
      this.#metrics.connections(-1);
    });
  }

  /** A line over `max-line-length`: what came before it is taken, then the connection closes. */
  #tooLong(socket: Socket, events: Event[], malformed: number): void {
    this.#take(socket, events, malformed);
    this.#metrics.closed("max-line-length");
    socket.destroy();
  }

  /** Counts and pushes the lines of a chunk; pauses the socket until slow pushes went through. */
  #take(socket: Socket, events: Event[], malformed: number): void {
    if (malformed > 0) this.#metrics.lines("malformed", malformed);
    if (events.length === 0) return;
    const engine = this.#engine;
    const name = this.#settings.stream ?? "";
    const admitted = withinBounds(events, engine.limits.event, (bound) => engine.refuse(name, "graphite", bound));
    this.#metrics.lines("ok", admitted.length);
    let pending: Promise<void> | undefined;
    try {
      pending = deliverSliced(engine, () => this.#targets(), admitted);
    } catch (error) {
      this.#logger.warn({ err: error }, "graphite: events not pushed");
    }
    if (pending === undefined) return;
    socket.pause();
    pending
      .catch((error: unknown) => this.#logger.warn({ err: error }, "graphite: events not pushed"))
      .finally(() => socket.resume());
  }

  /** The target streams: `stream`, or the default streams; none (warned once a minute) when it is gone. */
  #targets(): readonly Stream[] {
    const name = this.#settings.stream;
    if (name === undefined) return this.#engine.defaults;
    const stream = this.#engine.get(name);
    if (stream !== undefined) return [stream];
    const now = Date.now();
    if (now - this.#lastWarning >= WARNING_INTERVAL_MS) {
      this.#lastWarning = now;
      this.#logger.warn({ stream: name }, "graphite: streams.graphite.stream names no stream: its events are dropped");
    }
    return [];
  }
}
