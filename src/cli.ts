#!/usr/bin/env node
/**
 * The `vigie` command line (platform.md §1). Exit codes: 0 normal stop, 1 runtime failure, 2
 * invalid configuration or invalid usage.
 */
import { createRequire } from "node:module";
import { Command, CommanderError } from "commander";
import { ConfigError, loadConfig, type VigieConfig } from "./platform/config.js";
import { buildServer, modules } from "./server.js";

/** Exit codes of platform.md §1. */
const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Milliseconds a graceful stop may take before open connections are cut and the process exits. */
const STOP_GRACE_MS = 8_000;
const STOP_DEADLINE_MS = 10_000;

const { version } = createRequire(import.meta.url)("../package.json") as { version: string };

function fail(message: string, code: number): never {
  process.stderr.write(`vigie: ${message}\n`);
  process.exit(code);
}

async function configFrom(file: string | undefined): Promise<VigieConfig> {
  try {
    return await loadConfig(file, process.env, modules);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message, EXIT_USAGE);
    throw error;
  }
}

async function serve(options: { config?: string }): Promise<void> {
  const config = await configFrom(options.config);
  let server: Awaited<ReturnType<typeof buildServer>>;
  try {
    server = await buildServer(config);
  } catch (error) {
    fail(`cannot start: ${(error as Error).message}`, EXIT_FAILURE);
  }
  const { app, context } = server;
  try {
    await app.listen({ host: config.http.host, port: config.http.port });
  } catch (error) {
    app.log.error({ err: error }, "cannot listen");
    await server.close();
    process.exit(EXIT_FAILURE);
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "stopping");
    // In-flight requests get STOP_GRACE_MS; then their connections are cut so the stop completes.
    setTimeout(() => app.server.closeAllConnections(), STOP_GRACE_MS).unref();
    setTimeout(() => {
      app.log.error("stop did not complete in time");
      process.exit(EXIT_FAILURE);
    }, STOP_DEADLINE_MS).unref();
    server.close().then(
      () => {
        app.log.info("stopped");
        process.exit(EXIT_OK);
      },
      (error: unknown) => {
        app.log.error({ err: error }, "stop failed");
        process.exit(EXIT_FAILURE);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGHUP", () => {
    app.log.info("SIGHUP: reloading");
    loadConfig(config.file, process.env, modules)
      .then((fresh) => context.lifecycle.reload(fresh))
      .then(
        (failures) => {
          for (const { name, error } of failures) app.log.error({ err: error, part: name }, "reload failed");
          if (failures.length === 0) app.log.info("reloaded");
        },
        (error: unknown) => app.log.error({ err: error }, "reload refused: configuration is invalid, nothing changed"),
      );
  });
}

async function check(options: { config?: string }): Promise<void> {
  const config = await configFrom(options.config);
  process.stdout.write(`configuration ${config.file ?? "(defaults, no file)"} is valid\n`);
}

/** Builds the command tree. */
function program(): Command {
  const root = new Command("vigie")
    .description("Vigie: comments, healthchecks, event streams and a user registry behind one HTTP port.")
    .version(version)
    .exitOverride()
    .showHelpAfterError();
  root
    .command("serve")
    .description("run the server (default http://127.0.0.1:8080, SQLite in ./data/)")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG, else built-in defaults)")
    .action(serve);
  const config = root.command("config").description("work with configuration files");
  config
    .command("check")
    .description("validate a configuration file; exit 0 when valid, 2 otherwise")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG)")
    .action(check);
  return root;
}

/** Runs the CLI with `argv` (process.argv shape) and maps usage errors to exit code 2. */
async function main(argv: readonly string[]): Promise<void> {
  try {
    await program().parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander's exit code is 0 for --help and --version, 1 for every usage error (including a
      // missing command, which prints the help to stderr).
      process.exit(error.exitCode === 0 ? EXIT_OK : EXIT_USAGE);
    }
    fail((error as Error).stack ?? String(error), EXIT_FAILURE);
  }
}

await main(process.argv);
