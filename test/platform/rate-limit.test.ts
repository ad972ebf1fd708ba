import { describe, expect, it } from "vitest";
import { retryAfterSeconds } from "../../src/platform/rate-limit.js";

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

  it("allows an attempt while the key has fewer hits than the limit", () => {
    expect(retryAfterSeconds(undefined, now, policy)).toBeUndefined();
  });
});
