/**
 * A refusal's reason as the service words it: HTTP services answer a JSON error (Matrix
 * `{errcode, error}`, PagerDuty `{message, errors}`), which says more in a log than a status.
 */
import type { AttemptResult } from "../delivery.js";

/** The longest reason kept, in characters (a log line, not a document). */
const MAX_REASON = 300;

/**
 * `result`, with the reason of a refusal extended by what `describe` reads in the answer's JSON
 * (`HTTP 400: M_FORBIDDEN: …`); results that are not refusals, and answers that are not JSON (or
 * were cut), are returned as they are.
 * @param describe the service's reason in a parsed answer, or `undefined` when it has none
 */
export function withServiceReason(
  result: AttemptResult,
  describe: (answer: Record<string, unknown>) => string | undefined,
): AttemptResult {
  if (result.kind !== "rejected") return result;
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.answer);
  } catch {
    return result;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return result;
  const reason = describe(Object.fromEntries(Object.entries(parsed)));
  if (reason === undefined || reason === "") return result;
  return { ...result, reason: `${result.reason}: ${reason}`.slice(0, MAX_REASON) };
}

/** A field of an answer as text, when it is a non-empty string. */
export function textField(answer: Record<string, unknown>, key: string): string | undefined {
  const value = answer[key];
  return typeof value === "string" && value !== "" ? value : undefined;
}
