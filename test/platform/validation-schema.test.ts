import { describe, expect, it } from "vitest";
import { parseDuration } from "../../src/platform/duration.js";
import {
  array,
  boolean,
  described,
  duration,
  integer,
  object,
  oneOf,
  optional,
  record,
  required,
  schemaOf,
  secret,
  size,
  string,
  type Validator,
  withDefault,
} from "../../src/platform/validation.js";

describe("the JSON Schema of a validator", () => {
  it("describes scalars with their bounds", () => {
    expect(schemaOf(string({ min: 1, max: 100 }))).toEqual({ type: "string", minLength: 1, maxLength: 100 });
    expect(schemaOf(string({ pattern: /^[a-z]+$/ }))).toEqual({ type: "string", pattern: "^[a-z]+$" });
    expect(schemaOf(integer(1, 65535))).toEqual({ type: "integer", minimum: 1, maximum: 65535 });
    expect(schemaOf(boolean())).toEqual({ type: "boolean" });
    expect(schemaOf(oneOf(["a", "b"]))).toEqual({ type: "string", enum: ["a", "b"] });
    expect(schemaOf(size()).oneOf).toHaveLength(2);
  });

  it("describes durations by a pattern the parser agrees with", () => {
    const pattern = new RegExp(String(schemaOf(duration()).pattern));
    for (const text of ["0", "500ms", "10s", "1h30m", "1.5h", "2us"]) {
      expect(pattern.test(text), text).toBe(true);
      expect(parseDuration(text), text).toBeDefined();
    }
    for (const text of ["", "10", "-1s", "1 h", "1d"]) {
      expect(pattern.test(text), text).toBe(false);
      expect(parseDuration(text), text).toBeUndefined();
    }
  });

  it("describes objects: properties, required keys, defaults, unknown keys", () => {
    const shape = object(
      {
        name: required(string({ min: 1 })),
        note: optional(string()),
        port: withDefault(integer(1, 65535), 8080),
        timeout: withDefault(duration(), { text: "5s", milliseconds: 5000 }),
        tags: withDefault(array(string(), { max: 10 }), []),
        labels: optional(record(string())),
        token: optional(secret(string())),
      },
      { unknownKeys: "reject" },
    );
    expect(schemaOf(shape)).toEqual({
      type: "object",
      properties: {
        name: { type: "string", minLength: 1 },
        note: { type: "string" },
        port: { type: "integer", minimum: 1, maximum: 65535, default: 8080 },
        timeout: { ...schemaOf(duration()), default: "5s" },
        tags: { type: "array", items: { type: "string" }, maxItems: 10, default: [] },
        labels: { type: "object", additionalProperties: { type: "string" } },
        token: { type: "string", writeOnly: true },
      },
      required: ["name"],
      additionalProperties: false,
    });
    expect(schemaOf(object({}, { unknownKeys: "ignore" })).additionalProperties).toBe(true);
  });

  it("is any value for a validator written by hand, unless it is described", () => {
    const even: Validator<number> = (value) => Number(value);
    expect(schemaOf(even)).toEqual({});
    expect(schemaOf(described(even, { type: "integer", multipleOf: 2 }))).toEqual({ type: "integer", multipleOf: 2 });
  });

  it("validates as before", () => {
    const port = withDefault(integer(1, 65535), 8080);
    expect(port(undefined, "port")).toBe(8080);
    expect(() => port(0, "port")).toThrow("port: must be an integer between 1 and 65535");
  });
});
