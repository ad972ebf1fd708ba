/**
 * Decoding of the base64 EDN fields of the streams API (docs/streams.md): stream configurations and
 * the where-conditions of index searches and channel subscriptions. Every failure is an
 * {@link InvalidError} naming the field and the reason, with the same wording on every route.
 */
import { errorMessage, InvalidError } from "../../platform/errors.js";
import { type Query, queryValues } from "../../platform/query.js";
import { described, type JsonSchema } from "../../platform/validation.js";
import { CompileError } from "../compile-error.js";
import { compileCondition, type Predicate } from "../condition.js";
import { type EdnValue, parseEdn } from "../edn.js";
import { bodyObject } from "./request.js";

/** Base64 (RFC 4648 §4) or base64url (RFC 4648 §5) alphabet, with optional padding. */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** The JSON Schema of a base64 field holding EDN text (`what` says which). */
export function base64EdnSchema(what: string): JsonSchema {
  return { type: "string", minLength: 1, pattern: BASE64.source, contentEncoding: "base64", description: what };
}

/** The 400 of a field that is not base64 text. */
function notBase64(field: string): InvalidError {
  return new InvalidError(`field ${field}: must be a non-empty base64 string`);
}

/**
 * The `query` parameter of a URL, not decoded yet; `undefined` when absent.
 * @throws InvalidError `field query: must be a non-empty base64 string` when it is repeated (as
 *   for a query field that is not a string)
 */
export function whereQueryParameter(query: Query): string | undefined {
  const values = queryValues(query, "query");
  if (values.length > 1) throw notBase64("query");
  return values[0];
}

/**
 * Decodes a base64 (or base64url) field holding UTF-8 text.
 * @param value the field as received (any JSON value, or a query string value)
 * @param field the field's name, for the message
 * @throws InvalidError `field <field>: must be a non-empty base64 string` when `value` is not one,
 *   `field <field>: must encode UTF-8 text` when the bytes are not valid UTF-8
 */
export function decodeBase64Text(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0 || !BASE64.test(value)) throw notBase64(field);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(value, "base64"));
  } catch {
    throw new InvalidError(`field ${field}: must encode UTF-8 text`);
  }
}

/**
 * Parses EDN text received in a request.
 * @param prefix what the text is, leading the message (`invalid query`, `invalid stream config`)
 * @throws InvalidError `<prefix>: <parser's reason>` when the text is not EDN
 */
export function parseRequestEdn(text: string, prefix: string): EdnValue {
  try {
    return parseEdn(text);
  } catch (error) {
    throw new InvalidError(`${prefix}: ${errorMessage(error)}`);
  }
}

/**
 * Compiles a `query` field: a base64 where-condition, as index searches and channel subscriptions
 * take it (`Wzo9IDpzZXJ2aWNlICJjcHUiXQ==` for `[:= :service "cpu"]`).
 * @param value the field as received
 * @throws InvalidError `field query: ...` for bad base64 or UTF-8, `invalid query: <reason>` for
 *   bad EDN or a condition that does not compile
 */
export function compileWhereQuery(value: unknown): Predicate {
  const condition = parseRequestEdn(decodeBase64Text(value, "query"), "invalid query");
  try {
    return compileCondition(condition, "query");
  } catch (error) {
    if (error instanceof CompileError) throw new InvalidError(`invalid query: ${error.problem}`);
    throw error;
  }
}

/**
 * The body of `POST /api/v1/stream/<name>`: `{"config": "<base64 EDN>"}`, the EDN text decoded
 * (parsed and compiled by the route); other keys are ignored.
 * @throws InvalidError `request body must be a JSON object`, or as {@link decodeBase64Text}
 */
export const streamBody = described(
  (value: unknown, _path: string): { config: string } => ({
    config: decodeBase64Text(bodyObject(value).config, "config"),
  }),
  {
    type: "object",
    properties: { config: base64EdnSchema("the stream's configuration: base64 of an EDN map (docs/streams.md)") },
    required: ["config"],
  },
);

/**
 * The body of an index search: `{"query": "<base64 where-condition>"}`, the query as sent (the
 * route compiles it; a `query` URL parameter takes its place). An absent body gives `{}`.
 * @throws InvalidError `request body must be a JSON object`
 */
export const searchBody = described(
  (value: unknown, _path: string): { query?: unknown } =>
    value === undefined || value === null ? {} : { query: bodyObject(value).query },
  {
    type: "object",
    properties: { query: base64EdnSchema("a where-condition: base64 of EDN text (docs/streams.md)") },
    required: ["query"],
  },
);
