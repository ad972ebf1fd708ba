/**
 * The healthchecks module (docs/healthchecks.md): periodic and one-off checks of kinds http, tcp, dns,
 * tls and command, heartbeat checks that jobs ping (`/ping/<key>`), with their latest results,
 * behind `/healthcheck` and `/result`.
 */
import type { FastifyInstance } from "fastify";
import { type Cluster, changedNames, shardOf } from "../platform/cluster/index.js";
import { ConfigError, configErrorMessage } from "../platform/config.js";
import { defineModule, type ModuleContext } from "../platform/module.js";
import { ValidationError } from "../platform/validation.js";
import { undeclaredOutputs } from "./alerts/references.js";
import { ModuleAlerts } from "./alerts/wiring.js";
import { apiCommandsAllowed } from "./api-commands.js";
import { registerBadgeRoutes } from "./badges/routes.js";
import { Catalog } from "./catalog.js";
import { differingChecks, fingerprintOf, SharedResults } from "./cluster.js";
import { healthchecksCommands } from "./commands.js";
import { configuredChecks, type HealthchecksSection, healthchecksShape } from "./config.js";
import type { DefinitionRules } from "./definition.js";
import { Executor } from "./execute.js";
import { registerPingRoutes } from "./heartbeat/routes.js";
import { HeartbeatStore } from "./heartbeat/store.js";
import { ModuleHeartbeats, PING_TOPIC } from "./heartbeat/wiring.js";
import { ResultHistory } from "./history.js";
import { Incidents } from "./incidents/index.js";
import { registerIncidentRoutes } from "./incidents/routes.js";
import { Maintenance } from "./maintenance/index.js";
import { registerMaintenanceRoutes } from "./maintenance/routes.js";
import { HealthcheckMetrics, HistoryMetrics } from "./metrics.js";
import { ResultPublisher } from "./result-events.js";
import { ResultStore } from "./results.js";
import { registerHealthcheckRoutes } from "./routes.js";
import { Scheduler, wallClockPhaseDelay } from "./scheduler.js";
import { statusPagesOf } from "./status-page/pages.js";
import { checkStatusPage, registerStatusPage } from "./status-page/routes.js";
import { HealthcheckStore, healthcheckMigrations } from "./storage.js";
import { checkTlsDirectory, TlsDirectoryError } from "./tls-files.js";

/**
 * `healthchecks.tls-directory` as the module uses it: absolute, checked to be a readable directory
 * (docs/security.md). Checked at start-up rather than by `vigie config check`, which may run on
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

/** The change topic of API definitions between instances (docs/cluster.md). */
const CHANGE_TOPIC = "healthchecks.definitions";

/**
 * Cluster mode: stores what this instance loaded from its configuration file and logs an error
 * naming the checks that differ from another live member's (docs/cluster.md: the files must be
 * identical, which is the deployment's job). Failures are logged; they never stop the module.
 */
async function compareFileChecks(
  cluster: Cluster | undefined,
  section: HealthchecksSection,
  logger: { error(details: object, message: string): void },
): Promise<void> {
  if (cluster === undefined) return;
  try {
    const mine = fingerprintOf(configuredChecks(section));
    await cluster.storage.setFingerprint(cluster.instanceId, mine);
    for (const other of await cluster.storage.fingerprints(cluster.instanceId, cluster.leaseMs)) {
      const differing = differingChecks(mine, other.fingerprint);
      if (differing.length === 0) continue;
      const shown =
        differing.slice(0, 20).join(", ") + (differing.length > 20 ? ` and ${differing.length - 20} more` : "");
      logger.error(
        { member: other.id, healthchecks: differing.slice(0, 100) },
        `the configuration-file healthchecks of this instance differ from those of ${other.id}: ${shown}`,
      );
    }
  } catch (error) {
    logger.error({ err: error }, "could not compare the configuration-file healthchecks with the other instances");
  }
}

/** The scheduler of the module's checks; `onLateness` receives how late each run started, in milliseconds. */
function newScheduler(
  section: HealthchecksSection,
  context: ModuleContext,
  onLateness: (milliseconds: number) => void,
): Scheduler {
  return new Scheduler({
    maxConcurrency: section["max-concurrency"],
    // Cluster mode: a check keeps its rhythm when it moves to another instance (docs/cluster.md).
    ...(context.cluster === undefined
      ? {}
      : { firstRunDelay: (key: string, intervalMs: number) => wallClockPhaseDelay(key, intervalMs) }),
    onLateness,
    onError: (name, error) => context.logger.error({ err: error, healthcheck: name }, "healthcheck run failed"),
  });
}

/** The result history; in cluster mode each instance prunes the history of its own shards' checks. */
function newHistory(context: ModuleContext, retentionMs: number): ResultHistory {
  const cluster = context.cluster;
  return new ResultHistory(context.database, {
    retentionMs,
    logger: context.logger,
    metrics: new HistoryMetrics(context.metrics),
    ...(cluster === undefined ? {} : { prunes: (name: string) => cluster.shards.owns(shardOf(name)) }),
  });
}

/**
 * The status pages of the configuration, their selectors checked against `catalog` (a
 * configuration error, after the catalog is stopped), and the incidents they show.
 */
function statusPagesWiring(section: HealthchecksSection, catalog: Catalog, context: ModuleContext) {
  const pages = statusPagesOf(section);
  checkStatusPage(pages, catalog);
  const slugs: ReadonlySet<string> = new Set(pages.map((page) => page.slug));
  const hasCheck = (name: string) => catalog.get(name) !== undefined;
  return { pages, slugs, incidents: new Incidents(context.database, { hasCheck, pages: slugs }) };
}

/**
 * Heartbeat checks (docs/healthchecks.md): judged by the tracker for the shards this instance owns,
 * pinged through `/ping/<key>` on any instance, their stored states read.
 */
async function newHeartbeats(
  app: FastifyInstance,
  context: ModuleContext,
  module: {
    catalog: () => Catalog;
    results: ResultStore;
    history: ResultHistory;
    shared: () => SharedResults | undefined;
  },
): Promise<ModuleHeartbeats> {
  const { catalog, results, history, shared } = module;
  const cluster = context.cluster;
  const heartbeats = new ModuleHeartbeats({
    store: new HeartbeatStore(context.database),
    catalog,
    logger: context.logger,
    latest: (name) => results.get(name),
    onLatest: (result) => shared()?.record(result),
    onLog: (result, timeMs) => history.record(result.name, result, timeMs),
    ...(cluster === undefined
      ? {}
      : { cluster: { publish: (names) => void cluster.changes.publish(PING_TOPIC, { names }) } }),
  });
  if (cluster !== undefined) {
    // Pings other instances stored for the heartbeats this one judges (docs/cluster.md).
    cluster.changes.on(PING_TOPIC, (data) => heartbeats.takePings(changedNames(data)));
    cluster.changes.onResync(() => heartbeats.takePings(undefined));
  }
  await heartbeats.load();
  // Deadlines (those passed while the server was down first) are judged once alerts are ready.
  app.addHook("onReady", async () => heartbeats.start());
  // Stops judging and writes the changed states (the database closes after the modules).
  app.addHook("onClose", () => heartbeats.close());
  // Public: the key is the capability (docs/healthchecks.md), no token.
  await registerPingRoutes(app, heartbeats);
  return heartbeats;
}

/**
 * Cluster mode (docs/cluster.md): starts sharing the latest results through the database, and
 * follows the other instances' changes to API checks and this instance's shard leases.
 */
function followCluster(cluster: Cluster, catalog: Catalog, shared: SharedResults): SharedResults {
  shared.start();
  cluster.changes.on(CHANGE_TOPIC, (data) => catalog.sync(changedNames(data)));
  cluster.changes.onResync(() => catalog.sync(undefined));
  cluster.shards.listen({ gained: () => catalog.rebalance(), lost: () => catalog.rebalance() });
  return shared;
}

/**
 * The module, for the `modules` list of src/server.ts. Its plugin builds the scheduler and the
 * catalog, restores the stored checks and schedules the configured ones, re-reads the configured
 * ones on SIGHUP, and serves the routes of routes.ts (behind the API guard with
 * `security.require-token`). `min-interval` and `tls-directory` are read once: a SIGHUP re-reads
 * only the configuration-file checks (docs/healthchecks.md).
 */
export const healthchecksModule = defineModule({
  name: "healthchecks",
  configShape: healthchecksShape,
  migrations: healthcheckMigrations,
  commands: healthchecksCommands,
  links: (section) => [
    { title: "healthcheck API", path: "/healthcheck" },
    { title: "healthcheck results", path: "/result" },
    {
      title: "status page",
      path: "/status",
      ...(statusPagesOf(section).length > 0 ? {} : { enableWith: "healthchecks.status-page.enabled: true" }),
    },
  ],
  // The outputs the file's alerts name are declared (`vigie config check` reports one that is not).
  check: (section, _platform, outputs) => {
    const error = undeclaredOutputs(section, (output) => outputs.has(output));
    if (error !== undefined) throw error;
  },
  plugin: async (app, { context, section, onReload }) => {
    const tlsDirectory = await tlsDirectoryOf(section["tls-directory"]);
    const rules: DefinitionRules = {
      minInterval: section["min-interval"],
      ...(tlsDirectory === undefined ? {} : { tlsDirectory }),
    };
    let metrics: HealthcheckMetrics | undefined;
    const cluster = context.cluster;
    const scheduler = newScheduler(section, context, (milliseconds) => metrics?.observeLateness(milliseconds / 1000));
    metrics = new HealthcheckMetrics(context.metrics, context.exposition, () => scheduler.size);
    const executor = new Executor(tlsDirectory === undefined ? {} : { tlsDirectory });
    const results = new ResultStore();
    const retentionMs = section.history.retention.milliseconds;
    const history = newHistory(context, retentionMs);
    const publisher = new ResultPublisher(context.events, section.streams);
    const storage = new HealthcheckStore(context.database);
    let shared: SharedResults | undefined;
    // Maintenance windows (docs/healthchecks.md): `maintenance.inMaintenance(name, timeMs)`.
    const lookup = (name: string) => catalog.get(name);
    const maintenance = await Maintenance.start({ ...context, configured: section.maintenance, lookup });
    // Alerts (docs/alerts.md), fed by the results of the checks this instance runs; nothing
    // transitions during a maintenance window.
    const alerts = await ModuleAlerts.create({
      context,
      section,
      catalog: () => catalog,
      retentionMs,
      inMaintenance: maintenance.inMaintenance,
    });
    const parts = { catalog: () => catalog, results, history, shared: () => shared };
    const heartbeats = await newHeartbeats(app, context, parts);
    const catalog: Catalog = new Catalog({
      storage,
      scheduler,
      results,
      metrics,
      executor,
      logger: context.logger,
      rules,
      inMaintenance: maintenance.inMaintenance,
      heartbeats,
      onResult: (registration, result, timeMs, judged) => {
        history.record(registration.definition.name, result, timeMs);
        publisher.publish(registration.definition, result, registration.labels, timeMs);
        shared?.record(result);
        if (judged) alerts.evaluator.observe(registration, result.success, result.message, timeMs);
      },
      ...(cluster === undefined
        ? {}
        : {
            ownership: { shardOf, owns: (shard: number) => cluster.shards.owns(shard) },
            onStored: (names: readonly string[] | undefined) =>
              void cluster.changes.publish(CHANGE_TOPIC, names === undefined ? undefined : { names }),
          }),
    });
    if (cluster !== undefined)
      shared = followCluster(cluster, catalog, new SharedResults(storage, catalog, results, context.logger));
    await catalog.start(await heartbeats.withKeys(configuredChecks(section)));
    alerts.start(configuredChecks(section), () => catalog.stop());
    await compareFileChecks(cluster, section, context.logger);
    const { pages, slugs, incidents } = statusPagesWiring(section, catalog, context);
    history.start();

    let closed = false;
    app.addHook("onClose", async () => {
      closed = true;
      catalog.stop();
      await executor.close();
      await history.close();
      await shared?.close();
      await alerts.close();
    });
    onReload(async (fresh) => {
      if (closed) return;
      maintenance.reload(fresh.maintenance);
      await alerts.reload(fresh, async (configured) => catalog.reload(await heartbeats.withKeys(configured)));
      await compareFileChecks(cluster, fresh, context.logger);
    });

    // Cluster mode: the routes bring the results other instances wrote up to date first.
    const sharedNow = shared;
    const freshen = sharedNow === undefined ? {} : { freshen: () => sharedNow.refresh() };
    const reading = { catalog, results, ...freshen, history };

    // The API behind the guard of security.require-token; the status page is public.
    await app.register(async (api) => {
      if (context.apiGuard !== undefined) api.addHook("preHandler", context.apiGuard);
      registerHealthcheckRoutes(api, {
        ...reading,
        rules,
        allowCommands: apiCommandsAllowed(
          section["allow-api-commands"],
          context.config.http.host,
          context.config.security["require-token"],
        ),
        references: alerts.references,
        heartbeats,
      });
      alerts.routes(api);
      registerMaintenanceRoutes(api, { maintenance, checks: () => catalog.list() });
      registerIncidentRoutes(api, { incidents, pages: slugs });
    });
    await registerStatusPage(app, {
      ...reading,
      pages,
      retentionMs,
      calendar: maintenance.calendar,
      incidents,
      publicUrl: context.config.http["public-url"],
    });
    await registerBadgeRoutes(app, { ...reading, pages });
  },
});
