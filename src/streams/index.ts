/**
 * The streams module (streams.md): named streams compiled from EDN configurations, an index per
 * stream, stream directories loaded at start-up and reloaded on SIGHUP, Prometheus remote write and
 * OpenTelemetry traces ingestion.
 */
import { defineModule } from "../platform/module.js";
import { array, integer, size, string, withDefault } from "../platform/validation.js";
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from "./action.js";
import { applyFileStreams, StreamEngine } from "./engine.js";
import { ingestionCounters, metricHooks } from "./metrics.js";
import { ingestionRoutes } from "./routes/ingestion.js";
import { streamRoutes } from "./routes/streams.js";
import { loadStreamDirectories, streamsMigrations } from "./storage.js";

export { loadStreamDirectories } from "./storage.js";
export { formatStreamTestResults, runStreamTests } from "./stream-test.js";

/** The streams section of the configuration. */
export const streamsShape = {
  /** Directories of streams files; the first one receives streams created with `:persist true`. */
  directories: withDefault(array(string({ min: 1 })), [] as string[]),
  /** Body limit of pushes and ingestion (remote write, OTLP), in bytes (platform.md §2). */
  "ingestion-body-limit": withDefault(size(), 32 * 1024 * 1024),
  /** The bounds of a stream's state (platform.md §8); see {@link StreamLimits}. */
  "max-index-size": withDefault(integer(1, 100_000_000), DEFAULT_STREAM_LIMITS.indexSize),
  "max-forks": withDefault(integer(1, 100_000_000), DEFAULT_STREAM_LIMITS.forks),
  "max-window-events": withDefault(integer(1, 100_000_000), DEFAULT_STREAM_LIMITS.windowEvents),
};

/**
 * The module, for the `modules` list of src/server.ts. Its plugin loads the stream directories,
 * reloads them on SIGHUP (every file read and compiled before anything changes, so an invalid file
 * changes nothing), and serves the stream, index and ingestion routes (behind the API guard with
 * `security.require-token`).
 */
export const streamsModule = defineModule({
  name: "streams",
  configShape: streamsShape,
  migrations: streamsMigrations,
  plugin: async (app, { context, section, onReload }) => {
    const limits: StreamLimits = {
      indexSize: section["max-index-size"],
      forks: section["max-forks"],
      windowEvents: section["max-window-events"],
    };
    const running: StreamEngine = new StreamEngine(
      metricHooks(context.metrics, context.logger, () => running),
      limits,
    );
    applyFileStreams(running, await loadStreamDirectories(section.directories));
    onReload(async (fresh) => {
      applyFileStreams(running, await loadStreamDirectories(fresh.directories));
    });

    const guard = context.apiGuard;
    await app.register(ingestionRoutes, {
      engine: running,
      counters: ingestionCounters(context.metrics),
      bodyLimit: section["ingestion-body-limit"],
      guard,
    });
    await streamRoutes(app, {
      engine: running,
      persistDirectory: section.directories[0],
      ingestionBodyLimit: section["ingestion-body-limit"],
      guard,
    });
  },
});
