import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FIRST_RUN_WINDOW_MS, Scheduler, type SchedulerOptions, spreadOf } from "../../src/healthchecks/scheduler.js";

// Fake timers make every run time exact: the assertions below compare schedules, not wall-clock
// measurements, so they hold on a loaded machine.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const sleep = (milliseconds: number) => new Promise<void>((resolve) => setTimeout(resolve, milliseconds));

function scheduler(options: Partial<SchedulerOptions> = {}): Scheduler {
  return new Scheduler({ maxConcurrency: 512, now: () => Date.now(), spread: () => 0, ...options });
}

describe("Scheduler", () => {
  it("starts each check after a delay in [0, min(interval, 60 s)) derived from its name", () => {
    const start = Date.now();
    const schedule = new Scheduler({ maxConcurrency: 1, now: () => Date.now() });
    for (let index = 0; index < 1_000; index++) {
      schedule.add(`long-${index}`, 3_600_000, async () => {});
      schedule.add(`short-${index}`, 2_000, async () => {});
    }
    const long = Array.from({ length: 1_000 }, (_, index) => (schedule.nextRun(`long-${index}`) as number) - start);
    const short = Array.from({ length: 1_000 }, (_, index) => (schedule.nextRun(`short-${index}`) as number) - start);
    expect(Math.min(...long)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...long)).toBeLessThan(FIRST_RUN_WINDOW_MS);
    expect(Math.max(...short)).toBeLessThan(2_000);
    // The same name gets the same delay, on another scheduler (another restart, another instance).
    const again = new Scheduler({ maxConcurrency: 1, now: () => start });
    again.add("long-7", 3_600_000, async () => {});
    expect(again.nextRun("long-7")).toBe(start + spreadOf("long-7") * FIRST_RUN_WINDOW_MS);
    expect((schedule.nextRun("long-7") as number) - start).toBeCloseTo(spreadOf("long-7") * FIRST_RUN_WINDOW_MS, 0);
    schedule.stop();
    again.stop();

    const highest = scheduler({ spread: () => 0.999_999 });
    highest.add("a", 3_600_000, async () => {});
    expect((highest.nextRun("a") as number) - start).toBeCloseTo(59_999.94, 1);
    highest.stop();
  });

  it("spreads the first runs of 10 000 checks at 10 s evenly: about 1 000 in every second", () => {
    const counts = new Array<number>(10).fill(0);
    for (let index = 0; index < 10_000; index++) {
      const second = Math.floor(spreadOf(`c${index}`) * 10);
      counts[second] = (counts[second] as number) + 1;
    }
    for (const count of counts) {
      expect(count).toBeGreaterThan(900);
      expect(count).toBeLessThan(1_100);
    }
  });

  it("runs at a fixed rate anchored to the first run", async () => {
    const starts: number[] = [];
    const schedule = scheduler({ spread: () => 0.5 });
    const origin = Date.now();
    schedule.add("check", 1_000, async () => {
      starts.push(Date.now() - origin);
      await sleep(300);
    });
    await vi.advanceTimersByTimeAsync(5_600);
    // First run after 0.5 × 1 s, then every second from there: the 300 ms runs do not drift it.
    expect(starts).toEqual([500, 1_500, 2_500, 3_500, 4_500, 5_500]);
    schedule.stop();
  });

  it("skips the ticks a long run overlapped: no overlap, no burst", async () => {
    const starts: number[] = [];
    let running = 0;
    let mostRunning = 0;
    const schedule = scheduler();
    const origin = Date.now();
    schedule.add("slow", 1_000, async () => {
      starts.push(Date.now() - origin);
      running++;
      mostRunning = Math.max(mostRunning, running);
      await sleep(2_500);
      running--;
    });
    await vi.advanceTimersByTimeAsync(10_000);
    // Runs at 0 (ends 2.5 s), next tick 3 s (ends 5.5 s), next tick 6 s, 9 s.
    expect(starts).toEqual([0, 3_000, 6_000, 9_000]);
    expect(mostRunning).toBe(1);
    schedule.stop();
  });

  it("bounds concurrent runs and queues the rest, counting the wait as lateness", async () => {
    const lateness: number[] = [];
    let running = 0;
    let mostRunning = 0;
    const schedule = scheduler({ maxConcurrency: 2, onLateness: (milliseconds) => lateness.push(milliseconds) });
    for (let index = 0; index < 5; index++) {
      schedule.add(`check-${index}`, 10_000, async () => {
        running++;
        mostRunning = Math.max(mostRunning, running);
        await sleep(500);
        running--;
      });
    }
    await vi.advanceTimersByTimeAsync(0);
    expect(schedule.running).toBe(2);
    expect(schedule.queued).toBe(3);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(mostRunning).toBe(2);
    expect(schedule.running).toBe(0);
    expect(lateness).toEqual([0, 0, 500, 500, 1_000]);
    schedule.stop();
  });

  it("stops running a removed check, even one in flight or queued", async () => {
    const runs: string[] = [];
    const schedule = scheduler({ maxConcurrency: 1 });
    const task = (key: string) => async () => {
      runs.push(key);
      await sleep(100);
    };
    schedule.add("a", 1_000, task("a"));
    schedule.add("b", 1_000, task("b"));
    await vi.advanceTimersByTimeAsync(0);
    expect(schedule.running).toBe(1);
    expect(schedule.queued).toBe(1);
    expect(schedule.remove("a")).toBe(true);
    expect(schedule.remove("b")).toBe(true);
    expect(schedule.remove("b")).toBe(false);
    expect(schedule.size).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toEqual(["a"]);
    schedule.stop();
  });

  it("does not start a check that a run of the same wake removed", async () => {
    const runs: string[] = [];
    const schedule = scheduler();
    // Both are due at once (spread 0): the first run of the wake unschedules the other.
    schedule.add("first", 1_000, async () => {
      runs.push("first");
      schedule.remove("second");
    });
    schedule.add("second", 1_000, async () => {
      runs.push("second");
    });
    await vi.advanceTimersByTimeAsync(2_500);
    expect(runs).toEqual(["first", "first", "first"]);
    expect(schedule.running).toBe(0);
    schedule.stop();
  });

  it("replaces the task of a key that is added again", async () => {
    const runs: string[] = [];
    const schedule = scheduler();
    schedule.add("key", 1_000, async () => {
      runs.push("old");
    });
    schedule.add("key", 1_000, async () => {
      runs.push("new");
    });
    expect(schedule.size).toBe(1);
    await vi.advanceTimersByTimeAsync(1_500);
    expect(runs).toEqual(["new", "new"]);
    schedule.stop();
  });

  it("keeps the schedule of a task that fails, reporting the error", async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const schedule = scheduler({ onError: (_key, error) => errors.push(error) });
    schedule.add("broken", 1_000, async () => {
      runs++;
      throw new Error("boom");
    });
    await vi.advanceTimersByTimeAsync(2_500);
    expect(runs).toBe(3);
    expect(errors).toHaveLength(3);
    schedule.stop();
  });

  it("runs tasks that call done instead of returning a promise, and counts each run once", async () => {
    const errors: unknown[] = [];
    const starts: Record<string, number[]> = {
      later: [],
      atOnce: [],
      failing: [],
      throwing: [],
      twice: [],
      throwsAfterDone: [],
    };
    const schedule = scheduler({ onError: (key, error) => errors.push(`${key}: ${error}`) });
    const origin = Date.now();
    const started = (key: string) => starts[key]?.push(Date.now() - origin);
    schedule.add("later", 1_000, (done) => {
      started("later");
      setTimeout(done, 300);
      return undefined;
    });
    schedule.add("atOnce", 1_000, (done) => {
      started("atOnce");
      done();
      return undefined;
    });
    schedule.add("failing", 1_000, (done) => {
      started("failing");
      done(new Error("boom"));
      return undefined;
    });
    schedule.add("throwing", 1_000, () => {
      started("throwing");
      throw new Error("thrown");
    });
    schedule.add("twice", 1_000, (done) => {
      started("twice");
      done();
      // A second call ends nothing: the count of runs in flight stays right.
      done(new Error("ignored"));
      return undefined;
    });
    schedule.add("throwsAfterDone", 1_000, (done) => {
      started("throwsAfterDone");
      done();
      throw new Error("late");
    });
    await vi.advanceTimersByTimeAsync(1);
    // The runs that called done before returning are over.
    expect(schedule.running).toBe(1);
    await vi.advanceTimersByTimeAsync(2_100);
    const everySecond = [0, 1_000, 2_000];
    expect(starts).toEqual({
      later: everySecond,
      atOnce: everySecond,
      failing: everySecond,
      throwing: everySecond,
      twice: everySecond,
      throwsAfterDone: everySecond,
    });
    const perWake = ["failing: Error: boom", "throwing: Error: thrown", "throwsAfterDone: Error: late"];
    expect(errors).toEqual([...perWake, ...perWake, ...perWake]);
    await vi.advanceTimersByTimeAsync(300);
    expect(schedule.running).toBe(0);
    schedule.stop();
  });

  it("uses one timer whatever the number of checks", async () => {
    const before = vi.getTimerCount();
    const schedule = scheduler({ spread: spreadOf });
    for (let index = 0; index < 10_000; index++) schedule.add(`check-${index}`, 10_000, async () => {});
    expect(vi.getTimerCount() - before).toBe(1);
    let runs = 0;
    schedule.add("counted", 10_000, async () => {
      runs++;
    });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(runs).toBe(3);
    expect(vi.getTimerCount() - before).toBe(1);
    schedule.stop();
    expect(vi.getTimerCount() - before).toBe(0);
  });

  it("arms its timer once per wake, not again at the end of every run", async () => {
    // The real clock: its fractions of a millisecond are what made every run's end re-arm the
    // timer for the same wake (the fake clock counts whole milliseconds).
    vi.useRealTimers();
    const schedule = new Scheduler({ maxConcurrency: 512 });
    let runs = 0;
    for (let index = 0; index < 100; index++) {
      schedule.add(`check-${index}`, 200, async () => {
        runs++;
        // A run takes a moment, like a request: it ends between two wakes.
        await sleep(1);
      });
    }
    await sleep(250);
    // Re-arming clears the armed timer first; the runs' own sleeps clear none.
    const cleared = vi.spyOn(globalThis, "clearTimeout");
    const runsBefore = runs;
    await sleep(1_000);
    const runsDuring = runs - runsBefore;
    const clears = cleared.mock.calls.length;
    cleared.mockRestore();
    schedule.stop();
    expect(runsDuring).toBeGreaterThanOrEqual(200);
    expect(clears).toBeLessThan(runsDuring / 10);
  });

  it("refuses new checks once stopped and lets runs in flight finish without rescheduling", async () => {
    let runs = 0;
    const schedule = scheduler();
    schedule.add("a", 1_000, async () => {
      runs++;
      await sleep(200);
    });
    await vi.advanceTimersByTimeAsync(0);
    schedule.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toBe(1);
    expect(schedule.running).toBe(0);
    expect(() => schedule.add("b", 1_000, async () => {})).toThrow("the scheduler is stopped");
  });
});
