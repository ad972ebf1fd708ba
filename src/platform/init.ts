/**
 * `vigie init [--dir DIR]`: a starting configuration (docs/operations.md#vigie-init). It writes
 * `DIR/vigie.yaml`, every key of every section at its default and commented out with its meaning,
 * generated from the configuration shapes (the defaults) and from docs/configuration.md (the
 * meanings), so that it never goes stale; and the secrets the modules declare (`generatedSecrets`),
 * each in a file of `DIR/secrets/` (directory 0700, files 0600) that the configuration names through
 * its `-file` key. No secret is ever written to `vigie.yaml` or printed.
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { dump } from "js-yaml";
import { loadConfig, type VigieConfig } from "./config.js";
import type { AnyModule } from "./module.js";
import { makePrivateDirectorySync, PRIVATE_FILE_MODE } from "./private-files.js";
import { parseSize } from "./size.js";
import { isPlainObject } from "./validation.js";
import { VERSION } from "./version.js";

/** The name of the configuration file `vigie init` writes. */
export const CONFIG_FILE = "vigie.yaml";

/** The directory of the secret files, in the init directory. */
const SECRETS_DIRECTORY = "secrets";

/** The page the meanings of the keys come from, shipped with the package. */
const CONFIGURATION_PAGE = new URL("../../docs/configuration.md", import.meta.url);

/** Columns of the comments in the written file. */
const WIDTH = 100;

/** `vigie init` cannot write without overwriting: the message names the file that exists. */
export class InitRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InitRefusal";
  }
}

/** What `vigie init` wrote: absolute paths. */
export interface InitReport {
  readonly config: string;
  readonly secrets: readonly string[];
}

/** A documented key: its default as the page writes it, and its meaning as plain text. */
interface KeyDocumentation {
  readonly default: string;
  readonly meaning: string;
}

/** Markdown of a table cell as plain text: links give their text; code marks and emphasis go. */
function plainText(markdown: string): string {
  return markdown
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/`/g, "")
    .replace(/\*\*/g, "");
}

/**
 * The rows `| \`key\` | default | meaning |` of docs/configuration.md by key; empty when the page
 * is missing (the file is then written without meanings).
 */
export function keyDocumentation(page: string): Map<string, KeyDocumentation> {
  const rows = new Map<string, KeyDocumentation>();
  for (const line of page.split("\n")) {
    const match = /^\| `([^`]+)` \| ([^|]*) \| (.*) \|$/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined && match[3] !== undefined) {
      rows.set(match[1], { default: match[2].trim(), meaning: plainText(match[3]).trim() });
    }
  }
  return rows;
}

function readPage(): string {
  try {
    return readFileSync(CONFIGURATION_PAGE, "utf8");
  } catch {
    return "";
  }
}

/** `text` cut into `# ` comment lines at `indent`, at most {@link WIDTH} columns where words allow. */
function commentLines(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line !== "" && indent.length + 2 + line.length + 1 + word.length > WIDTH) {
      lines.push(`${indent}# ${line}`);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  if (line !== "") lines.push(`${indent}# ${line}`);
  return lines;
}

/** A parsed duration (`{text, milliseconds}`), written back as its text. */
function isDuration(value: unknown): value is { text: string; milliseconds: number } {
  return isPlainObject(value) && typeof value.text === "string" && typeof value.milliseconds === "number";
}

/**
 * A default as YAML on one line: a duration as its text, a size as the page writes it (`1MiB`)
 * when that is the same number of bytes, lists and maps in flow style.
 */
function yamlValue(value: unknown, documented: string | undefined): string {
  if (isDuration(value)) return value.text;
  const code = documented === undefined ? undefined : /^`([^`]+)`$/.exec(documented)?.[1];
  // A default computed from other keys (`http://<host>:<port>`) stays a pattern to fill in.
  if (code?.includes("<")) return code;
  if (typeof value === "number" && code !== undefined && parseSize(code) === value) return code;
  return dump(value, { flowLevel: 0, lineWidth: -1 }).trimEnd();
}

/** Whether a subtree holds a value written uncommented (the paths of the generated secrets). */
function holdsActive(path: string, active: ReadonlyMap<string, string>): boolean {
  for (const key of active.keys()) if (key === path || key.startsWith(`${path}.`)) return true;
  return false;
}

/**
 * The lines of `node` (an object of the configuration) at `path`: a sub-object as a header and its
 * keys, a leaf as its meaning and `key: default`, commented out unless it is (or holds) one of the
 * `active` values.
 */
function renderObject(
  node: Readonly<Record<string, unknown>>,
  path: string,
  depth: number,
  docs: ReadonlyMap<string, KeyDocumentation>,
  active: ReadonlyMap<string, string>,
): string[] {
  const indent = "  ".repeat(depth);
  const lines: string[] = [];
  // `enabled` first: it says whether the rest matters.
  const keys = Object.keys(node).sort((a, b) => Number(b === "enabled") - Number(a === "enabled"));
  for (const key of keys) {
    const value = node[key];
    const dotted = path === "" ? key : `${path}.${key}`;
    const mark = holdsActive(dotted, active) ? "" : "# ";
    if (depth === 0) lines.push("");
    if (isPlainObject(value) && !isDuration(value) && Object.keys(value).length > 0) {
      lines.push(`${indent}${mark}${key}:`, ...renderObject(value, dotted, depth + 1, docs, active));
      continue;
    }
    const documentation = docs.get(dotted);
    if (documentation !== undefined) lines.push(...commentLines(documentation.meaning, indent));
    const written = active.get(dotted) ?? yamlValue(value, documentation?.default);
    lines.push(`${indent}${mark}${key}: ${written}`);
  }
  return lines;
}

/**
 * The text of a starting `vigie.yaml`: every key of `defaults` commented out at its default, except
 * `active` (dotted key to YAML value), written as is.
 */
export function configurationText(
  defaults: VigieConfig,
  docs: ReadonlyMap<string, KeyDocumentation>,
  active: ReadonlyMap<string, string>,
): string {
  const { modules, file: _file, ...platform } = defaults;
  const tree: Record<string, unknown> = structuredClone({ ...platform, ...modules });
  // The active keys have no default: each goes in its section, after the keys that have one.
  for (const key of active.keys()) {
    const steps = key.split(".");
    let node = tree;
    for (const step of steps.slice(0, -1)) {
      const next = node[step];
      if (!isPlainObject(next)) break;
      node = next;
    }
    node[steps[steps.length - 1] ?? key] = key;
  }
  const header = [
    `# Vigie ${VERSION}: written by vigie init. Every key is at its default and commented out: remove`,
    "# the # of a key (and of its sections) to change it. Every key is described in docs/configuration.md.",
    "# The comments secrets are in files of mode 0600 that the configuration names, never in this file.",
  ];
  return `${[...header, ...renderObject(tree, "", 0, docs, active)].join("\n")}\n`;
}

/** Writes `text` to a new file of `mode` (less the umask); fails with EEXIST when `path` exists. */
function writeNewFile(path: string, text: string, mode: number): void {
  const descriptor = openSync(path, "wx", mode);
  try {
    writeSync(descriptor, text);
  } finally {
    closeSync(descriptor);
  }
}

/** `path` as a shell word: as is when it needs no quoting, else in single quotes. */
export function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

/**
 * Writes `DIR/vigie.yaml` and the secret files of `modules` under `DIR/secrets/`.
 *
 * @param directory DIR, created when missing
 * @throws InitRefusal when `vigie.yaml` or one of the secret files exists: nothing is written
 * @throws the file-system error when a file cannot be written
 */
export async function initDirectory(directory: string, modules: readonly AnyModule[]): Promise<InitReport> {
  const root = resolve(directory);
  const config = join(root, CONFIG_FILE);
  const secrets = modules.flatMap((module) =>
    (module.generatedSecrets ?? []).map(({ key, file }) => ({
      key: `${module.name}.${key}`,
      path: join(root, SECRETS_DIRECTORY, file),
    })),
  );
  for (const path of [config, ...secrets.map((secret) => secret.path)]) {
    if (existsSync(path)) throw new InitRefusal(`${path} exists: nothing written (vigie init never overwrites a file)`);
  }
  const defaults = await loadConfig(undefined, {}, modules);
  const active = new Map(secrets.map(({ key, path }) => [key, yamlValue(path, undefined)]));
  const text = configurationText(defaults, keyDocumentation(readPage()), active);

  mkdirSync(root, { recursive: true });
  if (secrets.length > 0) makePrivateDirectorySync(join(root, SECRETS_DIRECTORY));
  // Secrets first, the configuration that names them last, each created exclusively (never over a
  // file that appeared meanwhile); 32 random bytes, base64url, as the generated secrets of the server.
  // The configuration holds no secret: readable as any file the umask allows (a service's user may
  // need to read it).
  for (const { path } of secrets) writeNewFile(path, `${randomBytes(32).toString("base64url")}\n`, PRIVATE_FILE_MODE);
  writeNewFile(config, text, 0o666);
  return { config, secrets: secrets.map(({ path }) => path) };
}
