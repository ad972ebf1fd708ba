import { describe, expect, it } from "vitest";
import { parseDuration } from "../../src/platform/duration.js";

describe("parseDuration", () => {
  it.each([
    ["0", 0],
    ["500ms", 500],
    ["10s", 10_000],
    ["1.5h", 5_400_000],
    ["1h30m", 5_400_000],
    ["2m3s", 123_000],
    ["1s500ms", 1_500],
    ["250us", 0.25],
    ["250µs", 0.25],
    ["250μs", 0.25],
    ["1000000ns", 1],
    [".5s", 500],
    ["1.s", 1_000],
    ["0s", 0],
    ["1h1h", 7_200_000],
  ])("parses %s as %d ms", (text, milliseconds) => {
    const parsed = parseDuration(text);
    expect(parsed?.milliseconds).toBeCloseTo(milliseconds, 9);
    expect(parsed?.text).toBe(text);
  });

  it.each([
    "",
    "10",
    "1.5",
    "-1s",
    "+1s",
    "1 s",
    " 1s",
    "1s ",
    "1d",
    "1S",
    "s",
    "1.2.3s",
    "1sm",
    "ms",
    "1h-30m",
    "abc",
    ".s",
  ])("refuses %j", (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it("keeps the text exactly as given", () => {
    expect(parseDuration("90s")).toEqual({ text: "90s", milliseconds: 90_000 });
    expect(parseDuration("1m30s")).toEqual({ text: "1m30s", milliseconds: 90_000 });
  });
});
