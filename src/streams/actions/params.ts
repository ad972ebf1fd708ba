/**
 * Reading and checking action params at compile time, with errors that name the node.
 */
import { CompileError } from "../compile-error.js";
import { compileCondition, compileField, type Predicate } from "../condition.js";
import { type EdnValue, isKeyword, isMap, nameOf, sequenceItems } from "../edn.js";
import type { FieldPath } from "../event.js";

/**
 * Checks the number of params.
 * @param shape how the params read, for the error: `[condition]`
 */
export function expectCount(
  params: readonly EdnValue[],
  min: number,
  max: number,
  path: string,
  action: string,
  shape: string,
): void {
  if (params.length < min || params.length > max) {
    const got = params.length === 1 ? "1 param" : `${params.length} params`;
    if (max === 0) throw new CompileError(path, `:${action} takes no params, got ${got}`);
    const wanted = min === max ? String(min) : `${min} to ${max}`;
    throw new CompileError(path, `:${action} takes ${wanted} param${max === 1 ? "" : "s"} ${shape}, got ${got}`);
  }
}

/** A finite number param (EDN integers and floats). */
export function numberParam(value: EdnValue | undefined, path: string, what: string): number {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "bigint") return Number(value);
  throw new CompileError(path, `${what} must be a number`);
}

/** A duration in seconds: a number > 0. */
export function secondsParam(value: EdnValue | undefined, path: string, what: string): number {
  const seconds = numberParam(value, path, what);
  if (seconds <= 0) throw new CompileError(path, `${what} must be a number of seconds greater than 0`);
  return seconds;
}

/** A non-negative integer count (window sizes, throttle counts). */
export function countParam(value: EdnValue | undefined, path: string, what: string, min = 1): number {
  const count = numberParam(value, path, what);
  if (!Number.isInteger(count) || count < min)
    throw new CompileError(path, `${what} must be an integer of at least ${min}`);
  return count;
}

/** Keys accepted in every options map and ignored (Mirabelle's compiler writes them). */
const IGNORED_OPTIONS = new Set(["aggr-fn", "description"]);

/**
 * An options map param such as `{:duration 10 :delay 2}`, as a map from keyword name to value.
 * @throws CompileError for a non-map, a missing required key or an unknown key
 */
export function optionsParam(
  value: EdnValue | undefined,
  path: string,
  action: string,
  required: readonly string[],
  optional: readonly string[] = [],
): Map<string, EdnValue> {
  if (!isMap(value)) {
    throw new CompileError(
      path,
      `:${action} takes an options map such as {${required.map((key) => `:${key} ...`).join(" ")}}`,
    );
  }
  const options = new Map<string, EdnValue>();
  for (const [key, item] of value.map) {
    if (!isKeyword(key)) throw new CompileError(path, `option keys of :${action} must be keywords`);
    if (IGNORED_OPTIONS.has(key.key)) continue;
    if (!required.includes(key.key) && !optional.includes(key.key)) {
      throw new CompileError(path, `unknown option :${key.key} of :${action}`);
    }
    options.set(key.key, item);
  }
  for (const key of required) {
    if (!options.has(key)) throw new CompileError(path, `:${action} needs the option :${key}`);
  }
  return options;
}

/**
 * The items of a vector (or list) that must not be empty.
 * @param rule the error for anything else
 * @throws CompileError naming the node
 */
export function itemsParam(value: EdnValue | undefined, path: string, rule: string): EdnValue[] {
  const items = sequenceItems(value);
  if (items === undefined || items.length === 0) throw new CompileError(path, rule);
  return items;
}

/**
 * The one param of `split` and `project`, `[[condition ...]]`: at least one condition, compiled.
 * @param rule the error when the param is not a non-empty vector
 * @throws CompileError naming the node, or the condition that does not compile
 */
export function conditionsParam(params: readonly EdnValue[], path: string, action: string, rule: string): Predicate[] {
  expectCount(params, 1, 1, path, action, "[[condition ...]]");
  const items = itemsParam(params[0], path, rule);
  return items.map((item, index) => compileCondition(item, `${path}.params[0][${index}]`));
}

/**
 * The one param of an action that takes an options map, `[{:key value ...}]` (see
 * {@link optionsParam}).
 * @param shape how the params read, for the error on a wrong count
 * @throws CompileError for a wrong count of params, a non-map, a missing or an unknown key
 */
export function soleOptionsParam(
  params: readonly EdnValue[],
  path: string,
  action: string,
  shape: string,
  required: readonly string[],
  optional: readonly string[] = [],
): Map<string, EdnValue> {
  expectCount(params, 1, 1, path, action, shape);
  return optionsParam(params[0], path, action, required, optional);
}

/** A list of strings given as one string or a vector of strings (`tag`, `untag`, `tagged-all`). */
export function stringsParam(params: readonly EdnValue[], path: string, action: string): string[] {
  expectCount(params, 1, 1, path, action, '["tag"] or [["tag1" "tag2"]]');
  const value = params[0];
  if (typeof value === "string") return [value];
  const items = sequenceItems(value) ?? [];
  const strings = items.filter((item) => typeof item === "string");
  if (strings.length > 0 && strings.length === items.length) return strings;
  throw new CompileError(path, `:${action} takes a string or a non-empty vector of strings`);
}

/**
 * A field param: a keyword or a vector of keywords (a nested path), as where-conditions take.
 * @param what the param, for the error: `the field`, `:source`
 * @throws CompileError naming the node when it is neither
 */
export function fieldParam(value: EdnValue | undefined, path: string, action: string, what = "the field"): FieldPath {
  try {
    return compileField(value, path);
  } catch {
    throw new CompileError(path, `${what} of :${action} must be a keyword or a vector of keywords`);
  }
}

/**
 * A list of fields `[:a "b" [:c :d]]`: each a keyword (or string) naming a top-level field, or a
 * vector of keywords naming a nested one. A lone keyword `:a` is read as `[:a]`, as Mirabelle's
 * builder writes `(from-json :a)`.
 * @throws CompileError naming the node for anything else
 */
export function fieldsParam(value: EdnValue | undefined, path: string, action: string): FieldPath[] {
  if (isKeyword(value)) return [[value.key]];
  const items = sequenceItems(value);
  const rule = `:${action} takes a vector of fields, each a keyword or a vector of keywords`;
  if (items === undefined) throw new CompileError(path, rule);
  return items.map((item) => {
    const name = nameOf(item);
    if (name !== undefined) return [name];
    try {
      return compileField(item, path);
    } catch {
      throw new CompileError(path, rule);
    }
  });
}

/** The one param of `keep-keys` and `sdissoc`: a list of fields (see {@link fieldsParam}). */
export function keysParam(params: readonly EdnValue[], path: string, action: string): FieldPath[] {
  expectCount(params, 1, 1, path, action, "[[:key [:nested :key] ...]]");
  return fieldsParam(params[0], path, action);
}
