/**
 * The `healthchecks` section of the configuration (docs/healthchecks.md): the module's settings and
 * the checks listed in the file, which have source `configuration` and are re-read on SIGHUP.
 */
import type { Duration } from "../platform/duration.js";
import {
  array,
  described,
  duration,
  integer,
  object,
  optional,
  type Shape,
  type ShapeOf,
  schemaOf,
  string,
  ValidationError,
  type Validator,
  withDefault,
} from "../platform/validation.js";
import { alertsValidator } from "./alerts/fields.js";
import type { AlertPolicy } from "./alerts/policy.js";
import type { AllowApiCommands } from "./api-commands.js";
import {
  type Definition,
  type DefinitionOf,
  type DefinitionRules,
  KINDS,
  type Kind,
  validateDefinition,
} from "./definition.js";
import { maintenanceWindows } from "./maintenance/config.js";
import { redactSecrets } from "./redaction.js";
import { statusPageKeys } from "./status-page/pages.js";

/** `healthchecks.min-interval` when not set. */
export const DEFAULT_MIN_INTERVAL: Duration = { text: "1s", milliseconds: 1_000 };

/** `healthchecks.max-concurrency` when not set (docs/healthchecks.md). */
export const DEFAULT_MAX_CONCURRENCY = 512;

/** `healthchecks.history.retention` when not set (docs/healthchecks.md): 7 days. */
export const DEFAULT_HISTORY_RETENTION: Duration = { text: "168h", milliseconds: 168 * 3_600_000 };

/** A stream name of `healthchecks.streams` (the stream-name rule of docs/streams.md). */
const streamName: Validator<string> = string({
  pattern: /^[A-Za-z0-9._-]{1,128}$/,
  patternRule: "must be a stream name: 1 to 128 characters of A-Z a-z 0-9 . _ -",
});

/** The key of each kind's list of checks: `http-checks`, `tcp-checks`, ... */
export type ChecksKey = `${Kind}-checks`;

/** The key listing checks of `kind`. */
export function checksKey(kind: Kind): ChecksKey {
  return `${kind}-checks`;
}

/**
 * `healthchecks.tls-directory` (no file paths from the network, docs/security.md): the directory
 * that the `key`, `cert` and `cacert` of API checks are file names in; no default, and without it
 * API checks cannot name TLS files. Configuration-file checks are not bound to it. The file only
 * says it is a path; index.ts checks at start-up that it is a readable directory (the file may be
 * checked on another machine than the one it runs on). Not reloadable on SIGHUP, like
 * `min-interval`: stored API checks were accepted under it.
 */
const tlsDirectory: Validator<string | undefined> = optional(string({ min: 1, rule: "must be a directory path" }));

const allowApiCommands: Validator<AllowApiCommands> = (value, path) => {
  if (value === "auto" || value === true || value === false) return value;
  throw new ValidationError(path, "must be auto, true or false", value);
};

/**
 * Builds the section's shape. The check lists depend on `min-interval` (the interval rule) and on
 * each other (names are unique across kinds), while a shape validates each key alone. The platform
 * validates the keys of a section synchronously in the order of its shape (platform/validation.ts,
 * `object`), so `min-interval`, first, starts the state of one parse and the lists, after it, read
 * and extend it; `vigie config check` thus reports these errors too.
 */
function buildShape() {
  let rules: DefinitionRules = { minInterval: DEFAULT_MIN_INTERVAL };
  let names = new Map<string, string>();
  // `status-pages` is refused beside `status-page` (status-page/pages.ts).
  const pageKeys = statusPageKeys();
  /** Heartbeat ping keys given in the file, with where each is. */
  let keys = new Map<string, string>();

  const minInterval: Validator<Duration> = (value, path) => {
    const parsed = value === undefined ? DEFAULT_MIN_INTERVAL : duration()(value, path);
    rules = { minInterval: parsed };
    names = new Map();
    pageKeys.reset();
    keys = new Map();
    return parsed;
  };

  // A repeat is at least the min-interval of this parse.
  const defaultAlerts = withDefault<AlertPolicy[]>(
    described(
      (value, path) => alertsValidator(rules.minInterval)(value, path),
      schemaOf(alertsValidator(DEFAULT_MIN_INTERVAL)),
    ),
    [],
  );

  const checks = <K extends Kind>(kind: K): Validator<DefinitionOf<K>[]> => {
    return (value, path) => {
      if (value === undefined || value === null) return [];
      // The value is quoted in the error: without its secrets (docs/security.md).
      if (!Array.isArray(value)) throw new ValidationError(path, "must be an array", redactSecrets(value));
      return value.map((item, index) => {
        const itemPath = `${path}[${index}]`;
        // Configuration files may name TLS files at any path (docs/security.md).
        const definition: DefinitionOf<K> = validateDefinition(
          kind,
          item,
          rules,
          { unknownKeys: "reject", tlsFiles: "paths" },
          itemPath,
        );
        const parsed: Definition = definition;
        const { name, "one-off": oneOff } = parsed;
        if (oneOff) {
          throw new ValidationError(`${itemPath}.one-off`, "must be false in the configuration file", true);
        }
        const previous = names.get(name);
        if (previous !== undefined) {
          throw new ValidationError(`${itemPath}.name`, `must be unique (${previous} has the same name)`, name);
        }
        names.set(name, itemPath);
        if (parsed.kind === "heartbeat" && parsed.key !== undefined) {
          // Ping keys are unique like names (an API heartbeat with the file's key is a 409).
          const owner = keys.get(parsed.key);
          if (owner !== undefined)
            throw new ValidationError(`${itemPath}.key`, `must be unique (${owner} has the same key)`);
          keys.set(parsed.key, itemPath);
        }
        return definition;
      });
    };
  };

  return {
    "min-interval": minInterval,
    streams: withDefault<string[]>(array(streamName), []),
    history: object(
      { retention: withDefault(duration(0), DEFAULT_HISTORY_RETENTION) },
      { unknownKeys: "reject", optional: true },
    ),
    "status-page": pageKeys.single,
    "status-pages": pageKeys.several,
    maintenance: maintenanceWindows,
    "max-concurrency": withDefault(integer(1, 1_000_000), DEFAULT_MAX_CONCURRENCY),
    "allow-api-commands": withDefault<AllowApiCommands>(allowApiCommands, "auto"),
    "tls-directory": tlsDirectory,
    // The alerts of every check without `alerts` (docs/alerts.md); after min-interval (their repeat).
    "default-alerts": defaultAlerts,
    "http-checks": checks("http"),
    "tcp-checks": checks("tcp"),
    "dns-checks": checks("dns"),
    "tls-checks": checks("tls"),
    "command-checks": checks("command"),
    "heartbeat-checks": checks("heartbeat"),
  } satisfies Shape;
}

/** The shape of the `healthchecks` section (`enabled` is added by the platform). */
export const healthchecksShape = buildShape();

/** The validated section: settings and checks. */
export type HealthchecksSection = ShapeOf<typeof healthchecksShape>;

/** A configuration-file check and where it is in the file (for error messages). */
export interface ConfiguredCheck {
  readonly definition: Definition;
  /** `healthchecks.http-checks[0]`. */
  readonly path: string;
}

/**
 * A check of the file, its path made when asked: only error messages read it, and a list of 10 000
 * checks lives as long as its section (each path made at once was five strings).
 */
class ListedCheck implements ConfiguredCheck {
  constructor(
    readonly definition: Definition,
    readonly key: string,
    readonly index: number,
  ) {}

  get path(): string {
    return `healthchecks.${this.key}[${this.index}]`;
  }
}

/**
 * The lists already made, by section: a start reads them three times (the configuration's check of
 * alert outputs, the catalog, the alerts), four in cluster mode, and a file may list 10 000 checks
 * (docs/benchmarks.md, "Start-up"). A validated section is never changed, and a reload validates a
 * new one.
 */
const listed = new WeakMap<HealthchecksSection, readonly ConfiguredCheck[]>();

/**
 * The checks a section lists, kinds in the order of {@link KINDS}: one list per section object,
 * made on the first call (callers must not change it).
 */
export function configuredChecks(section: HealthchecksSection): readonly ConfiguredCheck[] {
  let checks = listed.get(section);
  if (checks === undefined) {
    checks = KINDS.flatMap((kind) => {
      const definitions: readonly Definition[] = section[checksKey(kind)];
      return definitions.map((definition, index) => new ListedCheck(definition, checksKey(kind), index));
    });
    listed.set(section, checks);
  }
  return checks;
}
