import { describe, expect, it } from "vitest";
import { labelName } from "../../../src/streams/outputs/label-name.js";

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
