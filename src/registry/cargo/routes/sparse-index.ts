/**
 * Cargo's sparse index under `/api/v1/cargo/index/` (docs/cargo.md): `config.json` and one file per
 * crate, revalidated with ETag and Last-Modified, gzipped when asked. Vigie's error format.
 */
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { NotFoundError } from "../../../platform/errors.js";
import { canonicalCrateName, nameFromIndexPath } from "../names.js";
import { INDEX_CONFIG, INDEX_FILE } from "./api.js";
import type { CargoContext } from "./context.js";

const gzipped = promisify(gzip);

/** Registers `GET /api/v1/cargo/index/config.json` and `GET /api/v1/cargo/index/<path of a crate>`. */
export function registerSparseIndex(app: FastifyInstance, context: CargoContext): void {
  const { authRequired, authenticate, publicUrl, store, indexCache: index } = context;
  const cacheControl = authRequired ? "private, no-cache" : "no-cache";

  app.get("/api/v1/cargo/index/config.json", { config: { openapi: INDEX_CONFIG } }, async (request, reply) => {
    await authenticate(request, authRequired);
    reply.header("cache-control", cacheControl);
    return {
      dl: `${publicUrl}/api/v1/crates`,
      api: publicUrl,
      ...(authRequired ? { "auth-required": true } : {}),
    };
  });

  // Bodies kept as bytes (a 1 000-version file is ~170 kB), converted once, not per request, in `index`.
  app.get<{ Params: { "*": string } }>(
    "/api/v1/cargo/index/*",
    { config: { openapi: INDEX_FILE } },
    async (request, reply) => {
      await authenticate(request, authRequired);
      const path = request.params["*"];
      const name = nameFromIndexPath(path);
      const crate = name === undefined ? undefined : await store.findCrate(canonicalCrateName(name));
      // `foo_bar` and `foo-bar` are one crate, but Cargo asks for the file of the name it knows.
      if (crate === undefined || crate.name.toLowerCase() !== name) {
        throw new NotFoundError(`index file ${path} not found`);
      }
      const etag = `"${crate.indexEtag}"`;
      const lastModified = new Date(crate.updatedAt).toUTCString();
      reply.headers({ etag, "last-modified": lastModified, "cache-control": cacheControl });
      if (notModified(request, etag, crate.updatedAt)) return reply.code(304).send();
      let cached = index.get(crate.id);
      if (cached === undefined || cached.etag !== crate.indexEtag) {
        const lines = await store.indexLines(crate.id);
        const body = Buffer.from(`${lines.join("\n")}\n`);
        cached = { etag: crate.indexEtag, body, gzip: await gzipped(body) };
        index.set(crate.id, cached);
      }
      reply.type("text/plain; charset=utf-8").header("vary", "accept-encoding");
      // cargo sends `Accept-Encoding: deflate, gzip`: index lines repeat their keys, ~10× smaller.
      if (acceptsGzip(request.headers["accept-encoding"])) {
        return reply.header("content-encoding", "gzip").send(cached.gzip);
      }
      return reply.send(cached.body);
    },
  );
}

/** Whether an `Accept-Encoding` header takes gzip (RFC 9110 §12.5.3; `gzip;q=0` refuses it). */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  for (const part of header.split(",")) {
    const [coding, ...parameters] = part.trim().toLowerCase().split(";");
    if (coding !== "gzip" && coding !== "x-gzip") continue;
    return !parameters.some((parameter) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(parameter));
  }
  return false;
}

/** Whether `If-None-Match` or (without it) `If-Modified-Since` says the client's copy is current. */
export function notModified(request: FastifyRequest, etag: string, updatedAt: number): boolean {
  const match = request.headers["if-none-match"];
  if (match !== undefined) return match.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
  const since = request.headers["if-modified-since"];
  if (since === undefined) return false;
  const time = Date.parse(since);
  // HTTP dates have whole seconds.
  return !Number.isNaN(time) && Math.floor(updatedAt / 1000) * 1000 <= time;
}
