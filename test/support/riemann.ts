/**
 * A Riemann protocol client for tests (TCP or TLS, loopback only): sends framed `Msg`s or raw
 * bytes, collects the framed replies in order, and tells when the server closed the connection.
 */
import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { FrameReader } from "../../src/streams/riemann/framing.js";
import { decodeReply, type EncodableEvent, encodeMsg } from "../../src/streams/riemann/protocol.js";

/** A decoded reply. */
export type Reply = ReturnType<typeof decodeReply>;

/** A message as a client sends it. */
export interface ClientMessage {
  readonly events?: readonly EncodableEvent[];
  readonly query?: string;
}

/** Client certificates and the CA that signed the server's, as PEM. */
export interface ClientTls {
  readonly ca: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/** The bytes of a message with its 4-byte big-endian length prefix. */
export function frameOf(message: ClientMessage): Buffer {
  const body = encodeMsg({
    ...(message.events === undefined ? {} : { events: message.events }),
    ...(message.query === undefined ? {} : { query: { string: message.query } }),
  });
  return withLength(body);
}

/** `body` after its 4-byte big-endian length. */
export function withLength(body: Uint8Array): Buffer {
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(body.length);
  return Buffer.concat([prefix, body]);
}

/** One connection to a Riemann input on 127.0.0.1. */
export class RiemannClient {
  readonly #reader = new FrameReader(1024 * 1024 * 1024);
  readonly #replies: Reply[] = [];
  readonly #waiting: Array<(reply: Reply) => void> = [];
  /** Resolves when the server closed the connection (or it failed). */
  readonly closed: Promise<void>;
  /** The connection's error, if one happened (a reset, a refused handshake). */
  error: Error | undefined;

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.#reader.push(chunk);
      for (let next = this.#reader.next(); next.kind === "frame"; next = this.#reader.next()) {
        const reply = decodeReply(next.body);
        const waiter = this.#waiting.shift();
        if (waiter === undefined) this.#replies.push(reply);
        else waiter(reply);
      }
    });
    socket.on("error", (error) => {
      this.error = error;
    });
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
  }

  /**
   * Connects (with TLS when `tls` is given) and resolves once the connection is usable.
   * @param localAddress the client's address, another loopback address than 127.0.0.1 (127.0.0.2 …)
   *   to stand for another client
   */
  static async connect(port: number, tls?: ClientTls, localAddress?: string): Promise<RiemannClient> {
    const from = localAddress === undefined ? {} : { localAddress };
    return new Promise((resolve, reject) => {
      const socket =
        tls === undefined
          ? connectTcp({ host: "127.0.0.1", port, ...from }, () => resolve(new RiemannClient(socket)))
          : connectTls({ host: "127.0.0.1", port, servername: "localhost", ...from, ...tls }, () =>
              resolve(new RiemannClient(socket)),
            );
      socket.once("error", reject);
    });
  }

  /** Writes raw bytes. */
  write(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** Sends a message and waits for its reply (replies come in order). */
  async send(message: ClientMessage): Promise<Reply> {
    this.write(frameOf(message));
    return this.reply();
  }

  /**
   * The next reply not yet taken.
   * @throws Error when none comes within `timeoutMs` or the connection closes first
   */
  async reply(timeoutMs = 5_000): Promise<Reply> {
    const ready = this.#replies.shift();
    if (ready !== undefined) return ready;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no reply within the time limit")), timeoutMs);
      const waiter = (reply: Reply) => {
        clearTimeout(timer);
        resolve(reply);
      };
      this.#waiting.push(waiter);
      void this.closed.then(() => {
        const index = this.#waiting.indexOf(waiter);
        if (index === -1) return;
        this.#waiting.splice(index, 1);
        clearTimeout(timer);
        reject(new Error("the connection closed before a reply"));
      });
    });
  }

  /** Replies received and not yet taken. */
  get pending(): number {
    return this.#replies.length;
  }

  /** Closes the connection at once. */
  destroy(): void {
    this.socket.destroy();
  }
}
