/**
 * The caching crates.io mirror (docs/cargo.md, "Using the mirror for CI"), part of the Cargo
 * registry: `setUpCargoMirror` builds its cache (on disk and in memory), its upstream client and
 * metrics, and registers its routes. Enabled by `registry.cargo.mirror.enabled`, with or without
 * the private registry.
 */
import { join, resolve } from "node:path";
import type { FastifyInstance } from "fastify";
import { ConfigError } from "../../../platform/config.js";
import type { ModuleContext } from "../../../platform/module.js";
import { makePrivateDirectory, warnIfShared } from "../../../platform/private-files.js";
import type { CargoSettings } from "../config.js";
import { CrateFiles } from "../files.js";
import { IndexCache } from "../index-cache.js";
import { cargoAuthenticator } from "../routes/context.js";
import { registerLoginPage } from "../routes/me.js";
import { registerMirrorRoutes } from "../routes/mirror.js";
import { overlaps } from "./config.js";
import { CrateMirror } from "./crate-mirror.js";
import { type IndexAnswer, IndexMirror, type MirroredIndex } from "./index-mirror.js";
import { registerMirrorMetrics } from "./metrics.js";
import { SingleFlight } from "./single-flight.js";
import { Upstream } from "./upstream.js";

export { type MirrorSettings, mirrorSection } from "./config.js";

/** Index files being fetched from the upstream at once, at most. */
const INDEX_FLIGHTS = 256;
/** `.crate` files being downloaded from the upstream at once, at most. */
const CRATE_FLIGHTS = 64;
/** The largest `.crate` downloaded, in bytes: crates.io allows some crates past its 10 MiB default. */
export const MAX_MIRRORED_CRATE = 256 * 1024 * 1024;

/** The mirror's cache directory: `registry.cargo.mirror.cache`, else `<data directory>/crates-mirror`. */
export function mirrorCache(settings: CargoSettings, dataDirectory: string): string {
  return settings.mirror.cache ?? join(dataDirectory, "crates-mirror");
}

/**
 * Refuses a cache directory inside the crate storage or holding it: `vigie registry check` would
 * take cached files for orphans, or the cache's files for published ones.
 * @throws ConfigError naming `registry.cargo.mirror.cache`
 */
export function checkMirrorCache(cache: string, storage: string): void {
  if (overlaps(cache, storage)) {
    throw new ConfigError(
      `registry.cargo.mirror.cache (${resolve(cache)}) must be outside the crate storage (${resolve(storage)}), and not hold it`,
    );
  }
}

/**
 * Sets the mirror up on `app`.
 * @param storage the crate storage directory, which the cache must stay out of
 * @param now milliseconds since the epoch
 * @throws ConfigError when the cache overlaps the crate storage
 */
export async function setUpCargoMirror(
  app: FastifyInstance,
  context: ModuleContext,
  settings: CargoSettings,
  storage: string,
  now: () => number,
): Promise<void> {
  const { logger, database } = context;
  const mirror = settings.mirror;
  const cache = mirrorCache(settings, database.dataDirectory);
  checkMirrorCache(cache, storage);
  await makePrivateDirectory(cache);
  await warnIfShared(cache, "cargo mirror cache directory", (details, message) => logger.warn(details, message));
  logger.info(`cargo mirror of ${mirror["upstream-index"]}: cache in ${resolve(cache)}`);

  const metrics = registerMirrorMetrics(context.metrics);
  const upstream = new Upstream();
  app.addHook("onClose", () => upstream.close());
  const upstreamIndex = new URL(mirror["upstream-index"]);
  const maxAgeMs = mirror["max-age"].milliseconds;
  const warn = (details: Record<string, unknown>, message: string) => logger.warn(details, message);
  const index = new IndexMirror({
    upstreamIndex,
    directory: join(cache, "index"),
    maxAgeMs,
    upstream,
    memory: new IndexCache<string, MirroredIndex>(settings["index-cache-size"]),
    flights: new SingleFlight<IndexAnswer>(INDEX_FLIGHTS),
    countRequest: () => metrics.upstreamRequest("index"),
    warn,
    now,
  });
  const crates = new CrateMirror({
    index,
    files: new CrateFiles(join(cache, "crates")),
    upstream,
    upstreamIndex,
    upstreamDownload: mirror["upstream-download"],
    maxAgeMs,
    maxCrateBytes: MAX_MIRRORED_CRATE,
    flights: new SingleFlight<void>(CRATE_FLIGHTS),
    countRequest: (kind) => metrics.upstreamRequest(kind),
    warn,
    now,
  });
  const publicUrl = context.config.http["public-url"].replace(/\/$/, "");
  // Cargo's 401 challenge names <public-url>/me: the mirror alone serves it too.
  if (!settings.enabled) registerLoginPage(app, publicUrl);
  registerMirrorRoutes(app, {
    publicUrl,
    authRequired: settings["auth-required"],
    authenticate: cargoAuthenticator(context.auth, publicUrl),
    index,
    crates,
    metrics,
  });
}
