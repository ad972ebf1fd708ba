/**
 * The Cargo registry (docs/cargo.md), part of the registry module: `setUpCargo` builds its storage,
 * files and metrics, checks the files against the database at start-up (removing what a crash
 * left behind), and registers its routes. Enabled by `registry.cargo.enabled`.
 */
import { join, resolve } from "node:path";
import type { FastifyInstance } from "fastify";
import type { ModuleContext } from "../../platform/module.js";
import { warnIfShared } from "../../platform/private-files.js";
import type { UserStore } from "../storage.js";
import { checkCrateFiles, hasDisagreements, ORPHAN_GRACE_MS, reportLines } from "./check.js";
import type { CargoSettings } from "./config.js";
import { CrateFiles } from "./files.js";
import { IndexCache } from "./index-cache.js";
import { registerCargoMetrics } from "./metrics.js";
import { loadPagesScript } from "./pages/script.js";
import { ReleasePublisher } from "./release-events.js";
import { registerCargoRoutes } from "./routes/index.js";
import { CargoStore } from "./storage.js";
import { CratePageStore } from "./storage-pages.js";

export { type CheckReport, checkCrateFiles, hasDisagreements, ORPHAN_GRACE_MS, reportLines } from "./check.js";
export { type CargoSettings, cargoSection, checkCargoPublicUrl } from "./config.js";
export { CrateFiles } from "./files.js";
export { setUpCargoMirror } from "./mirror/index.js";
export { CargoStore, cargoMigrations } from "./storage.js";

/** How often download counts are added to the database, in milliseconds. */
const DOWNLOAD_FLUSH_MS = 1_000;

/** The directory of the `.crate` files: `registry.cargo.storage`, else `<data directory>/crates`. */
export function crateStorage(settings: CargoSettings, dataDirectory: string): string {
  return settings.storage ?? join(dataDirectory, "crates");
}

/**
 * Sets the Cargo registry up on `app`.
 * @param streams `registry.streams`: where publishes, yanks and owner changes go as events
 * @param now milliseconds since the epoch
 */
export async function setUpCargo(
  app: FastifyInstance,
  context: ModuleContext,
  settings: CargoSettings,
  users: UserStore,
  streams: readonly string[],
  now: () => number,
): Promise<void> {
  const { database, logger } = context;
  const store = new CargoStore(database);
  const files = new CrateFiles(crateStorage(settings, database.dataDirectory));
  await warnIfShared(files.directory, "crate storage directory", (details, message) => logger.warn(details, message));
  logger.info(`cargo registry: .crate files in ${resolve(files.directory)}`);
  // One instance uses an SQLite database alone: any orphan is a crash's. Instances sharing
  // PostgreSQL may be publishing right now: only old ones are.
  const grace = database.dialect === "sqlite" ? 0 : ORPHAN_GRACE_MS;
  const report = await checkCrateFiles(await store.files(), files, now(), grace);
  if (hasDisagreements(report) || report.removed.length > 0) {
    for (const line of reportLines(report)) logger.warn({ storage: files.directory }, `cargo registry: ${line}`);
  }

  // Downloads are counted in memory and added once a second: one write per second, not per download.
  let downloads = new Map<number, number>();
  const flush = async () => {
    if (downloads.size === 0) return;
    const counts = downloads;
    downloads = new Map();
    try {
      await store.addDownloads(counts);
    } catch (error) {
      logger.error({ err: error }, "cannot record the download counts of crates");
    }
  };
  const timer = setInterval(() => void flush(), DOWNLOAD_FLUSH_MS);
  timer.unref();
  app.addHook("onClose", async () => {
    clearInterval(timer);
    await flush();
  });

  const indexCache = new IndexCache(settings["index-cache-size"]);
  const script = await loadPagesScript();
  if (script === undefined && settings["auth-required"]) {
    logger.warn("the registry pages' script is not built (npm run build): the pages cannot sign in");
  }
  registerCargoRoutes(
    app,
    {
      settings,
      indexCache,
      publicUrl: context.config.http["public-url"].replace(/\/$/, ""),
      store,
      files,
      users,
      auth: context.auth,
      metrics: registerCargoMetrics(
        context.metrics,
        () => store.counts(),
        () => indexCache.bytes,
      ),
      countDownload: (versionId) => downloads.set(versionId, (downloads.get(versionId) ?? 0) + 1),
      releases: new ReleasePublisher(context.events, streams),
      now,
    },
    { pages: new CratePageStore(database), script },
  );
}
