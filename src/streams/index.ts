/**
 * The streams module (streams.md): named streams compiled from EDN configurations, an index per
 * stream, stream directories loaded at start-up and reloaded on SIGHUP.
 */
import { defineModule } from "../platform/module.js";
import { array, size, string, withDefault } from "../platform/validation.js";
import { type FileStream, loadStreamDirectories } from "./directories.js";
import { toEdn } from "./edn.js";
import { StreamEngine } from "./engine.js";
import { ingestionRoutes } from "./ingestion.js";
import { metricHooks } from "./metrics.js";
import { streamRoutes } from "./plugin.js";

/** The streams section of the configuration. */
export const streamsShape = {
  /** Directories of streams files; the first one receives streams created with `:persist true`. */
  directories: withDefault(array(string({ min: 1 })), [] as string[]),
  /** Body limit of pushes and ingestion (remote write, OTLP), in bytes (platform.md §2). */
  "ingestion-body-limit": withDefault(size(), 32 * 1024 * 1024),
};

/**
 * Applies the streams of the directories to the engine: new streams compiled, changed ones
 * recompiled (state reset), streams whose file entry disappeared dropped, untouched ones kept with
 * their state and index. Streams created through the API without `:persist` are not touched.
 */
export function applyFileStreams(engine: StreamEngine, loaded: ReadonlyMap<string, FileStream>): void {
  for (const stream of [...engine.all()]) {
    if (stream.origin.kind === "file" && !loaded.has(stream.name)) engine.remove(stream.name);
  }
  for (const [name, entry] of loaded) {
    const running = engine.get(name);
    if (running?.origin.kind === "file" && toEdn(running.config) === entry.text) continue;
    engine.add(name, entry.config, { kind: "file", file: entry.file });
  }
}

export const streamsModule = defineModule({
  name: "streams",
  configShape: streamsShape,
  migrations: {},
  plugin: async (app, { context, section }) => {
    const running: StreamEngine = new StreamEngine(metricHooks(context.metrics, context.logger, () => running));
    applyFileStreams(running, await loadStreamDirectories(section.directories));

    context.lifecycle.onReload("streams", async (config) => {
      const directories = (config.modules.streams?.directories as string[] | undefined) ?? section.directories;
      // All files are read and compiled before anything changes: an invalid file changes nothing.
      applyFileStreams(running, await loadStreamDirectories(directories));
    });

    const guard = context.config.security["require-token"] ? context.auth.require("tech") : undefined;
    await app.register(ingestionRoutes, {
      engine: running,
      metrics: context.metrics,
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
