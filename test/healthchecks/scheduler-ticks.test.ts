/**
 * The scheduler wakes at most once every 10 ms (TICK_MS) and starts every due run together, never
 * before it is due and at most a tick after (docs/healthchecks.md). Fake timers make every time
 * exact: the assertions compare schedules, not wall-clock measurements.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Scheduler, spreadOf, TICK_MS } from "../../src/healthchecks/scheduler.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("Scheduler wakes", () => {
  it("start 10 000 checks at 10 s in at most 100 wakes a second, none early, none more than a tick late", async () => {
    const checks = 10_000;
    const intervalMs = 10_000;
    const seconds = 30;
    const origin = Date.now();
    const lateness: number[] = [];
    const schedule = new Scheduler({
      maxConcurrency: checks,
      now: () => Date.now(),
      onLateness: (milliseconds) => lateness.push(milliseconds),
    });
    // The instants at which runs started, by simulated second: each is one wake of the timer.
    const wakes = Array.from({ length: seconds }, () => new Set<number>());
    let early = 0;
    let late = 0;
    let runs = 0;
    for (let index = 0; index < checks; index++) {
      const key = `check-${index}`;
      const anchor = origin + spreadOf(key) * intervalMs;
      let count = 0;
      schedule.add(key, intervalMs, async () => {
        const now = Date.now();
        const due = anchor + count++ * intervalMs;
        if (now < due) early++;
        if (now > due + TICK_MS) late++;
        runs++;
        wakes[Math.floor((now - origin) / 1000)]?.add(now);
      });
    }
    await vi.advanceTimersByTimeAsync(seconds * 1000 - 1);
    schedule.stop();
    expect(runs).toBeGreaterThan((checks * seconds * 1000) / intervalMs - checks / 100);
    expect(early).toBe(0);
    expect(late).toBe(0);
    for (const second of wakes) expect(second.size).toBeLessThanOrEqual(1000 / TICK_MS);
    // Runs are about 1 000 a second, so nearly every tick has some.
    expect(Math.min(...wakes.map((second) => second.size))).toBeGreaterThan(90);
    expect(Math.max(...lateness)).toBeLessThanOrEqual(TICK_MS);
    expect(Math.min(...lateness)).toBeGreaterThanOrEqual(0);
  });

  it("start a run due a tick or more after the last wake on time, and one due sooner at the next tick", async () => {
    const starts: Record<string, number[]> = { a: [], b: [], c: [], d: [] };
    // a at 0; b 3 ms later waits for the tick at 10; c at 25 is past that tick, on time; d at 27 waits until 35.
    const delays: Record<string, number> = { a: 0, b: 3, c: 25, d: 27 };
    const lateness: number[] = [];
    const origin = Date.now();
    const schedule = new Scheduler({
      maxConcurrency: 10,
      now: () => Date.now(),
      firstRunDelay: (key) => delays[key] as number,
      onLateness: (milliseconds) => lateness.push(milliseconds),
    });
    for (const key of Object.keys(delays)) {
      schedule.add(key, 1_000, async () => {
        starts[key]?.push(Date.now() - origin);
      });
    }
    await vi.advanceTimersByTimeAsync(1_500);
    schedule.stop();
    // The second round repeats the rhythm: fixed rate from each check's own anchor.
    expect(starts).toEqual({ a: [0, 1_000], b: [10, 1_010], c: [25, 1_025], d: [35, 1_035] });
    expect(lateness).toEqual([0, 7, 0, 8, 0, 7, 0, 8]);
  });

  it("start a check added while idle at once, and one added just after a wake at the next tick", async () => {
    const origin = Date.now();
    const starts: number[] = [];
    const schedule = new Scheduler({ maxConcurrency: 1, now: () => Date.now(), spread: () => 0 });
    schedule.add("first", 60_000, async () => {
      starts.push(Date.now() - origin);
    });
    await vi.advanceTimersByTimeAsync(2);
    schedule.add("second", 60_000, async () => {
      starts.push(Date.now() - origin);
    });
    await vi.advanceTimersByTimeAsync(20);
    schedule.stop();
    // The second comes 2 ms after a wake: it waits for the tick, not longer.
    expect(starts).toEqual([0, 10]);
  });
});
