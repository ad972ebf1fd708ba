/**
 * The streams module's plugin, in named parts: the engine and its I/O (outputs, channels, async
 * queues), cluster mode, the stream directories (loaded at start-up, reloaded on SIGHUP), the
 * events of other modules, the Riemann input and the routes.
 */
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { type Cluster, changedNames } from "../platform/cluster/index.js";
import type { ModuleSection } from "../platform/config.js";
import type { ModuleContext, ModuleOptions } from "../platform/module.js";
import type { StreamLimits } from "./action.js";
import { AsyncQueues } from "./async-queues.js";
import { ChannelHub } from "./channels.js";
import { Taps } from "./channels-tap.js";
import { StreamCluster } from "./cluster.js";
import type { streamsShape } from "./config.js";
import { toEdn } from "./edn.js";
import {
  applyFileStreams,
  applyPersistedStreams,
  applySharedStreams,
  type EngineHooks,
  StreamEngine,
} from "./engine.js";
import { withinBounds } from "./event-bounds.js";
import { GraphiteServer } from "./graphite/server.js";
import { declarationsOf, type StreamIo } from "./io.js";
import {
  asyncQueueMetrics,
  channelMetrics,
  clusterMetrics,
  graphiteMetrics,
  influxMetrics,
  ingestionCounters,
  metricHooks,
  riemannMetrics,
  riemannUdpMetrics,
} from "./metrics.js";
import { DEFAULT_STREAM } from "./names.js";
import { RiemannHandler } from "./riemann/handler.js";
import { loadRiemannSchema } from "./riemann/protocol.js";
import { RiemannServer } from "./riemann/server.js";
import { RiemannUdpServer } from "./riemann/udp.js";
import { channelRoutes } from "./routes/channels.js";
import { graphRoutes } from "./routes/graph.js";
import { influxRoutes } from "./routes/influx.js";
import { ingestionRoutes } from "./routes/ingestion.js";
import { pushRoute } from "./routes/push.js";
import { answerQuery, type StreamRoutesCluster, streamRoutes } from "./routes/streams.js";
import { apiStreamsDirectory, loadStreamDirectories, moveLegacyApiFiles, SharedStreamStore } from "./storage.js";

/** The module's section of the configuration. */
type Section = ModuleSection<typeof streamsShape>;

/** The change topic of API streams between instances (docs/cluster.md). */
const STREAMS_TOPIC = "streams.definitions";

/** The engine and what runs beside it. */
interface Runtime {
  readonly engine: StreamEngine;
  readonly io: StreamIo;
  readonly hub: ChannelHub;
  readonly queues: AsyncQueues;
  readonly limits: StreamLimits;
  /** The streams' taps, over tap channels of the hub. */
  readonly taps: Taps;
  /** Cluster mode: set once the engine exists, as the cluster needs it. */
  streamCluster: StreamCluster | undefined;
}

/** The cluster-mode parts, `undefined` on a single instance. */
interface ClusterParts {
  readonly cluster: Cluster;
  readonly shared: SharedStreamStore;
  readonly streams: StreamCluster;
}

/** The bounds of a stream's state and of queries, from the section. */
function limitsOf(section: Section): StreamLimits {
  return {
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
}

/** Builds the engine, its outputs, channel hub and async queues. */
function createRuntime(context: ModuleContext, section: Section): Runtime {
  const limits = limitsOf(section);
  const taps = new Taps(
    () => hub,
    () => engine,
  );
  const hooks: EngineHooks = {
    ...metricHooks(context.metrics, context.logger, () => engine),
    tapSink: (stream, point) => taps.sinkFor(stream, point),
  };
  const outputs = context.outputs;
  const hub: ChannelHub = new ChannelHub({
    metrics: channelMetrics(context.metrics, () => hub.subscriberCounts()),
    maxSubscribers: section["max-subscribers"],
    maxSubscriptionsPerClient: section["max-subscriptions-per-client"],
    matchBudgetMs: section["publish-match-budget"].milliseconds,
    regexAllowance: section["max-event-size"],
    onActivity: (channel, active) => taps.activity(channel, active),
  });
  const queueMetrics = asyncQueueMetrics(context.metrics, () => queues.backlog());
  const queues: AsyncQueues = new AsyncQueues(section["async-queues"], {
    dropped: (queue) => queueMetrics.dropped(queue),
    failed: (stream) => hooks.dropped?.(stream, "async-queue") ?? (() => {}),
  });
  const io: StreamIo = {
    declarations: declarationsOf(section, outputs.names()),
    output: (name) => outputs.sink(name),
    // Cluster mode: a publication also reaches the subscribers of the other instances.
    publish: (channel) => {
      const local = hub.publisher(channel);
      return runtime.streamCluster === undefined ? local : runtime.streamCluster.publisher(channel, local);
    },
    asyncQueue: (name, stream) => queues.enqueuer(name, stream),
    runsIo: true,
  };
  const engine: StreamEngine = new StreamEngine(hooks, limits, io);
  const runtime: Runtime = { engine, io, hub, queues, limits, taps, streamCluster: undefined };
  return runtime;
}

/** Cluster mode: the engine among the other instances, and the store of API streams. */
function startCluster(context: ModuleContext, runtime: Runtime): ClusterParts | undefined {
  const cluster = context.cluster;
  if (cluster === undefined) return undefined;
  const { engine, hub, limits } = runtime;
  const streams = new StreamCluster(
    engine,
    cluster.nats,
    cluster.streams,
    cluster.instanceId,
    cluster.leaseMs,
    (stream, query, partition) => answerQuery(stream, query, limits, partition),
    clusterMetrics(context.metrics),
    context.logger,
  );
  runtime.streamCluster = streams;
  streams.subscribeChannels((channel, value) => hub.publisher(channel)(value));
  return { cluster, shared: new SharedStreamStore(context.database), streams };
}

/** What the stream routes do in cluster mode: store, apply, tell the others; ask owners. */
function routesCluster({ cluster, shared, streams }: ClusterParts): StreamRoutesCluster {
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
    ask: (name, query, bounds) => streams.ask(name, query, bounds),
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
  for (const { file, reason } of failed) {
    logger.warn({ file }, `stream file ${file}, written through the API, could not be moved: ${reason}`);
  }
}

/**
 * Loads the streams of the stream directories and of the API streams directory, and again on every
 * SIGHUP (every file read and compiled before anything changes, so an invalid file changes
 * nothing); in cluster mode, the API streams of the database, and again when another instance
 * changes them.
 * @returns the API streams directory, `undefined` in cluster mode or without stream directories
 */
async function loadStreams(
  options: ModuleOptions<typeof streamsShape>,
  runtime: Runtime,
  parts: ClusterParts | undefined,
): Promise<string | undefined> {
  const { context, section, onReload } = options;
  const { engine, io } = runtime;
  // Cluster mode keeps API streams in the database instead, and leaves files alone.
  const persistDirectory = parts === undefined ? apiStreamsDirectory(section.directories) : undefined;
  const [first] = section.directories;
  if (persistDirectory !== undefined && first !== undefined) {
    await moveLegacyFiles(first, persistDirectory, context.logger);
  }
  const load = async (directories: readonly string[]) => {
    const files = await loadStreamDirectories(directories, io.declarations);
    const persisted =
      persistDirectory === undefined ? new Map() : await loadStreamDirectories([persistDirectory], io.declarations);
    applyFileStreams(engine, files);
    for (const { name, file, definedIn } of applyPersistedStreams(engine, persisted, files)) {
      context.logger.warn({ stream: name }, `stream ${name} of ${file} was not started: ${definedIn} defines it`);
    }
  };
  await load(section.directories);
  if (parts !== undefined) {
    const { cluster, shared } = parts;
    const syncShared = async (names: readonly string[] | undefined) => {
      applySharedStreams(engine, await shared.list(names), names, context.logger);
      cluster.kick();
    };
    await syncShared(undefined);
    cluster.changes.on(STREAMS_TOPIC, (data) => syncShared(changedNames(data)));
    cluster.changes.onResync(() => syncShared(undefined));
  }
  onReload(async (fresh) => {
    await load(fresh.directories);
  });
  return persistDirectory;
}

/**
 * Connects the engine to the events of other modules (healthcheck results, comments). They carry
 * user data (check output, comment text): held to the event bounds like any push.
 */
function connectEvents(context: ModuleContext, runtime: Runtime): void {
  const { engine, limits } = runtime;
  context.events.connect((name, events) => {
    const stream = name === DEFAULT_STREAM ? undefined : engine.get(name);
    if (name !== DEFAULT_STREAM && stream === undefined) return false;
    const admitted = withinBounds(events, limits.event, (bound) => engine.refuse(name, "event-sink", bound));
    if (stream === undefined) engine.pushDefault(admitted);
    else engine.deliver([stream], admitted, false);
    return true;
  });
}

/** Registers the ingestion, push, stream, index and channel routes. */
async function registerRoutes(
  app: FastifyInstance,
  options: ModuleOptions<typeof streamsShape>,
  runtime: Runtime,
  persistDirectory: string | undefined,
  parts: ClusterParts | undefined,
): Promise<void> {
  const { context, section } = options;
  const { engine, hub, taps } = runtime;
  const guard = context.apiGuard;
  const bodyLimit = section["ingestion-body-limit"];
  await app.register(ingestionRoutes, { engine, counters: ingestionCounters(context.metrics), bodyLimit, guard });
  await app.register(pushRoute, { engine, bodyLimit, guard });
  await app.register(influxRoutes, { engine, bodyLimit, metrics: influxMetrics(context.metrics), guard });
  await streamRoutes(app, {
    engine,
    persistDirectory,
    guard,
    ...(parts === undefined ? {} : { cluster: routesCluster(parts) }),
  });
  await graphRoutes(app, { engine, guard });
  await channelRoutes(app, {
    hub,
    taps,
    // Browsers cannot set headers on a WebSocket: the token may also come as ?token=.
    guard: context.config.security["require-token"]
      ? context.auth.require("tech", { queryParameter: "token" })
      : undefined,
  });
}

/** The inputs that listen on ports of their own, started together, closed together. */
interface Inputs {
  close(): Promise<void>;
}

/**
 * Starts the Riemann input (over TCP, over UDP) and the Graphite input, those the
 * section enables.
 * @throws Error naming the setting when one cannot listen (what was started is closed first)
 */
async function startInputs(context: ModuleContext, section: Section, runtime: Runtime): Promise<Inputs> {
  const { engine } = runtime;
  const settings = section.riemann;
  const udpPort = settings["udp-port"];
  const riemannOn = settings.enabled || udpPort !== undefined;
  const metrics = riemannOn ? riemannMetrics(context.metrics) : undefined;
  const logger = context.logger;
  const started: { close(): Promise<void> }[] = [];
  const close = async () => {
    await Promise.all(started.map((input) => input.close()));
  };
  try {
    if (riemannOn) loadRiemannSchema();
    if (metrics !== undefined && settings.enabled) {
      const tcp = new RiemannServer(settings, engine, { metrics, logger });
      started.push(tcp);
      await tcp.listen();
    }
    if (metrics !== undefined && udpPort !== undefined) {
      const handler = new RiemannHandler(settings, engine, metrics);
      const udp = new RiemannUdpServer({
        host: settings.host,
        port: udpPort,
        handler,
        metrics: riemannUdpMetrics(context.metrics),
        logger,
      });
      started.push({
        close: () => {
          handler.stop();
          return udp.close();
        },
      });
      await udp.listen();
    }
    if (section.graphite.enabled) {
      const graphite = new GraphiteServer(section.graphite, engine, {
        metrics: graphiteMetrics(context.metrics),
        logger,
      });
      started.push(graphite);
      await graphite.listen();
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { close };
}

/**
 * The module's plugin: loads the streams, connects the events of other modules (once the stream
 * directories are loaded), starts the outputs, async queues and the Riemann and Graphite inputs,
 * serves the routes (behind the API guard with `security.require-token`). On close it stops those
 * inputs, runs what the async queues hold (bounded) and drains the outputs for at most
 * `streams.drain-timeout`.
 */
export async function streamsPlugin(app: FastifyInstance, options: ModuleOptions<typeof streamsShape>): Promise<void> {
  const { context, section } = options;
  const runtime = createRuntime(context, section);
  const parts = startCluster(context, runtime);
  const persistDirectory = await loadStreams(options, runtime, parts);
  connectEvents(context, runtime);

  const inputs = await startInputs(context, section, runtime);
  app.addHook("onClose", async () => {
    await inputs.close();
    await runtime.streamCluster?.close();
    runtime.queues.close();
    // The outputs are the platform's, but what the streams sent is drained now, within the
    // streams' own `drain-timeout`; the server drains them again (a no-op then) when it stops.
    await context.outputs.drain(section["drain-timeout"].milliseconds);
    runtime.hub.close();
  });
  await registerRoutes(app, options, runtime, persistDirectory, parts);
}
