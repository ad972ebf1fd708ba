/**
 * A tiny HTTP proxy in front of a Vigie playing the upstream of the Cargo mirror: it counts the
 * requests by path, can change one byte of chosen answers (a corrupted `.crate`), and can hold
 * answers of chosen paths for a while (so that concurrent requests overlap). When the upstream is
 * gone it answers 502.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export class CountingProxy {
  /** Requests by path. */
  readonly requests = new Map<string, number>();
  /** Paths whose answer gets its first byte flipped. */
  readonly corrupted = new Set<string>();
  /** Paths whose answer waits this long first, in milliseconds. */
  readonly delays = new Map<string, number>();
  #server: Server | undefined;
  port = 0;

  /** @param target the upstream's base URL (`http://127.0.0.1:<port>`) */
  constructor(readonly target: string) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  count(path: string): number {
    return this.requests.get(path) ?? 0;
  }

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      const path = new URL(request.url ?? "/", "http://x").pathname;
      this.requests.set(path, this.count(path) + 1);
      const headers: Record<string, string> = {};
      for (const name of ["if-none-match", "if-modified-since", "authorization"]) {
        const value = request.headers[name];
        if (typeof value === "string") headers[name] = value;
      }
      void (async () => {
        try {
          await new Promise((resolve) => setTimeout(resolve, this.delays.get(path) ?? 0));
          const answer = await fetch(`${this.target}${request.url ?? "/"}`, { headers });
          const body = Buffer.from(await answer.arrayBuffer());
          if (this.corrupted.has(path) && body.length > 0) body[0] = (body[0] ?? 0) ^ 0xff;
          const forwarded: Record<string, string> = {};
          for (const name of ["etag", "last-modified", "content-type"]) {
            const value = answer.headers.get(name);
            if (value !== null) forwarded[name] = value;
          }
          response.writeHead(answer.status, forwarded).end(body);
        } catch {
          response.writeHead(502).end("upstream unreachable");
        }
      })();
    });
    await new Promise<void>((resolve) => this.#server?.listen(0, "127.0.0.1", resolve));
    this.port = (this.#server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }
}
