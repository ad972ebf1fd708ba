import { describe, expect, it } from "vitest";
import { compileLinearRegex, LINEAR_REGEX_RULE, linearRegexPattern, RegexError } from "../../src/platform/regex.js";
import { validationError } from "../support/validation.js";

describe("compileLinearRegex", () => {
  it("finds a pattern anywhere, in text or UTF-8 bytes, and matches whole values", () => {
    const regex = compileLinearRegex('"status":\\s*"up"');
    expect(regex.source).toBe('"status":\\s*"up"');
    expect(regex.test('{"status": "up"}')).toBe(true);
    expect(regex.test(Buffer.from('{"status": "down"} {"status":"up"}'))).toBe(true);
    expect(regex.test('{"status": "down"}')).toBe(false);
    const host = compileLinearRegex("foo.*");
    expect(host.testWhole("foobar")).toBe(true);
    expect(host.testWhole("a foobar")).toBe(false);
    expect(compileLinearRegex("é+").test(Buffer.from("café", "utf8"))).toBe(true);
  });

  it.each([
    ["(a)\\1", "invalid escape sequence: `\\1`"],
    ["(?=a)", "invalid or unsupported Perl syntax: `(?=`"],
    ["(?!a)", "invalid or unsupported Perl syntax: `(?!`"],
    ["(?<=a)b", "invalid named capture: `(?<=a)b`"],
    ["a{1001}", "invalid repeat count: `{1001}`"],
    ["(", "missing closing ): `(`"],
  ])("refuses %s, which RE2 cannot run", (pattern, reason) => {
    expect(() => compileLinearRegex(pattern)).toThrow(new RegexError(pattern, reason));
  });

  it("matches (a+)+$ against 100 000 a followed by b in linear time", () => {
    const regex = compileLinearRegex("(a+)+$");
    const input = `${"a".repeat(100_000)}b`;
    const started = performance.now();
    expect(regex.test(input)).toBe(false);
    expect(regex.testWhole(input)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("linearRegexPattern", () => {
  it("returns a valid pattern as given and names the field of an invalid one", () => {
    expect(linearRegexPattern("ok|fine", "body-regexp[0]")).toBe("ok|fine");
    const error = validationError(() => linearRegexPattern("(a)\\1", "body-regexp[1]"));
    expect(error.message).toBe(`body-regexp[1]: ${LINEAR_REGEX_RULE}: invalid escape sequence: \`\\1\``);
    expect(validationError(() => linearRegexPattern(3, "body-regexp[0]")).message).toBe(
      `body-regexp[0]: ${LINEAR_REGEX_RULE}`,
    );
  });
});
