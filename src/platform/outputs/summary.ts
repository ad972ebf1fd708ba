/**
 * The one-line text of an event that the `slack` and `text` formats send and that Alertmanager
 * shows as an alert's summary (docs/outputs.md).
 */
import type { Event } from "./event.js";

/** How a missing (or non-scalar) `service`, `state` or `host` reads in a summary. */
export const UNKNOWN_PART = "unknown";

/**
 * A scalar field as text: a string as it is, a number or boolean as `String` writes it;
 * `undefined` for anything else (absent, null, a list, an object).
 */
export function scalarText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
}

function part(value: unknown): string {
  return scalarText(value) ?? UNKNOWN_PART;
}

/**
 * The event's `description` when it is a string, else `<service> is <state> on <host>` (each part
 * a string or number as written in the event, `unknown` when absent), e.g. `cpu is critical on web-1`.
 */
export function summaryOf(event: Event): string {
  const description = event.description;
  if (typeof description === "string") return description;
  return `${part(event.service)} is ${part(event.state)} on ${part(event.host)}`;
}
