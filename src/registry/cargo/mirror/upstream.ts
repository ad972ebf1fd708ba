/**
 * The mirror's HTTP client for its upstream (an index such as https://index.crates.io/ and the
 * download host its `config.json` names): one undici Agent with bounded connections and
 * deadlines, and answers read up to a bound, so that an upstream can neither hang a request forever
 * nor make Vigie hold an unbounded body. A GET whose kept-alive connection the upstream closed
 * under it is sent once more on a fresh one. URLs are only logged without their query and
 * credentials.
 */
import type { Dispatcher } from "undici";
import { isStaleConnection } from "../../../platform/stale-connection.js";
import { loadUndici } from "../../../platform/undici.js";

/** Connect, headers and idle-body deadline of an upstream request, in milliseconds. */
export const UPSTREAM_TIMEOUT_MS = 30_000;

/** Connections kept per upstream origin. */
const CONNECTIONS = 16;

/** An upstream answer whose body has not been read yet. */
export interface UpstreamAnswer {
  readonly status: number;
  /** A header's value, the first of a repeated one. */
  readonly header: (name: string) => string | undefined;
  /** The body as a stream (undici's). Must be read or destroyed. */
  readonly body: Dispatcher.ResponseData["body"];
}

/** An upstream body longer than the bound allowed: the sentence names it. */
export class TooLongError extends Error {}

/** A URL fit for a log line or an error sentence: no credentials, no query. */
export function shownUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/** GETs from upstream origins over one keep-alive Agent. */
export class Upstream {
  /** Made on the first request: undici is loaded then (platform/undici.ts). */
  #agent: Dispatcher | undefined;
  /** Set by close(): no Agent is made after it. */
  #closed = false;

  async #dispatcher(): Promise<Dispatcher> {
    if (this.#agent !== undefined) return this.#agent;
    const { Agent, errors, interceptors } = await loadUndici();
    if (this.#closed && this.#agent === undefined) throw new errors.ClientDestroyedError();
    this.#agent ??= new Agent({
      connections: CONNECTIONS,
      connect: { timeout: UPSTREAM_TIMEOUT_MS },
      headersTimeout: UPSTREAM_TIMEOUT_MS,
      bodyTimeout: UPSTREAM_TIMEOUT_MS,
      // A download URL may redirect to a CDN (crates.io's API does), as cargo follows.
    }).compose(interceptors.redirect({ maxRedirections: 5 }));
    return this.#agent;
  }

  /**
   * GETs `url` with `headers` (no `Accept-Encoding`: bodies come as they are stored); once more
   * when the connection was closed before any answer (a kept connection the upstream had just
   * closed: stale-connection.ts).
   * @throws whatever undici throws on a network error or a deadline
   */
  async get(url: URL, headers: Record<string, string> = {}): Promise<UpstreamAnswer> {
    const dispatcher = await this.#dispatcher();
    const options: Dispatcher.RequestOptions = {
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: "GET",
      headers: { "user-agent": "vigie-cargo-mirror", ...headers },
    };
    let answer: Dispatcher.ResponseData;
    try {
      answer = await dispatcher.request(options);
    } catch (error) {
      if (!isStaleConnection(error)) throw error;
      answer = await dispatcher.request(options);
    }
    return {
      status: answer.statusCode,
      header: (name) => {
        const value = answer.headers[name];
        return Array.isArray(value) ? value[0] : value;
      },
      body: answer.body,
    };
  }

  /** Closes the connections, aborting requests in flight: a stuck upstream must not hold a shutdown. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#agent?.destroy();
  }
}

/**
 * Reads a whole body, refusing one longer than `maxBytes` (by its `Content-Length` before reading,
 * or once that many bytes came).
 * @throws TooLongError; whatever the stream throws
 */
export async function readBounded(answer: UpstreamAnswer, maxBytes: number): Promise<Buffer> {
  const declared = Number(answer.header("content-length") ?? "0");
  if (declared > maxBytes) {
    discard(answer);
    throw new TooLongError(`the upstream's answer is ${declared} bytes, more than the ${maxBytes} allowed`);
  }
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of answer.body) {
    length += chunk.length;
    if (length > maxBytes) {
      discard(answer);
      throw new TooLongError(`the upstream's answer is more than the ${maxBytes} bytes allowed`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, length);
}

/**
 * Drops a body not needed (an error status, a 304, one too long): undici reads a little of it
 * to keep the connection, else closes it. Never throws, never rejects.
 */
export function discard(answer: UpstreamAnswer): void {
  answer.body.dump().catch(() => undefined);
}
