/**
 * The state machine of one alert (src/healthchecks/alerts/policy.ts): thresholds, reminders at
 * `repeat`, resolves, flapping, and held triggers.
 */
import { describe, expect, it } from "vitest";
import {
  type AlertPolicy,
  type AlertState,
  apply,
  count,
  type Decision,
  dueOf,
  initialState,
} from "../../../src/healthchecks/alerts/policy.js";

const POLICY: AlertPolicy = {
  output: "team-chat",
  "failure-threshold": 3,
  "success-threshold": 2,
  "send-on-resolved": true,
  description: "",
};

/** Feeds results (true: success) at one per second from `startMs`; returns what was sent or suppressed. */
function run(
  state: AlertState,
  policy: AlertPolicy,
  results: readonly boolean[],
  options: { startMs?: number; stepMs?: number; suppressed?: (index: number) => boolean } = {},
): string[] {
  const { startMs = 0, stepMs = 1_000, suppressed = () => false } = options;
  const decisions: string[] = [];
  results.forEach((success, index) => {
    const now = startMs + index * stepMs;
    count(state, success);
    const due = dueOf(state, policy, now);
    if (due === "none") return;
    const decision: Decision = apply(state, due, policy, now, suppressed(index));
    if (decision.action !== "none") decisions.push(`${decision.action} ${decision.status}@${index}`);
  });
  return decisions;
}

describe("the alert state machine", () => {
  it("triggers once after three consecutive failures", () => {
    const state = initialState();
    expect(run(state, POLICY, [false, false, false, false, false, false])).toEqual(["send triggered@2"]);
    expect(state).toMatchObject({ triggered: true, sinceMs: 2_000, lastSentMs: 2_000, notified: true });
  });

  it("resolves once after two consecutive successes, and sends nothing then", () => {
    const state = initialState();
    expect(run(state, POLICY, [false, false, false, true, true, true, true])).toEqual([
      "send triggered@2",
      "send resolved@4",
    ]);
    expect(state.triggered).toBe(false);
  });

  it("sends nothing for a check flapping under the thresholds", () => {
    const state = initialState();
    const flapping = Array.from({ length: 100 }, (_, index) => index % 3 === 2);
    expect(run(state, POLICY, flapping)).toEqual([]);
    // Triggered, then one success among failures: no resolve.
    const down = initialState();
    expect(run(down, POLICY, [false, false, false, true, false, true, false])).toEqual(["send triggered@2"]);
  });

  it("sends a reminder every repeat while triggered", () => {
    const state = initialState();
    const policy = { ...POLICY, repeat: { text: "10s", milliseconds: 10_000 } };
    const failures = Array.from({ length: 35 }, () => false);
    expect(run(state, policy, failures)).toEqual([
      "send triggered@2",
      "send reminder@12",
      "send reminder@22",
      "send reminder@32",
    ]);
  });

  it("uses its own thresholds, and sends no resolve without send-on-resolved", () => {
    const state = initialState();
    const policy = { ...POLICY, "failure-threshold": 1, "success-threshold": 1, "send-on-resolved": false };
    expect(run(state, policy, [false, true, false])).toEqual(["send triggered@0", "send triggered@2"]);
  });

  it("records a trigger held back by a dependency as suppressed, then sends it once no parent is down", () => {
    const state = initialState();
    const results = [false, false, false, false, false, false];
    expect(run(state, POLICY, results, { suppressed: (index) => index < 4 })).toEqual([
      "suppress triggered@2",
      "send triggered@4",
    ]);
  });

  it("sends no resolve for a trigger that never went out", () => {
    const state = initialState();
    expect(run(state, POLICY, [false, false, false, true, true], { suppressed: () => true })).toEqual([
      "suppress triggered@2",
    ]);
    expect(state).toMatchObject({ triggered: false, notified: false });
  });

  it("still sends the resolve of a sent trigger while a parent is down", () => {
    const state = initialState();
    expect(run(state, POLICY, [false, false, false, true, true], { suppressed: (index) => index > 2 })).toEqual([
      "send triggered@2",
      "send resolved@4",
    ]);
  });

  it("suppresses reminders while a parent is down, keeping their rhythm", () => {
    const state = initialState();
    const policy = { ...POLICY, repeat: { text: "5s", milliseconds: 5_000 } };
    const failures = Array.from({ length: 13 }, () => false);
    expect(run(state, policy, failures, { suppressed: (index) => index >= 5 && index < 10 })).toEqual([
      "send triggered@2",
      "suppress reminder@7",
      "send reminder@12",
    ]);
  });
});
