/**
 * The healthchecks module (healthchecks.md): periodic and one-off checks of kinds http, tcp, dns,
 * tls and command, with their latest results, behind `/healthcheck` and `/result`.
 */
import { defineModule } from "../platform/module.js";
import { apiCommandsAllowed } from "./api-commands.js";
import { Catalog } from "./catalog.js";
import { configuredChecks, healthchecksShape } from "./config.js";
import type { DefinitionRules } from "./definition.js";
import { Executor } from "./execute.js";
import { HealthcheckMetrics } from "./metrics.js";
import { ResultStore } from "./results.js";
import { registerHealthcheckRoutes } from "./routes.js";
import { Scheduler } from "./scheduler.js";
import { HealthcheckStorage, healthcheckMigrations } from "./storage.js";

/**
 * The module, for the `modules` list of src/server.ts. Its plugin builds the scheduler and the
 * catalog, restores the stored checks and schedules the configured ones, re-reads the configured
 * ones on SIGHUP, and serves the routes of routes.ts (behind the API guard with
 * `security.require-token`).
 */
export const healthchecksModule = defineModule({
  name: "healthchecks",
  configShape: healthchecksShape,
  migrations: healthcheckMigrations,
  plugin: async (app, { context, section, onReload }) => {
    const rules: DefinitionRules = { minInterval: section["min-interval"] };
    let metrics: HealthcheckMetrics | undefined;
    const scheduler = new Scheduler({
      maxConcurrency: section["max-concurrency"],
      onLateness: (milliseconds) => metrics?.observeLateness(milliseconds / 1000),
      onError: (name, error) => context.logger.error({ err: error, healthcheck: name }, "healthcheck run failed"),
    });
    metrics = new HealthcheckMetrics(context.metrics, context.exposition, () => scheduler.size);
    const executor = new Executor();
    const results = new ResultStore();
    const catalog = new Catalog({
      storage: new HealthcheckStorage(context.database),
      scheduler,
      results,
      metrics,
      executor,
      logger: context.logger,
      rules,
    });
    await catalog.start(configuredChecks(section));

    let closed = false;
    app.addHook("onClose", async () => {
      closed = true;
      catalog.stop();
      await executor.close();
    });
    onReload(async (fresh) => {
      if (!closed) await catalog.reload(configuredChecks(fresh));
    });

    if (context.apiGuard !== undefined) app.addHook("preHandler", context.apiGuard);
    registerHealthcheckRoutes(app, {
      catalog,
      results,
      rules,
      allowCommands: apiCommandsAllowed(
        section["allow-api-commands"],
        context.config.http.host,
        context.config.security["require-token"],
      ),
    });
  },
});
