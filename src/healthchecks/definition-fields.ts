/**
 * The validators of single healthcheck fields (names, hosts, addresses, labels, headers, paths,
 * durations), which the shapes of definition.ts assemble. Each throws a {@link ValidationError}
 * with the rule the API and the configuration file show.
 */
import { isIP } from "node:net";
import { DURATION_PATTERN, type Duration } from "../platform/duration.js";
import { isHostName } from "../platform/hosts.js";
import { linearRegexPattern } from "../platform/regex.js";
import {
  childPath,
  described,
  duration,
  integer,
  type JsonSchema,
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
export const name: Validator<string> = described(
  (value, path) => {
    if (typeof value !== "string") throw new ValidationError(path, NAME_RULE, value);
    const codePoints = [...value];
    const valid =
      codePoints.length >= 1 &&
      codePoints.length <= 255 &&
      !value.includes("/") &&
      !codePoints.some(isControlCharacter);
    if (!valid) throw new ValidationError(path, NAME_RULE, value);
    return value;
  },
  // JSON Schema lengths count code points, as the rule does.
  { type: "string", minLength: 1, maxLength: 255, pattern: "^[^/\\u0000-\\u001f\\u007f-\\u009f]*$" },
);

// Resolvers accept underscores (SRV-style names) and a final dot.
const HOST_NAME_OPTIONS = { underscore: true, finalDot: true } as const;

// The schemas of what isHostName (with HOST_NAME_OPTIONS) and Node's isIP accept, as patterns:
// labels of at most 63 characters, 253 in all without the final dot; IPv6 with an optional zone.
const HOST_LABEL = "[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?";
const HOST_NAME_SCHEMA = { type: "string", pattern: `^(?=.{1,253}\\.?$)${HOST_LABEL}(?:\\.${HOST_LABEL})*\\.?$` };
const V4_SEGMENT = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])";
const V4 = `(?:${V4_SEGMENT}\\.){3}${V4_SEGMENT}`;
const V6_SEGMENT = "(?:[0-9a-fA-F]{1,4})";
const V6 = [
  `(?:${V6_SEGMENT}:){7}(?:${V6_SEGMENT}|:)`,
  `(?:${V6_SEGMENT}:){6}(?:${V4}|:${V6_SEGMENT}|:)`,
  `(?:${V6_SEGMENT}:){5}(?::${V4}|(?::${V6_SEGMENT}){1,2}|:)`,
  `(?:${V6_SEGMENT}:){4}(?:(?::${V6_SEGMENT}){0,1}:${V4}|(?::${V6_SEGMENT}){1,3}|:)`,
  `(?:${V6_SEGMENT}:){3}(?:(?::${V6_SEGMENT}){0,2}:${V4}|(?::${V6_SEGMENT}){1,4}|:)`,
  `(?:${V6_SEGMENT}:){2}(?:(?::${V6_SEGMENT}){0,3}:${V4}|(?::${V6_SEGMENT}){1,5}|:)`,
  `(?:${V6_SEGMENT}:){1}(?:(?::${V6_SEGMENT}){0,4}:${V4}|(?::${V6_SEGMENT}){1,6}|:)`,
  `(?::(?:(?::${V6_SEGMENT}){0,5}:${V4}|(?::${V6_SEGMENT}){1,7}|:))`,
].join("|");
const IP_SCHEMAS: JsonSchema[] = [
  { type: "string", pattern: `^${V4}$`, description: "an IPv4 address" },
  { type: "string", pattern: `^(?:${V6})(?:%[0-9a-zA-Z-.:]{1,})?$`, description: "an IPv6 address" },
];

/** A host name or an IP address to connect to. */
export const target: Validator<string> = described(
  (value, path) => {
    if (typeof value !== "string" || (isIP(value) === 0 && !isHostName(value, HOST_NAME_OPTIONS))) {
      throw new ValidationError(path, "must be a host name, an IPv4 address or an IPv6 address", value);
    }
    return value;
  },
  { anyOf: [HOST_NAME_SCHEMA, ...IP_SCHEMAS] },
);

/** A domain name to resolve. */
export const domain: Validator<string> = described((value, path) => {
  if (typeof value !== "string" || !isHostName(value, HOST_NAME_OPTIONS)) {
    throw new ValidationError(path, "must be a domain name", value);
  }
  return value;
}, HOST_NAME_SCHEMA);

/** An IPv4 or IPv6 address. */
export const ipAddress: Validator<string> = described(
  (value, path) => {
    if (typeof value !== "string" || isIP(value) === 0) {
      throw new ValidationError(path, "must be an IPv4 or IPv6 address", value);
    }
    return value;
  },
  { anyOf: IP_SCHEMAS },
);

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
  const validator: Validator<string> = (value, path) => {
    const text = filePath(value, path);
    if (tlsDirectory === undefined) throw new ValidationError(path, NO_TLS_DIRECTORY_RULE);
    if (!isTlsFileName(text)) throw new ValidationError(path, TLS_FILE_NAME_RULE);
    return text;
  };
  // Without a directory no value passes; else a name without control characters, not absolute
  // (POSIX or Windows), without a `..` segment.
  return described(
    validator,
    tlsDirectory === undefined
      ? { not: {}, description: NO_TLS_DIRECTORY_RULE }
      : {
          type: "string",
          minLength: 1,
          pattern: "^(?![/\\\\]|[A-Za-z]:[/\\\\])(?!(?:.*[/\\\\])?\\.\\.(?:[/\\\\]|$))[^\\u0000-\\u001f\\u007f]*$",
          description: "a file name in healthchecks.tls-directory",
        },
  );
}

/** The durations whose every number is zero (`0`, `0s`, `0.0m0ms`). */
const ZERO_DURATION = "^(0|((0+(\\.0*)?|\\.0+)(ns|us|µs|μs|ms|s|m|h))+)$";

/** Any duration, built once (the validators below call it for every definition). */
const anyDuration = duration();

/** A duration longer than zero. */
export const positiveDuration: Validator<Duration> = described(
  (value, path) => {
    const parsed = anyDuration(value, path);
    if (parsed.milliseconds <= 0) throw new ValidationError(path, "must be greater than 0", value);
    return parsed;
  },
  { type: "string", pattern: DURATION_PATTERN, not: { pattern: ZERO_DURATION } },
);

// Prometheus label names (data model: [a-zA-Z_][a-zA-Z0-9_]*), because labels are copied into the
// metrics; `name` and `status` are the metrics' own labels, `le` the histogram's, `__*` reserved.
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const RESERVED_LABELS = new Set(["name", "status", "le"]);

/** An object of strings, built once for the labels and headers of every definition. */
const stringRecord = record(string());

/** Labels: string values under Prometheus label names that the metrics do not use themselves. */
export const labels: Validator<Record<string, string>> = described(
  (value, path) => {
    const entries = stringRecord(value, path);
    for (const key of Object.keys(entries)) {
      if (!LABEL_NAME.test(key) || key.startsWith("__") || RESERVED_LABELS.has(key)) {
        throw new ValidationError(
          childPath(path, key),
          "must be a label name of letters, digits and _ (not starting with a digit or __, not name, status or le)",
        );
      }
    }
    return entries;
  },
  {
    type: "object",
    propertyNames: { pattern: `^(?!__)(?!(?:${[...RESERVED_LABELS].join("|")})$)${LABEL_NAME.source.slice(1)}` },
    additionalProperties: { type: "string" },
  },
);

// RFC 9110 §5.1 field names are tokens; values must not smuggle a line break or NUL.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BAD_HEADER_VALUE = /[\r\n\0]/;

/** Request headers. Their values may be secrets (a token): no error quotes them. */
export const headers: Validator<Record<string, string>> = secret(
  described(
    (value, path) => {
      const entries = stringRecord(value, path);
      for (const [key, text] of Object.entries(entries)) {
        if (!HEADER_NAME.test(key)) throw new ValidationError(childPath(path, key), "must be a valid header name");
        if (BAD_HEADER_VALUE.test(text)) {
          throw new ValidationError(childPath(path, key), "must not contain line breaks or NUL");
        }
      }
      return entries;
    },
    {
      type: "object",
      propertyNames: { pattern: HEADER_NAME.source },
      additionalProperties: { type: "string", pattern: "^[^\\r\\n\\u0000]*$" },
    },
  ),
);

// What undici accepts in a request path, restricted to printable ASCII: non-ASCII characters must
// be percent-encoded.
/** A request path, starting with `/`, that may carry a query string. */
export const httpPath = string({
  pattern: /^\/[\x21-\x7e]*$/,
  rule: "must start with / and contain only printable ASCII",
});

/**
 * Checks an interval: a duration of at least `minInterval` (`healthchecks.min-interval`) and at
 * least the timeout. A plain function rather than a validator: the timeout is only known while a
 * definition is checked, and building validators for each of 10 000 definitions slowed start-up
 * (docs/benchmarks.md, "Start-up"). Its schema is {@link INTERVAL_SCHEMA}.
 * @throws ValidationError `must be a duration …`, `must be at least 10s`, `must be at least the timeout (5s)`
 */
export function checkInterval(value: unknown, path: string, minInterval: Duration, timeout: Duration): Duration {
  const parsed = anyDuration(value, path);
  if (parsed.milliseconds < minInterval.milliseconds) {
    throw new ValidationError(path, `must be at least ${minInterval.text}`, value);
  }
  if (parsed.milliseconds < timeout.milliseconds) {
    throw new ValidationError(path, `must be at least the timeout (${timeout.text})`, value);
  }
  return parsed;
}

/** An interval's schema: a duration; its bounds (min-interval, the timeout) are not expressible. */
export const INTERVAL_SCHEMA: JsonSchema = {
  type: "string",
  pattern: DURATION_PATTERN,
  description: "at least healthchecks.min-interval and at least the timeout",
};

/**
 * A regular expression of the response body: RE2 syntax, linear time (platform/regex.ts). Its
 * schema can only say it is a string: whether it compiles is the RE2 parser's answer.
 */
export const bodyPattern: Validator<string> = described((value, path) => linearRegexPattern(value, path), {
  type: "string",
  description: "a regular expression, RE2 syntax",
});
