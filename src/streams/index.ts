/**
 * The streams module (streams.md, streams-io.md): named streams compiled from EDN configurations,
 * an index per stream, stream directories loaded at start-up and reloaded on SIGHUP, Prometheus
 * remote write and OpenTelemetry traces ingestion, the Riemann protocol input, outputs, async
 * queues and WebSocket publish/subscribe.
 */
import type { FastifyBaseLogger } from "fastify";
import { type Cluster, changedNames } from "../platform/cluster/index.js";
import { ConfigError, configErrorMessage } from "../platform/config.js";
import { defineModule } from "../platform/module.js";
import { ValidationError } from "../platform/validation.js";
import type { StreamLimits } from "./action.js";
import { AsyncQueues } from "./async-queues.js";
import { ChannelHub } from "./channels.js";
import { StreamCluster } from "./cluster.js";
import { streamsCommands } from "./commands.js";
import { checkOutputFiles, streamsShape } from "./config.js";
import { toEdn } from "./edn.js";
import { applyFileStreams, applyPersistedStreams, applySharedStreams, StreamEngine } from "./engine.js";
import { withinBounds } from "./event-bounds.js";
import { declarationsOf, type StreamIo } from "./io.js";
import {
  asyncQueueMetrics,
  channelMetrics,
  clusterMetrics,
  ingestionCounters,
  metricHooks,
  outputMetrics,
  riemannMetrics,
} from "./metrics.js";
import { DEFAULT_STREAM } from "./names.js";
import { Outputs } from "./outputs/outputs.js";
import { RiemannServer } from "./riemann/server.js";
import { channelRoutes } from "./routes/channels.js";
import { ingestionRoutes } from "./routes/ingestion.js";
import { pushRoute } from "./routes/push.js";
import { answerQuery, type StreamRoutesCluster, streamRoutes } from "./routes/streams.js";
import {
  apiStreamsDirectory,
  loadStreamDirectories,
  moveLegacyApiFiles,
  SharedStreamStore,
  streamsMigrations,
} from "./storage.js";

export { streamsShape } from "./config.js";
export { loadStreamDirectories } from "./storage.js";

/** The change topic of API streams between instances (scale-out.md §4). */
const STREAMS_TOPIC = "streams.definitions";

/** What the stream routes do in cluster mode: store, apply, tell the others; ask owners. */
function routesCluster(cluster: Cluster, shared: SharedStreamStore, streams: StreamCluster): StreamRoutesCluster {
  return {
    async save(name, config, apply) {
      await shared.save(name, toEdn(config));
      apply();
      cluster.kick();
      await cluster.changes.publish(STREAMS_TOPIC, { names: [name] });
    },
    async remove(name, apply) {
      await shared.remove(name);
      apply();
      cluster.kick();
      await cluster.changes.publish(STREAMS_TOPIC, { names: [name] });
    },
    owns: (name) => streams.owns(name),
    ask: (name, query) => streams.ask(name, query),
  };
}

/**
 * Moves the files that earlier versions wrote for `:persist true` beside the operator's to the API
 * streams directory (see `moveLegacyApiFiles`), and logs what it did: each move at info, each file
 * that could not be moved (it then loads as one of the operator's) at warn.
 */
async function moveLegacyFiles(first: string, persistDirectory: string, logger: FastifyBaseLogger): Promise<void> {
  const { moved, failed } = await moveLegacyApiFiles(first, persistDirectory);
  for (const { from, to } of moved) {
    logger.info({ file: to }, `stream file ${from}, written through the API, moved to ${to}`);
  }
  for (const { file, error } of failed) {
    logger.warn({ file }, `stream file ${file}, written through the API, could not be moved: ${error.message}`);
  }
}

/**
 * The module, for the `modules` list of src/server.ts. Its plugin loads the stream directories and
 * the API streams directory, reloads them on SIGHUP (every file read and compiled before anything
 * changes, so an invalid file changes nothing), serves the stream, index, ingestion and channel
 * routes (behind the API guard with `security.require-token`), starts the outputs, async queues
 * and the Riemann input, and on
 * close stops the Riemann input, runs what the async queues hold (bounded) and drains the outputs for at most
 * `streams.drain-timeout`.
 */
export const streamsModule = defineModule({
  name: "streams",
  configShape: streamsShape,
  migrations: streamsMigrations,
  links: (section) => [
    { title: "stream API", path: "/api/v1/stream" },
    {
      title: "Riemann protocol input",
      path: `tcp://${section.riemann.host}:${section.riemann.port}`,
      ...(section.riemann.enabled ? {} : { enableWith: "streams.riemann.enabled: true" }),
    },
  ],
  check(section, platform) {
    const riemann = section.riemann;
    // Riemann's protocol carries no credentials: only client certificates can stand for a token.
    if (section.enabled && riemann.enabled && platform.security["require-token"] && riemann["tls-ca"] === undefined) {
      throw new ValidationError(
        "streams.riemann.tls-ca",
        "is required when security.require-token is true: the Riemann protocol carries no token, so the input needs TLS with client certificates (tls-cert, tls-key, tls-ca)",
      );
    }
  },
  commands: streamsCommands,
  plugin: async (app, { context, section, onReload }) => {
    try {
      checkOutputFiles(section.outputs);
    } catch (error) {
      if (error instanceof ValidationError) throw new ConfigError(configErrorMessage(error));
      throw error;
    }
    const limits: StreamLimits = {
      indexSize: section["max-index-size"],
      forks: section["max-forks"],
      windowEvents: section["max-window-events"],
      event: {
        fields: section["max-event-fields"],
        tags: section["max-event-tags"],
        string: section["max-event-string"],
        size: section["max-event-size"],
      },
      queryResults: section["max-query-results"],
      queryBytes: section["max-query-bytes"],
    };
    const hooks = metricHooks(context.metrics, context.logger, () => engine);
    const outputs: Outputs = new Outputs(section.outputs, {
      metrics: outputMetrics(context.metrics, () => outputs.queued()),
      logger: context.logger,
    });
    const hub: ChannelHub = new ChannelHub({
      metrics: channelMetrics(context.metrics, () => hub.subscriberCounts()),
      maxSubscribers: section["max-subscribers"],
      maxSubscriptionsPerClient: section["max-subscriptions-per-client"],
      matchBudgetMs: section["publish-match-budget"].milliseconds,
      regexAllowance: section["max-event-size"],
    });
    const queueMetrics = asyncQueueMetrics(context.metrics, () => queues.backlog());
    const queues: AsyncQueues = new AsyncQueues(section["async-queues"], {
      dropped: (queue) => queueMetrics.dropped(queue),
      failed: (stream) => hooks.dropped?.(stream, "async-queue") ?? (() => {}),
    });
    let streamCluster: StreamCluster | undefined;
    const io: StreamIo = {
      declarations: declarationsOf(section),
      output: (name) => outputs.sink(name),
      // Cluster mode: a publication also reaches the subscribers of the other instances.
      publish: (channel) =>
        streamCluster === undefined ? hub.publisher(channel) : streamCluster.publisher(channel, hub.publisher(channel)),
      asyncQueue: (name, stream) => queues.enqueuer(name, stream),
      runsIo: true,
    };
    const engine: StreamEngine = new StreamEngine(hooks, limits, io);
    const cluster = context.cluster;
    const shared = cluster === undefined ? undefined : new SharedStreamStore(context.database);
    if (cluster !== undefined) {
      streamCluster = new StreamCluster(
        engine,
        cluster.nats,
        cluster.streams,
        cluster.instanceId,
        cluster.leaseMs,
        (stream, query) => answerQuery(stream, query, limits),
        clusterMetrics(context.metrics),
        context.logger,
      );
      streamCluster.subscribeChannels((channel, value) => hub.publisher(channel)(value));
    }
    // The API streams directory of the start-up configuration; cluster mode keeps API streams in
    // the database instead, and leaves files alone.
    const persistDirectory = cluster === undefined ? apiStreamsDirectory(section.directories) : undefined;
    if (persistDirectory !== undefined) {
      await moveLegacyFiles(section.directories[0] as string, persistDirectory, context.logger);
    }
    const loadStreams = async (directories: readonly string[]) => {
      const files = await loadStreamDirectories(directories, io.declarations);
      const persisted =
        persistDirectory === undefined ? new Map() : await loadStreamDirectories([persistDirectory], io.declarations);
      applyFileStreams(engine, files);
      for (const { name, file, definedIn } of applyPersistedStreams(engine, persisted, files)) {
        context.logger.warn({ stream: name }, `stream ${name} of ${file} was not started: ${definedIn} defines it`);
      }
    };
    await loadStreams(section.directories);
    const syncShared = async (names: readonly string[] | undefined) => {
      if (shared === undefined) return;
      applySharedStreams(engine, await shared.list(names), names, context.logger);
      cluster?.kick();
    };
    if (cluster !== undefined) {
      await syncShared(undefined);
      cluster.changes.on(STREAMS_TOPIC, (data) => syncShared(changedNames(data)));
      cluster.changes.onResync(() => syncShared(undefined));
    }
    // Events of other modules (healthcheck results, comments) enter here (platform.md §9), once
    // the stream directories are loaded.
    // They carry user data (check output, comment text): held to the event bounds like any push.
    context.events.connect((name, events) => {
      const stream = name === DEFAULT_STREAM ? undefined : engine.get(name);
      if (name !== DEFAULT_STREAM && stream === undefined) return false;
      const admitted = withinBounds(events, limits.event, (bound) => engine.refuse(name, "event-sink", bound));
      if (stream === undefined) engine.pushDefault(admitted);
      else engine.deliver([stream], admitted, false);
      return true;
    });
    onReload(async (fresh) => {
      await loadStreams(fresh.directories);
    });

    const riemann = section.riemann.enabled
      ? new RiemannServer(section.riemann, engine, { metrics: riemannMetrics(context.metrics), logger: context.logger })
      : undefined;
    await riemann?.listen();
    app.addHook("onClose", async () => {
      await riemann?.close();
      await streamCluster?.close();
      queues.close();
      await outputs.drain(section["drain-timeout"].milliseconds);
      hub.close();
    });

    const guard = context.apiGuard;
    await app.register(ingestionRoutes, {
      engine,
      counters: ingestionCounters(context.metrics),
      bodyLimit: section["ingestion-body-limit"],
      guard,
    });
    await app.register(pushRoute, { engine, bodyLimit: section["ingestion-body-limit"], guard });
    await streamRoutes(app, {
      engine,
      persistDirectory,
      guard,
      ...(cluster === undefined || shared === undefined || streamCluster === undefined
        ? {}
        : { cluster: routesCluster(cluster, shared, streamCluster) }),
    });
    await channelRoutes(app, {
      hub,
      // Browsers cannot set headers on a WebSocket: the token may also come as ?token=.
      guard: context.config.security["require-token"]
        ? context.auth.require("tech", { queryParameter: "token" })
        : undefined,
    });
  },
});
