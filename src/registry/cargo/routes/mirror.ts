/**
 * The crates.io mirror's routes (docs/cargo.md, "Using the mirror for CI"): a sparse index under
 * `/api/v1/mirror/index/` whose `config.json` sends downloads to `/api/v1/mirror/download/<name>/<version>`.
 * Both follow `registry.cargo.auth-required`. Vigie's error format (cargo prints it as it comes).
 */
import type { ReadStream } from "node:fs";
import type { FastifyInstance } from "fastify";
import { NotFoundError } from "../../../platform/errors.js";
import type { CrateMirror } from "../mirror/crate-mirror.js";
import { isCrateVersion } from "../mirror/index-lines.js";
import type { IndexMirror } from "../mirror/index-mirror.js";
import type { MirrorMetrics } from "../mirror/metrics.js";
import { crateName, nameFromIndexPath } from "../names.js";
import { MIRROR_CONFIG, MIRROR_DOWNLOAD, MIRROR_INDEX_FILE } from "./api.js";
import type { CargoAuthenticate } from "./context.js";
import { acceptsGzip, notModified } from "./sparse-index.js";

/** The mirror's sparse index, below the public URL. */
export const MIRROR_INDEX_PATH = "/api/v1/mirror/index/";

/** The `Warning` of an answer served stale (RFC 7234 §5.5.1, warn-code 110). */
const STALE_WARNING = '110 - "Response is Stale"';

/** What the mirror's routes need. */
export interface MirrorRoutesOptions {
  /** `http.public-url`, without a trailing slash. */
  readonly publicUrl: string;
  readonly authRequired: boolean;
  readonly authenticate: CargoAuthenticate;
  readonly index: IndexMirror;
  readonly crates: CrateMirror;
  readonly metrics: MirrorMetrics;
}

/** Registers the mirror's index and download routes. */
export function registerMirrorRoutes(app: FastifyInstance, options: MirrorRoutesOptions): void {
  const { publicUrl, authRequired, authenticate, index, crates, metrics } = options;
  const cacheControl = authRequired ? "private, no-cache" : "no-cache";
  const config = {
    dl: `${publicUrl}/api/v1/mirror/download/{crate}/{version}`,
    ...(authRequired ? { "auth-required": true } : {}),
  };

  app.get(`${MIRROR_INDEX_PATH}config.json`, { config: { openapi: MIRROR_CONFIG } }, async (request, reply) => {
    await authenticate(request, authRequired);
    reply.header("cache-control", cacheControl);
    return config;
  });

  app.get<{ Params: { "*": string } }>(
    `${MIRROR_INDEX_PATH}*`,
    { config: { openapi: MIRROR_INDEX_FILE } },
    async (request, reply) => {
      await authenticate(request, authRequired);
      const path = request.params["*"];
      const name = nameFromIndexPath(path);
      if (name === undefined) throw new NotFoundError(`index file ${path} not found`);
      const { file, stale } = await index.file(name);
      const etag = `"${file.etag}"`;
      reply.headers({
        etag,
        "last-modified": new Date(file.modifiedAt).toUTCString(),
        "cache-control": cacheControl,
        vary: "accept-encoding",
      });
      if (stale) {
        metrics.stale.inc();
        reply.header("warning", STALE_WARNING);
      }
      if (notModified(request, etag, file.modifiedAt)) return reply.code(304).send();
      reply.type("text/plain; charset=utf-8");
      if (acceptsGzip(request.headers["accept-encoding"])) {
        return reply.header("content-encoding", "gzip").send(file.gzip);
      }
      return reply.send(file.body);
    },
  );

  app.get<{ Params: { name: string; version: string } }>(
    "/api/v1/mirror/download/:name/:version",
    { config: { openapi: MIRROR_DOWNLOAD } },
    async (request, reply) => {
      await authenticate(request, authRequired);
      const { name, version } = request.params;
      // Only a valid name and version reach the cache's paths.
      if (!isCrateName(name) || !isCrateVersion(version)) {
        throw new NotFoundError(`crate ${name} has no version ${version}`);
      }
      const stream: ReadStream = await crates.open(name, version);
      return reply
        .type("application/gzip")
        .header(
          "cache-control",
          authRequired ? "private, max-age=31536000, immutable" : "public, max-age=31536000, immutable",
        )
        .send(stream);
    },
  );
}

function isCrateName(name: string): boolean {
  try {
    crateName(name);
    return true;
  } catch {
    return false;
  }
}
