/**
 * The validators of single healthcheck fields (names, hosts, addresses, labels, headers, paths,
 * durations), which the shapes of definition.ts assemble. Each throws a {@link ValidationError}
 * with the rule the API and the configuration file show.
 */
import { isIP } from "node:net";
import type { Duration } from "../platform/duration.js";
import { isHostName } from "../platform/hosts.js";
import {
  childPath,
  duration,
  integer,
  record,
  secret,
  string,
  ValidationError,
  type Validator,
} from "../platform/validation.js";
import { isTlsFileName, NO_TLS_DIRECTORY_RULE, TLS_FILE_NAME_RULE } from "./tls-files.js";

const NAME_RULE = "must have 1 to 255 characters, without / or control characters";

/** True for C0 and C1 control characters and DEL. */
function isControlCharacter(character: string): boolean {
  const codePoint = character.codePointAt(0) ?? 0;
  return codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f);
}

/** A check name: 1–255 characters, no `/` (it is a path segment), no control characters. */
export const name: Validator<string> = (value, path) => {
  if (typeof value !== "string") throw new ValidationError(path, NAME_RULE, value);
  const codePoints = [...value];
  const valid =
    codePoints.length >= 1 && codePoints.length <= 255 && !value.includes("/") && !codePoints.some(isControlCharacter);
  if (!valid) throw new ValidationError(path, NAME_RULE, value);
  return value;
};

// Resolvers accept underscores (SRV-style names) and a final dot.
const HOST_NAME_OPTIONS = { underscore: true, finalDot: true } as const;

/** A host name or an IP address to connect to. */
export const target: Validator<string> = (value, path) => {
  if (typeof value !== "string" || (isIP(value) === 0 && !isHostName(value, HOST_NAME_OPTIONS))) {
    throw new ValidationError(path, "must be a host name, an IPv4 address or an IPv6 address", value);
  }
  return value;
};

/** A domain name to resolve. */
export const domain: Validator<string> = (value, path) => {
  if (typeof value !== "string" || !isHostName(value, HOST_NAME_OPTIONS)) {
    throw new ValidationError(path, "must be a domain name", value);
  }
  return value;
};

/** An IPv4 or IPv6 address. */
export const ipAddress: Validator<string> = (value, path) => {
  if (typeof value !== "string" || isIP(value) === 0) {
    throw new ValidationError(path, "must be an IPv4 or IPv6 address", value);
  }
  return value;
};

/** A TCP port. */
export const port = integer(1, 65535);

/** A non-empty string. */
export const nonEmpty = string({ min: 1 });

/** A TLS file of a configuration-file check: any path. */
export const filePath = string({ min: 1, rule: "must be a non-empty file path" });

/**
 * A TLS file of an API check: a relative name under `tlsDirectory`, so that a request cannot make
 * the server read any file it can (docs/security.md).
 */
export function fileName(tlsDirectory: string | undefined): Validator<string> {
  return (value, path) => {
    const text = filePath(value, path);
    if (tlsDirectory === undefined) throw new ValidationError(path, NO_TLS_DIRECTORY_RULE);
    if (!isTlsFileName(text)) throw new ValidationError(path, TLS_FILE_NAME_RULE);
    return text;
  };
}

/** A duration longer than zero. */
export const positiveDuration: Validator<Duration> = (value, path) => {
  const parsed = duration()(value, path);
  if (parsed.milliseconds <= 0) throw new ValidationError(path, "must be greater than 0", value);
  return parsed;
};

// Prometheus label names (data model: [a-zA-Z_][a-zA-Z0-9_]*), because labels are copied into the
// metrics; `name` and `status` are the metrics' own labels, `le` the histogram's, `__*` reserved.
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const RESERVED_LABELS = new Set(["name", "status", "le"]);

/** Labels: string values under Prometheus label names that the metrics do not use themselves. */
export const labels: Validator<Record<string, string>> = (value, path) => {
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

/** Request headers. Their values may be secrets (a token): no error quotes them. */
export const headers: Validator<Record<string, string>> = secret((value, path) => {
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
/** A request path, starting with `/`, that may carry a query string. */
export const httpPath = string({
  pattern: /^\/[\x21-\x7e]*$/,
  rule: "must start with / and contain only printable ASCII",
});

/** An interval: at least `minInterval` (`healthchecks.min-interval`) and at least the timeout. */
export function intervalValidator(minInterval: Duration, timeout: Duration): Validator<Duration> {
  return (value, path) => {
    const parsed = duration()(value, path);
    if (parsed.milliseconds < minInterval.milliseconds) {
      throw new ValidationError(path, `must be at least ${minInterval.text}`, value);
    }
    if (parsed.milliseconds < timeout.milliseconds) {
      throw new ValidationError(path, `must be at least the timeout (${timeout.text})`, value);
    }
    return parsed;
  };
}
