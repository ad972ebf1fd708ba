/**
 * Builds a real server for API tests through `app.inject()`: a configuration parsed from a raw tree
 * (as if read from YAML) and a silent logger.
 */
import pino from "pino";
import { parseConfig } from "../../src/platform/config.js";
import type { AnyModule } from "../../src/platform/module.js";
import { modules as allModules, buildServer, type VigieServer } from "../../src/server.js";

/** Options of {@link startTestServer}. */
export interface TestServerOptions {
  /** The raw configuration tree; `database.url` defaults to in-memory SQLite. */
  readonly config?: Record<string, unknown>;
  /** Environment variables as seen by the configuration (`VIGIE_*` overrides). */
  readonly environment?: Record<string, string>;
  readonly modules?: readonly AnyModule[];
}

/** Builds a server (not listening); close it with `server.close()`. */
export async function startTestServer(options: TestServerOptions = {}): Promise<VigieServer> {
  const modules = options.modules ?? allModules;
  const raw = { ...options.config };
  raw.database ??= { url: "sqlite::memory:" };
  const config = parseConfig(raw, options.environment ?? {}, modules);
  return buildServer(config, { modules, logger: pino({ level: "silent" }) });
}
