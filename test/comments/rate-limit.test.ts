import { describe, expect, it } from "vitest";
import { rateLimitLockKey, retryAfterSeconds } from "../../src/comments/rate-limit.js";

describe("retryAfterSeconds", () => {
  const policy = { limit: 3, windowMs: 60_000 };
  const now = 1_000_000;

  it("waits until the oldest counted hit leaves the window, rounded up to whole seconds", () => {
    expect(retryAfterSeconds(now - 10_500, now, policy)).toBe(50);
    expect(retryAfterSeconds(now, now, policy)).toBe(60);
  });

  it("waits at least one second, and not at all once the hit left the window", () => {
    expect(retryAfterSeconds(now - 59_999, now, policy)).toBe(1);
    expect(retryAfterSeconds(now - 60_000, now, policy)).toBeUndefined();
    expect(retryAfterSeconds(now - 90_000, now, policy)).toBeUndefined();
  });
});

describe("rateLimitLockKey", () => {
  it("is a signed 64-bit decimal, the same for the same pair and different for others", () => {
    const key = rateLimitLockKey("blog", "127.0.0.1");
    expect(key).toMatch(/^-?\d+$/);
    const value = BigInt(key);
    expect(value >= -(2n ** 63n) && value < 2n ** 63n).toBe(true);
    expect(rateLimitLockKey("blog", "127.0.0.1")).toBe(key);
    expect(rateLimitLockKey("blog", "127.0.0.2")).not.toBe(key);
    expect(rateLimitLockKey("blog1", "27.0.0.1")).not.toBe(key);
  });
});
