/**
 * A programmable HTTP receiver on 127.0.0.1 for the outputs' tests: it records every request and
 * answers as the test says (a status, a dropped connection, or no answer at all).
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { Socket } from "node:net";

/** A request as the receiver got it. */
export interface ReceivedRequest {
  readonly method: string;
  /** Path and query. */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** When it arrived, performance.now() milliseconds. */
  readonly at: number;
  /** The client's port: one port over several requests means one kept-alive connection. */
  readonly remotePort: number | undefined;
}

/** How the receiver answers one request. */
export type Reply =
  | { readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body?: string }
  /** Closes the connection without answering. */
  | "drop"
  /** Never answers (until the receiver closes). */
  | "hang";

/** Decides the reply to the request number `index` (0 for the first). */
export type Responder = (request: ReceivedRequest, index: number) => Reply | Promise<Reply>;

/** A running receiver. */
export interface Receiver {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, answered or not, in arrival order. */
  readonly requests: ReceivedRequest[];
  /** The requests answered with a 2xx status. */
  readonly accepted: ReceivedRequest[];
  /** Replaces the responder. */
  respond(responder: Responder): void;
  /** Resolves once `count` requests were accepted (2xx); rejects after `timeoutMs`. */
  acceptedAtLeast(count: number, timeoutMs?: number): Promise<void>;
  /** Stops listening and destroys every connection (hanging ones included). */
  close(): Promise<void>;
}

/** Answers 200 with an empty body. */
export const OK: Responder = () => ({ status: 200 });

/**
 * Starts a receiver on 127.0.0.1 (a free port, or `port`).
 * @param responder decides each answer; 200 by default
 */
export async function startReceiver(responder: Responder = OK, port = 0): Promise<Receiver> {
  let current = responder;
  const requests: ReceivedRequest[] = [];
  const accepted: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const received: ReceivedRequest = {
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks),
        at: performance.now(),
        remotePort: request.socket.remotePort,
      };
      const index = requests.length;
      requests.push(received);
      void Promise.resolve(current(received, index)).then((reply) => {
        if (reply === "hang") return;
        if (reply === "drop") {
          request.socket.destroy();
          return;
        }
        if (reply.status >= 200 && reply.status < 300) {
          accepted.push(received);
          for (const waiter of waiters) waiter();
        }
        response.writeHead(reply.status, reply.headers);
        response.end(reply.body ?? "");
      });
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const actualPort = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${actualPort}`,
    port: actualPort,
    requests,
    accepted,
    respond(responder) {
      current = responder;
    },
    acceptedAtLeast(count, timeoutMs = 10_000) {
      if (accepted.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the receiver accepted ${accepted.length} requests, not ${count}, within ${timeoutMs} ms`));
        }, timeoutMs);
        const check = () => {
          if (accepted.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      });
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The `n` field of every event the receiver accepted, in order, for outputs of the `json` format
 * (one JSON array of events per request).
 */
export function acceptedNumbers(receiver: Receiver): number[] {
  return receiver.accepted.flatMap((request) =>
    (JSON.parse(request.body.toString("utf8")) as Array<{ n: number }>).map((event) => event.n),
  );
}
