/**
 * What of a healthcheck definition is a secret, and how it is hidden (no secrets in responses or
 * logs, docs/security.md, "Files and secrets"):
 *
 * - the value of an http check's header whose name is `Authorization`, `Proxy-Authorization`,
 *   `Cookie`, or contains `token`, `secret`, `key`, `password` or `auth` (any case) becomes
 *   `<redacted>` as a whole;
 * - by the same name rule, the value of a query parameter (of the `query` object, and of the query
 *   string of `path`: `/x?api_key=k` → `/x?api_key=<redacted>`) and of a top-level field of the
 *   `body` when the body is a JSON object (`{"password":"p","user":"u"}` →
 *   `{"password":"<redacted>","user":"u"}`, whatever the field's type; the rest of the body is kept
 *   byte for byte);
 * - the password of a URL `scheme://user:password@host` (or `//user:password@host`) becomes
 *   `<redacted>` in every string value of a definition (body, path, query values, header values,
 *   description, labels, command arguments…): `https://ann:s3cret@example.org/x` →
 *   `https://ann:<redacted>@example.org/x`. A URL with a user and no (or an empty) password stays
 *   as it is.
 *
 * Object keys (header names, query parameter names, label names) are names, not values: they are
 * never redacted. A definition POSTed back with `<redacted>` keeps the stored value:
 * {@link restoreRedacted} puts it back, so GET → edit → POST round-trips (a JSON body field by
 * field, so the rest of the body may be edited; a path as a whole).
 *
 * Plain data in, plain data out: no Fastify, no SQL, no definition types (definition.ts uses it).
 */
import { escapeHtml } from "../platform/html.js";
import { isSecretName } from "../platform/redaction.js";
import { childPath, isPlainObject, ValidationError } from "../platform/validation.js";

/** What a secret is replaced with (docs/security.md). */
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
 * Whether the value of a header of this name is a secret (docs/security.md): `Authorization`,
 * `Proxy-Authorization`, `Cookie`, or a name containing `token`, `secret`, `key`, `password` or
 * `auth`, in any case (`X-API-Key`, `x-auth-user`, `X-Vault-Token`).
 */
export function isSecretHeader(name: string): boolean {
  return isSecretName(name);
}

/**
 * `text` with the password of every URL `//user:password@` replaced by `<redacted>`
 * (docs/security.md): `postgres://app:pw@db/x` → `postgres://app:<redacted>@db/x`. A URL without a
 * password (`https://ann@example.org`) and text without URLs come back unchanged.
 */
export function redactUrlPasswords(text: string): string {
  if (!text.includes("//")) return text;
  return text.replace(URL_PASSWORD, (_match, user: string) => `//${user}:${REDACTED}@`);
}

/** A top-level field of a JSON object text: its name and where its value's text starts and ends. */
interface JsonField {
  readonly name: string;
  /** Index of the value's first character. */
  readonly start: number;
  /** Index after the value's last character. */
  readonly end: number;
}

const JSON_WHITE_SPACE = new Set([" ", "\t", "\n", "\r"]);

function skipWhiteSpace(text: string, index: number): number {
  let at = index;
  while (JSON_WHITE_SPACE.has(text.charAt(at))) at += 1;
  return at;
}

/** The index after the JSON string that starts at `index` (a `"`). */
function stringEnd(text: string, index: number): number {
  for (let at = index + 1; at < text.length; at += 1) {
    const character = text[at];
    if (character === "\\") at += 1;
    else if (character === '"') return at + 1;
  }
  return text.length;
}

/** The index after the JSON value that starts at `index`. */
function valueEnd(text: string, index: number): number {
  const first = text[index];
  if (first === '"') return stringEnd(text, index);
  if (first !== "{" && first !== "[") {
    let at = index;
    while (at < text.length && !/[\s,}\]]/.test(text.charAt(at))) at += 1;
    return at;
  }
  let depth = 0;
  for (let at = index; at < text.length; at += 1) {
    const character = text[at];
    if (character === '"') at = stringEnd(text, at) - 1;
    else if (character === "{" || character === "[") depth += 1;
    else if ((character === "}" || character === "]") && --depth === 0) return at + 1;
  }
  return text.length;
}

/**
 * The top-level fields of `text` when it is a JSON object (RFC 8259), in order (a repeated name
 * appears each time), or undefined when it is not one. Reads the text itself rather than
 * `JSON.parse`'s result, so that what is not redacted stays byte for byte (number precision,
 * spacing, key order).
 */
function jsonObjectFields(text: string): JsonField[] | undefined {
  const start = skipWhiteSpace(text, 0);
  if (text[start] !== "{") return undefined;
  try {
    // The scan below assumes valid JSON.
    JSON.parse(text);
  } catch {
    return undefined;
  }
  const fields: JsonField[] = [];
  let at = skipWhiteSpace(text, start + 1);
  while (text[at] === '"') {
    const nameEnd = stringEnd(text, at);
    const name: string = JSON.parse(text.slice(at, nameEnd));
    const valueStart = skipWhiteSpace(text, skipWhiteSpace(text, nameEnd) + 1);
    const end = valueEnd(text, valueStart);
    fields.push({ name, start: valueStart, end });
    at = skipWhiteSpace(text, end);
    if (text[at] === ",") at = skipWhiteSpace(text, at + 1);
  }
  return fields;
}

/** `text` with the spans of `replacements` (sorted by position, not overlapping) replaced. */
function spliced(text: string, replacements: readonly { start: number; end: number; by: string }[]): string {
  let result = "";
  let from = 0;
  for (const { start, end, by } of replacements) {
    result += text.slice(from, start) + by;
    from = end;
  }
  return result + text.slice(from);
}

/** The JSON text of `<redacted>`, what a secret field's value becomes. */
const REDACTED_JSON = JSON.stringify(REDACTED);

/**
 * A request body with the value of every secret top-level field (same name rule as headers)
 * replaced by `"<redacted>"`, when the body is a JSON object; anything else comes back unchanged.
 */
function redactJsonBody(body: string): string {
  const fields = jsonObjectFields(body);
  if (fields === undefined) return body;
  const secret = fields.filter((field) => isSecretHeader(field.name));
  return secret.length === 0
    ? body
    : spliced(
        body,
        secret.map((field) => ({ ...field, by: REDACTED_JSON })),
      );
}

/**
 * The query parameters of a path (`/x?a=1&b=2#f`): each `name=value` with its offsets, the name
 * percent-decoded (`+` as a space), as servers read it.
 */
function pathParameters(path: string): { name: string; start: number; end: number }[] {
  const question = path.indexOf("?");
  if (question < 0) return [];
  const hash = path.indexOf("#", question);
  const end = hash < 0 ? path.length : hash;
  const parameters: { name: string; start: number; end: number }[] = [];
  let at = question + 1;
  while (at <= end) {
    const next = path.indexOf("&", at);
    const stop = next < 0 || next > end ? end : next;
    const equals = path.indexOf("=", at);
    if (equals >= 0 && equals < stop) {
      parameters.push({ name: decodeQueryName(path.slice(at, equals)), start: equals + 1, end: stop });
    }
    at = stop + 1;
  }
  return parameters;
}

function decodeQueryName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll("+", " "));
  } catch {
    return name;
  }
}

/** A path with the values of its secret query parameters (same name rule as headers) redacted. */
function redactPathQuery(path: string): string {
  const secret = pathParameters(path).filter((parameter) => isSecretHeader(parameter.name));
  return secret.length === 0
    ? path
    : spliced(
        path,
        secret.map((parameter) => ({ ...parameter, by: REDACTED })),
      );
}

/**
 * The redacted form of one string value found under the key `key` of an object whose own key is
 * `parentKey`: `<redacted>` for a secret header or query parameter value (`headers.Authorization`,
 * `query.api_key`); for an http check's `body` and `path` (fields of a definition, whose
 * `parentKey` is undefined), their secret JSON fields and query parameters redacted; and in every
 * case the URL passwords.
 */
function redactedString(text: string, parentKey: string | undefined, key: string | undefined): string {
  if ((parentKey === "headers" || parentKey === "query") && key !== undefined && isSecretHeader(key)) return REDACTED;
  if (parentKey === undefined && key === "body") return redactUrlPasswords(redactJsonBody(text));
  if (parentKey === undefined && key === "path") return redactUrlPasswords(redactPathQuery(text));
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
 * error) with its secrets replaced by `<redacted>` (docs/security.md): the values of secret headers
 * and query parameters in any `headers` or `query` object, of secret top-level fields of a JSON
 * object `body` and of secret query parameters of a `path`, and URL passwords in every string value. Keys, numbers and booleans
 * are kept; anything nested deeper than 32 levels is replaced whole. The input is not modified.
 */
export function redactSecrets<T>(value: T): T;
// The copy has the shape of the value: only string values change, and a string stays a string.
export function redactSecrets(value: unknown): unknown {
  return redactAt(value, undefined, undefined, 0);
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

/** Shortest secret value searched for in messages: shorter ones would hide common words. */
const SHORTEST_SCRUBBED_SECRET = 4;

/** What of an http check holds secrets a message may echo: its headers, query, path and body. */
export interface SecretSource {
  readonly headers?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string>>;
  readonly path?: string;
  readonly body?: string;
}

/** The secrets of each source, found once (definitions are immutable). */
const secretsBySource = new WeakMap<SecretSource, readonly string[]>();

/**
 * The forms of a JSON field's value a target may echo: its text as sent, and for a string also its
 * text without the quotes (escapes kept, as in an echoed body) and its decoded content.
 */
function fieldValues(body: string, field: JsonField): string[] {
  const text = body.slice(field.start, field.end);
  if (!text.startsWith('"')) return [text];
  const decoded: string = JSON.parse(text);
  return [text, text.slice(1, -1), decoded];
}

/** A value as `application/x-www-form-urlencoded` writes it (URLSearchParams: a space is `+`). */
function formEncoded(value: string): string {
  return new URLSearchParams([["", value]]).toString().slice(1);
}

/**
 * The secret values of a check, and the forms in which a target may echo them: as sent, after an
 * auth scheme (`Bearer <credentials>`), percent-encoded (a URL in an error page, either way Vigie or
 * a browser writes it) and HTML-escaped (the body quoted in a failure message), longest first so
 * that no shorter one splits a longer one.
 */
function secretsOf(source: SecretSource): readonly string[] {
  const known = secretsBySource.get(source);
  if (known !== undefined) return known;
  const values: string[] = [];
  for (const [name, value] of Object.entries(source.headers ?? {})) {
    if (!isSecretHeader(name)) continue;
    values.push(value);
    const credentials = /^\S+\s+(\S.*)$/.exec(value)?.[1];
    if (credentials !== undefined) values.push(credentials);
  }
  for (const [name, value] of Object.entries(source.query ?? {})) if (isSecretHeader(name)) values.push(value);
  const path = source.path ?? "";
  for (const parameter of pathParameters(path)) {
    if (!isSecretHeader(parameter.name)) continue;
    const raw = path.slice(parameter.start, parameter.end);
    values.push(raw, decodeQueryName(raw));
  }
  const body = source.body ?? "";
  for (const field of jsonObjectFields(body) ?? []) {
    if (isSecretHeader(field.name)) values.push(...fieldValues(body, field));
  }
  const forms = new Set<string>();
  for (const value of values) {
    for (const form of [value, encodeURIComponent(value), formEncoded(value), escapeHtml(value)]) {
      if (form.length >= SHORTEST_SCRUBBED_SECRET) forms.add(form);
    }
  }
  const secrets = [...forms].sort((a, b) => b.length - a.length);
  secretsBySource.set(source, secrets);
  return secrets;
}

/**
 * A result or one-off message (docs/healthchecks.md) without the check's secrets: URL passwords are
 * redacted, and every occurrence of a secret value of the check (of at least 4 characters) becomes
 * `<redacted>`: secret header values and their credentials after an auth scheme (`Bearer
 * <credentials>`), secret query parameter values (of `query` and of the path), secret top-level
 * fields of a JSON body, each also percent-encoded and HTML-escaped. A target that echoes the
 * request in an error page, or a command that prints its arguments, must not leak them through
 * `GET /result` (docs/security.md, "What is redacted").
 *
 * @param source the http check (its headers, query, path and body), or undefined for other kinds
 */
export function redactMessage(message: string, source?: SecretSource): string {
  let text = message;
  if (source !== undefined) {
    for (const secret of secretsOf(source)) if (text.includes(secret)) text = text.split(secret).join(REDACTED);
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

/**
 * A posted JSON body with the stored value put back in each secret top-level field that says
 * `"<redacted>"` (the stored field of the same name, its text as stored), so that the rest of the
 * body may be edited; undefined when either body is no JSON object or a field has no stored value.
 */
function restoreJsonBody(posted: string, existing: string): string | undefined {
  const fields = jsonObjectFields(posted);
  const stored = jsonObjectFields(existing);
  if (fields === undefined || stored === undefined) return undefined;
  const replacements: { start: number; end: number; by: string }[] = [];
  for (const field of fields) {
    if (!isSecretHeader(field.name) || posted.slice(field.start, field.end) !== REDACTED_JSON) continue;
    // The last of a repeated name is the one JSON parsers keep.
    const source = stored.findLast((candidate) => candidate.name === field.name);
    if (source === undefined) return undefined;
    replacements.push({ start: field.start, end: field.end, by: existing.slice(source.start, source.end) });
  }
  return spliced(posted, replacements);
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
    if (typeof existing === "string") {
      if (redactedString(existing, parentKey, key) === posted) return existing;
      const body = parentKey === undefined && key === "body" ? restoreJsonBody(posted, existing) : undefined;
      if (body !== undefined && !body.includes(REDACTED)) return body;
    }
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
 * Puts stored values back where a posted definition says `<redacted>` (docs/security.md: a
 * definition POSTed back with `<redacted>` keeps the stored value). A string of `posted` that
 * contains `<redacted>` is replaced by the value at the same place (same keys, same array index;
 * a header name may differ in case) of `existing` when the redacted form of that value is exactly
 * the posted string; strings without `<redacted>` are kept as posted. A JSON object `body` is
 * restored field by field: each secret top-level field posted as `"<redacted>"` takes the stored
 * field's value, and the other fields are kept as posted (edits included).
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
