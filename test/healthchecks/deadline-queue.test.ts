/**
 * The timeouts of executions share one timer (docs/healthchecks.md): a DeadlineQueue expires its
 * items at the end of their 10 ms slot, never before their time. The first tests use fake timers, so
 * every time is exact; the last ones run real http exchanges against a server that never answers.
 */
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  DEADLINE_TICK_MS,
  DeadlineQueue,
  type DeadlineTimers,
  type Expiring,
  startDeadline,
  TimeoutError,
} from "../../src/healthchecks/deadline.js";
import { type HttpDefinition, validateDefinition } from "../../src/healthchecks/definition.js";
import { HttpExecutor } from "../../src/healthchecks/http.js";
import { listen } from "./local-servers.js";

afterEach(() => {
  vi.useRealTimers();
});

/** The global timers, counting how many were armed. */
function countingTimers(): DeadlineTimers & { armed: number } {
  const timers = {
    armed: 0,
    setTimeout: (callback: () => void, milliseconds: number) => {
      timers.armed++;
      return setTimeout(callback, milliseconds);
    },
    clearTimeout: (timer: NodeJS.Timeout) => clearTimeout(timer),
  };
  return timers;
}

function item(expiresAt: number, expired: number[], now: () => number): Expiring {
  return { expiresAt, heapIndex: -1, expire: () => expired.push(now()) };
}

describe("DeadlineQueue", () => {
  it("expires each item at the end of its 10 ms slot, never before its time, with one timer", async () => {
    vi.useFakeTimers();
    const timers = countingTimers();
    const now = () => Date.now();
    const queue = new DeadlineQueue({ now, timers });
    const origin = Date.now();
    const expired: Record<number, number[]> = {};
    // 1 000 items over 5 s, as many runs of checks with the same timeout started over 5 s would be.
    for (let index = 0; index < 1_000; index++) {
      const offset = 1_000 + index * 5 + 0.5;
      expired[offset] = [];
      queue.add(item(origin + offset, expired[offset] as number[], now));
    }
    expect(queue.size).toBe(1_000);
    await vi.advanceTimersByTimeAsync(7_000);
    expect(queue.size).toBe(0);
    for (const [offset, times] of Object.entries(expired)) {
      expect(times).toHaveLength(1);
      const late = (times[0] as number) - origin - Number(offset);
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThanOrEqual(DEADLINE_TICK_MS);
    }
    // One timer at a time, re-armed at each slot with items: at most one per 10 ms slot.
    expect(timers.armed).toBeLessThanOrEqual(5_000 / DEADLINE_TICK_MS + 1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("does not expire removed items and moves its timer only earlier", async () => {
    vi.useFakeTimers();
    const timers = countingTimers();
    const now = () => Date.now();
    const queue = new DeadlineQueue({ now, timers });
    const origin = Date.now();
    const expired: number[] = [];
    const late = item(origin + 5_000, expired, now);
    queue.add(late);
    const later = item(origin + 6_000, expired, now);
    queue.add(later);
    expect(timers.armed).toBe(1);
    const early = item(origin + 1_003, expired, now);
    queue.add(early);
    expect(timers.armed).toBe(2);
    expect(vi.getTimerCount()).toBe(1);
    // Runs ending before their timeout: removed, the timer is left alone.
    for (let index = 0; index < 100; index++) {
      const run = item(origin + 5_000 + index, expired, now);
      queue.add(run);
      expect(queue.remove(run)).toBe(true);
      expect(queue.remove(run)).toBe(false);
    }
    expect(timers.armed).toBe(2);
    expect(queue.remove(early)).toBe(true);
    expect(queue.remove(late)).toBe(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(expired).toHaveLength(1);
    expect((expired[0] as number) - (origin + 6_000)).toBeGreaterThanOrEqual(0);
    expect((expired[0] as number) - (origin + 6_000)).toBeLessThanOrEqual(DEADLINE_TICK_MS);
    // The timer of the removed early item found nothing and re-armed once for the later one.
    expect(timers.armed).toBe(3);
    queue.clear();
  });

  it("bounds startDeadline's executions, through the queue", async () => {
    vi.useFakeTimers();
    const timers = countingTimers();
    const queue = new DeadlineQueue({ now: () => Date.now(), timers });
    const origin = Date.now();
    const deadlines = Array.from({ length: 50 }, () => startDeadline(250, undefined, queue));
    let aborted = 0;
    for (const deadline of deadlines) deadline.onAbort(() => aborted++);
    await vi.advanceTimersByTimeAsync(249);
    expect(aborted).toBe(0);
    await vi.advanceTimersByTimeAsync(DEADLINE_TICK_MS + 1);
    expect(aborted).toBe(50);
    expect(Date.now() - origin).toBeLessThanOrEqual(250 + DEADLINE_TICK_MS + 1);
    expect(deadlines.every((deadline) => deadline.timedOut())).toBe(true);
    expect(deadlines[0]?.signal.reason).toBeInstanceOf(TimeoutError);
    expect(timers.armed).toBe(1);
    const cleared = startDeadline(100, undefined, queue);
    cleared.clear();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(cleared.timedOut()).toBe(false);
    expect(cleared.signal.aborted).toBe(false);
  });
});

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

function http(port: number, timeout: string): HttpDefinition {
  return validateDefinition(
    "http",
    { name: "web", interval: "10s", timeout, target: "127.0.0.1", port, "valid-status": [200] },
    RULES,
    { unknownKeys: "ignore" },
  );
}

describe("http exchanges", () => {
  it("fail at their timeout with the same message, many runs sharing one timer", async () => {
    // Accepts the requests and never answers.
    const server: Server = createServer(() => {});
    const listening = await listen(server);
    const timers = countingTimers();
    const executor = new HttpExecutor({ deadlines: new DeadlineQueue({ timers }) });
    try {
      const started = performance.now();
      const outcomes = await Promise.all(Array.from({ length: 40 }, () => executor.run(http(listening.port, "300ms"))));
      const elapsed = performance.now() - started;
      for (const outcome of outcomes) {
        expect(outcome).toEqual({ success: false, message: "HTTP request failed: timeout after 300ms" });
      }
      // Never before the timeout; the upper bound leaves room for a loaded machine.
      expect(elapsed).toBeGreaterThanOrEqual(300);
      expect(elapsed).toBeLessThan(5_000);
      // 40 runs started within a few milliseconds: one timer for all, re-armed when their timeouts
      // straddle a slot and when it fires a fraction of a millisecond before the clock says (Node
      // counts a timer's delay from the event loop's cached time): a handful of arms, not 40.
      expect(timers.armed).toBeGreaterThanOrEqual(1);
      expect(timers.armed).toBeLessThanOrEqual(4);
    } finally {
      await executor.close();
      server.closeAllConnections();
      await listening.close();
    }
  });
});
