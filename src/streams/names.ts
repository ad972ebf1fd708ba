/** Stream names: 1–128 characters of `A-Z a-z 0-9 . _ -`. */

const STREAM_NAME = /^[A-Za-z0-9._-]{1,128}$/;

/** The rule stream names follow, worded for errors. */
export const STREAM_NAME_RULE = "must be 1 to 128 characters of A-Z a-z 0-9 . _ -";

/** The name that addresses every stream with `:default true` when pushing; no stream may take it. */
export const DEFAULT_STREAM = "default";

/** Whether `name` is a valid stream name. */
export function isStreamName(name: string): boolean {
  return STREAM_NAME.test(name);
}
