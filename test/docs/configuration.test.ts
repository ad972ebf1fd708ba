/**
 * docs/configuration.md against the configuration Vigie accepts: every key the parser knows is in
 * one of the page's tables (key, default, meaning), every key of those tables is one the parser
 * knows, and the documented defaults are the parser's.
 *
 * The keys come from the parser itself. The fully defaulted configuration (no file, no environment)
 * gives the structure and the defaults; keys without a default (`comments.admin-token`,
 * `streams.riemann.tls-ca`, ...) are absent from it, so each object of the configuration is also
 * probed with an unknown key, which the parser refuses naming every key it knows. Lists of objects
 * (`comments.websites`) and maps of named definitions (`streams.outputs`) are probed the same way
 * through one item, written in the page as `comments.websites[].name` and
 * `streams.outputs.<name>.url`. The fields of a healthcheck, the items of `healthchecks.*-checks`,
 * are those of the API too: they are checked against the table of docs/healthchecks.md.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CORE_SCHEMA, load as loadYaml } from "js-yaml";
import { describe, expect, it } from "vitest";
import { ConfigError, PLATFORM_ENVIRONMENT, parseConfig } from "../../src/platform/config.js";
import { parseDuration } from "../../src/platform/duration.js";
import { parseSize } from "../../src/platform/size.js";
import { modules } from "../../src/server.js";
import { codeSpans, type Table, tables } from "./markdown.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const configurationPage = readFileSync(resolve(root, "docs/configuration.md"), "utf8");
const healthchecksPage = readFileSync(resolve(root, "docs/healthchecks.md"), "utf8");

/** An unknown key: the parser refuses it naming the keys it knows. */
const PROBE = "zz-probe";
/** The name given to the one entry of a map of named definitions, shown as `<name>` in the page. */
const ENTRY = "probe-entry";

/** A step of a path in the configuration: an object key, or `[]` for the items of a list. */
type Step = string;

function dotted(path: readonly Step[]): string {
  return path.map((step, index) => (step === "[]" || index === 0 ? step : `.${step}`)).join("");
}

/** The path as the parser names it in errors: `comments.websites[0].zz-probe`. */
function errorPath(path: readonly Step[]): string {
  return path.map((step, index) => (step === "[]" ? "[0]" : index === 0 ? step : `.${step}`)).join("");
}

/** A raw configuration holding `leaf` at `path`, and nothing else. */
function rawWith(path: readonly Step[], leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const [step, ...rest] = path as [Step, ...Step[]];
  return step === "[]" ? [rawWith(rest, leaf)] : { [step]: rawWith(rest, leaf) };
}

/** The refusal of a raw configuration, or undefined when the parser accepts it. */
function refusal(raw: unknown): string | undefined {
  try {
    parseConfig(raw, {}, modules);
    return undefined;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.message;
  }
}

/**
 * The keys the parser knows for the object at `path` when it holds `object` (plus the probe), or
 * undefined when the value there is not an object of fixed keys.
 */
function knownKeys(path: readonly Step[], object: Record<string, unknown> = {}): string[] | undefined {
  const message = refusal(rawWith(path, { ...object, [PROBE]: true }));
  const expected = `invalid configuration: ${errorPath([...path, PROBE])}: unknown key (known keys: `;
  if (message === undefined || !message.startsWith(expected)) return undefined;
  return message.slice(expected.length, -1).split(", ");
}

/**
 * The keys of an entry (an item of a list, a definition of a map) at `path`. An entry whose `type`
 * selects its keys (outputs) is probed once per type, the types read from the refusal of the
 * probe, and gives the union of their keys.
 */
function entryKeys(path: readonly Step[]): string[] | undefined {
  const plain = knownKeys(path);
  if (plain !== undefined) return plain;
  const message = refusal(rawWith(path, { [PROBE]: true })) ?? "";
  const typeRule = new RegExp(
    `^invalid configuration: ${escapeRegExp(errorPath([...path, "type"]))}: must be one of (.*?)(?: \\(got .*\\))?$`,
  );
  const types = typeRule.exec(message)?.[1]?.split(", ");
  if (types === undefined) return undefined;
  const keys = new Set<string>();
  for (const type of types) {
    const ofType = knownKeys(path, { type });
    if (ofType === undefined) return undefined;
    for (const key of ofType) keys.add(key);
  }
  return [...keys];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A parsed duration (`{text, milliseconds}`): a value, not a section. */
function isDuration(value: unknown): value is { text: string; milliseconds: number } {
  return isPlainObject(value) && Object.keys(value).sort().join() === "milliseconds,text";
}

/** What the walk finds. */
interface Keys {
  /** Dotted keys of the page: `http.port`, `comments.websites[].name`, `streams.outputs.<name>.url`. */
  readonly documented: Set<string>;
  /** The defaulted value of each key that has one. */
  readonly defaults: Map<string, unknown>;
  /** The fields of each kind of healthcheck (items of `healthchecks.<kind>-checks`). */
  readonly checkFields: Map<string, string[]>;
}

const CHECK_LIST = /^healthchecks\.([a-z]+)-checks$/;

function walk(path: readonly Step[], value: unknown, keys: Keys): void {
  const known = knownKeys(path);
  if (known === undefined) throw new Error(`the parser did not list the keys of ${dotted(path) || "the root"}`);
  for (const key of known) {
    const childPath = [...path, key];
    const child = isPlainObject(value) ? value[key] : undefined;
    const name = dotted(childPath);
    if (!isDuration(child) && knownKeys(childPath) !== undefined) {
      walk(childPath, child, keys); // a section: `http`, `streams.riemann`
      continue;
    }
    keys.documented.add(name);
    if (child !== undefined) keys.defaults.set(name, child);
    if (Array.isArray(child)) {
      const items = entryKeys([...childPath, "[]"]);
      const kind = CHECK_LIST.exec(name)?.[1];
      if (items !== undefined && kind !== undefined) keys.checkFields.set(kind, items);
      else for (const item of items ?? []) keys.documented.add(`${name}[].${item}`);
    } else if (isPlainObject(child) && !isDuration(child)) {
      for (const item of entryKeys([...childPath, ENTRY]) ?? []) keys.documented.add(`${name}.<name>.${item}`);
    }
  }
}

function configurationKeys(): Keys {
  const keys: Keys = { documented: new Set(), defaults: new Map(), checkFields: new Map() };
  const config = parseConfig(undefined, {}, modules);
  const { modules: sections, ...platform } = config;
  walk([], { ...platform, ...sections }, keys);
  return keys;
}

/** The key tables of a page: those whose first column is `key`. */
function keyTables(page: string): Table[] {
  return tables(page).filter((table) => table.header[0] === "key");
}

/** The rows of the key tables of docs/configuration.md by key, with the section they are in. */
function documentedRows(): Map<string, { section: string; cells: readonly string[] }> {
  const rows = new Map<string, { section: string; cells: readonly string[] }>();
  for (const table of keyTables(configurationPage)) {
    for (const cells of table.rows) {
      for (const key of codeSpans(cells[0] ?? "")) {
        expect(rows.has(key), `${key} is documented twice`).toBe(false);
        rows.set(key, { section: table.section, cells });
      }
    }
  }
  return rows;
}

/**
 * Defaults the page shows in words rather than as the parser's value, because the parser leaves a
 * placeholder that the server resolves (and why).
 */
const DERIVED_DEFAULTS: Readonly<Record<string, string>> = {
  // `http://<host>:<port>`: the parser fills it in from the host and port of the same file.
  "http.public-url": "http://<host>:<port>",
  // The parser keeps "", which the server reads as `<hostname>-<pid>`.
  "cluster.instance-id": "<hostname>-<pid>",
  // The parser keeps "", which the server reads as http.public-url.
  "cluster.advertise-url": "http.public-url",
};

/** Whether the default written in the page (its first code span) is the parser's value. */
function sameDefault(documented: string, value: unknown): boolean {
  if (isDuration(value)) return parseDuration(documented)?.milliseconds === value.milliseconds;
  if (typeof value === "number") return Number(documented) === value || parseSize(documented) === value;
  if (typeof value === "boolean") return documented === String(value);
  if (typeof value === "string") return documented === value || documented === JSON.stringify(value);
  if (Array.isArray(value)) return documented === `[${value.join(", ")}]`;
  if (isPlainObject(value)) return Object.keys(value).length === 0 && documented === "{}";
  return false;
}

/**
 * Keys the page documents once under another name: `streams.outputs` takes the keys of the
 * top-level `outputs`, and the page says so in the row of `streams.outputs`.
 */
function documentedAs(key: string): string {
  return key.startsWith("streams.outputs.") ? key.slice("streams.".length) : key;
}

describe("docs/configuration.md", () => {
  const keys = configurationKeys();
  const rows = documentedRows();

  it("finds the keys of every section, those without a default included", () => {
    for (const key of [
      "http.port",
      "log-level",
      "database.url",
      "security.require-token",
      "cluster.nats.credentials-file",
      "registry.cargo.storage",
      "comments.admin-token",
      "comments.websites[].articles",
      "comments.challenge.questions[].answer",
      "healthchecks.tls-directory",
      "streams.riemann.tls-ca",
      "streams.outputs.<name>.generator-url",
      "streams.async-queues.<name>.size",
    ]) {
      expect(keys.documented).toContain(key);
    }
    expect([...keys.checkFields.keys()].sort()).toEqual(["command", "dns", "heartbeat", "http", "tcp", "tls"]);
  });

  it("documents every key the configuration accepts", () => {
    const missing = [...keys.documented].filter((key) => !rows.has(documentedAs(key)));
    expect(missing).toEqual([]);
  });

  it("documents no key the configuration does not accept", () => {
    const stale = [...rows.keys()].filter((key) => !keys.documented.has(key));
    expect(stale).toEqual([]);
  });

  it("puts each key in the table of its section", () => {
    const misplaced = [...rows]
      .filter(([key, { section }]) => !(key === section || key.startsWith(`${section}.`)))
      .map(([key, { section }]) => `${key} under ${section}`);
    expect(misplaced).toEqual([]);
  });

  it("gives the parser's default of every key that has one", () => {
    const wrong: string[] = [];
    for (const [key, value] of keys.defaults) {
      const cell = rows.get(key)?.cells[1];
      if (cell === undefined) continue; // reported as missing above
      const documented = codeSpans(cell)[0] ?? cell;
      const derived = DERIVED_DEFAULTS[key];
      const ok = derived === undefined ? sameDefault(documented, value) : documented === derived;
      if (!ok) wrong.push(`${key}: the page says ${documented}, the parser ${JSON.stringify(value)}`);
    }
    expect(wrong).toEqual([]);
  });

  it("lists every environment variable next to the key it overrides", () => {
    const overrides: Record<string, string> = { ...PLATFORM_ENVIRONMENT };
    for (const module of modules) {
      for (const [variable, key] of Object.entries(module.environment ?? {})) {
        overrides[variable] = `${module.name}.${key}`;
      }
    }
    const table = tables(configurationPage).find((candidate) => candidate.header[0] === "variable");
    const documented = new Map(
      (table?.rows ?? []).flatMap((cells) => codeSpans(cells[0] ?? "").map((name) => [name, cells[1] ?? ""])),
    );
    for (const [variable, key] of Object.entries(overrides)) {
      expect(documented.get(variable), variable).toBeDefined();
      expect(codeSpans(documented.get(variable) ?? ""), variable).toContain(key);
    }
    for (const variable of ["VIGIE_CONFIG", "VIGIE_ADMIN_NAME", "VIGIE_ADMIN_PASSWORD"]) {
      expect(documented.has(variable), variable).toBe(true);
    }
  });

  it("shows a full example that the parser accepts", () => {
    const example = /## A full example\n+```yaml\n([\s\S]*?)\n```/.exec(configurationPage)?.[1];
    expect(example).toBeDefined();
    expect(() => parseConfig(loadYaml(example ?? "", { schema: CORE_SCHEMA }), {}, modules)).not.toThrow();
  });
});

describe("the check fields of docs/healthchecks.md", () => {
  it("are exactly the fields each kind of check accepts", () => {
    const { checkFields } = configurationKeys();
    const table = tables(healthchecksPage).find(
      (candidate) => candidate.header.join() === "field,kinds,default,meaning",
    );
    expect(table).toBeDefined();
    const documented = new Map<string, string[]>([...checkFields.keys()].map((kind) => [kind, []]));
    for (const cells of table?.rows ?? []) {
      const kinds = cells[1] === "all" ? [...checkFields.keys()] : (cells[1] ?? "").split(/,\s*/);
      for (const kind of kinds) {
        const fields = documented.get(kind);
        expect(fields, `unknown kind ${kind}`).toBeDefined();
        fields?.push(...codeSpans(cells[0] ?? ""));
      }
    }
    for (const [kind, fields] of checkFields) {
      expect((documented.get(kind) ?? []).sort(), kind).toEqual([...fields].sort());
    }
  });
});
