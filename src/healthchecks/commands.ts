/**
 * The healthchecks' command: `vigie run --key KEY [--url URL] -- COMMAND ARGS…` wraps a job (a cron
 * line, a backup script) in the pings of its heartbeat check (docs/healthchecks.md#vigie-run).
 */
import type { Command } from "commander";
import type { CliContext } from "../platform/module.js";
import type { healthchecksShape } from "./config.js";
import { PING_KEY, runJob } from "./run/job.js";

type Cli = CliContext<typeof healthchecksShape>;

/** Where Vigie is when neither `--url` nor `$VIGIE_URL` says: the server's default address. */
const DEFAULT_URL = "http://127.0.0.1:8080";

interface RunOptions {
  key: string;
  url?: string;
  config?: string;
}

/**
 * The base URL to ping: `--url`, else `$VIGIE_URL`, else the `http.public-url` of the configuration
 * given with `-c`, else http://127.0.0.1:8080. The configuration is read only when named: an invalid
 * `$VIGIE_CONFIG` must not keep a cron job from running.
 */
async function baseUrl(cli: Cli, options: RunOptions): Promise<string> {
  const url = options.url ?? process.env.VIGIE_URL;
  if (url !== undefined) return url;
  if (options.config === undefined) return DEFAULT_URL;
  const { config } = await cli.load(options.config);
  return config.http["public-url"];
}

async function run(cli: Cli, words: string[], options: RunOptions): Promise<void> {
  if (!PING_KEY.test(options.key)) cli.fail("--key: must be 22 or more of A-Z, a-z, 0-9, _ and -", 2);
  const url = await baseUrl(cli, options);
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("not http");
  } catch {
    cli.fail(`--url: must be an http:// or https:// URL (got ${JSON.stringify(url)})`, 2);
  }
  const [command, ...args] = words;
  if (command === undefined) cli.fail("run: a command is required after --", 2);
  process.exit(await runJob({ url, key: options.key, command, args }));
}

/** Adds `vigie run`. */
export function healthchecksCommands(program: Command, cli: Cli): void {
  program
    .command("run")
    .description(
      "run a job under a heartbeat check: ping start, run COMMAND (no shell), ping its exit status with the last 10 KiB of its output, exit with its status",
    )
    .usage("--key KEY [--url URL] -- COMMAND [ARGS...]")
    .requiredOption("--key <key>", "the heartbeat check's ping key")
    .option("--url <url>", `Vigie's URL (default: $VIGIE_URL, else http.public-url of -c, else ${DEFAULT_URL})`)
    .option("-c, --config <file>", "YAML configuration file whose http.public-url to ping")
    .argument("<command...>", "the command and its arguments, after --")
    .action((words: string[], options: RunOptions) => run(cli, words, options));
}
