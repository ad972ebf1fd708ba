import { describe, expect, it } from "vitest";
import { backoffDelay, FIRST_BACKOFF_MS, MAX_BACKOFF_MS, parseRetryAfter } from "../../../src/streams/outputs/retry.js";

describe("backoffDelay", () => {
  it("starts at 100 ms and doubles per retry, half of each step being jitter", () => {
    expect(FIRST_BACKOFF_MS).toBe(100);
    expect(backoffDelay(1, () => 0)).toBe(50);
    expect(backoffDelay(1, () => 0.999999)).toBeCloseTo(100, 3);
    expect(backoffDelay(2, () => 0)).toBe(100);
    expect(backoffDelay(3, () => 0.5)).toBe(300);
    expect(backoffDelay(4, () => 1)).toBe(800);
  });

  it("never waits more than 30 s, however many retries", () => {
    expect(MAX_BACKOFF_MS).toBe(30_000);
    expect(backoffDelay(9, () => 0.999999)).toBeCloseTo(25_600, 0);
    expect(backoffDelay(10, () => 0.999999)).toBeCloseTo(30_000, 0);
    expect(backoffDelay(10, () => 0)).toBe(15_000);
    expect(backoffDelay(1_000_000, () => 0.999999)).toBeLessThanOrEqual(30_000);
    expect(Number.isFinite(backoffDelay(Number.MAX_SAFE_INTEGER))).toBe(true);
  });

  it("spreads retries with Math.random by default", () => {
    const delays = new Set(Array.from({ length: 20 }, () => backoffDelay(5)));
    expect(delays.size).toBeGreaterThan(1);
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(800);
      expect(delay).toBeLessThanOrEqual(1600);
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
