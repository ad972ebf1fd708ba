/**
 * Query parameters, read one way by every route. Fastify hands a route `request.query` as an
 * object whose repeated names hold arrays; these helpers read it and throw an {@link InvalidError}
 * worded `query parameter <name>: <rule>` (`query parameter limit: must be an integer between 1
 * and 100`). Parameters a route does not know are ignored.
 */
import { InvalidError } from "./errors.js";
import { parseRfc3339 } from "./time.js";
import { isPlainObject } from "./validation.js";

/** The query parameters of a request, by name. */
export type Query = Readonly<Record<string, unknown>>;

/** `request.query` as a {@link Query}: an empty one when Fastify gave none. */
export function queryOf(raw: unknown): Query {
  return isPlainObject(raw) ? raw : {};
}

/** The 400 of a query parameter that broke its rule: `query parameter <name>: <rule>`. */
export function queryError(name: string, rule: string): InvalidError {
  return new InvalidError(`query parameter ${name}: ${rule}`);
}

/** The rule of a parameter given twice where it may be given once. */
export const ONCE_RULE = "must be given once";

/**
 * The values of a repeatable parameter, in order: none when absent.
 *
 * @throws InvalidError `query parameter <name>: <rule>` for a value that is not a string, or when
 *   more than `max` are given
 */
export function queryValues(query: Query, name: string, options: { max?: number; rule?: string } = {}): string[] {
  const value = query[name];
  if (value === undefined) return [];
  const values: unknown[] = Array.isArray(value) ? value : [value];
  const rule = options.rule ?? `must be given at most ${options.max} times`;
  if (options.max !== undefined && values.length > options.max) throw queryError(name, rule);
  const strings: string[] = [];
  for (const item of values) {
    if (typeof item !== "string") throw queryError(name, rule);
    strings.push(item);
  }
  return strings;
}

/**
 * The one value of a parameter; `undefined` when absent.
 *
 * @param repeatedRule the rule a repeated parameter breaks (default `must be given once`)
 * @throws InvalidError when repeated
 */
export function queryString(query: Query, name: string, repeatedRule: string = ONCE_RULE): string | undefined {
  const value = query[name];
  if (value === undefined || typeof value === "string") return value;
  throw queryError(name, repeatedRule);
}

/** Options of {@link queryInteger}. */
export interface IntegerOptions {
  readonly min: number;
  readonly max: number;
  /** The rule in errors; default `must be an integer between <min> and <max>`. */
  readonly rule?: string;
}

/** Decimal digits only, so that `1e3`, `0x10`, `+5`, `1.0` and ` 5` are refused rather than read by `Number`. */
const DIGITS = /^\d{1,16}$/;

/**
 * An integer parameter from `min` to `max` (at most 2^53 − 1); `undefined` when absent.
 *
 * @throws InvalidError `query parameter <name>: <rule>` for anything but decimal digits in range,
 *   and (with the same rule) when repeated
 */
export function queryInteger(query: Query, name: string, options: IntegerOptions): number | undefined {
  const rule = options.rule ?? `must be an integer between ${options.min} and ${options.max}`;
  const text = queryString(query, name, rule);
  if (text === undefined) return undefined;
  const value = DIGITS.test(text) ? Number(text) : Number.NaN;
  if (!(Number.isSafeInteger(value) && value >= options.min && value <= options.max)) throw queryError(name, rule);
  return value;
}

/** The rule of a boolean parameter. */
export const BOOLEAN_RULE = "must be true or false";

/**
 * A boolean parameter, `true` or `false`; `undefined` when absent.
 *
 * @throws InvalidError `query parameter <name>: must be true or false`, also when repeated
 */
export function queryBoolean(query: Query, name: string): boolean | undefined {
  const text = queryString(query, name, BOOLEAN_RULE);
  if (text === undefined) return undefined;
  if (text === "true" || text === "false") return text === "true";
  throw queryError(name, BOOLEAN_RULE);
}

/** The rule of a time parameter. */
export const TIME_RULE = "must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z";

/**
 * A time parameter in RFC 3339 (`2026-11-22T10:15:02Z`, RFC 3339 §5.6), as milliseconds since the
 * epoch; `undefined` when absent.
 *
 * @throws InvalidError `query parameter <name>: must be an RFC 3339 date-time such as …`;
 *   `must be given once` when repeated
 */
export function queryTime(query: Query, name: string): number | undefined {
  const text = queryString(query, name);
  if (text === undefined) return undefined;
  const milliseconds = text.length <= 64 ? parseRfc3339(text) : undefined;
  if (milliseconds === undefined) throw queryError(name, TIME_RULE);
  return milliseconds;
}
