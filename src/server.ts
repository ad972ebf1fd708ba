/**
 * Builds the Fastify application from a validated configuration: the platform (errors, metrics,
 * health, auth hook point, reloads) and every enabled module.
 */
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
  LogController,
} from "fastify";
import type { Migration } from "kysely";
import type { Registry } from "prom-client";
import { commentsModule } from "./comments/index.js";
import { healthchecksModule } from "./healthchecks/index.js";
import { Auth } from "./platform/auth.js";
import { Cluster } from "./platform/cluster/index.js";
import type { VigieConfig } from "./platform/config.js";
import { type Database, openDatabase, platformMigrations } from "./platform/database.js";
import { answerClientError, answerRoutingError, installErrorHandling, UnavailableError } from "./platform/errors.js";
import { EventRouter } from "./platform/events.js";
import { homeRoute, serverLinks } from "./platform/home.js";
import { HostOriginPolicy, installHostAndOriginChecks } from "./platform/host-origin.js";
import { lazily } from "./platform/lazy.js";
import { Lifecycle } from "./platform/lifecycle.js";
import { counter, createMetricsRegistry, Exposition, installHttpMetrics } from "./platform/metrics.js";
import {
  type AnyModule,
  type ModuleContext,
  type ModuleLink,
  type SectionReload,
  sectionOf,
} from "./platform/module.js";
import { collectRoutes, openApiRoute } from "./platform/openapi.js";
import { createOutputs, type PlatformOutputs } from "./platform/outputs/index.js";
import { REQUEST_LOG_SERIALIZERS, redactRequestUrl } from "./platform/redaction.js";
import type { Shape } from "./platform/validation.js";
import { VERSION } from "./platform/version.js";
import { registryModule } from "./registry/index.js";
import { streamsModule } from "./streams/index.js";

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>;

/** Fastify's packages, resolved from Fastify itself (they are its dependencies, not Vigie's). */
const requireFromFastify = lazily(() => createRequire(createRequire(import.meta.url).resolve("fastify")));
type ValidatorFactory = NonNullable<CompilersFactory["buildValidator"]>;
type SerializerFactory = NonNullable<CompilersFactory["buildSerializer"]>;
const ajvCompiler = lazily((): ValidatorFactory => requireFromFastify()("@fastify/ajv-compiler")());
const serializerCompiler = lazily(
  (): SerializerFactory => requireFromFastify()("@fastify/fast-json-stringify-compiler")(),
);

/**
 * Fastify's own compilers of route schemas (ajv, fast-json-stringify), loaded only when a route
 * declares a Fastify schema. None does: requests are checked by platform/validation.ts and each
 * route's OpenAPI description lives in its `config`; loading them cost start-up time
 * (docs/benchmarks.md, "Start-up").
 */
const FASTIFY_COMPILERS: CompilersFactory = {
  buildValidator: deferred(ajvCompiler),
  buildSerializer: deferred(serializerCompiler),
};

/** A function that forwards every call to the one `load()` gives (its types are overloads). */
function deferred<F>(load: () => F): F {
  return ((...args: unknown[]) => (load() as (...forwarded: unknown[]) => unknown)(...args)) as F;
}

/**
 * The modules of Vigie, in registration order. Each is one Fastify plugin enabled by
 * `<name>.enabled` in the configuration; its migrations run whether it is enabled or not, so
 * enabling it later needs no other step. The streams module comes before the modules that produce
 * events (healthchecks, comments), so that its streams receive their first events: healthchecks start
 * running as their module registers.
 */
export const modules: readonly AnyModule[] = [registryModule, streamsModule, commentsModule, healthchecksModule];

/** Characters a path parameter may have before the router answers 414. */
const MAX_PATH_SEGMENT = 1024;

/**
 * Closes the connection of every request that came in as an HTTP upgrade and was answered with
 * plain HTTP (a refusal, an unknown route, a route that is not a WebSocket). Node hands such a
 * request to the server's `upgrade` listener (the WebSocket plugin's), which detaches the
 * connection from the HTTP server: nothing reads it any more, keep-alive and timeouts no longer
 * apply, so it would stay open, even after the client left. A successful WebSocket upgrade never
 * reaches `onResponse` (its reply is hijacked).
 */
function closeAnsweredUpgrades(app: FastifyInstance): void {
  app.addHook("onResponse", (request, _reply, done) => {
    // Node sets `upgrade` on requests it handed to an `upgrade` listener (@types/node omits it).
    if ("upgrade" in request.raw && request.raw.upgrade === true) request.raw.socket.destroy();
    done();
  });
}

/** Every migration of the platform and of `moduleList`, so a database is created complete. */
export function allMigrations(moduleList: readonly AnyModule[] = modules): Record<string, Migration> {
  const migrations: Record<string, Migration> = { ...platformMigrations };
  for (const module of moduleList) Object.assign(migrations, module.migrations);
  return migrations;
}

/** A route as registered: its method and its URL pattern (`/api/v1/stream/:name`). */
export interface RouteEntry {
  readonly method: string;
  readonly url: string;
}

/** A built server: the Fastify app (not yet listening) and what the platform shares. */
export interface VigieServer {
  readonly app: FastifyInstance;
  readonly context: ModuleContext;
  /** Every route of the platform and the enabled modules (HEAD routes Fastify adds excluded). */
  readonly routes: readonly RouteEntry[];
  /** What the server serves (and what is off), as `GET /` lists it. */
  readonly links: readonly ModuleLink[];
  /**
   * Re-applies a freshly validated configuration to every module that registered a reload (SIGHUP).
   * @returns the modules whose reload failed, with the error (empty when all succeeded)
   */
  reload(config: VigieConfig): Promise<Array<{ name: string; error: unknown }>>;
  /** Stops the app (modules' onClose hooks included), then closes the database. */
  close(): Promise<void>;
}

/** Options of {@link buildServer}, mostly for tests. */
export interface BuildOptions {
  /** The modules to load; default {@link modules}. */
  readonly modules?: readonly AnyModule[];
  /** A pino logger to use instead of one built from `log-level` (tests pass a silent one). */
  readonly logger?: FastifyBaseLogger;
}

/**
 * Opens the database (running every migration), builds the app and registers the enabled modules.
 *
 * @throws Error when the database cannot be opened or migrated, or a module fails to start
 */
export async function buildServer(config: VigieConfig, options: BuildOptions = {}): Promise<VigieServer> {
  const moduleList = options.modules ?? modules;
  const app = Fastify({
    // Request URLs may carry a token (`?token=` on WebSocket subscriptions): a request logged by
    // Fastify itself has the secret query parameters of its URL redacted, as the platform's own
    // request log (below) has.
    ...(options.logger === undefined
      ? { logger: { level: config["log-level"], serializers: REQUEST_LOG_SERIALIZERS } }
      : { loggerInstance: options.logger.child({}, { serializers: REQUEST_LOG_SERIALIZERS }) }),
    trustProxy: config.http["trust-proxy"],
    bodyLimit: config.http["body-limit"],
    // Long enough for every name Vigie accepts (healthcheck names: 255 characters), so that the
    // modules answer over-long names with their own 400/404.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_SEGMENT },
    // Errors Fastify raises before routing, answered in the platform's {"error"} format.
    frameworkErrors: (error, _request, reply) => answerRoutingError(error, reply as FastifyReply, MAX_PATH_SEGMENT),
    // A request the HTTP server cannot read (headers over its limit, not HTTP, too slow) likewise.
    clientErrorHandler: answerClientError,
    // Per-request logs are written at debug level by our own hook (hot ingestion routes stay quiet).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    schemaController: { compilersFactory: FASTIFY_COMPILERS },
  });
  const database = await openDatabase(config.database.url, allMigrations(moduleList), {
    onIdleError: (error) => app.log.warn({ err: error }, "database connection lost; it is replaced on next use"),
    warn: (details, message) => app.log.warn(details, message),
  });
  try {
    const routes = collectRoutes(app);
    const lifecycle = new Lifecycle();
    const metricsRegistry: Registry = createMetricsRegistry();
    const cluster = config.cluster.enabled
      ? new Cluster(
          config.cluster,
          database,
          config.cluster["advertise-url"] || config.http["public-url"],
          app.log,
          metricsRegistry,
        )
      : undefined;
    try {
      await cluster?.connect();
      const links = serverLinks(config, moduleList);
      const outputs = await createOutputs(config, moduleList, metricsRegistry, app.log, database, cluster?.nats);
      const context = await setUp(
        app,
        config,
        database,
        moduleList,
        lifecycle,
        metricsRegistry,
        cluster,
        links,
        outputs,
      );
      openApiRoute(app, routes, VERSION, config.http["public-url"]);
      await app.ready();
      // Leases are balanced once every module listens to them.
      await cluster?.start();
      return {
        app,
        context,
        routes,
        links,
        reload: (fresh) => lifecycle.reload(fresh),
        close: async () => {
          try {
            // Durable outputs' messages go back to JetStream while NATS is still open.
            if (cluster !== undefined) await outputs.outputs.handOver();
            // Leases first: another instance takes this one's work at once, not after the lease.
            await cluster?.stop();
            await app.close();
            // Once every module stopped: what they notified last is sent within `drain-timeout`.
            await outputs.close();
          } finally {
            await database.close();
          }
        },
      };
    } catch (error) {
      await cluster?.stop();
      await app.close().catch(() => {});
      throw error;
    }
  } catch (error) {
    await database.close();
    throw error;
  }
}

async function setUp(
  app: FastifyInstance,
  config: VigieConfig,
  database: Database,
  moduleList: readonly AnyModule[],
  lifecycle: Lifecycle,
  metrics: Registry,
  cluster: Cluster | undefined,
  links: readonly ModuleLink[],
  outputs: PlatformOutputs,
): Promise<ModuleContext> {
  const exposition = new Exposition();
  const auth = new Auth();
  const context: ModuleContext = {
    config,
    database,
    metrics,
    exposition,
    auth,
    apiGuard: config.security["require-token"] ? auth.require("tech") : undefined,
    logger: app.log,
    cluster,
    outputs: outputs.outputs,
    notifier: outputs.notifier,
    mailer: outputs.mailer,
    events: new EventRouter(
      counter(
        metrics,
        "vigie_event_sink_dropped_total",
        "Events a module handed to a stream that does not exist (or with the streams module disabled), by stream name.",
        ["stream"],
      ),
      app.log,
    ),
  };
  app.decorateRequest("principal", undefined);
  // Bodies are JSON unless a route says otherwise (docs/api.md): Fastify's default text/plain
  // parser would let a wrong media type through to validation instead of a 415.
  app.removeContentTypeParser("text/plain");
  installErrorHandling(app);
  installHostAndOriginChecks(app, new HostOriginPolicy(config.http));
  installHttpMetrics(app, metrics, exposition);
  closeAnsweredUpgrades(app);
  if (app.log.level === "debug" || app.log.level === "trace") {
    app.addHook("onResponse", (request, reply, done) => {
      request.log.debug(
        { method: request.method, url: redactRequestUrl(request.url), status: reply.statusCode, ms: reply.elapsedTime },
        "request completed",
      );
      done();
    });
  }

  const health = async () => {
    try {
      await database.ping();
    } catch (error) {
      app.log.warn({ err: error }, "database unavailable");
      throw new UnavailableError("database unavailable");
    }
    return { message: "ok" };
  };
  homeRoute(app, VERSION, links, config.http["public-url"]);
  const healthDescription = {
    summary: "whether the server and its database answer",
    success: { schema: { type: "object", properties: { message: { const: "ok" } }, required: ["message"] } },
    errors: [503],
    security: "none",
  } as const;
  app.get("/healthz", { config: { openapi: healthDescription } }, health);
  app.get("/health", { config: { openapi: healthDescription } }, health);
  // The cluster view is behind the guard of the healthcheck API (docs/cluster.md).
  cluster?.routes(app, context.apiGuard);

  for (const module of moduleList) {
    const section = sectionOf(config, module);
    if (!section?.enabled) continue;
    const onReload = (handler: SectionReload<Shape>) =>
      lifecycle.onReload(module.name, async (fresh) => {
        const reloaded = sectionOf(fresh, module);
        if (reloaded !== undefined) await handler(reloaded);
      });
    await app.register(module.plugin, { context, section, onReload });
  }
  return context;
}
