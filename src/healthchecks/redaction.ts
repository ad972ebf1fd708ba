/**
 * What of a healthcheck definition is a secret, and how it is hidden (platform.md §8, "No secrets
 * in responses or logs"):
 *
 * - the value of an http check's header whose name is `Authorization`, `Proxy-Authorization`,
 *   `Cookie`, or contains `token`, `secret`, `key`, `password` or `auth` (any case) becomes
 *   `<redacted>` as a whole;
 * - the password of a URL `scheme://user:password@host` (or `//user:password@host`) becomes
 *   `<redacted>` in every string value of a definition (body, path, query values, header values,
 *   description, labels, command arguments…): `https://ann:s3cret@example.org/x` →
 *   `https://ann:<redacted>@example.org/x`. A URL with a user and no (or an empty) password stays
 *   as it is.
 *
 * Object keys (header names, query parameter names, label names) are names, not values: they are
 * never redacted. A definition POSTed back with `<redacted>` keeps the stored value:
 * {@link restoreRedacted} puts it back, so GET → edit → POST round-trips.
 *
 * Plain data in, plain data out: no Fastify, no SQL, no definition types (definition.ts uses it).
 */
import { isSecretName } from "../platform/redaction.js";
import { childPath, isPlainObject, ValidationError } from "../platform/validation.js";

/** What a secret is replaced with (platform.md §8). */
export const REDACTED = "<redacted>";

/**
 * The userinfo of a URL with a password: `//`, the user (possibly empty, no `:`), `:`, a non-empty
 * password, `@`. The password runs to the last `@` of the authority (as WHATWG URL parsing reads
 * `https://ann:p@ss@host`), so an unencoded `@` in it does not leak the rest. Characters that
 * cannot appear unencoded in a URL's userinfo (white space, quotes, `<>`, `{}`, `|`, `\`, `^`, `` ` ``,
 * `[]`) and the ends of an authority (`/?#`) end the match: a URL quoted in a JSON body stops at
 * its closing quote, and `<redacted>` itself is never matched again.
 */
const URL_PASSWORD = /\/\/([^\s/?#@:"'<>\\^`{|}[\]]*):([^\s/?#"'<>\\^`{|}[\]]+)@/g;

/**
 * Whether the value of a header of this name is a secret (platform.md §8): `Authorization`,
 * `Proxy-Authorization`, `Cookie`, or a name containing `token`, `secret`, `key`, `password` or
 * `auth`, in any case (`X-API-Key`, `x-auth-user`, `X-Vault-Token`).
 */
export function isSecretHeader(name: string): boolean {
  return isSecretName(name);
}

/**
 * `text` with the password of every URL `//user:password@` replaced by `<redacted>`
 * (platform.md §8): `postgres://app:pw@db/x` → `postgres://app:<redacted>@db/x`. A URL without a
 * password (`https://ann@example.org`) and text without URLs come back unchanged.
 */
export function redactUrlPasswords(text: string): string {
  if (!text.includes("//")) return text;
  return text.replace(URL_PASSWORD, (_match, user: string) => `//${user}:${REDACTED}@`);
}

/**
 * The redacted form of one string value found under the key `key` of an object whose own key is
 * `parentKey`: `<redacted>` for a secret header value (`headers.Authorization`), else the value
 * with its URL passwords redacted.
 */
function redactedString(text: string, parentKey: string | undefined, key: string | undefined): string {
  if (parentKey === "headers" && key !== undefined && isSecretHeader(key)) return REDACTED;
  return redactUrlPasswords(text);
}

/**
 * Levels of arrays and objects redacted one by one; deeper values are replaced whole by
 * `<redacted>`. A definition is 3 levels deep, but a value quoted in a validation error may be
 * anything a 1 MiB body holds (100 000 nested arrays): the bound keeps the recursion off the end
 * of the stack.
 */
const MAX_DEPTH = 32;

function redactAt(value: unknown, parentKey: string | undefined, key: string | undefined, depth: number): unknown {
  if (typeof value === "string") return redactedString(value, parentKey, key);
  if (typeof value !== "object" || value === null) return value;
  if (depth >= MAX_DEPTH) return REDACTED;
  if (Array.isArray(value)) return value.map((item) => redactAt(item, key, undefined, depth + 1));
  const result: Record<string, unknown> = {};
  for (const [childKey, child] of Object.entries(value)) result[childKey] = redactAt(child, key, childKey, depth + 1);
  return result;
}

/**
 * A copy of a definition's JSON form (or of any JSON value, such as a value quoted in a validation
 * error) with its secrets replaced by `<redacted>` (platform.md §8): the values of secret headers
 * in any `headers` object, and URL passwords in every string value. Keys, numbers and booleans
 * are kept; anything nested deeper than 32 levels is replaced whole. The input is not modified.
 */
export function redactSecrets<T>(value: T): T {
  return redactAt(value, undefined, undefined, 0) as T;
}

/**
 * A copy of a check's labels with URL passwords redacted, for what is shown outside the
 * definition itself (the `labels` of results, the labels of metric series).
 */
export function redactLabels(
  labels: Readonly<Record<string, string>> | undefined,
): Readonly<Record<string, string>> | undefined {
  if (labels === undefined) return undefined;
  return Object.fromEntries(Object.entries(labels).map(([key, value]) => [key, redactUrlPasswords(value)]));
}

/** Shortest secret header value searched for in messages: shorter ones would hide common words. */
const SHORTEST_SCRUBBED_SECRET = 4;

/**
 * A result or one-off message (healthchecks.md §3) without the check's secrets: URL passwords are
 * redacted, and every occurrence of the value of one of the check's secret headers (of at least 4
 * characters), or of its credentials after an auth scheme (`Bearer <credentials>`), becomes
 * `<redacted>`. A target that echoes the request in an error page, or a command that prints its
 * arguments, must not leak them through `GET /result` (platform.md §8).
 *
 * @param headers the check's headers (http checks), or undefined
 */
export function redactMessage(message: string, headers?: Readonly<Record<string, string>>): string {
  let text = message;
  if (headers !== undefined) {
    const secrets: string[] = [];
    for (const [name, value] of Object.entries(headers)) {
      if (!isSecretHeader(name)) continue;
      secrets.push(value);
      const credentials = /^\S+\s+(\S.*)$/.exec(value)?.[1];
      if (credentials !== undefined) secrets.push(credentials);
    }
    // Longest first, so the credentials part never splits a whole value.
    for (const secret of secrets.sort((a, b) => b.length - a.length)) {
      if (secret.length >= SHORTEST_SCRUBBED_SECRET) text = text.split(secret).join(REDACTED);
    }
  }
  return redactUrlPasswords(text);
}

/**
 * Whether some string in a JSON value contains `<redacted>`. Meant for validated definitions
 * (a few levels deep).
 */
export function containsRedacted(value: unknown): boolean {
  if (typeof value === "string") return value.includes(REDACTED);
  if (Array.isArray(value)) return value.some(containsRedacted);
  if (isPlainObject(value)) return Object.values(value).some(containsRedacted);
  return false;
}

/**
 * The rule broken by a `<redacted>` that {@link restoreRedacted} cannot resolve; worded to follow
 * the field's path (`headers.Authorization: <redacted> stands for …`).
 */
export const UNRESOLVED_REDACTED =
  "<redacted> does not match the stored value of an existing healthcheck of this name; send the value itself";

/** The key of `existing` that `key` designates: the same key, or for headers the same name in another case. */
function existingKey(existing: Record<string, unknown>, key: string, parentKey: string | undefined): string {
  if (Object.hasOwn(existing, key) || parentKey !== "headers") return key;
  // Header names are case-insensitive (RFC 9110 §5.1).
  const lower = key.toLowerCase();
  return Object.keys(existing).find((candidate) => candidate.toLowerCase() === lower) ?? key;
}

function restoreAt(
  posted: unknown,
  existing: unknown,
  path: string,
  parentKey: string | undefined,
  key: string | undefined,
): unknown {
  if (typeof posted === "string") {
    if (!posted.includes(REDACTED)) return posted;
    if (typeof existing === "string" && redactedString(existing, parentKey, key) === posted) return existing;
    throw new ValidationError(path, UNRESOLVED_REDACTED);
  }
  if (Array.isArray(posted)) {
    const items = Array.isArray(existing) ? existing : [];
    return posted.map((item, index) => restoreAt(item, items[index], `${path}[${index}]`, key, undefined));
  }
  if (isPlainObject(posted)) {
    const fields = isPlainObject(existing) ? existing : {};
    const result: Record<string, unknown> = {};
    for (const [childKey, child] of Object.entries(posted)) {
      const stored = fields[existingKey(fields, childKey, key)];
      result[childKey] = restoreAt(child, stored, childPath(path, childKey), key, childKey);
    }
    return result;
  }
  return posted;
}

/**
 * Puts stored values back where a posted definition says `<redacted>` (platform.md §8: a
 * definition POSTed back with `<redacted>` keeps the stored value). A string of `posted` that
 * contains `<redacted>` is replaced by the value at the same place (same keys, same array index;
 * a header name may differ in case) of `existing` when the redacted form of that value is exactly
 * the posted string; strings without `<redacted>` are kept as posted.
 *
 * @param posted the JSON form of the posted definition, validated (a few levels deep)
 * @param existing the JSON form of the existing check of the same name (unredacted), or undefined
 *   when there is none
 * @param path where `posted` is, for error paths (`""` for an API body)
 * @returns a copy of `posted` with the stored values put back
 * @throws ValidationError naming the first field whose `<redacted>` cannot be resolved (no
 *   existing check, nothing at that place, or a value whose redacted form differs), with the rule
 *   {@link UNRESOLVED_REDACTED} and no value
 */
export function restoreRedacted(posted: unknown, existing: unknown, path = ""): unknown {
  return restoreAt(posted, existing, path, undefined, undefined);
}
