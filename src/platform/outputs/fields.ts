/**
 * Field validators that several output types share (docs/configuration.md): http(s) URLs and
 * request headers, both of which may carry secrets and are never echoed in an error. In a file of
 * their own so that each type's file (notifiers/) can use them without importing config.ts, which
 * imports those files.
 */
import * as v from "../validation.js";

const URL_RULE = "must be an http or https URL";

/** An http(s) URL; it may carry `user:password@` (or a token in its path), so the value is never echoed. */
export const httpUrl: v.Validator<string> = v.secret((value, path) => {
  if (typeof value === "string") {
    try {
      const url = new URL(value);
      if ((url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "") return value;
    } catch {
      // refused below
    }
  }
  throw new v.ValidationError(path, URL_RULE, value);
});

/** A header name (RFC 9110 §5.1 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Request headers: names checked, values (often secrets) never echoed; no line breaks. */
export const headers: v.Validator<Record<string, string>> = (value, path) => {
  // The value is not echoed: a header line written as a string would carry its secret.
  if (!v.isPlainObject(value)) throw new v.ValidationError(path, "must be a map of header names to string values");
  const result: Record<string, string> = {};
  for (const [name, item] of Object.entries(value)) {
    const where = v.childPath(path, name);
    if (!HEADER_NAME.test(name)) throw new v.ValidationError(where, "is not a valid header name");
    if (typeof item !== "string" || /[\r\n\0]/.test(item)) {
      throw new v.ValidationError(where, "must be a string without line breaks");
    }
    result[name] = item;
  }
  return result;
};
