/**
 * The registry's commands: `vigie user create` (a user written straight into the configured
 * database, for the first admin or a lost password) and `vigie registry check` (the database
 * against the stored `.crate` files; docs/cargo.md).
 */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { VigieError } from "../platform/errors.js";
import type { CliContext, ExitCode } from "../platform/module.js";
import { ValidationError, type Validator } from "../platform/validation.js";
import {
  CargoStore,
  type CheckReport,
  CrateFiles,
  checkCrateFiles,
  crateStorage,
  hasDisagreements,
  ORPHAN_GRACE_MS,
  reportLines,
} from "./cargo/index.js";
import type { registryShape } from "./config.js";
import { hashPassword } from "./passwords.js";
import { UserStore } from "./storage.js";
import { userDescription, userName, userPassword, userRole } from "./users.js";

type Cli = CliContext<typeof registryShape>;

const CONFIG_OPTION = [
  "-c, --config <file>",
  "YAML configuration file (default: $VIGIE_CONFIG, else built-in defaults)",
] as const;

/** Removes one trailing line break (`\n` or `\r\n`), the one `echo` or an editor adds. */
function withoutTrailingNewline(text: string): string {
  return text.replace(/\r?\n$/, "");
}

/** Reads all of standard input (a pipe or a file); on a terminal, one line typed without echo. */
async function readPassword(cli: Cli): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of input) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks).toString("utf8");
  }
  process.stderr.write("password: ");
  input.setRawMode(true);
  input.setEncoding("utf8");
  let typed = "";
  try {
    for await (const chunk of input) {
      for (const character of String(chunk)) {
        if (character === "\r" || character === "\n" || character === "\u0004") return typed;
        if (character === "\u0003") cli.fail("interrupted", 1);
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
function checked<T>(cli: Cli, validate: Validator<T>, value: unknown, what: string): T {
  try {
    return validate(value, what);
  } catch (error) {
    if (error instanceof ValidationError) cli.fail(`invalid ${error.message}`, 2);
    throw error;
  }
}

interface CreateUserOptions {
  readonly name: string;
  readonly role: string;
  readonly description?: string;
  readonly passwordFile?: string;
  readonly config?: string;
}

/** The password of `user create`: the file's text, else standard input. */
async function passwordText(cli: Cli, file: string | undefined): Promise<string> {
  if (file === undefined) return readPassword(cli);
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    const reason = error instanceof Error && "code" in error ? String(error.code) : String(error);
    return cli.fail(`cannot read the password file ${file}: ${reason}`, 2);
  }
}

async function createUser(cli: Cli, options: CreateUserOptions): Promise<void> {
  const { config } = await cli.load(options.config);
  const name = checked(cli, userName, options.name, "--name");
  const role = checked(cli, userRole, options.role, "--role");
  const description = checked(cli, userDescription, options.description ?? "", "--description");
  const text = await passwordText(cli, options.passwordFile);
  const password = checked(cli, userPassword, withoutTrailingNewline(text), "password");
  const database = await cli.openDatabase(config);
  try {
    const passwordHash = await hashPassword(password);
    await new UserStore(database).create({ name, description, role, active: true, passwordHash }, Date.now());
  } catch (error) {
    await database.close();
    if (error instanceof VigieError) cli.fail(error.message, 1);
    throw error;
  }
  await database.close();
  process.stdout.write(`user ${name} created\n`);
}

/**
 * `vigie registry check`: the disagreements between the database and the `.crate` files. Orphan
 * and temporary files older than ten minutes are removed (younger ones may belong to a publish in
 * progress) unless `--dry-run`. Exit 0 when nothing is left to report, 1 otherwise.
 */
async function checkRegistry(cli: Cli, options: { config?: string; dryRun?: boolean }): Promise<void> {
  const { config, section } = await cli.load(options.config);
  if (section === undefined || !section.cargo.enabled) {
    cli.fail("the Cargo registry is not enabled (registry.cargo.enabled)", 2);
  }
  const database = await cli.openDatabase(config);
  let report: CheckReport;
  try {
    const files = new CrateFiles(crateStorage(section.cargo, database.dataDirectory));
    const grace = options.dryRun === true ? undefined : ORPHAN_GRACE_MS;
    report = await checkCrateFiles(await new CargoStore(database).files(), files, Date.now(), grace);
  } finally {
    await database.close();
  }
  process.stdout.write(`${reportLines(report).join("\n")}\n`);
  const code: ExitCode = hasDisagreements(report) ? 1 : 0;
  process.exit(code);
}

/** Adds `vigie user create` and `vigie registry check`. */
export function registryCommands(program: Command, cli: Cli): void {
  program
    .command("user")
    .description("manage registry users directly in the configured database")
    .command("create")
    .description(
      "create an active registry user; the password is read from standard input (one trailing newline removed) or --password-file",
    )
    .requiredOption("--name <name>", "user name: 1-64 characters of A-Z a-z 0-9 . _ -")
    .requiredOption("--role <role>", "admin or tech")
    .option("--description <text>", "free text, at most 1000 characters", "")
    .option("--password-file <file>", "read the password from this file instead of standard input")
    .option(...CONFIG_OPTION)
    .action((options: CreateUserOptions) => createUser(cli, options));
  program
    .command("registry")
    .description("work with the Cargo registry's storage")
    .command("check")
    .description(
      "compare the database with the stored .crate files; remove orphan and temporary files older than 10 minutes; exit 0 when they agree, 1 otherwise",
    )
    .option("--dry-run", "report only, remove nothing")
    .option(...CONFIG_OPTION)
    .action((options: { config?: string; dryRun?: boolean }) => checkRegistry(cli, options));
}
