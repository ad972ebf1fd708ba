/**
 * The state machine of one alert of one healthcheck (docs/alerts.md): consecutive failures and
 * successes are counted on every result; past `failure-threshold` failures the alert triggers and
 * sends once, then every `repeat` while it stays triggered, and past `success-threshold` successes it
 * resolves (sending a resolve when `send-on-resolved`). Results under the thresholds (a flapping
 * check) send nothing.
 *
 * Plain TypeScript, no I/O: the evaluator (evaluator.ts) feeds it results, asks the gates
 * (maintenance, dependencies) only when something is due, and stores and sends what it decides.
 * Nothing here allocates per result.
 */
import type { Duration } from "../../platform/duration.js";

/** One alert of a check, as its definition (or `healthchecks.default-alerts`) gives it. */
export interface AlertPolicy {
  /** The name of the output (a declared notifier) the notifications go to. */
  readonly output: string;
  /** Consecutive failed results that trigger the alert; at least 1. */
  readonly "failure-threshold": number;
  /** Consecutive successful results that resolve it; at least 1. */
  readonly "success-threshold": number;
  /** Whether a resolve is sent when it resolves. */
  readonly "send-on-resolved": boolean;
  /** How often a reminder is sent while it stays triggered; absent: never. */
  readonly repeat?: Duration;
  /** The message of its notifications; empty: the message of the last result. */
  readonly description: string;
}

/**
 * What one alert remembers. The counters live in memory only (after a restart they count again
 * from zero); the rest is stored at each transition, so a restart neither sends a trigger twice
 * nor forgets one.
 */
export interface AlertState {
  /** Consecutive failed results, up to now. */
  failures: number;
  /** Consecutive successful results, up to now. */
  successes: number;
  /** Whether the alert is triggered. */
  triggered: boolean;
  /** When it triggered, milliseconds since the epoch (meaningful while triggered). */
  sinceMs: number;
  /**
   * When its trigger or its last reminder was due, sent or suppressed: reminders are due
   * `repeat` after it.
   */
  lastDueMs: number;
  /** When a notification of it was last sent (undefined: never). */
  lastSentMs: number | undefined;
  /**
   * Whether the trigger of the current episode was sent. A trigger held back by a dependency is
   * sent on a later result once no parent is down, and a resolve is sent only for a trigger that
   * was.
   */
  notified: boolean;
}

/** A fresh state: nothing counted, not triggered. */
export function initialState(): AlertState {
  return {
    failures: 0,
    successes: 0,
    triggered: false,
    sinceMs: 0,
    lastDueMs: 0,
    lastSentMs: undefined,
    notified: false,
  };
}

/**
 * What a result makes due for an alert:
 * - `trigger`: `failure-threshold` consecutive failures reached while not triggered;
 * - `late-trigger`: triggered, but its trigger was held back (a parent was down) and is not sent yet;
 * - `reminder`: triggered and notified, `repeat` elapsed since the last trigger or reminder;
 * - `resolve`: triggered and `success-threshold` consecutive successes reached;
 * - `none`: nothing.
 */
export type Due = "none" | "trigger" | "late-trigger" | "reminder" | "resolve";

/** Counts one result. */
export function count(state: AlertState, success: boolean): void {
  if (success) {
    state.successes++;
    state.failures = 0;
  } else {
    state.failures++;
    state.successes = 0;
  }
}

/** What is due for `state` under `policy` at `nowMs` (milliseconds since the epoch), after {@link count}. */
export function dueOf(state: AlertState, policy: AlertPolicy, nowMs: number): Due {
  if (!state.triggered) return state.failures >= policy["failure-threshold"] ? "trigger" : "none";
  if (state.successes >= policy["success-threshold"]) return "resolve";
  if (!state.notified) return "late-trigger";
  const repeat = policy.repeat?.milliseconds;
  return repeat !== undefined && nowMs - state.lastDueMs >= repeat ? "reminder" : "none";
}

/**
 * What becomes of a due transition:
 * - `send`: a notification goes to the output, with `status`;
 * - `suppress`: it is recorded as suppressed (a parent is down), not sent;
 * - `none`: nothing is sent nor recorded (a late trigger still held back, a resolve of an alert
 *   whose trigger never went out or that does not send resolves).
 */
export type Decision =
  | { readonly action: "send" | "suppress"; readonly status: "triggered" | "reminder" | "resolved" }
  | { readonly action: "none" };

const NOTHING: Decision = { action: "none" };
const SEND_TRIGGER: Decision = { action: "send", status: "triggered" };
const SUPPRESS_TRIGGER: Decision = { action: "suppress", status: "triggered" };
const SEND_REMINDER: Decision = { action: "send", status: "reminder" };
const SUPPRESS_REMINDER: Decision = { action: "suppress", status: "reminder" };
const SEND_RESOLVE: Decision = { action: "send", status: "resolved" };

/**
 * Applies a due transition (not `none`) to `state` and says what to send. The caller checks
 * maintenance first: during a window nothing is applied, and the transition is due again on the
 * next result after it.
 *
 * A resolve is sent even while a parent is down: a receiver told of the trigger must not keep the
 * alert open.
 *
 * @param suppressed whether a parent of the check is down (docs/alerts.md, dependencies)
 */
export function apply(
  state: AlertState,
  due: Exclude<Due, "none">,
  policy: AlertPolicy,
  nowMs: number,
  suppressed: boolean,
): Decision {
  switch (due) {
    case "trigger":
      state.triggered = true;
      state.sinceMs = nowMs;
      state.lastDueMs = nowMs;
      state.notified = !suppressed;
      if (suppressed) return SUPPRESS_TRIGGER;
      state.lastSentMs = nowMs;
      return SEND_TRIGGER;
    case "late-trigger":
      if (suppressed) return NOTHING;
      state.notified = true;
      state.lastDueMs = nowMs;
      state.lastSentMs = nowMs;
      return SEND_TRIGGER;
    case "reminder":
      state.lastDueMs = nowMs;
      if (suppressed) return SUPPRESS_REMINDER;
      state.lastSentMs = nowMs;
      return SEND_REMINDER;
    case "resolve": {
      const announced = state.notified;
      state.triggered = false;
      state.notified = false;
      if (!announced || !policy["send-on-resolved"]) return NOTHING;
      state.lastSentMs = nowMs;
      return SEND_RESOLVE;
    }
  }
}
