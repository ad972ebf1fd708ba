/**
 * The streams' command: `vigie stream test FILE...` runs stream test files against the streams of
 * `streams.directories`, without a server (docs/streams.md).
 */
import type { Command } from "commander";
import { errorMessage } from "../platform/errors.js";
import type { CliContext } from "../platform/module.js";
import type { streamsShape } from "./config.js";
import { declarationsOf, NO_DECLARATIONS } from "./io.js";
import { loadConfiguredStreams } from "./storage.js";
import { formatStreamTestResults, runStreamTests } from "./stream-test.js";

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

/** Adds `vigie stream test`. */
export function streamsCommands(program: Command, cli: Cli): void {
  program
    .command("stream")
    .description("work with stream configurations")
    .command("test")
    .description(
      "run stream test files against the streams of streams.directories, without a server; exit 0 when all pass, 1 otherwise",
    )
    .argument("<files...>", "test files: EDN maps from test name to {:input [...] :target ... :taps {...}}")
    .option("-c, --config <file>", "YAML configuration file (default: $VIGIE_CONFIG)")
    .action((files: string[], options: { config?: string }) => testStreams(cli, files, options));
}
