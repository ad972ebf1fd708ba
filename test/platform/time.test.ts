import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rfc3339 } from "../../src/platform/time.js";

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
