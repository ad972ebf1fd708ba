/**
 * The registry's metric (docs/registry.md): `registry_auth_total{result}`, one count per registry
 * token check made by a guard of any module, by outcome.
 */

import type { Registry } from "prom-client";
import type { Auth, AuthOutcome } from "../platform/auth.js";
import { counter, countersAtZero } from "../platform/metrics.js";

/** Every outcome, so each series exists (at 0) from the start. */
const OUTCOMES: readonly AuthOutcome[] = ["ok", "missing", "invalid", "expired", "inactive", "forbidden"];

/**
 * Registers `registry_auth_total{result}` in `registry` and feeds it from `auth`'s outcomes. Route
 * decisions made after the guard (a tech user asking for another user's tokens) are not counted:
 * the guard already counted that request as `ok`.
 */
export function countAuthOutcomes(registry: Registry, auth: Auth): void {
  const help =
    "Registry token checks made by route guards, by result (ok, missing, invalid, expired, inactive, forbidden).";
  const children = countersAtZero(counter(registry, "registry_auth_total", help, ["result"]), OUTCOMES);
  auth.onOutcome((outcome) => children.get(outcome)?.inc());
}
