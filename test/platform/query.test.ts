import { describe, expect, it } from "vitest";
import { InvalidError } from "../../src/platform/errors.js";
import { queryBoolean, queryInteger, queryOf, queryString, queryTime, queryValues } from "../../src/platform/query.js";

const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidError);
    return (error as Error).message;
  }
  throw new Error("expected a refusal");
};

describe("query parameters", () => {
  it("reads an absent query as an empty one", () => {
    expect(queryOf(undefined)).toEqual({});
    expect(queryOf({ a: "1" })).toEqual({ a: "1" });
  });

  it("reads integers from decimal digits only, in range", () => {
    const options = { min: 1, max: 100 };
    expect(queryInteger({ limit: "7" }, "limit", options)).toBe(7);
    expect(queryInteger({}, "limit", options)).toBeUndefined();
    for (const text of ["0", "101", "1e2", "0x10", "+5", "1.0", " 5", "", "99999999999999999"]) {
      expect(refusal(() => queryInteger({ limit: text }, "limit", options))).toBe(
        "query parameter limit: must be an integer between 1 and 100",
      );
    }
    expect(refusal(() => queryInteger({ limit: ["1", "2"] }, "limit", options))).toBe(
      "query parameter limit: must be an integer between 1 and 100",
    );
    expect(
      refusal(() => queryInteger({ before: "x" }, "before", { min: 0, max: 2 ** 53 - 1, rule: "must be ms" })),
    ).toBe("query parameter before: must be ms");
  });

  it("reads booleans, single strings and repeated values", () => {
    expect(queryBoolean({ a: "true" }, "a")).toBe(true);
    expect(queryBoolean({ a: "false" }, "a")).toBe(false);
    expect(refusal(() => queryBoolean({ a: "yes" }, "a"))).toBe("query parameter a: must be true or false");
    expect(queryString({ q: "x" }, "q")).toBe("x");
    expect(refusal(() => queryString({ q: ["x", "y"] }, "q"))).toBe("query parameter q: must be given once");
    expect(queryValues({ name: ["a", "b"] }, "name")).toEqual(["a", "b"]);
    expect(queryValues({ name: "a" }, "name")).toEqual(["a"]);
    expect(queryValues({}, "name")).toEqual([]);
    expect(refusal(() => queryValues({ name: ["a", "b", "c"] }, "name", { max: 2 }))).toBe(
      "query parameter name: must be given at most 2 times",
    );
  });

  it("reads RFC 3339 times", () => {
    expect(queryTime({ since: "2026-11-22T10:15:02Z" }, "since")).toBe(Date.parse("2026-11-22T10:15:02Z"));
    expect(refusal(() => queryTime({ since: "yesterday" }, "since"))).toBe(
      "query parameter since: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z",
    );
    expect(refusal(() => queryTime({ since: "2026-02-30T00:00:00Z" }, "since"))).toMatch(/RFC 3339/);
  });
});
