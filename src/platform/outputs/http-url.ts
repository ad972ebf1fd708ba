/**
 * The http(s) URL validator of outputs' configuration, shared by the output types (`url`) and the
 * notifier types (`homeserver`, `api-url`), whose files the configuration imports.
 */
import * as v from "../validation.js";

const URL_RULE = "must be an http or https URL";

/** An http(s) URL; it may carry `user:password@`, so the value is never echoed. */
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
