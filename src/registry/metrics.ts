/**
 * The registry's metric (docs/registry.md): `registry_auth_total{result}`, one count per registry
 * token check made by a guard of any module, by outcome.
 */

import type { Registry } from "prom-client";
import type { Auth, AuthOutcome } from "../platform/auth.js";
import { counter } from "../platform/metrics.js";

/** Every outcome, so each series exists (at 0) from the start. */
const OUTCOMES: readonly AuthOutcome[] = ["ok", "missing", "invalid", "expired", "inactive", "forbidden"];

/**
 * Registers `registry_auth_total{result}` in `registry` and feeds it from `auth`'s outcomes. Route
 * decisions made after the guard (a tech user asking for another user's tokens) are not counted:
 * the guard already counted that request as `ok`.
 */
export function countAuthOutcomes(registry: Registry, auth: Auth): void {
  const outcomes = counter(
    registry,
    "registry_auth_total",
    "Registry token checks made by route guards, by result (ok, missing, invalid, expired, inactive, forbidden).",
    ["result"],
  );
  // Label children resolved once: incrementing is then a field update, not a label hash. Each
  // series starts at 0 so that rate() sees the first failure.
  const children = new Map(
    OUTCOMES.map((outcome) => {
      const child = outcomes.labels(outcome);
      child.inc(0);
      return [outcome, child] as const;
    }),
  );
  auth.onOutcome((outcome) => children.get(outcome)?.inc());
}
