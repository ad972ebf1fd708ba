/**
 * Decoding of the base64 EDN fields of the streams API (streams.md §6): stream configurations and
 * the where-conditions (streams.md §3) of index searches and channel subscriptions
 * (streams-io.md §3). Every failure is an {@link HttpError} 400 naming the field and the reason,
 * with the same wording on every route.
 */
import { HttpError } from "../../platform/errors.js";
import { CompileError } from "../compile-error.js";
import { compileCondition, type Predicate } from "../condition.js";
import { type EdnValue, parseEdn } from "../edn.js";

/** Base64 (RFC 4648 §4) or base64url (§5) alphabet, with optional padding. */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * Decodes a base64 (or base64url) field holding UTF-8 text.
 * @param value the field as received (any JSON value, or a query string value)
 * @param field the field's name, for the message
 * @throws HttpError 400 `field <field>: must be a non-empty base64 string` when `value` is not one,
 *   `field <field>: must encode UTF-8 text` when the bytes are not valid UTF-8
 */
export function decodeBase64Text(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0 || !BASE64.test(value)) {
    throw new HttpError(400, `field ${field}: must be a non-empty base64 string`);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(value, "base64"));
  } catch {
    throw new HttpError(400, `field ${field}: must encode UTF-8 text`);
  }
}

/**
 * Parses EDN text received in a request.
 * @param prefix what the text is, leading the message (`invalid query`, `invalid stream config`)
 * @throws HttpError 400 `<prefix>: <parser's reason>` when the text is not EDN
 */
export function parseRequestEdn(text: string, prefix: string): EdnValue {
  try {
    return parseEdn(text);
  } catch (error) {
    throw new HttpError(400, `${prefix}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Compiles a `query` field: a base64 where-condition, as index searches and channel subscriptions
 * take it (`Wzo9IDpzZXJ2aWNlICJjcHUiXQ==` for `[:= :service "cpu"]`).
 * @param value the field as received
 * @throws HttpError 400 `field query: ...` for bad base64 or UTF-8, `invalid query: <reason>` for
 *   bad EDN or a condition that does not compile
 */
export function compileWhereQuery(value: unknown): Predicate {
  const condition = parseRequestEdn(decodeBase64Text(value, "query"), "invalid query");
  try {
    return compileCondition(condition, "query");
  } catch (error) {
    if (error instanceof CompileError) throw new HttpError(400, `invalid query: ${error.problem}`);
    throw error;
  }
}
