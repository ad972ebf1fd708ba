/**
 * A fake upstream sparse index for the mirror's tests: `config.json`, index files with an ETag that
 * it honours in conditional requests, and `.crate` downloads, each request counted; it can fail
 * (503), corrupt a download, or hold downloads until released (to make requests overlap).
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One version the fake upstream holds. */
export interface FakeVersion {
  readonly name: string;
  readonly vers: string;
  readonly bytes: Buffer;
}

/** The fake upstream's state, which tests change between requests. */
export class FakeUpstream {
  readonly versions: FakeVersion[] = [];
  /** Requests by path (`/index/3/f/foo`, `/dl/foo/1.0.0/download`, …). */
  readonly requests = new Map<string, number>();
  /** The `If-None-Match` of each index request, in order. */
  readonly conditions: (string | undefined)[] = [];
  /** Answer 503 to everything. */
  failing = false;
  /** Versions (`name/vers`) whose download has one byte changed. */
  readonly corrupted = new Set<string>();
  /** Index files and downloads wait for this before answering. */
  gate: Promise<void> = Promise.resolve();
  /** Extra index lines served for a crate name, verbatim. */
  readonly extraLines = new Map<string, string>();
  #server: Server | undefined;
  port = 0;

  get indexUrl(): string {
    return `http://127.0.0.1:${this.port}/index/`;
  }

  count(path: string): number {
    return this.requests.get(path) ?? 0;
  }

  /** Adds a version; its index line carries the SHA-256 of its bytes. */
  add(name: string, vers: string, bytes: Buffer = Buffer.from(`${name}-${vers} crate bytes`)): void {
    this.versions.push({ name, vers, bytes });
  }

  /** The index file of a crate (one JSON line per version), or undefined. */
  indexFile(lower: string): string | undefined {
    const lines = this.versions
      .filter((version) => version.name.toLowerCase() === lower)
      .map((version) =>
        JSON.stringify({
          name: version.name,
          vers: version.vers,
          deps: [],
          cksum: createHash("sha256").update(version.bytes).digest("hex"),
          features: {},
          yanked: false,
          v: 2,
        }),
      );
    const extra = this.extraLines.get(lower);
    if (extra !== undefined) lines.push(extra);
    return lines.length === 0 ? undefined : `${lines.join("\n")}\n`;
  }

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      const path = new URL(request.url ?? "/", "http://x").pathname;
      this.requests.set(path, this.count(path) + 1);
      if (this.failing) {
        response.writeHead(503).end("down");
        return;
      }
      if (path === "/index/config.json") {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ dl: `http://127.0.0.1:${this.port}/dl` }));
        return;
      }
      if (path.startsWith("/index/")) {
        this.conditions.push(request.headers["if-none-match"]);
        const body = this.indexFile(path.slice(path.lastIndexOf("/") + 1));
        if (body === undefined) {
          response.writeHead(404).end();
          return;
        }
        const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`;
        void this.gate.then(() => {
          if (request.headers["if-none-match"] === etag) response.writeHead(304, { etag }).end();
          else response.writeHead(200, { etag, "content-type": "text/plain" }).end(body);
        });
        return;
      }
      const download = /^\/dl\/([^/]+)\/([^/]+)\/download$/.exec(path);
      const version = this.versions.find((v) => v.name === download?.[1] && v.vers === download?.[2]);
      if (version === undefined) {
        response.writeHead(404).end();
        return;
      }
      void this.gate.then(() => {
        const bytes = Buffer.from(version.bytes);
        if (this.corrupted.has(`${version.name}/${version.vers}`)) bytes[0] = (bytes[0] ?? 0) ^ 0xff;
        response.writeHead(200, { "content-type": "application/gzip" }).end(bytes);
      });
    });
    await new Promise<void>((resolve) => this.#server?.listen(0, "127.0.0.1", resolve));
    this.port = (this.#server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }
}
