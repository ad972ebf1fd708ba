/**
 * The heartbeat tracker with a controlled clock and timer (docs/healthchecks.md, "Heartbeat
 * checks"): period and cron schedules (daylight-saving changes in Europe/Paris included), late →
 * down, a start without its end past max-duration, exit statuses, overlapping runs paired by rid,
 * and 10 000 heartbeats on one timer.
 */
import { describe, expect, it } from "vitest";
import { validateDefinition, viewOf } from "../../../src/healthchecks/definition.js";
import { bodyText, MAX_PING_BODY_BYTES, PingRateLimiter, signalOf } from "../../../src/healthchecks/heartbeat/pings.js";
import { gapMs, nextExpected, rhythmOf } from "../../../src/healthchecks/heartbeat/schedule.js";
import {
  type HeartbeatEvent,
  HeartbeatTracker,
  MAX_OPEN_RUNS,
  type PingSignal,
  type TrackerTimers,
} from "../../../src/healthchecks/heartbeat/tracker.js";
import { resultEvent } from "../../../src/healthchecks/result-events.js";
import type { HealthcheckResult } from "../../../src/healthchecks/results.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };
const MINUTE = 60_000;
const HOUR = 3_600_000;

function rhythm(fields: Record<string, unknown>) {
  const definition = validateDefinition("heartbeat", { name: "job", ...fields }, RULES, { unknownKeys: "ignore" });
  if (definition.kind !== "heartbeat") throw new Error("not a heartbeat");
  return rhythmOf(definition);
}

/** A clock and a timer that only move when the test says so. */
class FakeTime implements TrackerTimers {
  now = Date.parse("2026-03-01T00:00:00Z");
  pending: { callback: () => void; at: number } | undefined;
  armed = 0;

  set(callback: () => void, delayMs: number): unknown {
    this.armed++;
    this.pending = { callback, at: this.now + delayMs };
    return this.pending;
  }

  clear(handle: unknown): void {
    if (this.pending === handle) this.pending = undefined;
  }

  /** Moves the clock by `ms`, firing the timer each time it comes due. */
  advance(ms: number): void {
    const end = this.now + ms;
    while (this.pending !== undefined && this.pending.at <= end) {
      const { callback, at } = this.pending;
      this.pending = undefined;
      this.now = Math.max(this.now, at);
      callback();
    }
    this.now = end;
  }
}

function setup() {
  const time = new FakeTime();
  const events: HeartbeatEvent[] = [];
  const tracker = new HeartbeatTracker({ now: () => time.now, timers: time, onEvent: (event) => events.push(event) });
  const ping = (signal: PingSignal, body = "", rid?: string) =>
    tracker.ping("job", { signal, body, timeMs: time.now, ...(rid === undefined ? {} : { rid }) });
  const results = () => events.filter((event) => event.type === "result");
  return { time, events, tracker, ping, results };
}

const SUCCESS: PingSignal = { kind: "success" };
const START: PingSignal = { kind: "start" };

describe("a heartbeat with a period", () => {
  it("is new until its first ping, then up, late after the period and down after the grace", () => {
    const { time, tracker, ping, results, events } = setup();
    tracker.track("job", rhythm({ period: "1m", grace: "30s" }));
    expect(tracker.stateOf("job")).toBe("new");
    // A new heartbeat has no deadline: nothing happens however long it waits.
    time.advance(10 * HOUR);
    expect(tracker.stateOf("job")).toBe("new");
    expect(events).toEqual([]);

    ping(SUCCESS);
    expect(tracker.stateOf("job")).toBe("up");
    time.advance(MINUTE - 1);
    expect(tracker.stateOf("job")).toBe("up");
    time.advance(1);
    expect(tracker.stateOf("job")).toBe("late");
    expect(events.at(-1)).toMatchObject({ type: "state", state: "late" });
    time.advance(30_000 - 1);
    expect(tracker.stateOf("job")).toBe("late");
    time.advance(1);
    expect(tracker.stateOf("job")).toBe("down");
    const missed = results().at(-1);
    expect(missed).toMatchObject({ success: false, state: "down" });
    expect(missed?.message).toBe(
      "no ping: one was expected at 2026-03-01T10:01:00.000Z, grace of 30s passed; last ping at 2026-03-01T10:00:00.000Z",
    );
    // Each further missed period is one more failure, not a burst.
    time.advance(MINUTE);
    expect(results().filter((event) => !event.success)).toHaveLength(2);
    ping(SUCCESS);
    expect(tracker.stateOf("job")).toBe("up");
  });

  it("makes one failure per missed period while down, keeping its phase", () => {
    const { time, tracker, ping, results } = setup();
    tracker.track("job", rhythm({ period: "1m", grace: "10s" }));
    ping(SUCCESS);
    const lastPing = time.now;
    time.advance(7 * 24 * HOUR);
    // One failure per missed period (at 1m30s, 2m30s, ...): 7 days of minutes but the first 30 s.
    expect(results().filter((event) => !event.success)).toHaveLength(10_079);
    const snapshot = tracker.snapshotOf("job");
    expect(((snapshot?.expectedMs ?? 0) - lastPing) % MINUTE).toBe(0);
  });

  it("judges a restored state whose deadline passed while the server was down", () => {
    const time = new FakeTime();
    const events: HeartbeatEvent[] = [];
    const tracker = new HeartbeatTracker({
      now: () => time.now,
      timers: time,
      paused: true,
      onEvent: (e) => events.push(e),
    });
    tracker.track("job", rhythm({ period: "1m", grace: "1m" }), {
      state: "up",
      lastPingMs: time.now - 10 * MINUTE,
      expectedMs: time.now - 9 * MINUTE,
      runs: [],
    });
    // Paused: nothing judged before the module is ready.
    expect(tracker.stateOf("job")).toBe("up");
    tracker.resume();
    time.advance(0);
    expect(tracker.stateOf("job")).toBe("down");
    expect(events.filter((event) => event.type === "result")).toHaveLength(1);
    expect(tracker.snapshotOf("job")?.expectedMs).toBeGreaterThan(time.now - MINUTE);
  });
});

describe("runs: start, end, exit statuses, max-duration", () => {
  it("pairs a start with its end and gives the run's duration", () => {
    const { time, tracker, ping, results } = setup();
    tracker.track("job", rhythm({ period: "1h" }));
    ping(START);
    expect(tracker.stateOf("job")).toBe("started");
    expect(results().at(-1)).toMatchObject({ success: true, message: "started", durationMs: 0 });
    time.advance(90_000);
    ping(SUCCESS, "3 files copied");
    expect(results().at(-1)).toMatchObject({
      success: true,
      message: "3 files copied",
      durationMs: 90_000,
      state: "up",
    });
  });

  it.each([
    [0, true, "success"],
    [1, false, "the job exited with status 1"],
    [255, false, "the job exited with status 255"],
  ])("takes exit status %i as %s", (status, success, message) => {
    const { tracker, ping, results } = setup();
    tracker.track("job", rhythm({ period: "1h" }));
    ping({ kind: "exit", status });
    expect(results().at(-1)).toMatchObject({ success, message, state: success ? "up" : "down" });
  });

  it("is down when a started run outlives max-duration", () => {
    const { time, tracker, ping, results } = setup();
    tracker.track("job", rhythm({ period: "1h", "max-duration": "5m" }));
    ping(START);
    time.advance(5 * MINUTE - 1);
    expect(tracker.stateOf("job")).toBe("started");
    time.advance(1);
    expect(tracker.stateOf("job")).toBe("down");
    expect(results().at(-1)?.message).toBe(
      "the run started at 2026-03-01T00:00:00.000Z did not end within max-duration (5m)",
    );
    // The run is closed: an end without a start afterwards has no duration.
    ping(SUCCESS);
    expect(results().at(-1)).toMatchObject({ success: true, durationMs: 0, state: "up" });
  });

  it("pairs overlapping runs by rid", () => {
    const { time, tracker, ping, results } = setup();
    tracker.track("job", rhythm({ period: "1h" }));
    const first = "0b6a4c4e-7b8f-4d2a-9f51-0d1f0f7a1b01";
    const second = "0b6a4c4e-7b8f-4d2a-9f51-0d1f0f7a1b02";
    ping(START, "", first);
    time.advance(10_000);
    ping(START, "", second);
    time.advance(5_000);
    ping({ kind: "fail" }, "", first);
    expect(results().at(-1)).toMatchObject({ success: false, durationMs: 15_000 });
    time.advance(1_000);
    ping(SUCCESS, "", second);
    expect(results().at(-1)).toMatchObject({ success: true, durationMs: 6_000, state: "up" });
    expect(tracker.snapshotOf("job")?.runs).toEqual([]);
  });

  it("keeps a bounded number of open runs", () => {
    const { tracker, ping } = setup();
    tracker.track("job", rhythm({ period: "1h" }));
    for (let index = 0; index < MAX_OPEN_RUNS + 10; index++) ping(START);
    expect(tracker.snapshotOf("job")?.runs).toHaveLength(MAX_OPEN_RUNS);
  });

  it("keeps a log ping out of the state", () => {
    const { tracker, ping, events } = setup();
    tracker.track("job", rhythm({ period: "1h" }));
    ping(SUCCESS);
    ping({ kind: "log" }, "halfway");
    expect(tracker.stateOf("job")).toBe("up");
    expect(events.at(-1)).toMatchObject({ type: "log", message: "halfway" });
  });
});

describe("cron schedules", () => {
  it("expects the next occurrence in the time zone", () => {
    const daily = rhythm({ schedule: "30 2 * * *", timezone: "Europe/Paris" });
    // 2026-02-10 02:31 in Paris (UTC+1) → the next day at 02:30 Paris = 01:30 UTC.
    expect(new Date(nextExpected(daily, Date.parse("2026-02-10T01:31:00Z"))).toISOString()).toBe(
      "2026-02-11T01:30:00.000Z",
    );
  });

  it("handles the spring change in Europe/Paris (02:30 does not exist on 2026-03-29)", () => {
    const daily = rhythm({ schedule: "30 2 * * *", timezone: "Europe/Paris" });
    const after = nextExpected(daily, Date.parse("2026-03-28T01:30:00Z"));
    // The skipped time comes at the end of the gap: 03:00 Paris summer time (01:00 UTC), once.
    expect(new Date(after).toISOString()).toBe("2026-03-29T01:00:00.000Z");
    const next = nextExpected(daily, after);
    expect(new Date(next).toISOString()).toBe("2026-03-30T00:30:00.000Z");
    // A day of 23 hours, then back to 24.
    expect(gapMs(daily, Date.parse("2026-03-28T02:00:00Z"))).toBe(next - after);
  });

  it("handles the autumn change in Europe/Paris (02:30 happens twice on 2026-10-25, expected once)", () => {
    const daily = rhythm({ schedule: "30 2 * * *", timezone: "Europe/Paris" });
    const first = nextExpected(daily, Date.parse("2026-10-24T01:00:00Z"));
    expect(new Date(first).toISOString()).toBe("2026-10-25T00:30:00.000Z");
    const second = nextExpected(daily, first);
    // Not again an hour later (02:30 winter time): the next day at 02:30 UTC+1.
    expect(new Date(second).toISOString()).toBe("2026-10-26T01:30:00.000Z");
    expect(second - first).toBe(25 * HOUR);
  });

  it("judges a daily cron job across the spring change with a controlled clock", () => {
    const { time, tracker, ping, results } = setup();
    tracker.track("job", rhythm({ schedule: "30 2 * * *", timezone: "Europe/Paris", grace: "15m" }));
    time.now = Date.parse("2026-03-28T01:31:00Z");
    ping(SUCCESS);
    time.advance(Date.parse("2026-03-29T01:00:00Z") - time.now - 1);
    expect(tracker.stateOf("job")).toBe("up");
    time.advance(1);
    expect(tracker.stateOf("job")).toBe("late");
    time.advance(15 * MINUTE);
    expect(tracker.stateOf("job")).toBe("down");
    expect(results().at(-1)?.message).toContain("one was expected at 2026-03-29T01:00:00.000Z");
  });
});

describe("10 000 heartbeats", () => {
  it("share one heap and one timer", () => {
    const { time, tracker } = setup();
    const everyMinute = rhythm({ period: "1m", grace: "30s" });
    for (let index = 0; index < 10_000; index++) {
      tracker.track(`job-${index}`, everyMinute);
      tracker.ping(`job-${index}`, { signal: SUCCESS, body: "", timeMs: time.now + index });
    }
    expect(tracker.stats).toMatchObject({ deadlines: 10_000, timerPending: true });
    // Pings of jobs whose deadline is not the earliest do not re-arm the timer.
    expect(time.armed).toBeLessThanOrEqual(2);
    const armed = time.armed;
    // At rest nothing runs: the one timer waits for the earliest deadline, a minute away.
    expect(time.pending?.at).toBe(time.now + MINUTE);
    time.advance(MINUTE + 9_999);
    // Every heartbeat became late, one timer firing each time the earliest comes due.
    expect(tracker.stateOf("job-0")).toBe("late");
    expect(tracker.stateOf("job-9999")).toBe("late");
    expect(time.armed - armed).toBeLessThanOrEqual(10_001);
    expect(tracker.stats.deadlines).toBe(10_000);
  });
});

describe("pings", () => {
  it("reads the signal of the path", () => {
    expect(signalOf(undefined)).toEqual({ kind: "success" });
    expect(signalOf("start")).toEqual({ kind: "start" });
    expect(signalOf("0")).toEqual({ kind: "exit", status: 0 });
    expect(signalOf("255")).toEqual({ kind: "exit", status: 255 });
    for (const segment of ["256", "007", "-1", "1.0", "abc", "1e2"]) expect(signalOf(segment)).toBeUndefined();
  });

  it("keeps the first 100 KiB of a body and replaces invalid UTF-8", () => {
    const long = Buffer.alloc(MAX_PING_BODY_BYTES + 5_000, "a");
    expect(bodyText(long)).toHaveLength(MAX_PING_BODY_BYTES);
    expect(bodyText(Buffer.from([0x6f, 0x6b, 0xff, 0x21]))).toBe("ok\uFFFD!");
    expect(bodyText(undefined)).toBe("");
  });

  it("allows 10 pings per second per key", () => {
    const limiter = new PingRateLimiter(10, 3);
    for (let index = 0; index < 10; index++) expect(limiter.take("k", 1_000)).toBe(0);
    expect(limiter.take("k", 1_999)).toBe(1);
    expect(limiter.take("other", 1_999)).toBe(0);
    expect(limiter.take("k", 2_000)).toBe(0);
    // Bounded: a fourth key makes room.
    limiter.take("a", 3_000);
    limiter.take("b", 3_000);
    limiter.take("c", 3_000);
    expect(limiter.size).toBeLessThanOrEqual(3);
  });
});

describe("stream events of heartbeat results", () => {
  const heartbeat = (fields: Record<string, unknown>) => {
    const definition = validateDefinition("heartbeat", { name: "job", ...fields }, RULES, { unknownKeys: "ignore" });
    const result: HealthcheckResult = {
      name: "job",
      configuration: viewOf(definition, "api"),
      success: true,
      timestamp: "2026-03-28T02:00:00.000Z",
      message: "é".repeat(40 * 1024),
      duration: 0,
      state: "up",
    };
    return resultEvent(definition, result, undefined);
  };

  it("have host heartbeat and live the period (or the schedule's gap) plus the grace", () => {
    expect(heartbeat({ period: "10m", grace: "5m" })).toMatchObject({
      host: "heartbeat",
      ttl: 900,
      tags: ["healthcheck", "heartbeat"],
    });
    // Around the spring change in Paris: from 03:00 (the end of the skipped hour, 01:00 UTC) on
    // the 29th to 02:30 (00:30 UTC) on the 30th is 23 h 30 min, plus the grace.
    expect(heartbeat({ schedule: "30 2 * * *", timezone: "Europe/Paris", grace: "1h" }).ttl).toBe(24.5 * 3600);
  });

  it("carry the first 64 KiB of the message, whole characters", () => {
    const description = String(heartbeat({ period: "1h" }).description);
    expect(Buffer.byteLength(description)).toBe(64 * 1024);
    expect(description).toBe("é".repeat(32 * 1024));
  });
});
