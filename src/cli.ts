/**
 * The `vigie` command line (docs/operations.md). Exit codes: 0 normal stop, 1 runtime failure, 2
 * invalid configuration or invalid usage.
 */
import { resolve } from "node:path";
import { Command, CommanderError } from "commander";
import { BackupRefusal, backupSqlite } from "./platform/backup.js";
import { ConfigError, loadConfig, type VigieConfig } from "./platform/config.js";
import { type Database, openDatabase, sqlitePath } from "./platform/database.js";
import { errorMessage } from "./platform/errors.js";
import { linkLines } from "./platform/home.js";
import { InitRefusal, initDirectory, shellWord } from "./platform/init.js";
import { type AnyModule, type CliContext, type ExitCode, sectionOf } from "./platform/module.js";
import { VERSION } from "./platform/version.js";
import { allMigrations, buildServer, modules } from "./server.js";
import { streamsModule } from "./streams/index.js";

/** Exit codes: 0 success, 1 failure, 2 usage. */
const EXIT_OK: ExitCode = 0;
const EXIT_FAILURE: ExitCode = 1;
const EXIT_USAGE: ExitCode = 2;

/** Milliseconds a graceful stop may take before open connections are cut and the process exits. */
const STOP_GRACE_MS = 8_000;
const STOP_DEADLINE_MS = 10_000;
/** Milliseconds the streams module's stop may take besides the outputs' drain (Riemann close, async queues). */
const STREAMS_STOP_MARGIN_MS = 5_000;

function fail(message: string, code: ExitCode): never {
  process.stderr.write(`vigie: ${message}\n`);
  process.exit(code);
}

/** Reports a data directory or database file readable by other users on standard error. */
function warnOnStderr(_details: object, message: string): void {
  process.stderr.write(`vigie: warning: ${message}\n`);
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
    // A module may refuse its environment at start-up (VIGIE_ADMIN_PASSWORD too short).
    if (error instanceof ConfigError) fail(error.message, EXIT_USAGE);
    fail(`cannot start: ${errorMessage(error)}`, EXIT_FAILURE);
  }
  const { app } = server;
  try {
    await app.listen({ host: config.http.host, port: config.http.port });
  } catch (error) {
    app.log.error({ err: error }, "cannot listen");
    await server.close();
    process.exit(EXIT_FAILURE);
  }
  // Where everything is, and how to turn on the rest (also GET /); where Vigie writes.
  for (const line of linkLines(server.links, config.http["public-url"])) app.log.info(line);
  const { database } = server.context;
  if (database.dialect === "sqlite") app.log.info(`database: ${describeSqlite(config.database.url)}`);
  app.log.info(`data directory: ${resolve(database.dataDirectory)}`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "stopping");
    // In-flight requests get STOP_GRACE_MS; then their connections are cut so the stop completes.
    // The streams module's stop comes after them, on top of the deadline: the Riemann input's
    // close (2 s at most), the async queues, and the outputs' drain (streams.drain-timeout).
    const streams = sectionOf(config, streamsModule);
    const drainMs = streams?.enabled ? streams["drain-timeout"].milliseconds + STREAMS_STOP_MARGIN_MS : 0;
    setTimeout(() => app.server.closeAllConnections(), STOP_GRACE_MS).unref();
    setTimeout(() => {
      app.log.error("stop did not complete in time");
      process.exit(EXIT_FAILURE);
    }, STOP_DEADLINE_MS + drainMs).unref();
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
      .then((fresh) => server.reload(fresh))
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

/**
 * `vigie backup FILE`: a consistent copy of the SQLite database, taken while the server may run
 * (SQLite's online backup API); exit 2 for a PostgreSQL or in-memory database or an existing FILE.
 */
async function backup(file: string, options: { config?: string }): Promise<void> {
  const config = await configFrom(options.config);
  try {
    const report = await backupSqlite(config.database.url, file);
    process.stdout.write(`${report.source} copied to ${report.destination} (${report.pages} pages, mode 0600)\n`);
  } catch (error) {
    if (error instanceof BackupRefusal) fail(error.message, EXIT_USAGE);
    fail(`backup failed: ${errorMessage(error)}`, EXIT_FAILURE);
  }
}

/** `vigie init [--dir DIR]`: a starting configuration and its secret files; exit 2 rather than overwrite. */
async function init(options: { dir: string }): Promise<void> {
  try {
    const report = await initDirectory(options.dir, modules);
    const config = shellWord(report.config);
    const written = [report.config, ...report.secrets.map((file) => `${file} (mode 0600)`)];
    process.stdout.write(
      `${written.map((file) => `wrote ${file}\n`).join("")}next:\n  vigie config check -c ${config}\n  vigie serve -c ${config}\n`,
    );
  } catch (error) {
    if (error instanceof InitRefusal) fail(error.message, EXIT_USAGE);
    fail(`init failed: ${errorMessage(error)}`, EXIT_FAILURE);
  }
}

/** Opens the configured database for a command, running every migration; exits 1 when it cannot. */
async function openForCommand(config: VigieConfig): Promise<Database> {
  try {
    return await openDatabase(config.database.url, allMigrations(), { warn: warnOnStderr });
  } catch (error) {
    return fail(`cannot open the database: ${errorMessage(error)}`, EXIT_FAILURE);
  }
}

/** What the commands of `module` receive. */
function cliContext(module: AnyModule): CliContext {
  return {
    load: async (file) => {
      const config = await configFrom(file);
      return { config, section: sectionOf(config, module) };
    },
    openDatabase: openForCommand,
    fail,
  };
}

/** Builds the command tree: the platform's commands, then each module's. */
function program(): Command {
  const root = new Command("vigie")
    .description("Vigie: comments, healthchecks, event streams and a user registry behind one HTTP port.")
    .version(VERSION)
    .exitOverride()
    .showHelpAfterError();
  root
    .command("serve")
    .description("run the server (default http://127.0.0.1:8080, SQLite in ./data/)")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG, else built-in defaults)")
    .action(serve);
  root
    .command("init")
    .description("write a starting vigie.yaml (every key at its default) and generated secret files; never overwrites")
    .option("--dir <dir>", "where to write vigie.yaml and secrets/", ".")
    .action(init);
  const config = root.command("config").description("work with configuration files");
  config
    .command("check")
    .description("validate a configuration file; exit 0 when valid, 2 otherwise")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG)")
    .action(check);
  root
    .command("backup")
    .description(
      "copy the SQLite database to FILE (a new file, mode 0600) while the server runs; PostgreSQL: use pg_dump",
    )
    .argument("<file>", "the backup file to create (never overwritten)")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG, else built-in defaults)")
    .action(backup);
  for (const module of modules) module.commands?.(root, cliContext(module));
  return root;
}

/** The absolute path of an SQLite database, or that it is in memory. */
function describeSqlite(url: string): string {
  const path = sqlitePath(url);
  return path === ":memory:" ? "in memory (nothing is kept)" : resolve(path);
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
    fail(error instanceof Error && error.stack !== undefined ? error.stack : String(error), EXIT_FAILURE);
  }
}

void main(process.argv);
