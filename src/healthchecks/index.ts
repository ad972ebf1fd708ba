/**
 * The healthchecks module (healthchecks.md): periodic and one-off checks of kinds http, tcp, dns,
 * tls and command, with their latest results, behind `/healthcheck` and `/result`.
 */
import { ConfigError, configErrorMessage } from "../platform/config.js";
import { defineModule } from "../platform/module.js";
import { ValidationError } from "../platform/validation.js";
import { apiCommandsAllowed } from "./api-commands.js";
import { Catalog } from "./catalog.js";
import { configuredChecks, healthchecksShape } from "./config.js";
import type { DefinitionRules } from "./definition.js";
import { Executor } from "./execute.js";
import { ResultHistory } from "./history.js";
import { HealthcheckMetrics, HistoryMetrics } from "./metrics.js";
import { ResultPublisher } from "./result-events.js";
import { ResultStore } from "./results.js";
import { registerHealthcheckRoutes } from "./routes.js";
import { Scheduler } from "./scheduler.js";
import { checkStatusSelectors, registerStatusRoutes } from "./status-routes.js";
import { HealthcheckStorage, healthcheckMigrations } from "./storage.js";
import { checkTlsDirectory, TlsDirectoryError } from "./tls-files.js";

/**
 * `healthchecks.tls-directory` as the module uses it: absolute, checked to be a readable directory
 * (platform.md §8). Checked at start-up rather than by `vigie config check`, which may run on
 * another machine than the server.
 *
 * @returns undefined when the key is not set
 * @throws ConfigError `invalid configuration: healthchecks.tls-directory: must be a readable
 *   directory; it does not exist (got "/srv/vigie/tls")` (exit code 2 for `vigie serve`)
 */
async function tlsDirectoryOf(configured: string | undefined): Promise<string | undefined> {
  if (configured === undefined) return undefined;
  try {
    return await checkTlsDirectory(configured);
  } catch (error) {
    if (!(error instanceof TlsDirectoryError)) throw error;
    const refusal = new ValidationError(
      "healthchecks.tls-directory",
      `must be a readable directory; ${error.message}`,
      configured,
    );
    throw new ConfigError(configErrorMessage(refusal));
  }
}

/**
 * The module, for the `modules` list of src/server.ts. Its plugin builds the scheduler and the
 * catalog, restores the stored checks and schedules the configured ones, re-reads the configured
 * ones on SIGHUP, and serves the routes of routes.ts (behind the API guard with
 * `security.require-token`). `min-interval` and `tls-directory` are read once: a SIGHUP re-reads
 * only the configuration-file checks (healthchecks.md §7).
 */
export const healthchecksModule = defineModule({
  name: "healthchecks",
  configShape: healthchecksShape,
  migrations: healthcheckMigrations,
  plugin: async (app, { context, section, onReload }) => {
    const tlsDirectory = await tlsDirectoryOf(section["tls-directory"]);
    const rules: DefinitionRules = {
      minInterval: section["min-interval"],
      ...(tlsDirectory === undefined ? {} : { tlsDirectory }),
    };
    let metrics: HealthcheckMetrics | undefined;
    const scheduler = new Scheduler({
      maxConcurrency: section["max-concurrency"],
      onLateness: (milliseconds) => metrics?.observeLateness(milliseconds / 1000),
      onError: (name, error) => context.logger.error({ err: error, healthcheck: name }, "healthcheck run failed"),
    });
    metrics = new HealthcheckMetrics(context.metrics, context.exposition, () => scheduler.size);
    const executor = new Executor(tlsDirectory === undefined ? {} : { tlsDirectory });
    const results = new ResultStore();
    const retentionMs = section.history.retention.milliseconds;
    const history = new ResultHistory(context.database, {
      retentionMs,
      logger: context.logger,
      metrics: new HistoryMetrics(context.metrics),
    });
    const publisher = new ResultPublisher(context.events, section.streams);
    const catalog = new Catalog({
      storage: new HealthcheckStorage(context.database),
      scheduler,
      results,
      metrics,
      executor,
      logger: context.logger,
      rules,
      onResult: (registration, result) => {
        history.record(registration.definition.name, result);
        publisher.publish(registration.definition, result, registration.labels);
      },
    });
    await catalog.start(configuredChecks(section));
    const statusPage = section["status-page"];
    if (statusPage.enabled) {
      try {
        checkStatusSelectors(statusPage, catalog);
      } catch (error) {
        catalog.stop();
        if (error instanceof ValidationError) throw new ConfigError(configErrorMessage(error));
        throw error;
      }
    }
    history.start();

    let closed = false;
    app.addHook("onClose", async () => {
      closed = true;
      catalog.stop();
      await executor.close();
      await history.close();
    });
    onReload(async (fresh) => {
      if (!closed) await catalog.reload(configuredChecks(fresh));
    });

    // The API behind the guard of security.require-token; the status page is public (§9.3).
    await app.register(async (api) => {
      if (context.apiGuard !== undefined) api.addHook("preHandler", context.apiGuard);
      registerHealthcheckRoutes(api, {
        catalog,
        results,
        history,
        rules,
        allowCommands: apiCommandsAllowed(
          section["allow-api-commands"],
          context.config.http.host,
          context.config.security["require-token"],
        ),
      });
    });
    if (statusPage.enabled) {
      await app.register(async (page) => {
        await registerStatusRoutes(page, { catalog, results, history, settings: statusPage, retentionMs });
      });
    }
  },
});
