/**
 * The configuration: one YAML file (`--config FILE` or `VIGIE_CONFIG`), environment overrides for
 * the database URL and secrets, a default for every key, unknown keys refused so that a misspelt
 * option never silently does nothing (docs/configuration.md).
 */

import { readFile } from "node:fs/promises";
import { CORE_SCHEMA, load as loadYaml, YAMLException } from "js-yaml";
import { CLUSTER_ENVIRONMENT, checkCluster, clusterSection } from "./cluster/config.js";
import { errnoCode } from "./errors.js";
import {
  ALLOWED_HOST_RULE,
  ALLOWED_ORIGIN_RULE,
  defaultPublicUrl,
  PUBLIC_URL_RULE,
  parseAllowedHost,
  parseAllowedOrigin,
  parsePublicUrl,
} from "./host-origin.js";
import type { AnyModule } from "./module.js";
import { outputsSection } from "./outputs/config.js";
import {
  array,
  boolean,
  duration,
  integer,
  isPlainObject,
  object,
  oneOf,
  optional,
  type Shape,
  type ShapeOf,
  secret,
  size,
  string,
  ValidationError,
  type Validator,
  withDefault,
} from "./validation.js";

/** A configuration that cannot be used; the message is meant for the operator, as is. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** The levels `log-level` accepts (pino's names). */
export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error"] as const;

const DATABASE_URL_RULE = "must be sqlite:<file>, sqlite::memory: or postgres://user:password@host:port/database";

/** `sqlite:<path>`, `sqlite::memory:` or a `postgres://` / `postgresql://` URL. */
const databaseUrl: Validator<string> = (value, path) => {
  if (typeof value === "string") {
    if (/^sqlite:.+/.test(value)) return value;
    if (/^postgres(ql)?:\/\/./.test(value)) return value;
  }
  throw new ValidationError(path, DATABASE_URL_RULE, value);
};

/** A validator of strings that `parse` normalises, or refuses with `rule` when it answers undefined. */
function parsed(parse: (text: string) => string | undefined, rule: string): Validator<string> {
  return (value, path) => {
    const result = typeof value === "string" ? parse(value) : undefined;
    if (result === undefined) throw new ValidationError(path, rule, value);
    return result;
  };
}

const httpObject = object(
  {
    host: withDefault(string({ min: 1 }), "127.0.0.1"),
    port: withDefault(integer(1, 65535), 8080),
    "public-url": optional(parsed(parsePublicUrl, PUBLIC_URL_RULE)),
    "allowed-hosts": withDefault(array(parsed(parseAllowedHost, ALLOWED_HOST_RULE)), []),
    "allowed-origins": withDefault(array(parsed(parseAllowedOrigin, ALLOWED_ORIGIN_RULE)), []),
    "trust-proxy": withDefault(boolean(), false),
    "body-limit": withDefault(size(), 1024 * 1024),
  },
  { unknownKeys: "reject", optional: true },
);

/** The `http` section; `public-url` defaults to `http://<host>:<port>` (docs/configuration.md). */
const http = (value: unknown, path: string) => {
  const section = httpObject(value, path);
  return { ...section, "public-url": section["public-url"] ?? defaultPublicUrl(section.host, section.port) };
};

const platformShape = {
  http,
  "log-level": withDefault(oneOf(LOG_LEVELS), "info"),
  database: object(
    // The URL may carry a password: never echo it in an error.
    { url: withDefault(secret(databaseUrl), "sqlite:./data/vigie.db") },
    { unknownKeys: "reject", optional: true },
  ),
  security: object({ "require-token": withDefault(boolean(), false) }, { unknownKeys: "reject", optional: true }),
  cluster: clusterSection,
  /** Outputs by name (docs/outputs.md): where streams and alerts send events and notifications. */
  outputs: withDefault(outputsSection, {}),
  /** How notifications to one output are grouped (docs/notifications.md). */
  notifications: object(
    {
      /** More notifications than this pending for one output after `group-wait` go as one message; 0 never groups. */
      "group-threshold": withDefault(integer(0, 1_000_000), 5),
      /** How long a notification waits for others to the same output. */
      "group-wait": withDefault(duration(0), { text: "2s", milliseconds: 2000 }),
    },
    { unknownKeys: "reject", optional: true },
  ),
  /** How long a graceful stop waits for the outputs' queues to empty (docs/outputs.md). */
  "drain-timeout": withDefault(duration(0), { text: "5s", milliseconds: 5000 }),
} satisfies Shape;

/** The platform part of the configuration, defaults filled in. Sizes in bytes. */
export type PlatformConfig = ShapeOf<typeof platformShape>;

/** The section of one module: `enabled` plus the module's own keys. */
export type ModuleSection<S extends Shape = Shape> = ShapeOf<S> & { enabled: boolean };

/** A validated configuration: the platform keys, and one section per known module. */
export interface VigieConfig extends PlatformConfig {
  /** Module sections by module name (`comments`, `streams`, ...). */
  readonly modules: Readonly<Record<string, ModuleSection>>;
  /** The file it was read from, if any (SIGHUP re-reads it). */
  readonly file?: string;
}

/** Environment variables that override platform keys. Modules declare their own. */
export const PLATFORM_ENVIRONMENT: Readonly<Record<string, string>> = {
  VIGIE_HTTP_HOST: "http.host",
  VIGIE_HTTP_PORT: "http.port",
  VIGIE_PUBLIC_URL: "http.public-url",
  VIGIE_DATABASE_URL: "database.url",
  VIGIE_REQUIRE_TOKEN: "security.require-token",
  ...CLUSTER_ENVIRONMENT,
};

/**
 * The value an environment variable gives its key: the keys that hold a number or a boolean read
 * `8080` and `true`/`false` as the file would; anything else stays a string and fails validation
 * with the key's rule. Every other variable is a string as it is (a token of digits stays a string).
 */
function environmentValue(variable: string, text: string): unknown {
  if (variable !== "VIGIE_HTTP_PORT" && variable !== "VIGIE_REQUIRE_TOKEN") return text;
  if (text === "true" || text === "false") return text === "true";
  return /^[0-9]{1,5}$/.test(text) ? Number(text) : text;
}

/**
 * The validator of a module's section: `enabled` (default true) and the module's keys, unknown keys
 * refused; an absent section is the defaults.
 */
function sectionValidator(module: AnyModule): Validator<ModuleSection> {
  const validate = object(
    { enabled: withDefault(boolean(), true), ...module.configShape },
    { unknownKeys: "reject", optional: true },
  );
  return (value, path) => {
    const { enabled, ...keys } = validate(value, path);
    return { ...keys, enabled: enabled === true };
  };
}

/** Sets `path` (dotted) in a raw YAML tree, creating objects on the way. */
function setPath(tree: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split(".");
  const last = keys.pop() ?? path;
  let node: Record<string, unknown> = tree;
  for (const key of keys) {
    const next = node[key] ?? {};
    if (!isPlainObject(next)) return; // a wrong type stays and fails validation with its path
    // Copied on the way down: the parsed tree is the caller's and stays as it was.
    const copied = { ...next };
    node[key] = copied;
    node = copied;
  }
  node[last] = value;
}

function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** Formats a validation error as `invalid configuration: <key>: <rule> (got <value>)` (docs/configuration.md). */
export function configErrorMessage(error: ValidationError): string {
  const got = error.hasValue ? ` (got ${describe(error.value)})` : "";
  return `invalid configuration: ${error.path}: ${error.rule}${got}`;
}

/**
 * Validates a raw configuration tree (parsed YAML) after applying environment overrides.
 *
 * @param raw the parsed YAML document (`undefined` or `null` for an empty file)
 * @param environment the process environment (only the `VIGIE_*` overrides are read)
 * @param modules the modules Vigie knows; each contributes one section
 * @throws ConfigError naming the key, the rule and the value
 */
export function parseConfig(
  raw: unknown,
  environment: Readonly<Record<string, string | undefined>>,
  modules: readonly AnyModule[],
  file?: string,
): VigieConfig {
  const tree = raw === undefined || raw === null ? {} : raw;
  if (!isPlainObject(tree)) throw new ConfigError("invalid configuration: the document must be a YAML mapping");
  const overrides: Record<string, string> = { ...PLATFORM_ENVIRONMENT };
  for (const module of modules) {
    for (const [variable, key] of Object.entries(module.environment ?? {})) {
      overrides[variable] = `${module.name}.${key}`;
    }
  }
  // A shallow copy: setPath copies the objects on an override's path, not the whole tree (a
  // deep copy of 10 000 checks cost start-up time, docs/benchmarks.md).
  const copy: Record<string, unknown> = { ...tree };
  for (const [variable, path] of Object.entries(overrides)) {
    const value = environment[variable];
    if (value !== undefined && value !== "") setPath(copy, path, environmentValue(variable, value));
  }

  // One validation of the whole tree (unknown keys and the order of errors as in the file); each
  // module's validator keeps its section, typed, as it returns it.
  const sections: Record<string, ModuleSection> = {};
  const moduleShapes: Record<string, Validator<ModuleSection>> = {};
  for (const module of modules) {
    const validateSection = sectionValidator(module);
    moduleShapes[module.name] = (value, path) => {
      const section = validateSection(value, path);
      sections[module.name] = section;
      return section;
    };
  }
  const validate = object({ ...platformShape, ...moduleShapes }, { unknownKeys: "reject" });
  try {
    const {
      http,
      "log-level": logLevel,
      database,
      security,
      cluster,
      outputs,
      notifications,
      ...rest
    } = validate(copy, "");
    const platform: PlatformConfig = {
      http,
      "log-level": logLevel,
      database,
      security,
      cluster,
      outputs,
      notifications,
      "drain-timeout": rest["drain-timeout"],
    };
    checkCluster(platform.cluster, platform.database.url, platform.security["require-token"]);
    const declared = new Set(Object.keys(outputs));
    for (const module of modules) {
      const section = sections[module.name];
      if (section === undefined) continue;
      const own = module.outputs?.(section) ?? {};
      checkOutputNames(module.name, own, outputs);
      for (const name of Object.keys(own)) declared.add(name);
    }
    for (const module of modules) {
      const section = sections[module.name];
      if (section !== undefined) module.check?.(section, platform, declared);
    }
    return { ...platform, modules: sections, ...(file === undefined ? {} : { file }) };
  } catch (error) {
    if (error instanceof ValidationError) throw new ConfigError(configErrorMessage(error));
    throw error;
  }
}

/**
 * A module's own outputs (`streams.outputs`) are merged with the top-level ones: a name may be
 * declared once.
 * @throws ValidationError naming `<module>.outputs.<name>`
 */
function checkOutputNames(
  module: string,
  own: Readonly<Record<string, unknown>>,
  outputs: Readonly<Record<string, unknown>>,
): void {
  for (const name of Object.keys(own)) {
    if (Object.hasOwn(outputs, name)) {
      throw new ValidationError(`${module}.outputs.${name}`, `is also declared under outputs; declare it once`);
    }
  }
}

/**
 * How many times its own size a document may grow through aliases: js-yaml shares an aliased node
 * rather than copying it, but validation walks the tree, so nested aliases (the "billion laughs")
 * would make it exponential.
 */
const MAX_ALIAS_EXPANSION = 10;

/** Nodes of a parsed YAML tree counted as a tree (an aliased node once per reference); memoised. */
function expandedNodes(node: unknown, sizes: Map<object, number>): number {
  if (typeof node !== "object" || node === null) return 1;
  const known = sizes.get(node);
  if (known !== undefined) return known;
  let size = 1;
  for (const child of Object.values(node)) size += expandedNodes(child, sizes);
  sizes.set(node, size);
  return size;
}

/** Distinct nodes of a parsed YAML tree (an aliased node once). */
function distinctNodes(node: unknown, seen: Set<object>): number {
  if (typeof node !== "object" || node === null) return 1;
  if (seen.has(node)) return 0;
  seen.add(node);
  let size = 1;
  for (const child of Object.values(node)) size += distinctNodes(child, seen);
  return size;
}

/**
 * Reads and validates the configuration file (or none: every default).
 *
 * @param file the path given with `--config`; else `VIGIE_CONFIG`; else no file
 * @throws ConfigError when the file cannot be read, is not YAML or is invalid
 */
export async function loadConfig(
  file: string | undefined,
  environment: Readonly<Record<string, string | undefined>>,
  modules: readonly AnyModule[],
): Promise<VigieConfig> {
  const path = file ?? (environment.VIGIE_CONFIG || undefined);
  if (path === undefined) return parseConfig(undefined, environment, modules);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = errnoCode(error) ?? String(error);
    throw new ConfigError(`invalid configuration: cannot read ${path}: ${code}`);
  }
  let raw: unknown;
  try {
    // YAML 1.2's core schema: no timestamps, no merge keys, `yes` stays a string. js-yaml rather
    // than the `yaml` package: it parses 10 000 healthchecks about 7 times faster, with a sixth of
    // the memory (10 000 checks in the file must still start within 2 s, docs/benchmarks.md).
    raw = loadYaml(text, { schema: CORE_SCHEMA, filename: path });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    const where = error.mark === undefined ? "" : ` at line ${error.mark.line + 1}, column ${error.mark.column + 1}`;
    throw new ConfigError(`invalid configuration: ${path} is not valid YAML: ${error.reason}${where}`);
  }
  // Without a `&` the document has no anchor, hence no alias: the two walks of the tree are skipped.
  if (
    text.includes("&") &&
    expandedNodes(raw, new Map()) > MAX_ALIAS_EXPANSION * distinctNodes(raw, new Set()) + 10_000
  ) {
    throw new ConfigError(`invalid configuration: ${path} is not valid YAML: its aliases expand too much`);
  }
  return parseConfig(raw, environment, modules, path);
}
