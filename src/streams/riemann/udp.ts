/**
 * The Riemann protocol input over UDP (docs/inputs.md): `streams.riemann.udp-port`, bound on
 * `streams.riemann.host`. Each datagram is one protobuf `Msg`, without the TCP length prefix (what
 * Riemann's UDP server reads and riemann-client `send --udp` sends); its events are mapped and
 * pushed exactly as over TCP (see RiemannHandler), and nothing is answered: UDP has no reply in
 * Riemann's protocol. A query in a datagram is not run (nobody would read its answer).
 *
 * Bad input never harms the server: an undecodable datagram, or one naming an unknown stream, is
 * dropped whole and counted in `riemann_udp_datagrams_total{outcome="error"}`. A datagram is at most
 * 64 KiB, so one is handled at once unless it holds thousands of events; such large ones are
 * handled a slice per turn of the event loop, at most {@link MAX_PENDING_DATAGRAMS} at a time: more
 * arriving meanwhile are dropped and counted (`outcome="busy"`), so that memory stays bounded
 * (the kernel's receive buffer drops what comes faster still, as UDP does).
 */
import { createSocket, type Socket } from "node:dgram";
import { isIPv6 } from "node:net";
import type { FastifyBaseLogger } from "fastify";
import { errorMessage } from "../../platform/errors.js";
import type { RiemannUdpMetrics } from "../metrics.js";
import type { RiemannHandler } from "./handler.js";
import { OK_FRAME } from "./protocol.js";

/** Large datagrams being handled in slices at once at most; more are dropped (64 KiB each at most). */
export const MAX_PENDING_DATAGRAMS = 64;

/** What the UDP input needs. */
export interface RiemannUdpOptions {
  /** The address to bind (`streams.riemann.host`). */
  readonly host: string;
  /** The port (`streams.riemann.udp-port`); 0: one the system chooses. */
  readonly port: number;
  /** The handler of the Riemann input, shared with TCP. */
  readonly handler: Pick<RiemannHandler, "handle">;
  readonly metrics: RiemannUdpMetrics;
  readonly logger: FastifyBaseLogger;
}

/** The Riemann UDP input of one Vigie instance. */
export class RiemannUdpServer {
  readonly #options: RiemannUdpOptions;
  #socket: Socket | undefined;
  #pending = 0;

  constructor(options: RiemannUdpOptions) {
    this.#options = options;
  }

  /**
   * Binds `host:port`.
   * @returns the bound port (the one chosen by the system when `port` is 0)
   * @throws Error naming the address when it cannot be bound (in use, not local)
   */
  async listen(): Promise<number> {
    if (this.#socket !== undefined) throw new Error("the Riemann UDP input is already listening");
    const { host, port } = this.#options;
    const socket = createSocket(isIPv6(host) ? "udp6" : "udp4");
    await new Promise<void>((resolve, reject) => {
      socket.once("error", (error) =>
        reject(new Error(`streams.riemann.udp-port: cannot listen on ${host}:${port}: ${errorMessage(error)}`)),
      );
      socket.bind(port, host, () => resolve());
    });
    socket.removeAllListeners("error");
    // After binding, errors are the socket's (never a client's): logged, never fatal.
    socket.on("error", (error) => this.#options.logger.error({ err: error }, "riemann: UDP socket error"));
    socket.on("message", (datagram) => this.#receive(datagram));
    this.#socket = socket;
    return socket.address().port;
  }

  /** Stops receiving; datagrams being handled in slices stop with the handler (RiemannHandler.stop). */
  close(): Promise<void> {
    const socket = this.#socket;
    if (socket === undefined) return Promise.resolve();
    this.#socket = undefined;
    return new Promise((resolve) => socket.close(() => resolve()));
  }

  #receive(datagram: Buffer): void {
    const { handler, metrics } = this.#options;
    if (this.#pending >= MAX_PENDING_DATAGRAMS) {
      metrics("busy");
      return;
    }
    const reply = handler.handle(datagram, false);
    if (!(reply instanceof Promise)) {
      metrics(reply === OK_FRAME ? "ok" : "error");
      return;
    }
    this.#pending++;
    void reply.then((answer) => {
      this.#pending--;
      // undefined: the server is closing and the message was cut short, not the client's fault.
      if (answer !== undefined) metrics(answer === OK_FRAME ? "ok" : "error");
    });
  }
}
