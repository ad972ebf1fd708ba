/**
 * The streams' commands (docs/streams.md): `vigie stream test FILE...` runs stream test files
 * against the streams of `streams.directories`, without a server; `vigie stream tap NAME` prints the
 * events entering a running stream (or leaving one of its tap points) as JSON lines, and
 * `vigie stream graph NAME` its action tree with event counts, as SVG (or JSON).
 */
import type { Command } from "commander";
import { errorMessage } from "../platform/errors.js";
import type { CliContext } from "../platform/module.js";
import type { streamsShape } from "./config.js";
import { declarationsOf, NO_DECLARATIONS } from "./io.js";
import { loadConfiguredStreams } from "./storage.js";
import { formatStreamTestResults, runStreamTests } from "./stream-test.js";
import { DEFAULT_URL, fetchGraph, type RemoteOptions, type TapOptions, tap } from "./watch-client.js";

type Cli = CliContext<typeof streamsShape>;

async function testStreams(cli: Cli, files: string[], options: { config?: string }): Promise<void> {
  const { config, section } = await cli.load(options.config);
  const declarations = section === undefined ? NO_DECLARATIONS : declarationsOf(section, Object.keys(config.outputs));
  let streams: Awaited<ReturnType<typeof loadConfiguredStreams>>;
  try {
    streams = await loadConfiguredStreams(section?.directories ?? [], declarations);
  } catch (error) {
    cli.fail(errorMessage(error), 1);
  }
  const { text, ok } = formatStreamTestResults(await runStreamTests(streams, files, declarations));
  process.stdout.write(text);
  process.exit(ok ? 0 : 1);
}

/** Runs a client command, turning an invalid option into exit 2 and a failure into exit 1. */
async function remote(cli: Cli, run: () => Promise<{ code: 0 | 1 | 2; message?: string }>): Promise<void> {
  let outcome: { code: 0 | 1 | 2; message?: string };
  try {
    outcome = await run();
  } catch (error) {
    cli.fail(errorMessage(error), 2);
  }
  if (outcome.message !== undefined) cli.fail(outcome.message, outcome.code === 0 ? 1 : outcome.code);
  const { code } = outcome;
  // Once what was written to a pipe has left: exiting at once could cut it short.
  process.stdout.write("", () => process.exit(code));
}

/** Resolves at the first SIGINT or SIGTERM (Ctrl-C ends a tap normally). */
function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

const URL_HELP = `Vigie's URL (default: $VIGIE_URL, else ${DEFAULT_URL})`;
const TOKEN_HELP = "a registry token, with security.require-token (default: $VIGIE_TOKEN)";

/** Adds `vigie stream test`, `vigie stream tap` and `vigie stream graph`. */
export function streamsCommands(program: Command, cli: Cli): void {
  const stream = program.command("stream").description("work with stream configurations and running streams");
  stream
    .command("test")
    .description(
      "run stream test files against the streams of streams.directories, without a server; exit 0 when all pass, 1 otherwise",
    )
    .argument("<files...>", "test files: EDN maps from test name to {:input [...] :target ... :taps {...}}")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG)")
    .action((files: string[], options: { config?: string }) => testStreams(cli, files, options));
  stream
    .command("tap")
    .description(
      "print the events entering a running stream (or leaving the action of a :tap-point) as JSON lines, live, until Ctrl-C",
    )
    .argument("<name>", "the stream")
    .option("-p, --point <name>", "a :tap-point of the stream's configuration")
    .option(
      "-w, --where <condition>",
      'only events matching this where-condition (EDN: [:> :metric 3], [:= :host "a"])',
    )
    .option("--url <url>", URL_HELP)
    .option("--token <token>", TOKEN_HELP)
    .action((name: string, options: TapOptions) => remote(cli, () => tap(name, options, process.stdout, stopSignal())));
  stream
    .command("graph")
    .description("write a running stream's action tree with per-action event counts, as SVG (or JSON with --json)")
    .argument("<name>", "the stream")
    .option("--json", "the graph as JSON instead of SVG")
    .option("--url <url>", URL_HELP)
    .option("--token <token>", TOKEN_HELP)
    .action((name: string, options: RemoteOptions & { json?: boolean }) =>
      remote(cli, async () => {
        const result = await fetchGraph(name, options);
        if ("code" in result) return result;
        process.stdout.write(result.body);
        return { code: 0 };
      }),
    );
}
