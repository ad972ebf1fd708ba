import { describe, expect, it } from "vitest";
import { parseSize } from "../../src/platform/size.js";

describe("parseSize", () => {
  it.each([
    [0, 0],
    [65_536, 65_536],
    ["512", 512],
    ["512B", 512],
    ["64KiB", 65_536],
    ["1MiB", 1_048_576],
    ["32MiB", 33_554_432],
    ["2GiB", 2_147_483_648],
  ])("parses %j as %d bytes", (value, bytes) => {
    expect(parseSize(value)).toBe(bytes);
  });

  it.each([-1, 1.5, "1.5MiB", "1MB", "1 MiB", "MiB", "", "1kib", null, true, {}, Number.NaN])("refuses %j", (value) => {
    expect(parseSize(value)).toBeUndefined();
  });
});
