import { describe, expect, it } from "vitest";
import {
  backoffDelay,
  FIRST_BACKOFF_MS,
  JITTER,
  MAX_BACKOFF_MS,
  parseRetryAfter,
} from "../../../src/platform/outputs/retry.js";

describe("backoffDelay", () => {
  it("waits 100 ms × 2^(n−1), plus up to a quarter of it at random: the first retry 100–125 ms", () => {
    expect(FIRST_BACKOFF_MS).toBe(100);
    expect(JITTER).toBe(0.25);
    expect(backoffDelay(1, () => 0)).toBe(100);
    expect(backoffDelay(1, () => 0.5)).toBe(112.5);
    expect(backoffDelay(1, () => 0.999999)).toBeLessThan(125);
    expect(backoffDelay(1, () => 0.999999)).toBeCloseTo(125, 3);
    expect(backoffDelay(2, () => 0)).toBe(200);
    expect(backoffDelay(3, () => 0.5)).toBe(450);
    expect(backoffDelay(4, () => 0.2)).toBe(840);
    // A retry number below 1 waits like the first.
    expect(backoffDelay(0, () => 0)).toBe(100);
  });

  it("caps the step at 30 s and the wait too, however many retries", () => {
    expect(MAX_BACKOFF_MS).toBe(30_000);
    // Step 25.6 s: the jitter reaches the cap and stops there.
    expect(backoffDelay(9, () => 0)).toBe(25_600);
    expect(backoffDelay(9, () => 0.4)).toBeCloseTo(28_160, 6);
    expect(backoffDelay(9, () => 0.999999)).toBe(30_000);
    // Step 30 s (51.2 s uncapped): every wait is 30 s.
    expect(backoffDelay(10, () => 0)).toBe(30_000);
    expect(backoffDelay(10, () => 0.999999)).toBe(30_000);
    expect(backoffDelay(1_000_000, () => 0.5)).toBe(30_000);
    expect(backoffDelay(Number.MAX_SAFE_INTEGER)).toBe(30_000);
  });

  it("spreads retries with Math.random by default, within [step, 1.25 × step)", () => {
    const delays = new Set(Array.from({ length: 20 }, () => backoffDelay(5)));
    expect(delays.size).toBeGreaterThan(1);
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(1600);
      expect(delay).toBeLessThan(2000);
    }
  });
});

describe("parseRetryAfter", () => {
  const now = Date.parse("2024-03-01T12:00:00Z");

  it("reads a number of seconds", () => {
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
  });

  it("reads an HTTP-date as the time left until it, and a past date as no wait", () => {
    expect(parseRetryAfter("Fri, 01 Mar 2024 12:00:30 GMT", now)).toBe(30_000);
    expect(parseRetryAfter("Fri, 01 Mar 2024 11:00:00 GMT", now)).toBe(0);
  });

  it("takes the first of repeated headers", () => {
    expect(parseRetryAfter(["3", "100"], now)).toBe(3000);
  });

  it("ignores an absent, empty or malformed header", () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter("", now)).toBeUndefined();
    expect(parseRetryAfter("-5", now)).toBeUndefined();
    expect(parseRetryAfter("1.5", now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
  });
});

describe("parseRetryAfter, the obsolete date forms", () => {
  const now = Date.parse("1994-11-06T08:49:00Z");

  it("reads rfc850 and asctime dates, both in GMT (RFC 9110 §5.6.7)", () => {
    expect(parseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now)).toBe(37_000);
    expect(parseRetryAfter("Sun Nov  6 08:49:37 1994", now)).toBe(37_000);
  });
});
