/**
 * Small validators for configuration files and API bodies. Each validator checks one value, returns
 * it in its typed form, and throws a {@link ValidationError} naming the path of the value and the
 * rule it broke. Callers turn that error into their own message: `invalid configuration: http.port:
 * must be an integer between 1 and 65535 (got "abc")` for the configuration, `field author: must be
 * a non-empty string of at most 100 characters` for an API (docs/configuration.md, docs/api.md).
 *
 * Written here rather than taken from a schema library because the exact wording of every rule is
 * part of the documented API.
 */
import { DURATION_PATTERN, DURATION_RULE, type Duration, parseDuration } from "./duration.js";
import { parseSize, SIZE_RULE } from "./size.js";

/** A value that broke a rule. `path` is dotted (`http.port`, `websites[0].name`). */
export class ValidationError extends Error {
  /** The offending value, when it is worth showing (never for secrets or unknown keys). */
  readonly value: unknown;
  /** Whether `value` was given (it can be `undefined` itself). */
  readonly hasValue: boolean;

  constructor(
    /** Where the value is: `http.port`, `websites[0].name`; empty for the root value. */
    readonly path: string,
    /** The rule, worded to follow the path: `must be an integer between 1 and 65535`. */
    readonly rule: string,
    ...value: [] | [unknown]
  ) {
    super(path === "" ? rule : `${path}: ${rule}`);
    this.name = "ValidationError";
    this.hasValue = value.length > 0;
    this.value = value[0];
  }
}

/**
 * Checks `value` found at `path` and returns it typed.
 * @throws ValidationError when the value breaks the rule
 */
export type Validator<T> = (value: unknown, path: string) => T;

/**
 * A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) of the values a validator accepts, for
 * describing the API from the same validators that check its requests.
 */
export type JsonSchema = Readonly<Record<string, unknown>>;

const SCHEMAS = new WeakMap<Validator<unknown>, JsonSchema>();

/** Validators that accept an absent value ({@link optional}, {@link withDefault}). */
const MAY_BE_ABSENT = new WeakSet<Validator<unknown>>();

/** Gives `validator` the JSON Schema of what it accepts, and returns it. */
export function described<V extends Validator<unknown>>(validator: V, schema: JsonSchema): V {
  SCHEMAS.set(validator, schema);
  return validator;
}

/**
 * The JSON Schema of the values `validator` accepts: exact for the validators of this module,
 * `{}` (any value) for one written by hand that was not {@link described}.
 */
export function schemaOf(validator: Validator<unknown>): JsonSchema {
  return SCHEMAS.get(validator) ?? {};
}

/** The type a validator returns. */
export type Infer<V> = V extends Validator<infer T> ? T : never;

/** Joins a parent path and an object key. */
export function childPath(parent: string, key: string): string {
  return parent === "" ? key : `${parent}.${key}`;
}

/** Options of {@link string}. Lengths count UTF-16 code units after optional trimming. */
export interface StringOptions {
  min?: number;
  max?: number;
  /** Trim white space before the length checks; the trimmed string is returned. */
  trim?: boolean;
  pattern?: RegExp;
  /** The rule shown when `pattern` does not match. */
  patternRule?: string;
  /** One rule for every failure, replacing the default wording. */
  rule?: string;
}

/** A string, optionally trimmed, with length bounds and a pattern. */
export function string(options: StringOptions = {}): Validator<string> {
  const { min = 0, max = Number.POSITIVE_INFINITY, trim = false, pattern, patternRule, rule } = options;
  const schema = {
    type: "string",
    ...(min > 0 ? { minLength: min } : {}),
    ...(Number.isFinite(max) ? { maxLength: max } : {}),
    ...(pattern === undefined ? {} : { pattern: pattern.source }),
  };
  return described((value, path) => {
    if (typeof value !== "string") throw new ValidationError(path, rule ?? "must be a string", value);
    const text = trim ? value.trim() : value;
    if (text.length < min) {
      const wording = min === 1 ? "must not be empty" : `must have at least ${min} characters`;
      throw new ValidationError(path, rule ?? wording, value);
    }
    if (text.length > max) {
      throw new ValidationError(path, rule ?? `must have at most ${max} characters`, value);
    }
    if (pattern !== undefined && !pattern.test(text)) {
      throw new ValidationError(path, rule ?? patternRule ?? `must match ${pattern}`, value);
    }
    return text;
  }, schema);
}

/** A safe integer between `min` and `max` inclusive. */
export function integer(min: number, max: number): Validator<number> {
  const rule = `must be an integer between ${min} and ${max}`;
  return described(
    (value, path) => {
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
        throw new ValidationError(path, rule, value);
      }
      return value;
    },
    { type: "integer", minimum: min, maximum: max },
  );
}

/** A boolean (`true` or `false`, not a string). */
export function boolean(): Validator<boolean> {
  return described(
    (value, path) => {
      if (typeof value !== "boolean") throw new ValidationError(path, "must be true or false", value);
      return value;
    },
    { type: "boolean" },
  );
}

/** One of a fixed list of strings. */
export function oneOf<const T extends string>(choices: readonly T[]): Validator<T> {
  const rule = `must be one of ${choices.join(", ")}`;
  return described(
    (value, path) => {
      const choice = typeof value === "string" ? choices.find((candidate) => candidate === value) : undefined;
      if (choice === undefined) throw new ValidationError(path, rule, value);
      return choice;
    },
    { type: "string", enum: [...choices] },
  );
}

/**
 * A duration string (platform/duration.ts), at least `minMilliseconds` long. The number 0 is taken
 * as `"0"`: YAML reads `retention: 0` as a number, and zero needs no unit.
 */
export function duration(minMilliseconds = 0): Validator<Duration> {
  return described((value, path) => {
    const parsed = typeof value === "string" ? parseDuration(value) : value === 0 ? parseDuration("0") : undefined;
    if (parsed === undefined) throw new ValidationError(path, DURATION_RULE, value);
    if (parsed.milliseconds < minMilliseconds) {
      throw new ValidationError(path, `must be at least ${minMilliseconds}ms`, value);
    }
    return parsed;
  }, DURATION_SCHEMA);
}

/** Durations as written: `500ms`, `10s`, `1h30m`, or `0`. */
const DURATION_SCHEMA: JsonSchema = { type: "string", pattern: DURATION_PATTERN };

/** A size in bytes (platform/size.ts). */
export function size(): Validator<number> {
  return described(
    (value, path) => {
      const bytes = parseSize(value);
      if (bytes === undefined) throw new ValidationError(path, SIZE_RULE, value);
      return bytes;
    },
    {
      oneOf: [
        { type: "integer", minimum: 0 },
        { type: "string", description: "a size such as 512KiB or 16MiB" },
      ],
    },
  );
}

/** An array whose items all pass `item`; paths of items read `path[3]`. */
export function array<T>(item: Validator<T>, options: { min?: number; max?: number } = {}): Validator<T[]> {
  const { min = 0, max = Number.POSITIVE_INFINITY } = options;
  const schema = {
    type: "array",
    items: schemaOf(item),
    ...(min > 0 ? { minItems: min } : {}),
    ...(Number.isFinite(max) ? { maxItems: max } : {}),
  };
  return described((value, path) => {
    if (!Array.isArray(value)) throw new ValidationError(path, "must be an array", value);
    if (value.length < min) {
      throw new ValidationError(path, min === 1 ? "must not be empty" : `must have at least ${min} items`, value);
    }
    if (value.length > max) throw new ValidationError(path, `must have at most ${max} items`, value);
    return value.map((entry, index) => item(entry, `${path}[${index}]`));
  }, schema);
}

/** Whether a value is a plain JSON/YAML object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An object whose values all pass `entry` (labels, headers: string → string). */
export function record<T>(entry: Validator<T>): Validator<Record<string, T>> {
  return described(
    (value, path) => {
      if (!isPlainObject(value)) throw new ValidationError(path, "must be an object", value);
      const result: Record<string, T> = {};
      for (const [key, item] of Object.entries(value)) result[key] = entry(item, childPath(path, key));
      return result;
    },
    { type: "object", additionalProperties: schemaOf(entry) },
  );
}

/** The shape of an object: one validator per key. */
export type Shape = Record<string, Validator<unknown>>;

/** The type an object validator returns for a shape. */
export type ShapeOf<S extends Shape> = { [K in keyof S]: Infer<S[K]> };

/** Options of {@link object}. */
export interface ObjectOptions {
  /** `reject` (configuration files: a misspelt key must not silently do nothing) or `ignore`. */
  unknownKeys: "reject" | "ignore";
  /** Treat a missing value as `{}`, so that a whole section may be left out. */
  optional?: boolean;
}

/**
 * An object checked key by key, in the order of `shape`. Missing keys reach their validator as
 * `undefined` (so {@link withDefault} fills them in).
 */
export function object<S extends Shape>(shape: S, options: ObjectOptions): Validator<ShapeOf<S>> {
  const keys = Object.keys(shape);
  const entries = Object.entries(shape);
  const schema = {
    type: "object",
    properties: Object.fromEntries(entries.map(([key, validate]) => [key, schemaOf(validate)])),
    required: entries.filter(([, validate]) => !MAY_BE_ABSENT.has(validate)).map(([key]) => key),
    additionalProperties: options.unknownKeys === "ignore",
  };
  const validator: Validator<ShapeOf<S>> = (value, path) => {
    const input = value === undefined && options.optional ? {} : value;
    if (!isPlainObject(input)) throw new ValidationError(path, "must be an object", value);
    if (options.unknownKeys === "reject") {
      for (const key of Object.keys(input)) {
        if (!Object.hasOwn(shape, key)) {
          throw new ValidationError(childPath(path, key), `unknown key (known keys: ${keys.join(", ")})`);
        }
      }
    }
    const result: Record<string, unknown> = {};
    for (const [key, validate] of entries) {
      const parsed = validate(input[key], childPath(path, key));
      if (parsed !== undefined) result[key] = parsed;
    }
    return result as ShapeOf<S>;
  };
  if (options.optional) MAY_BE_ABSENT.add(validator);
  return described(validator, schema);
}

/** A required value: `undefined` is refused with `is required`, anything else goes to `inner`. */
export function required<T>(inner: Validator<T>): Validator<T> {
  return described((value, path) => {
    if (value === undefined) throw new ValidationError(path, "is required");
    return inner(value, path);
  }, schemaOf(inner));
}

/** An optional value: `undefined` (and `null`) give `undefined`, anything else goes to `inner`. */
export function optional<T>(inner: Validator<T>): Validator<T | undefined> {
  const validator = described<Validator<T | undefined>>(
    (value, path) => (value === undefined || value === null ? undefined : inner(value, path)),
    schemaOf(inner),
  );
  MAY_BE_ABSENT.add(validator);
  return validator;
}

/** A value with a default: `undefined` gives `fallback`, anything else goes to `inner`. */
export function withDefault<T>(inner: Validator<T>, fallback: T): Validator<T> {
  const written = writtenForm(fallback);
  const validator = described<Validator<T>>(
    (value, path) => (value === undefined ? fallback : inner(value, path)),
    written === undefined ? schemaOf(inner) : { ...schemaOf(inner), default: written },
  );
  MAY_BE_ABSENT.add(validator);
  return validator;
}

/**
 * A value whose default depends on other fields (a heartbeat's `max-duration` defaults to its
 * `grace`): `undefined` gives `fallback()`, anything else goes to `inner`. The schema says it may
 * be absent, `description` what it then is.
 */
export function withDefaultFrom<T>(inner: Validator<T>, fallback: () => T, description: string): Validator<T> {
  const validator = described<Validator<T>>((value, path) => (value === undefined ? fallback() : inner(value, path)), {
    ...schemaOf(inner),
    description,
  });
  MAY_BE_ABSENT.add(validator);
  return validator;
}

/** A default as a user writes it: scalars and lists of them as they are, a duration as its text. */
function writtenForm(value: unknown): unknown {
  if (value === null || ["string", "number", "boolean"].includes(typeof value)) return value;
  if (Array.isArray(value)) return value.every((item) => writtenForm(item) === item) ? value : undefined;
  if (isPlainObject(value) && typeof value.text === "string" && typeof value.milliseconds === "number") {
    return value.text;
  }
  return undefined;
}

/** Hides the offending value in errors, for secrets and URLs that may carry a password. */
export function secret<T>(inner: Validator<T>): Validator<T> {
  return described(
    (value, path) => {
      try {
        return inner(value, path);
      } catch (error) {
        if (error instanceof ValidationError) throw new ValidationError(error.path, error.rule);
        throw error;
      }
    },
    { ...schemaOf(inner), writeOnly: true },
  );
}
