/**
 * Healthcheck definitions (healthchecks.md §1): the fields of every kind, their rules and defaults,
 * and the JSON view a definition is returned as. One validator serves the API (unknown fields
 * ignored, TLS files named relative to `healthchecks.tls-directory`) and the configuration file
 * (unknown keys refused, platform.md §2; TLS files at any path). Secrets never leave through the
 * view nor through a validation error (platform.md §8, redaction.ts).
 */
import { isIP } from "node:net";
import type { Duration } from "../platform/duration.js";
import { isHostName } from "../platform/hosts.js";
import { linearRegexPattern } from "../platform/regex.js";
import {
  array,
  boolean,
  childPath,
  duration,
  integer,
  isPlainObject,
  oneOf,
  optional,
  record,
  required,
  secret,
  string,
  ValidationError,
  type Validator,
  withDefault,
} from "../platform/validation.js";
import { redactSecrets } from "./redaction.js";
import { isTlsFileName, NO_TLS_DIRECTORY_RULE, TLS_FILE_NAME_RULE } from "./tls-files.js";

/** The kinds of healthcheck, in the order the API and the configuration list them. */
export const KINDS = ["http", "tcp", "dns", "tls", "command"] as const;

/** A kind of healthcheck. */
export type Kind = (typeof KINDS)[number];

/** Where a healthcheck comes from: the API (stored in the database) or the configuration file. */
export type Source = "api" | "configuration";

/** The fields every kind has. Durations keep the text they were given in (healthchecks.md §2). */
export interface CommonDefinition {
  /** 1–255 characters, no `/`, no control characters; unique across kinds. */
  readonly name: string;
  readonly description: string;
  /** How often the check runs; absent only for one-off checks. */
  readonly interval?: Duration;
  /** Bound of one execution (connect, handshake, body read, child process). */
  readonly timeout: Duration;
  readonly "one-off": boolean;
  /** Copied into results and metrics. Keys are Prometheus label names. */
  readonly labels?: Readonly<Record<string, string>>;
}

/** An http check: one request, judged on its status and body. */
export interface HttpDefinition extends CommonDefinition {
  readonly kind: "http";
  readonly target: string;
  readonly port: number;
  readonly protocol: "http" | "https";
  /** Starts with `/`; may carry a query string. */
  readonly path: string;
  readonly method: (typeof HTTP_METHODS)[number];
  readonly "valid-status": readonly number[];
  /** false: a 3xx is judged against valid-status; true: up to 10 redirects are followed. */
  readonly redirect: boolean;
  readonly headers?: Readonly<Record<string, string>>;
  /** Merged into the query string of `path` (these win over same-named parameters). */
  readonly query?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Regular expressions (RE2 syntax, linear time) that must all match somewhere in the response body. */
  readonly "body-regexp"?: readonly string[];
  /** Host header override. */
  readonly host?: string;
  readonly "server-name"?: string;
  readonly insecure: boolean;
  readonly key?: string;
  readonly cert?: string;
  readonly cacert?: string;
  readonly "source-ip"?: string;
}

/** A tcp check: a connection opens (or, with should-fail, does not). */
export interface TcpDefinition extends CommonDefinition {
  readonly kind: "tcp";
  readonly target: string;
  readonly port: number;
  readonly "should-fail": boolean;
  readonly "source-ip"?: string;
}

/** A dns check: the domain resolves through the system resolver (A and AAAA). */
export interface DnsDefinition extends CommonDefinition {
  readonly kind: "dns";
  readonly domain: string;
  readonly "expected-ips"?: readonly string[];
}

/** A tls check: the handshake succeeds and no certificate of the chain expires soon. */
export interface TlsDefinition extends CommonDefinition {
  readonly kind: "tls";
  readonly target: string;
  readonly port: number;
  readonly "server-name"?: string;
  readonly insecure: boolean;
  readonly key?: string;
  readonly cert?: string;
  readonly cacert?: string;
  readonly "source-ip"?: string;
  /** `0` turns the expiration check off. */
  readonly "expiration-delay": Duration;
}

/** A command check: an executable, run without a shell, exits 0 within the timeout. */
export interface CommandDefinition extends CommonDefinition {
  readonly kind: "command";
  readonly command: string;
  readonly arguments: readonly string[];
}

/** A validated healthcheck definition, defaults filled in. */
export type Definition = HttpDefinition | TcpDefinition | DnsDefinition | TlsDefinition | CommandDefinition;

/** A definition of one kind. */
export type DefinitionOf<K extends Kind> = Extract<Definition, { kind: K }>;

/**
 * A definition as the API returns it: the accepted fields with defaults filled in, durations as
 * their text, plus `kind` and `source` (healthchecks.md §1).
 */
export type DefinitionView = Readonly<Record<string, unknown>> & {
  readonly name: string;
  readonly kind: Kind;
  readonly source: Source;
};

/**
 * The rules of the running configuration that definitions depend on. Neither is reloadable on
 * SIGHUP: API checks were accepted under them.
 */
export interface DefinitionRules {
  /** `healthchecks.min-interval`: the shortest interval accepted. */
  readonly minInterval: Duration;
  /**
   * `healthchecks.tls-directory`, absolute: the directory that the `key`, `cert` and `cacert` of
   * API checks are file names in (platform.md §8). Undefined when not configured: API checks
   * cannot name TLS files then.
   */
  readonly tlsDirectory?: string;
}

/** Options of {@link validateDefinition}. */
export interface ValidateOptions {
  /** `ignore` for API bodies (healthchecks.md §1), `reject` for the configuration file (platform.md §2). */
  readonly unknownKeys: "ignore" | "reject";
  /**
   * What `key`, `cert` and `cacert` are (platform.md §8, "No file paths from the network"):
   * `names` (the default, for API bodies and stored API checks) are file names relative to
   * `rules.tlsDirectory`, refused when it is not configured; `paths` (configuration-file checks)
   * may be any path. Whether a name leads to a usable file is checked afterwards, asynchronously
   * (tls-files.ts, `checkTlsFiles`).
   */
  readonly tlsFiles?: "names" | "paths";
}

/** HTTP methods an http check may use. */
export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** The timeout of a dns check that gives none (healthchecks.md §1). */
export const DNS_DEFAULT_TIMEOUT: Duration = { text: "5s", milliseconds: 5_000 };

const NO_EXPIRATION_CHECK: Duration = { text: "0", milliseconds: 0 };

const COMMON_FIELDS = ["name", "description", "interval", "timeout", "one-off", "labels"];
const TLS_FIELDS = ["target", "port", "server-name", "insecure", "key", "cert", "cacert", "source-ip"];

/** The fields each kind knows, common ones included. */
export const FIELDS: Readonly<Record<Kind, readonly string[]>> = {
  http: [
    ...COMMON_FIELDS,
    ...TLS_FIELDS,
    "protocol",
    "path",
    "method",
    "valid-status",
    "redirect",
    "headers",
    "query",
    "body",
    "body-regexp",
    "host",
  ],
  tcp: [...COMMON_FIELDS, "target", "port", "should-fail", "source-ip"],
  dns: [...COMMON_FIELDS, "domain", "expected-ips"],
  tls: [...COMMON_FIELDS, ...TLS_FIELDS, "expiration-delay"],
  command: [...COMMON_FIELDS, "command", "arguments"],
};

const DURATION_FIELDS = new Set(["interval", "timeout", "expiration-delay"]);

const NAME_RULE = "must have 1 to 255 characters, without / or control characters";

/** True for C0 and C1 control characters and DEL. */
function isControlCharacter(codePoint: number): boolean {
  return codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f);
}

const name: Validator<string> = (value, path) => {
  if (typeof value !== "string") throw new ValidationError(path, NAME_RULE, value);
  const codePoints = [...value];
  const valid =
    codePoints.length >= 1 &&
    codePoints.length <= 255 &&
    !value.includes("/") &&
    !codePoints.some((character) => isControlCharacter(character.codePointAt(0) as number));
  if (!valid) throw new ValidationError(path, NAME_RULE, value);
  return value;
};

// Resolvers accept underscores (SRV-style names) and a final dot.
const HOST_NAME_OPTIONS = { underscore: true, finalDot: true } as const;

const target: Validator<string> = (value, path) => {
  if (typeof value !== "string" || (isIP(value) === 0 && !isHostName(value, HOST_NAME_OPTIONS))) {
    throw new ValidationError(path, "must be a host name, an IPv4 address or an IPv6 address", value);
  }
  return value;
};

const domain: Validator<string> = (value, path) => {
  if (typeof value !== "string" || !isHostName(value, HOST_NAME_OPTIONS)) {
    throw new ValidationError(path, "must be a domain name", value);
  }
  return value;
};

const ipAddress: Validator<string> = (value, path) => {
  if (typeof value !== "string" || isIP(value) === 0) {
    throw new ValidationError(path, "must be an IPv4 or IPv6 address", value);
  }
  return value;
};

const port = integer(1, 65535);
const nonEmpty = string({ min: 1 });
const filePath = string({ min: 1, rule: "must be a non-empty file path" });

/** A TLS file field of an API check: a relative name under `tlsDirectory` (platform.md §8). */
function fileName(tlsDirectory: string | undefined): Validator<string> {
  return (value, path) => {
    const text = filePath(value, path);
    if (tlsDirectory === undefined) throw new ValidationError(path, NO_TLS_DIRECTORY_RULE);
    if (!isTlsFileName(text)) throw new ValidationError(path, TLS_FILE_NAME_RULE);
    return text;
  };
}

const positiveDuration: Validator<Duration> = (value, path) => {
  const parsed = duration()(value, path);
  if (parsed.milliseconds <= 0) throw new ValidationError(path, "must be greater than 0", value);
  return parsed;
};

// Prometheus label names (data model: [a-zA-Z_][a-zA-Z0-9_]*), because labels are copied into the
// metrics; `name` and `status` are the metrics' own labels, `le` the histogram's, `__*` reserved.
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const RESERVED_LABELS = new Set(["name", "status", "le"]);

const labels: Validator<Record<string, string>> = (value, path) => {
  const entries = record(string())(value, path);
  for (const key of Object.keys(entries)) {
    if (!LABEL_NAME.test(key) || key.startsWith("__") || RESERVED_LABELS.has(key)) {
      throw new ValidationError(
        childPath(path, key),
        "must be a label name of letters, digits and _ (not starting with a digit or __, not name, status or le)",
      );
    }
  }
  return entries;
};

// RFC 9110 §5.1 field names are tokens; values must not smuggle a line break or NUL.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BAD_HEADER_VALUE = /[\r\n\0]/;

// Header values may be secrets (platform.md §8): no error quotes them.
const headers: Validator<Record<string, string>> = secret((value, path) => {
  const entries = record(string())(value, path);
  for (const [key, text] of Object.entries(entries)) {
    if (!HEADER_NAME.test(key)) throw new ValidationError(childPath(path, key), "must be a valid header name");
    if (BAD_HEADER_VALUE.test(text)) {
      throw new ValidationError(childPath(path, key), "must not contain line breaks or NUL");
    }
  }
  return entries;
});

// What undici accepts in a request path, restricted to printable ASCII: non-ASCII characters must
// be percent-encoded.
const httpPath = string({ pattern: /^\/[\x21-\x7e]*$/, rule: "must start with / and contain only printable ASCII" });

function intervalValidator(rules: DefinitionRules, timeout: Duration): Validator<Duration> {
  return (value, path) => {
    const parsed = duration()(value, path);
    if (parsed.milliseconds < rules.minInterval.milliseconds) {
      throw new ValidationError(path, `must be at least ${rules.minInterval.text}`, value);
    }
    if (parsed.milliseconds < timeout.milliseconds) {
      throw new ValidationError(path, `must be at least the timeout (${timeout.text})`, value);
    }
    return parsed;
  };
}

/**
 * The same error without secrets (platform.md §8): the quoted value and the rule (an RE2 message
 * may quote the pattern) with their URL passwords and secret header values redacted. Configuration
 * errors print the value (`(got "...")`); API errors never do, but the log of a refused stored
 * check would.
 */
function withoutSecrets(error: unknown): unknown {
  if (!(error instanceof ValidationError)) return error;
  const rule = redactSecrets(error.rule);
  return error.hasValue
    ? new ValidationError(error.path, rule, redactSecrets(error.value))
    : new ValidationError(error.path, rule);
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
  if (options.unknownKeys === "reject") {
    const known = FIELDS[kind];
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) {
        throw new ValidationError(childPath(path, key), `unknown key (known keys: ${known.join(", ")})`);
      }
    }
  }
  const field = <T>(key: string, validator: Validator<T>): T => {
    try {
      return validator(value[key], childPath(path, key));
    } catch (error) {
      throw withoutSecrets(error);
    }
  };
  const tlsFile = options.tlsFiles === "paths" ? filePath : fileName(rules.tlsDirectory);
  const result: Record<string, unknown> = {};
  const set = (key: string, parsed: unknown) => {
    if (parsed !== undefined) result[key] = parsed;
  };

  set("name", field("name", required(name)));
  result.kind = kind;
  set("description", field("description", withDefault(string(), "")));
  const oneOff = field("one-off", withDefault(boolean(), false));
  const timeout = field(
    "timeout",
    kind === "dns" ? withDefault(positiveDuration, DNS_DEFAULT_TIMEOUT) : required(positiveDuration),
  );
  const interval = intervalValidator(rules, timeout);
  set("interval", field("interval", oneOff ? optional(interval) : required(interval)));
  set("timeout", timeout);
  set("one-off", oneOff);
  set("labels", field("labels", optional(labels)));

  const tlsFields = () => {
    set("server-name", field("server-name", optional(nonEmpty)));
    set("insecure", field("insecure", withDefault(boolean(), false)));
    const key = field("key", optional(tlsFile));
    const cert = field("cert", optional(tlsFile));
    if (key !== undefined && cert === undefined)
      throw new ValidationError(childPath(path, "cert"), "is required with key");
    if (cert !== undefined && key === undefined)
      throw new ValidationError(childPath(path, "key"), "is required with cert");
    set("key", key);
    set("cert", cert);
    set("cacert", field("cacert", optional(tlsFile)));
    set("source-ip", field("source-ip", optional(ipAddress)));
  };

  switch (kind) {
    case "http":
      set("target", field("target", required(target)));
      set("port", field("port", required(port)));
      set("protocol", field("protocol", withDefault(oneOf(["http", "https"]), "http")));
      // The path's query, the query and the body may hold secrets: no error quotes them.
      set("path", field("path", withDefault(secret(httpPath), "/")));
      set("method", field("method", withDefault(oneOf(HTTP_METHODS), "GET")));
      set("valid-status", field("valid-status", required(array(integer(100, 599), { min: 1 }))));
      set("redirect", field("redirect", withDefault(boolean(), false)));
      set("headers", field("headers", optional(headers)));
      set("query", field("query", optional(secret(record(string())))));
      set("body", field("body", optional(secret(string()))));
      set("body-regexp", field("body-regexp", optional(array(linearRegexPattern))));
      set("host", field("host", optional(nonEmpty)));
      tlsFields();
      break;
    case "tcp":
      set("target", field("target", required(target)));
      set("port", field("port", required(port)));
      set("should-fail", field("should-fail", withDefault(boolean(), false)));
      set("source-ip", field("source-ip", optional(ipAddress)));
      break;
    case "dns":
      set("domain", field("domain", required(domain)));
      set("expected-ips", field("expected-ips", optional(array(ipAddress))));
      break;
    case "tls":
      set("target", field("target", required(target)));
      set("port", field("port", required(port)));
      tlsFields();
      set("expiration-delay", field("expiration-delay", withDefault(duration(), NO_EXPIRATION_CHECK)));
      break;
    case "command":
      set("command", field("command", required(nonEmpty)));
      set("arguments", field("arguments", withDefault(array(string()), [])));
      break;
  }
  return result as unknown as DefinitionOf<K>;
}

/**
 * The JSON form of a definition: every field as accepted, durations as their original text. This is
 * what the database stores for API checks.
 */
export function toJson(definition: Definition): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(definition)) {
    json[key] = DURATION_FIELDS.has(key) ? (value as Duration).text : value;
  }
  return json;
}

/**
 * The view the API returns (healthchecks.md §1): {@link toJson} plus `source`, with secrets
 * replaced by `<redacted>` (docs/security.md: values of secret headers, query parameters and JSON
 * body fields, URL passwords; redaction.ts). Every
 * GET route shows definitions through it: `GET /healthcheck`, `GET /healthcheck/<name>` and the
 * `configuration` of results.
 */
export function viewOf(definition: Definition, source: Source): DefinitionView {
  return redactSecrets({ ...toJson(definition), source }) as DefinitionView;
}
