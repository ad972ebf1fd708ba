import { describe, expect, it } from "vitest";
import { type LabelSource, labelName, pickLabel } from "../../../src/platform/outputs/label-name.js";

describe("labelName", () => {
  it("keeps valid names", () => {
    for (const name of ["host", "_x", "__name__", "HTTP_code2", "a"]) expect(labelName(name)).toBe(name);
  });

  it("turns every other character into _, and a leading digit too", () => {
    expect(labelName("http-method")).toBe("http_method");
    expect(labelName("a.b c/d")).toBe("a_b_c_d");
    expect(labelName("2xx")).toBe("_xx");
    expect(labelName("9")).toBe("_");
    expect(labelName("été")).toBe("_t_");
    expect(labelName("😀")).toBe("__");
  });

  it("has no answer for the empty name", () => {
    expect(labelName("")).toBeUndefined();
  });

  it("always matches [a-zA-Z_][a-zA-Z0-9_]*", () => {
    for (let code = 0; code < 0x3000; code += 7) {
      const field = `${String.fromCharCode(code)}x${String.fromCharCode(code + 3)}`;
      expect(labelName(field)).toMatch(/^[a-zA-Z_][a-zA-Z0-9_]*$/);
    }
  });
});

describe("pickLabel", () => {
  it("keeps, of fields whose names sanitise alike, the one whose own name sorts first, in any order of calls", () => {
    const fields: Array<[string, string]> = [
      ["a.b", "dot"],
      ["a-b", "dash"],
      ["a_b", "underscore"],
      ["a b", "space"],
    ];
    // " " (0x20) < "-" (0x2d) < "." (0x2e) < "_" (0x5f).
    for (const order of [fields, [...fields].reverse(), [fields[2], fields[0], fields[3], fields[1]]]) {
      const picked = new Map<string, LabelSource>();
      for (const entry of order) {
        if (entry === undefined) continue;
        const [field, value] = entry;
        pickLabel(picked, labelName(field) ?? "", field, value);
      }
      expect([...picked]).toEqual([["a_b", { field: "a b", value: "space" }]]);
    }
  });
});
