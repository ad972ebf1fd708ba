import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseRfc3339, rfc3339 } from "../../src/platform/time.js";

describe("rfc3339", () => {
  it("writes what toISOString writes, for any time in the Date range", () => {
    const limit = 8.64e15;
    fc.assert(
      fc.property(fc.integer({ min: -limit, max: limit }), (milliseconds) => {
        expect(rfc3339(milliseconds)).toBe(new Date(milliseconds).toISOString());
      }),
      { numRuns: 2_000 },
    );
  });

  it("writes successive times of one second and drops fractions of a millisecond", () => {
    const base = Date.UTC(2026, 10, 22, 10, 15, 2);
    expect(rfc3339(base + 123)).toBe("2026-11-22T10:15:02.123Z");
    expect(rfc3339(base + 7)).toBe("2026-11-22T10:15:02.007Z");
    expect(rfc3339(base + 45.9)).toBe("2026-11-22T10:15:02.045Z");
    expect(rfc3339(base + 999)).toBe("2026-11-22T10:15:02.999Z");
    expect(rfc3339(base + 1000)).toBe("2026-11-22T10:15:03.000Z");
    expect(rfc3339(-1)).toBe("1969-12-31T23:59:59.999Z");
  });

  it("refuses what toISOString refuses", () => {
    expect(() => rfc3339(Number.NaN)).toThrow(RangeError);
    expect(() => rfc3339(9e15)).toThrow(RangeError);
  });
});

describe("RFC 3339 times", () => {
  it("reads offsets, fractions and leap seconds", () => {
    expect(parseRfc3339("2026-11-22T10:15:02Z")).toBe(Date.parse("2026-11-22T10:15:02.000Z"));
    expect(parseRfc3339("2026-11-22T11:15:02.123456+01:00")).toBe(Date.parse("2026-11-22T10:15:02.123Z"));
    expect(parseRfc3339("2026-11-22t10:15:02.5-00:30")).toBe(Date.parse("2026-11-22T10:45:02.500Z"));
    expect(parseRfc3339("2016-12-31T23:59:60Z")).toBe(Date.parse("2017-01-01T00:00:00.000Z"));
    expect(parseRfc3339("2024-02-29T00:00:00Z")).toBe(Date.parse("2024-02-29T00:00:00.000Z"));
    expect(parseRfc3339("0099-01-01T00:00:00Z")).toBe(Date.parse("0099-01-01T00:00:00.000Z"));
    // An unencoded `+` in a query string arrives as a space.
    expect(parseRfc3339("2026-11-22T11:15:02 01:00")).toBe(Date.parse("2026-11-22T10:15:02.000Z"));
  });

  it.each([
    "2025-02-29T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-01-01T23:60:00Z",
    "2026-01-01T00:00:61Z",
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00+01",
    "2026-01-01 00:00:00Z",
    "2026-01-01T00:00:00.Z",
    " 2026-01-01T00:00:00Z",
  ])("refuses %s", (text) => {
    expect(parseRfc3339(text)).toBeUndefined();
  });
});
