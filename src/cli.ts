#!/usr/bin/env node
/**
 * The `vigie` command line (platform.md §1). Exit codes: 0 normal stop, 1 runtime failure, 2
 * invalid configuration or invalid usage.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { Command, CommanderError } from "commander";
import { BackupRefusal, backupSqlite } from "./platform/backup.js";
import { ConfigError, loadConfig, type VigieConfig } from "./platform/config.js";
import { type Database, openDatabase, sqlitePath } from "./platform/database.js";
import { HttpError } from "./platform/errors.js";
import { linkLines } from "./platform/home.js";
import { sectionOf } from "./platform/module.js";
import { ValidationError } from "./platform/validation.js";
import { VERSION } from "./platform/version.js";
import {
  CargoStore,
  type CheckReport,
  CrateFiles,
  checkCrateFiles,
  crateStorage,
  hasDisagreements,
  hashPassword,
  ORPHAN_GRACE_MS,
  registryModule,
  reportLines,
  UserStore,
  userDescription,
  userName,
  userPassword,
  userRole,
} from "./registry/index.js";
import { allMigrations, buildServer, modules } from "./server.js";
import {
  declarationsOf,
  formatStreamTestResults,
  loadConfiguredStreams,
  NO_DECLARATIONS,
  runStreamTests,
  streamsModule,
} from "./streams/index.js";

/** Exit codes of platform.md §1. */
const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Milliseconds a graceful stop may take before open connections are cut and the process exits. */
const STOP_GRACE_MS = 8_000;
const STOP_DEADLINE_MS = 10_000;
/** Milliseconds the streams module's stop may take besides the outputs' drain (Riemann close, async queues). */
const STREAMS_STOP_MARGIN_MS = 5_000;

function fail(message: string, code: number): never {
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
    fail(`cannot start: ${(error as Error).message}`, EXIT_FAILURE);
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

/** Removes one trailing line break (`\n` or `\r\n`), the one `echo` or an editor adds. */
function withoutTrailingNewline(text: string): string {
  return text.replace(/\r?\n$/, "");
}

/** Reads all of standard input (a pipe or a file); on a terminal, one line typed without echo. */
async function readPassword(): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of input) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  process.stderr.write("password: ");
  input.setRawMode(true);
  input.setEncoding("utf8");
  let typed = "";
  try {
    for await (const chunk of input) {
      for (const character of chunk as string) {
        if (character === "\r" || character === "\n" || character === "\u0004") return typed;
        if (character === "\u0003") fail("interrupted", EXIT_FAILURE);
        typed = character === "\u007f" || character === "\b" ? typed.slice(0, -1) : typed + character;
      }
    }
    return typed;
  } finally {
    input.setRawMode(false);
    input.pause();
    process.stderr.write("\n");
  }
}

/** Validates one value of `user create`; exits 2 naming the option and the rule. */
function checked<T>(validate: (value: unknown, path: string) => T, value: unknown, what: string): T {
  try {
    return validate(value, what);
  } catch (error) {
    if (error instanceof ValidationError) fail(`invalid ${error.message}`, EXIT_USAGE);
    throw error;
  }
}

async function createUser(options: {
  name: string;
  role: string;
  description?: string;
  passwordFile?: string;
  config?: string;
}): Promise<void> {
  const config = await configFrom(options.config);
  const name = checked(userName, options.name, "--name");
  const role = checked(userRole, options.role, "--role");
  const description = checked(userDescription, options.description ?? "", "--description");
  let text: string;
  if (options.passwordFile === undefined) {
    text = await readPassword();
  } else {
    try {
      text = await readFile(options.passwordFile, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      fail(`cannot read the password file ${options.passwordFile}: ${code}`, EXIT_USAGE);
    }
  }
  const password = checked(userPassword, withoutTrailingNewline(text), "password");

  let database: Database;
  try {
    database = await openDatabase(config.database.url, allMigrations(), { warn: warnOnStderr });
  } catch (error) {
    fail(`cannot open the database: ${(error as Error).message}`, EXIT_FAILURE);
  }
  try {
    const passwordHash = await hashPassword(password);
    await new UserStore(database).create({ name, description, role, active: true, passwordHash }, Date.now());
  } catch (error) {
    await database.close();
    if (error instanceof HttpError) fail(error.message, EXIT_FAILURE);
    throw error;
  }
  await database.close();
  process.stdout.write(`user ${name} created\n`);
}

/**
 * `vigie registry check`: the disagreements between the database and the `.crate` files of the
 * Cargo registry (cargo.md §3, §5). Orphan and temporary files older than ten minutes are removed
 * (younger ones may belong to a publish in progress) unless `--dry-run`. Exit 0 when nothing is
 * left to report, 1 otherwise.
 */
async function checkRegistry(options: { config?: string; dryRun?: boolean }): Promise<void> {
  const config = await configFrom(options.config);
  const section = sectionOf(config, registryModule);
  if (section === undefined || !section.cargo.enabled) {
    fail("the Cargo registry is not enabled (registry.cargo.enabled)", EXIT_USAGE);
  }
  let database: Database;
  try {
    database = await openDatabase(config.database.url, allMigrations(), { warn: warnOnStderr });
  } catch (error) {
    fail(`cannot open the database: ${(error as Error).message}`, EXIT_FAILURE);
  }
  let report: CheckReport;
  try {
    const files = new CrateFiles(crateStorage(section.cargo, database.dataDirectory));
    const grace = options.dryRun === true ? undefined : ORPHAN_GRACE_MS;
    report = await checkCrateFiles(await new CargoStore(database).files(), files, Date.now(), grace);
  } finally {
    await database.close();
  }
  process.stdout.write(`${reportLines(report).join("\n")}\n`);
  process.exit(hasDisagreements(report) ? EXIT_FAILURE : EXIT_OK);
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
    fail(`backup failed: ${(error as Error).message}`, EXIT_FAILURE);
  }
}

async function testStreams(files: string[], options: { config?: string }): Promise<void> {
  const config = await configFrom(options.config);
  const section = sectionOf(config, streamsModule);
  const declarations = section === undefined ? NO_DECLARATIONS : declarationsOf(section);
  let streams: Awaited<ReturnType<typeof loadConfiguredStreams>>;
  try {
    streams = await loadConfiguredStreams(section?.directories ?? [], declarations);
  } catch (error) {
    fail((error as Error).message, EXIT_FAILURE);
  }
  const { text, ok } = formatStreamTestResults(await runStreamTests(streams, files, declarations));
  process.stdout.write(text);
  process.exit(ok ? EXIT_OK : EXIT_FAILURE);
}

/** Builds the command tree. */
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
  const config = root.command("config").description("work with configuration files");
  config
    .command("check")
    .description("validate a configuration file; exit 0 when valid, 2 otherwise")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG)")
    .action(check);
  const user = root.command("user").description("manage registry users directly in the configured database");
  user
    .command("create")
    .description(
      "create an active registry user; the password is read from standard input (one trailing newline removed) or --password-file",
    )
    .requiredOption("--name <name>", "user name: 1-64 characters of A-Z a-z 0-9 . _ -")
    .requiredOption("--role <role>", "admin or tech")
    .option("--description <text>", "free text, at most 1000 characters", "")
    .option("--password-file <file>", "read the password from this file instead of standard input")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG, else built-in defaults)")
    .action(createUser);
  const registry = root.command("registry").description("work with the Cargo registry's storage");
  registry
    .command("check")
    .description(
      "compare the database with the stored .crate files; remove orphan and temporary files older than 10 minutes; exit 0 when they agree, 1 otherwise",
    )
    .option("--dry-run", "report only, remove nothing")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG, else built-in defaults)")
    .action(checkRegistry);
  root
    .command("backup")
    .description(
      "copy the SQLite database to FILE (a new file, mode 0600) while the server runs; PostgreSQL: use pg_dump",
    )
    .argument("<file>", "the backup file to create (never overwritten)")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG, else built-in defaults)")
    .action(backup);
  const stream = root.command("stream").description("work with stream configurations");
  stream
    .command("test")
    .description(
      "run stream test files against the streams of streams.directories, without a server; exit 0 when all pass, 1 otherwise",
    )
    .argument("<files...>", "test files: EDN maps from test name to {:input [...] :target ... :taps {...}}")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG)")
    .action(testStreams);
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
    fail((error as Error).stack ?? String(error), EXIT_FAILURE);
  }
}

await main(process.argv);
