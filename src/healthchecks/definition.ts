/**
 * Healthcheck definitions (docs/healthchecks.md, "Check fields"): each kind's shape is its one
 * definition, from which its TypeScript type, its list of known keys and its validator follow.
 * One validator serves the API (unknown fields ignored, TLS files named relative to
 * `healthchecks.tls-directory`) and the configuration file (unknown keys refused, TLS files at any
 * path). Secrets never leave through the view nor through a validation error (docs/security.md,
 * redaction.ts).
 */
import type { Duration } from "../platform/duration.js";
import {
  array,
  boolean,
  childPath,
  described,
  duration,
  type Infer,
  integer,
  isPlainObject,
  type JsonSchema,
  object,
  oneOf,
  optional,
  record,
  required,
  type Shape,
  schemaOf,
  secret,
  string,
  ValidationError,
  type Validator,
  withDefault,
  withDefaultFrom,
} from "../platform/validation.js";
import { alertsValidator, dependsOnValidator, HEARTBEAT_THRESHOLDS } from "./alerts/fields.js";
import {
  bodyPattern,
  checkInterval,
  domain,
  fileName,
  filePath,
  headers,
  httpPath,
  INTERVAL_SCHEMA,
  ipAddress,
  labels,
  name,
  nonEmpty,
  port,
  positiveDuration,
  target,
} from "./definition-fields.js";
import { atLeastMinInterval, DEFAULT_GRACE, heartbeatKey, positive, scheduleValidator } from "./heartbeat/fields.js";
import { timeZone } from "./maintenance/config.js";
import { redactSecrets } from "./redaction.js";

/** The kinds of healthcheck, in the order the API and the configuration list them. */
export const KINDS = ["http", "tcp", "dns", "tls", "command", "heartbeat"] as const;

/** The kinds that Vigie runs itself, on a schedule (a heartbeat is pinged by the job instead). */
export type ScheduledKind = Exclude<Kind, "heartbeat">;

/** A kind of healthcheck. */
export type Kind = (typeof KINDS)[number];

/** Whether `value` names a kind (a stored row's kind, read back from the database). */
export function isKind(value: string): value is Kind {
  return KINDS.some((kind) => kind === value);
}

/** Where a healthcheck comes from: the API (stored in the database) or the configuration file. */
export type Source = "api" | "configuration";

/**
 * The rules of the running configuration that definitions depend on. Neither is reloadable on
 * SIGHUP: API checks were accepted under them.
 */
export interface DefinitionRules {
  /** `healthchecks.min-interval`: the shortest interval accepted. */
  readonly minInterval: Duration;
  /**
   * `healthchecks.tls-directory`, absolute: the directory that the `key`, `cert` and `cacert` of
   * API checks are file names in (docs/security.md). Undefined when not configured: API checks
   * cannot name TLS files then.
   */
  readonly tlsDirectory?: string;
}

/** Options of {@link validateDefinition}. */
export interface ValidateOptions {
  /** `ignore` for API bodies, `reject` for the configuration file (a misspelt key must not be lost). */
  readonly unknownKeys: "ignore" | "reject";
  /**
   * What `key`, `cert` and `cacert` are (no file paths from the network, docs/security.md):
   * `names` (the default, for API bodies and stored API checks) are file names relative to
   * `rules.tlsDirectory`, refused when it is not configured; `paths` (configuration-file checks)
   * may be any path. Whether a name leads to a usable file is checked afterwards, asynchronously
   * (tls-files.ts, `checkTlsFiles`).
   */
  readonly tlsFiles?: "names" | "paths";
}

/** HTTP methods an http check may use. */
export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** The timeout of a dns check that gives none. */
export const DNS_DEFAULT_TIMEOUT: Duration = { text: "5s", milliseconds: 5_000 };

const NO_EXPIRATION_CHECK: Duration = { text: "0", milliseconds: 0 };

/** What the shape of a definition depends on: the raw definition, where it is, and the rules. */
interface ShapeContext {
  /** The raw definition, for the fields whose rule depends on another field. */
  readonly input: Readonly<Record<string, unknown>>;
  /** Where the definition is (`""` for an API body). */
  readonly path: string;
  readonly minInterval: Duration;
  /** How `key`, `cert` and `cacert` are read: file names or paths. */
  readonly tlsFile: Validator<string>;
}

/**
 * The fields every kind has, in the order of the JSON view. Durations keep the text they were
 * given in. `kind` is not read from the input: the route or the configuration list decides it.
 */
function commonShape<K extends Kind>(kind: K, timeout: Validator<Duration>, context: ShapeContext) {
  const oneOff = withDefault(boolean(), false);
  // The interval depends on one-off (absent only for one-off checks) and on the timeout (it must
  // not be shorter), so it checks them first: errors come in the order one-off, timeout, interval.
  const interval: Validator<Duration | undefined> = described((value, path) => {
    const once = oneOff(context.input["one-off"], childPath(context.path, "one-off"));
    const bound = timeout(context.input.timeout, childPath(context.path, "timeout"));
    // What optional() or required() around an interval validator would do, without building one
    // per definition: absent (or null) is accepted for a one-off check only.
    if (once && (value === undefined || value === null)) return undefined;
    if (value === undefined) throw new ValidationError(path, "is required");
    return checkInterval(value, path, context.minInterval, bound);
  }, INTERVAL_SCHEMA);
  return {
    /** 1–255 characters, no `/`, no control characters; unique across kinds. */
    name: required(name),
    kind: (): K => kind,
    description: withDefault(string(), ""),
    /** How often the check runs; absent only for one-off checks. */
    interval,
    /** Bound of one execution (connect, handshake, body read, child process). */
    timeout,
    "one-off": oneOff,
    /** Copied into results and metrics. Keys are Prometheus label names. */
    labels: optional(labels),
    /** Who is told when the check fails (docs/alerts.md); absent: `healthchecks.default-alerts`. */
    alerts: optional(alertsValidator(context.minInterval)),
    /** Checks whose outage holds this one's notifications back (docs/alerts.md). */
    "depends-on": optional(dependsOnValidator),
  };
}

const requiredTimeout = required(positiveDuration);

/** Where tcp, tls and http checks connect. */
const ENDPOINT_SHAPE = { target: required(target), port: required(port) };

/** The TLS client fields of http and tls checks; `key` and `cert` go together. */
function tlsClientShape(context: ShapeContext) {
  const { tlsFile } = context;
  const file = optional(tlsFile);
  const cert: Validator<string | undefined> = described((value, at) => {
    const { input, path } = context;
    const parsed = file(value, at);
    // `key` was checked before: it is absent exactly when its raw value is.
    const hasKey = input.key !== undefined && input.key !== null;
    if (hasKey && parsed === undefined) throw new ValidationError(at, "is required with key");
    if (parsed !== undefined && !hasKey) throw new ValidationError(childPath(path, "key"), "is required with cert");
    return parsed;
  }, schemaOf(tlsFile));
  return {
    "server-name": optional(nonEmpty),
    insecure: withDefault(boolean(), false),
    key: file,
    cert,
    cacert: file,
    "source-ip": optional(ipAddress),
  };
}

/** The fields of an http check of its own. The path's query, the query and the body may hold secrets. */
const HTTP_SHAPE = {
  protocol: withDefault(oneOf(["http", "https"]), "http"),
  /** Starts with `/`; may carry a query string. */
  path: withDefault(secret(httpPath), "/"),
  method: withDefault(oneOf(HTTP_METHODS), "GET"),
  "valid-status": required(array(integer(100, 599), { min: 1 })),
  /** false: a 3xx is judged against valid-status; true: up to 10 redirects are followed. */
  redirect: withDefault(boolean(), false),
  headers: optional(headers),
  /** Merged into the query string of `path` (these win over same-named parameters). */
  query: optional(secret(record(string()))),
  body: optional(secret(string())),
  /** Regular expressions (RE2 syntax, linear time) that must all match somewhere in the response body. */
  "body-regexp": optional(array(bodyPattern)),
  /** Host header override. */
  host: optional(nonEmpty),
};

/**
 * The fields of a heartbeat check (docs/healthchecks.md, "Heartbeat checks"): no interval nor
 * timeout, the job pings instead. `period` or `schedule` (exactly one), `grace` (default 1h) and
 * `max-duration` (default: the grace). `key` is absent when not given: the API fills in the
 * existing check's key or a new one (admission.ts), the catalog a stored one for the file's checks.
 */
function heartbeatShape(context: ShapeContext) {
  const grace = withDefault(atLeastMinInterval(context.minInterval), DEFAULT_GRACE);
  const zone = withDefault(timeZone, "UTC");
  const oneOff: Validator<false> = withDefault(
    described(
      (value, path) => {
        if (value === false) return false;
        throw new ValidationError(path, "must be false for heartbeat checks", value);
      },
      { type: "boolean", const: false },
    ),
    false,
  );
  return {
    name: required(name),
    kind: (): "heartbeat" => "heartbeat",
    description: withDefault(string(), ""),
    "one-off": oneOff,
    labels: optional(labels),
    alerts: optional(alertsValidator(context.minInterval, HEARTBEAT_THRESHOLDS)),
    "depends-on": optional(dependsOnValidator),
    /** The job runs every period; exclusive with schedule. */
    period: optional(atLeastMinInterval(context.minInterval)),
    timezone: zone,
    schedule: scheduleValidator(context, () => zone(context.input.timezone, childPath(context.path, "timezone"))),
    grace,
    "max-duration": withDefaultFrom(
      positive,
      () => grace(context.input.grace, childPath(context.path, "grace")),
      "how long a started run may take; default: the grace",
    ),
    key: optional(heartbeatKey),
  };
}

/** Each kind's shape: its fields in the order they are checked and shown. */
const SHAPES = {
  /** One request, judged on its status and body. */
  http: (context: ShapeContext) => ({
    ...commonShape("http", requiredTimeout, context),
    ...ENDPOINT_SHAPE,
    ...HTTP_SHAPE,
    ...tlsClientShape(context),
  }),
  /** A connection opens (or, with should-fail, does not). */
  tcp: (context: ShapeContext) => ({
    ...commonShape("tcp", requiredTimeout, context),
    ...ENDPOINT_SHAPE,
    "should-fail": withDefault(boolean(), false),
    "source-ip": optional(ipAddress),
  }),
  /** The domain resolves through the system resolver (A and AAAA). */
  dns: (context: ShapeContext) => ({
    ...commonShape("dns", withDefault(positiveDuration, DNS_DEFAULT_TIMEOUT), context),
    domain: required(domain),
    "expected-ips": optional(array(ipAddress)),
  }),
  /** The handshake succeeds and no certificate of the chain expires soon (`0` turns that off). */
  tls: (context: ShapeContext) => ({
    ...commonShape("tls", requiredTimeout, context),
    ...ENDPOINT_SHAPE,
    ...tlsClientShape(context),
    "expiration-delay": withDefault(duration(), NO_EXPIRATION_CHECK),
  }),
  /** An executable, run without a shell, exits 0 within the timeout. */
  command: (context: ShapeContext) => ({
    ...commonShape("command", requiredTimeout, context),
    command: required(nonEmpty),
    arguments: withDefault(array(string()), []),
  }),
  /** The job pings Vigie; Vigie judges when a ping is missing. */
  heartbeat: heartbeatShape,
} satisfies Record<Kind, (context: ShapeContext) => Shape>;

/**
 * The type a shape's validator returns, the keys whose validator may give `undefined` made optional
 * ({@link object} leaves them out).
 */
type Parsed<S extends Shape> = Readonly<
  { [K in keyof S as undefined extends Infer<S[K]> ? never : K]: Infer<S[K]> } & {
    [K in keyof S as undefined extends Infer<S[K]> ? K : never]?: Exclude<Infer<S[K]>, undefined>;
  }
>;

/** The validated definition of each kind, defaults filled in; optional fields without one absent. */
type DefinitionMap = { readonly [K in Kind]: Parsed<ReturnType<(typeof SHAPES)[K]>> };

/** An http check. */
export type HttpDefinition = DefinitionMap["http"];
/** A tcp check. */
export type TcpDefinition = DefinitionMap["tcp"];
/** A dns check. */
export type DnsDefinition = DefinitionMap["dns"];
/** A tls check. */
export type TlsDefinition = DefinitionMap["tls"];
/** A command check. */
export type CommandDefinition = DefinitionMap["command"];
/** A heartbeat check. */
export type HeartbeatDefinition = DefinitionMap["heartbeat"];
/** A check Vigie runs itself. */
export type ScheduledDefinition = DefinitionMap[ScheduledKind];

/** A validated healthcheck definition, defaults filled in. */
export type Definition = DefinitionMap[Kind];

/** A definition of one kind. */
export type DefinitionOf<K extends Kind> = DefinitionMap[K];

/** The fields every scheduled kind has. */
export type CommonDefinition = Pick<ScheduledDefinition, keyof ReturnType<typeof commonShape>>;

const IGNORE_UNKNOWN = { unknownKeys: "ignore" } as const;

/** The validator of each kind, for a context. */
const VALIDATORS: { readonly [K in Kind]: (context: ShapeContext) => Validator<DefinitionMap[K]> } = {
  http: (context) => object(SHAPES.http(context), IGNORE_UNKNOWN),
  tcp: (context) => object(SHAPES.tcp(context), IGNORE_UNKNOWN),
  dns: (context) => object(SHAPES.dns(context), IGNORE_UNKNOWN),
  tls: (context) => object(SHAPES.tls(context), IGNORE_UNKNOWN),
  command: (context) => object(SHAPES.command(context), IGNORE_UNKNOWN),
  heartbeat: (context) => object(SHAPES.heartbeat(context), IGNORE_UNKNOWN),
};

/**
 * The rules between fields that the validators check in code and a field's own schema cannot say:
 * the interval is required unless the check is one-off; `key` and `cert` come together.
 */
const CROSS_FIELD_RULES: Readonly<Record<string, JsonSchema>> = {
  interval: {
    anyOf: [{ required: ["interval"] }, { properties: { "one-off": { const: true } }, required: ["one-off"] }],
  },
  cert: { dependentRequired: { key: ["cert"], cert: ["key"] } },
  schedule: { oneOf: [{ required: ["period"] }, { required: ["schedule"] }] },
};

/**
 * The JSON Schema of a definition of `kind` posted to the API under `rules` (docs/api.md), derived
 * from the kind's shape: each field's validator gives its schema, `kind` (set by the route, never
 * read) is left out, and the fields required only with another one are stated as such.
 */
export function definitionSchema(kind: Kind, rules: DefinitionRules): JsonSchema {
  const context = { input: {}, path: "", minInterval: rules.minInterval, tlsFile: fileName(rules.tlsDirectory) };
  const { kind: _kind, ...fields }: Shape = SHAPES[kind](context);
  const { required: requiredKeys, ...schema } = schemaOf(object(fields, IGNORE_UNKNOWN));
  const conditional = Object.keys(CROSS_FIELD_RULES).filter((key) => Object.hasOwn(fields, key));
  const keys = Array.isArray(requiredKeys) ? requiredKeys : [];
  return {
    ...schema,
    required: keys.filter((key) => !conditional.includes(key)),
    ...(conditional.length === 0 ? {} : { allOf: conditional.map((key) => CROSS_FIELD_RULES[key]) }),
  };
}

/** A context to read the keys of the shapes with. */
const KEYS_CONTEXT: ShapeContext = { input: {}, path: "", minInterval: NO_EXPIRATION_CHECK, tlsFile: filePath };

/**
 * The keys a kind knows, as the configuration file's errors list them: the shape's keys but
 * `kind`, the TLS client fields right after the endpoint.
 */
function knownKeys(shape: Shape): readonly string[] {
  const keys = Object.keys(shape).filter((key) => key !== "kind");
  const tls = Object.keys(tlsClientShape(KEYS_CONTEXT));
  if (!tls.every((key) => keys.includes(key))) return keys;
  const others = keys.filter((key) => !tls.includes(key));
  const afterEndpoint = others.indexOf("port") + 1;
  return [...others.slice(0, afterEndpoint), ...tls, ...others.slice(afterEndpoint)];
}

/** The fields each kind knows, common ones included. */
export const FIELDS: Readonly<Record<Kind, readonly string[]>> = {
  http: knownKeys(SHAPES.http(KEYS_CONTEXT)),
  tcp: knownKeys(SHAPES.tcp(KEYS_CONTEXT)),
  dns: knownKeys(SHAPES.dns(KEYS_CONTEXT)),
  tls: knownKeys(SHAPES.tls(KEYS_CONTEXT)),
  command: knownKeys(SHAPES.command(KEYS_CONTEXT)),
  heartbeat: knownKeys(SHAPES.heartbeat(KEYS_CONTEXT)),
};

/**
 * A definition as the API returns it: the accepted fields with defaults filled in, durations as
 * their text, plus `kind` and `source`.
 */
export type DefinitionView = Readonly<Record<string, unknown>> & {
  readonly name: string;
  readonly kind: Kind;
  readonly source: Source;
};

/**
 * The same error without secrets: the quoted value and the rule (an RE2 message may quote the
 * pattern) with their URL passwords and secret header values redacted. Configuration errors print
 * the value (`(got "...")`); API errors never do, but the log of a refused stored check would.
 */
function withoutSecrets(error: unknown): unknown {
  if (!(error instanceof ValidationError)) return error;
  const rule = redactSecrets(error.rule);
  return error.hasValue
    ? new ValidationError(error.path, rule, redactSecrets(error.value))
    : new ValidationError(error.path, rule);
}

/** Refuses the first key of `value` that the kind does not know. */
function refuseUnknownKeys(value: Readonly<Record<string, unknown>>, known: readonly string[], path: string): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new ValidationError(childPath(path, key), `unknown key (known keys: ${known.join(", ")})`);
    }
  }
}

/**
 * Validates one definition of `kind`.
 *
 * @param value the raw definition (a parsed JSON or YAML object)
 * @param path where the definition is, for error paths: `""` for an API body (errors read `port`),
 *   `healthchecks.http-checks[0]` in the configuration file
 * @returns the definition with its defaults filled in; optional fields without a default are absent
 * @throws ValidationError naming the first field that breaks a rule, e.g. `port: must be an integer
 *   between 1 and 65535`, `cert: must be a file name relative to healthchecks.tls-directory, ...`;
 *   its value and rule carry no secret (redaction.ts)
 */
export function validateDefinition<K extends Kind>(
  kind: K,
  value: unknown,
  rules: DefinitionRules,
  options: ValidateOptions,
  path = "",
): DefinitionOf<K> {
  if (!isPlainObject(value)) throw new ValidationError(path, "must be an object", redactSecrets(value));
  if (options.unknownKeys === "reject") refuseUnknownKeys(value, FIELDS[kind], path);
  const { context, validate } = cachedValidator(kind, rules, options);
  context.input = value;
  context.path = path;
  try {
    return validate(value, path) as DefinitionOf<K>;
  } catch (error) {
    throw withoutSecrets(error);
  } finally {
    context.input = KEYS_CONTEXT.input;
  }
}

/** A kind's validator and the context its shape reads the definition being checked from. */
interface CachedValidator {
  readonly context: { input: Readonly<Record<string, unknown>>; path: string } & ShapeContext;
  readonly validate: Validator<Definition>;
}

/** Validators built so far, by kind and rules: at most a few per configuration. */
const CACHED_VALIDATORS = new Map<string, CachedValidator>();

/**
 * The validator of `kind` under `rules` and `options`, built once: building a shape and its JSON
 * Schemas costs far more than checking a definition, and a configuration file may list 10 000
 * checks. Validation is synchronous, so one mutable context per validator is enough.
 */
function cachedValidator(kind: Kind, rules: DefinitionRules, options: ValidateOptions): CachedValidator {
  const key = JSON.stringify([
    kind,
    rules.minInterval.text,
    rules.minInterval.milliseconds,
    options.tlsFiles === "paths" ? null : (rules.tlsDirectory ?? false),
  ]);
  const cached = CACHED_VALIDATORS.get(key);
  if (cached !== undefined) return cached;
  const tlsFile = options.tlsFiles === "paths" ? filePath : fileName(rules.tlsDirectory);
  const context = { input: KEYS_CONTEXT.input, path: "", minInterval: rules.minInterval, tlsFile };
  const built: CachedValidator = { context, validate: VALIDATORS[kind](context) };
  // Bounded: rules come from the configuration, but tests build many.
  if (CACHED_VALIDATORS.size >= 64) CACHED_VALIDATORS.clear();
  CACHED_VALIDATORS.set(key, built);
  return built;
}

/** Whether a field's value is a parsed duration (the only object fields with a number in them). */
function isDuration(value: unknown): value is Duration {
  return isPlainObject(value) && typeof value.text === "string" && typeof value.milliseconds === "number";
}

/** A field's JSON form: durations as their text, also in the objects of a list (an alert's `repeat`). */
function jsonValue(value: unknown): unknown {
  if (isDuration(value)) return value.text;
  if (Array.isArray(value) && value.some(isPlainObject)) {
    return value.map((item) =>
      isPlainObject(item)
        ? Object.fromEntries(Object.entries(item).map(([key, field]) => [key, jsonValue(field)]))
        : item,
    );
  }
  return value;
}

/**
 * The JSON form of a definition: every field as accepted, durations as their original text. This is
 * what the database stores for API checks.
 */
export function toJson(definition: Definition): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(definition)) json[key] = jsonValue(value);
  return json;
}

/**
 * The view the API returns: {@link toJson} plus `source`, with secrets replaced by `<redacted>`
 * (docs/security.md: values of secret headers, query parameters and JSON body fields, URL
 * passwords; redaction.ts). Every GET route shows definitions through it: `GET /healthcheck`,
 * `GET /healthcheck/<name>` and the `configuration` of results.
 */
export function viewOf(definition: Definition, source: Source): DefinitionView {
  const { name, kind } = definition;
  return redactSecrets({ ...toJson(definition), name, kind, source });
}
