/**
 * WebSocket clients for tests (docs/streams.md): a `ws` subscriber that collects what it
 * receives (and answers pings, or not), the answer to a refused upgrade, and a raw upgrade request over TCP for paths and
 * headers a client library would refuse to send.
 */
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import WebSocket from "ws";

/** How long a test waits for a frame, a close or an answer before failing, in ms. */
const WAIT_MS = 10_000;

/** A subscriber's end of a channel subscription. */
export interface TestSubscriber {
  readonly socket: WebSocket;
  /** Every text frame received so far, parsed as JSON. */
  readonly events: unknown[];
  /** Frames that were binary (each event is expected as one text frame). */
  readonly binaryFrames: number;
  /** Ping frames received from the server. */
  readonly pings: number;
  /** Resolves once `count` events arrived, with the first `count` of them. */
  received(count: number): Promise<unknown[]>;
  /** Resolves with the close code and reason when the connection closes. */
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Closes the connection (1000) and waits until it is closed. */
  close(): Promise<void>;
}

/** The answer to an upgrade the server refused. */
export interface Refusal {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: unknown;
}

function rejectAfter(what: string, reject: (error: Error) => void): NodeJS.Timeout {
  return setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT_MS);
}

/** How a test subscriber behaves. */
export interface SubscribeOptions {
  /**
   * Whether the client answers the server's pings with pongs (RFC 6455 §5.5.3), as every client
   * does by default; `false` plays a client that is gone without the server knowing.
   */
  readonly autoPong?: boolean;
  /** The loopback address the client connects from (`127.0.0.2`...), to play another client. */
  readonly localAddress?: string;
}

/**
 * Opens a subscription with the `ws` client.
 * @param url `ws://127.0.0.1:<port>/api/v1/channel/<channel>[?query=…]`
 * @param headers extra upgrade headers (`authorization`, `origin`)
 * @throws Error naming the status and body when the server refuses the upgrade
 */
export async function subscribe(
  url: string,
  headers: Record<string, string> = {},
  options: SubscribeOptions = {},
): Promise<TestSubscriber> {
  const socket = new WebSocket(url, {
    headers,
    autoPong: options.autoPong ?? true,
    ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
  });
  const events: unknown[] = [];
  let binaryFrames = 0;
  let pings = 0;
  socket.on("ping", () => {
    pings++;
  });
  const waiters: Array<{ count: number; done: (events: unknown[]) => void }> = [];
  socket.on("message", (data, isBinary) => {
    if (isBinary) binaryFrames++;
    events.push(JSON.parse(data.toString()));
    for (const waiter of waiters.splice(0)) {
      if (events.length >= waiter.count) waiter.done(events.slice(0, waiter.count));
      else waiters.push(waiter);
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.on("close", (code, reason) => resolve({ code, reason: reason.toString() }));
  });
  await new Promise<void>((resolve, reject) => {
    const timer = rejectAfter(`the upgrade of ${url}`, reject);
    socket.once("open", () => {
      clearTimeout(timer);
      resolve();
    });
    socket.once("unexpected-response", (_request, response) => {
      clearTimeout(timer);
      let body = "";
      response.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      response.on("end", () => reject(new Error(`upgrade refused with ${response.statusCode}: ${body}`)));
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  return {
    socket,
    events,
    get binaryFrames() {
      return binaryFrames;
    },
    get pings() {
      return pings;
    },
    received: (count) =>
      events.length >= count
        ? Promise.resolve(events.slice(0, count))
        : new Promise((resolve, reject) => {
            const timer = rejectAfter(`${count} events (got ${events.length})`, reject);
            waiters.push({
              count,
              done: (taken) => {
                clearTimeout(timer);
                resolve(taken);
              },
            });
          }),
    closed,
    close: async () => {
      if (socket.readyState !== WebSocket.CLOSED) socket.close(1000);
      await closed;
    },
  };
}

/**
 * Attempts an upgrade with the `ws` client that the server must refuse, and returns its answer.
 * @throws Error when the upgrade succeeds or no answer comes
 */
export async function refusedUpgrade(url: string, headers: Record<string, string> = {}): Promise<Refusal> {
  const socket = new WebSocket(url, { headers });
  return new Promise<Refusal>((resolve, reject) => {
    const timer = rejectAfter(`the refusal of ${url}`, reject);
    socket.once("open", () => {
      clearTimeout(timer);
      socket.terminate();
      reject(new Error(`the upgrade of ${url} was accepted`));
    });
    socket.once("unexpected-response", (_request, response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      response.on("end", () => {
        clearTimeout(timer);
        socket.terminate();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: the test shows the text
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body });
      });
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** The answer to a raw upgrade request: 101 (the connection is then closed) or a refusal. */
export interface RawAnswer {
  readonly status: number;
  /** The response body as text; empty for 101. */
  readonly body: string;
}

/**
 * Sends `GET <path>` with WebSocket upgrade headers (RFC 6455 §4.1) over a plain TCP connection,
 * exactly as given (fuzzed paths and headers included), and reads the answer. A 101 is answered by
 * closing the connection at once. The connection is closed in every case.
 * @param headers extra headers; `host` defaults to `127.0.0.1:<port>`
 * @throws Error when nothing answers within the wait or the answer is not HTTP
 */
export async function rawUpgrade(port: number, path: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const all: Record<string, string> = {
    host: `127.0.0.1:${port}`,
    connection: "Upgrade",
    upgrade: "websocket",
    "sec-websocket-version": "13",
    "sec-websocket-key": randomBytes(16).toString("base64"),
    ...headers,
  };
  const head = [`GET ${path} HTTP/1.1`, ...Object.entries(all).map(([name, value]) => `${name}: ${value}`), "", ""];
  const socket = connect(port, "127.0.0.1");
  socket.write(head.join("\r\n"));
  return new Promise<RawAnswer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = rejectAfter(`an answer to GET ${path.slice(0, 80)}`, (error) => {
      socket.destroy();
      reject(error);
    });
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString("utf8");
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (status === null) {
        reject(new Error(`not an HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
        return;
      }
      const separator = text.indexOf("\r\n\r\n");
      resolve({ status: Number(status[1]), body: separator === -1 ? "" : text.slice(separator + 4) });
    };
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      const text = Buffer.concat(chunks).toString("latin1");
      if (text.startsWith("HTTP/1.1 101")) {
        finish();
        return;
      }
      // A complete refusal: headers and a body of Content-Length bytes.
      const separator = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, separator));
      if (separator !== -1 && length !== null && text.length - separator - 4 >= Number(length[1])) finish();
    });
    socket.on("end", finish);
    socket.on("error", (error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    });
  });
}
