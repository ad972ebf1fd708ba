/**
 * The comments' commands (docs/comments.md, "Moving in"): `vigie comments import` reads another
 * comment server's export into a website, `vigie comments export` writes a website's comments as
 * Vigie's JSON lines, which `import --format vigie` reads back.
 */
import { access, constants, open } from "node:fs/promises";
import type { Command } from "commander";
import { errorMessage } from "../platform/errors.js";
import type { CliContext } from "../platform/module.js";
import type { commentsConfigShape } from "./config.js";
import {
  ARTICLE_SOURCES,
  type ArticleSource,
  IMPORT_FORMATS,
  type ImportFormat,
  ImportFormatError,
} from "./import/items.js";
import { type ImportSettings, itemsOf, reportLines, runImport } from "./import/run.js";
import { exportHeader, exportLine } from "./import/vigie-format.js";
import { ImportStore } from "./storage-import.js";
import { Websites } from "./websites.js";

type Cli = CliContext<typeof commentsConfigShape>;

const CONFIG_OPTION = [
  "-c, --config <file>",
  "YAML configuration file (default: $VIGIE_CONFIG, else built-in defaults)",
] as const;

/** The website named on the command line: configured, or well-formed in open mode; exits 2 otherwise. */
async function websiteOf(cli: Cli, name: string, configFile: string | undefined) {
  const { config, section } = await cli.load(configFile);
  const website = new Websites(section?.websites ?? []).find(name);
  if (website === undefined) cli.fail(`website ${name} not found (comments.websites)`, 2);
  return { config, website: website.name };
}

interface ImportOptions {
  readonly format: string;
  readonly website: string;
  readonly articleFrom: string;
  readonly dryRun?: boolean;
  readonly config?: string;
}

/** `vigie comments import`. */
async function importComments(cli: Cli, file: string, options: ImportOptions): Promise<void> {
  if (!(IMPORT_FORMATS as readonly string[]).includes(options.format)) {
    cli.fail(`--format must be one of ${IMPORT_FORMATS.join(", ")}`, 2);
  }
  if (!(ARTICLE_SOURCES as readonly string[]).includes(options.articleFrom)) {
    cli.fail(`--article-from must be one of ${ARTICLE_SOURCES.join(", ")}`, 2);
  }
  try {
    await access(file, constants.R_OK);
  } catch (error) {
    cli.fail(`cannot read ${file}: ${errorMessage(error)}`, 2);
  }
  const { config, website } = await websiteOf(cli, options.website, options.config);
  const settings: ImportSettings = {
    website,
    format: options.format as ImportFormat,
    articleFrom: options.articleFrom as ArticleSource,
    dryRun: options.dryRun === true,
  };
  const database = await cli.openDatabase(config);
  let batches = 0;
  try {
    const report = await runImport(itemsOf(settings.format, file), new ImportStore(database), settings, (so) => {
      // Progress for long imports, on standard error so that standard output stays the report.
      if (++batches % 20 === 0) process.stderr.write(`${so.read} comments read…\n`);
    });
    for (const line of reportLines(report, settings)) process.stdout.write(`${line}\n`);
  } catch (error) {
    await database.close();
    if (error instanceof ImportFormatError) {
      cli.fail(
        `import stopped: ${error.message}. The comments before the batch being read were written; fix the file and run the import again to complete it`,
        1,
      );
    }
    cli.fail(`import failed: ${errorMessage(error)}`, 1);
  }
  await database.close();
}

/** Writes `text` to the file (or standard output) and waits until it is taken. */
type Writer = { write(text: string): Promise<void>; close(): Promise<void> };

/** A writer to `out` (created with mode 0600, never overwritten), or to standard output. */
async function writerOf(cli: Cli, out: string | undefined): Promise<Writer> {
  if (out === undefined) {
    return {
      write: (text) =>
        new Promise((resolve, reject) =>
          process.stdout.write(text, (error) => (error === null || error === undefined ? resolve() : reject(error))),
        ),
      close: async () => {},
    };
  }
  try {
    // The export holds e-mail addresses: readable by its owner only, as Vigie's database is.
    const handle = await open(out, "wx", 0o600);
    return { write: async (text) => void (await handle.write(text)), close: () => handle.close() };
  } catch (error) {
    return cli.fail(`cannot create ${out}: ${errorMessage(error)}`, 2);
  }
}

/** `vigie comments export`. */
async function exportComments(cli: Cli, options: { website: string; out?: string; config?: string }): Promise<void> {
  const { config, website } = await websiteOf(cli, options.website, options.config);
  const database = await cli.openDatabase(config);
  const writer = await writerOf(cli, options.out);
  let count = 0;
  try {
    let chunk = `${exportHeader(website, Date.now())}\n`;
    for await (const row of new ImportStore(database).exportRows(website)) {
      chunk += `${exportLine(row)}\n`;
      count++;
      if (chunk.length >= 256 * 1024) {
        await writer.write(chunk);
        chunk = "";
      }
    }
    await writer.write(chunk);
  } catch (error) {
    cli.fail(`export failed: ${errorMessage(error)}`, 1);
  } finally {
    await writer.close();
    await database.close();
  }
  if (options.out !== undefined) process.stderr.write(`exported ${count} comments of ${website} to ${options.out}\n`);
}

/** Adds `vigie comments import` and `vigie comments export`. */
export function commentsCommands(program: Command, cli: Cli): void {
  const comments = program.command("comments").description("import and export comments");
  comments
    .command("import")
    .description(
      "import comments from another server's export into a website; a second run adds nothing (exit 1 on a malformed file)",
    )
    .argument(
      "<file>",
      "the export: Disqus XML, WordPress WXR, Isso SQLite, Remark42 backup, Commento JSON or Vigie JSON lines",
    )
    .requiredOption("--format <format>", `one of ${IMPORT_FORMATS.join(", ")}`)
    .requiredOption("--website <name>", "the website the comments go to")
    .option("--article-from <source>", "article names from the thread's URL path, its slug or its id", "path")
    .option("--dry-run", "print per article what would be written, and write nothing")
    .option(...CONFIG_OPTION)
    .action((file: string, options: ImportOptions) => importComments(cli, file, options));
  comments
    .command("export")
    .description("write the comments of a website as JSON lines (with e-mail addresses: a file is created mode 0600)")
    .requiredOption("--website <name>", "the website to export")
    .option("--out <file>", "the file to create (never overwritten); default: standard output")
    .option(...CONFIG_OPTION)
    .action((options: { website: string; out?: string; config?: string }) => exportComments(cli, options));
}
