import { describe, expect, it } from "vitest";
import {
  array,
  boolean,
  duration,
  integer,
  object,
  oneOf,
  optional,
  record,
  required,
  secret,
  string,
  withDefault,
} from "../../src/platform/validation.js";
import { validationError } from "../support/validation.js";

const failure = validationError;

describe("validators", () => {
  it("checks strings with trimming, bounds and pattern", () => {
    const author = string({ min: 1, max: 5, trim: true });
    expect(author("  abc ", "author")).toBe("abc");
    expect(failure(() => author("   ", "author")).message).toBe("author: must not be empty");
    expect(failure(() => author("abcdef", "author")).message).toBe("author: must have at most 5 characters");
    expect(failure(() => author(3, "author")).message).toBe("author: must be a string");
    const password = string({ min: 8 });
    expect(failure(() => password("short", "password")).message).toBe("password: must have at least 8 characters");
    const name = string({ pattern: /^[a-z]+$/, patternRule: "must be lower-case letters" });
    expect(failure(() => name("A", "name")).rule).toBe("must be lower-case letters");
    const custom = string({ min: 1, max: 2, rule: "must be short" });
    expect(failure(() => custom("", "x")).rule).toBe("must be short");
  });

  it("checks integers, booleans and choices", () => {
    const port = integer(1, 65535);
    expect(port(8080, "port")).toBe(8080);
    for (const bad of [0, 65536, 1.5, "80", null]) {
      const error = failure(() => port(bad, "http.port"));
      expect(error.message).toBe("http.port: must be an integer between 1 and 65535");
      expect(error.value).toBe(bad);
      expect(error.hasValue).toBe(true);
    }
    expect(failure(() => boolean()("true", "flag")).rule).toBe("must be true or false");
    expect(oneOf(["a", "b"])("b", "x")).toBe("b");
    expect(failure(() => oneOf(["a", "b"])("c", "x")).rule).toBe("must be one of a, b");
  });

  it("checks durations with a minimum", () => {
    expect(duration()("1m", "interval")).toEqual({ text: "1m", milliseconds: 60_000 });
    expect(failure(() => duration()("10", "interval")).rule).toBe("must be a duration such as 500ms, 10s or 1h30m");
    expect(failure(() => duration(1000)("500ms", "interval")).rule).toBe("must be at least 1000ms");
    // The number 0 (YAML's reading of `0`) is zero; other numbers need a unit.
    expect(duration()(0, "retention")).toEqual({ text: "0", milliseconds: 0 });
    expect(failure(() => duration()(10, "interval")).rule).toBe("must be a duration such as 500ms, 10s or 1h30m");
    expect(failure(() => duration(1000)(0, "interval")).rule).toBe("must be at least 1000ms");
  });

  it("names array items and record entries in paths", () => {
    const ports = array(integer(1, 10), { min: 1 });
    expect(failure(() => ports([1, 99], "ports")).path).toBe("ports[1]");
    expect(failure(() => ports([], "ports")).rule).toBe("must not be empty");
    expect(failure(() => ports("x", "ports")).rule).toBe("must be an array");
    const labels = record(string());
    expect(labels({ a: "b" }, "labels")).toEqual({ a: "b" });
    expect(failure(() => labels({ a: 1 }, "labels")).path).toBe("labels.a");
  });

  it("fills defaults, refuses unknown keys and requires what is required", () => {
    const http = object(
      { port: withDefault(integer(1, 65535), 8080), host: required(string()), note: optional(string()) },
      { unknownKeys: "reject" },
    );
    expect(http({ host: "h" }, "http")).toEqual({ port: 8080, host: "h" });
    const unknown = failure(() => http({ host: "h", prot: 1 }, "http"));
    expect(unknown.path).toBe("http.prot");
    expect(unknown.rule).toBe("unknown key (known keys: port, host, note)");
    expect(unknown.hasValue).toBe(false);
    expect(failure(() => http({}, "http")).message).toBe("http.host: is required");
    expect(failure(() => http(undefined, "http")).rule).toBe("must be an object");
    const lenient = object({ a: optional(string()) }, { unknownKeys: "ignore", optional: true });
    expect(lenient(undefined, "")).toEqual({});
    expect(lenient({ a: "x", b: 2 }, "")).toEqual({ a: "x" });
  });

  it("hides secret values in errors", () => {
    const token = secret(string({ min: 16 }));
    const error = failure(() => token("hunter2", "admin-token"));
    expect(error.hasValue).toBe(false);
    expect(error.value).toBeUndefined();
    expect(error.message).toBe("admin-token: must have at least 16 characters");
  });
});
