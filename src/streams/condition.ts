/**
 * Where-conditions, compiled once into closures:
 *
 * ```
 * condition := [op field arg?]        field := :key | [:key :nested-key ...]
 *            | [:and condition ...] | [:or condition ...] | [:not condition]
 *            | [:always-true] | [:true]
 * ```
 *
 * A condition never throws: a missing field or a value of the wrong type makes a comparison, sign
 * or regex test false (`:not=` and `:absent` true, `:nil?` true). `:not` is an addition over the
 * original Mirabelle grammar.
 */
import { compileLinearRegex, type LinearRegex, RegexError } from "../platform/regex.js";
import { CompileError } from "./compile-error.js";
import { type EdnValue, ednToJson, isKeyword, nameOf, sequenceItems } from "./edn.js";
import { type Event, type FieldPath, type FieldReader, fieldReader, isObjectOrArray, valuesEqual } from "./event.js";

/** A compiled condition. */
export type Predicate = (event: Event) => boolean;

/**
 * Reads a field designator: a keyword (`:host`) or a vector of keywords (`[:attributes :host]`).
 * @throws CompileError when it is neither
 */
export function compileField(value: EdnValue | undefined, path: string): FieldPath {
  if (isKeyword(value)) return [value.key];
  const keys = sequenceItems(value)?.map((item) => (isKeyword(item) ? item.key : undefined)) ?? [];
  if (keys.length > 0 && keys.every((key) => key !== undefined)) return keys;
  throw new CompileError(path, "a field must be a keyword or a vector of keywords");
}

/**
 * A numeric comparison of a field with `bound`, false when the field is not a number. One closure
 * per operator, with the operator written in it: the hot path of a `where` makes no further call.
 */
function comparison(op: ">" | ">=" | "<" | "<=", read: FieldReader, bound: number): Predicate {
  switch (op) {
    case ">":
      return (event) => {
        const value = read(event);
        return typeof value === "number" && value > bound;
      };
    case ">=":
      return (event) => {
        const value = read(event);
        return typeof value === "number" && value >= bound;
      };
    case "<":
      return (event) => {
        const value = read(event);
        return typeof value === "number" && value < bound;
      };
    case "<=":
      return (event) => {
        const value = read(event);
        return typeof value === "number" && value <= bound;
      };
  }
}

/**
 * `[:= field argument]` for a scalar argument (a string, a number, a boolean or nil): what
 * {@link valuesEqual} decides, strict equality (only an object or an array equals a value it is not
 * identical to; NaN equals nothing). A top-level field is read here, by a closure of its own, rather
 * than through the reader that every field of every stream shares: its property load then sees one
 * name and the shapes of one stream's events, not all of them (the `where` of a remote write route
 * runs once per sample).
 */
function scalarEquality(field: FieldPath, read: FieldReader, argument: unknown): Predicate {
  const [key] = field;
  if (field.length === 1 && key !== undefined) return (event) => event[key] === argument;
  return (event) => read(event) === argument;
}

function argumentOf(items: EdnValue[], op: string, path: string): EdnValue {
  const argument = items[2];
  if (items.length !== 3 || argument === undefined)
    throw new CompileError(path, `${op} takes a field and one argument`);
  return argument;
}

/**
 * Compiles a where-condition.
 * @param path where the condition is in the configuration, for error messages
 * @throws CompileError naming the path and the problem
 */
export function compileCondition(condition: EdnValue | undefined, path: string): Predicate {
  const items = sequenceItems(condition);
  if (items === undefined || items.length === 0 || !isKeyword(items[0])) {
    throw new CompileError(path, "a condition must be a vector starting with an operator keyword");
  }
  const op = items[0].key;
  const operator = `:${op}`;
  switch (op) {
    case "always-true":
    case "true":
      if (items.length !== 1) throw new CompileError(path, `${operator} takes no argument`);
      return () => true;
    case "and":
    case "or": {
      if (items.length < 2) throw new CompileError(path, `${operator} needs at least one condition`);
      const parts = items.slice(1).map((item, index) => compileCondition(item, `${path}[${index + 1}]`));
      const [a, b] = parts;
      if (parts.length === 1 && a !== undefined) return a;
      if (parts.length === 2 && a !== undefined && b !== undefined) {
        return op === "and" ? (event) => a(event) && b(event) : (event) => a(event) || b(event);
      }
      return op === "and"
        ? (event) => parts.every((part) => part(event))
        : (event) => parts.some((part) => part(event));
    }
    case "not": {
      if (items.length !== 2) throw new CompileError(path, ":not takes exactly one condition");
      const inner = compileCondition(items[1], `${path}[1]`);
      return (event) => !inner(event);
    }
    default:
      break;
  }
  if (items.length < 2) throw new CompileError(path, `${operator} needs a field`);
  const field = compileField(items[1], `${path}[1]`);
  const read = fieldReader(field);
  switch (op) {
    case "=":
    case "not=": {
      const argument = ednToJson(argumentOf(items, operator, path));
      if (!isObjectOrArray(argument)) {
        const equal = scalarEquality(field, read, argument);
        return op === "=" ? equal : (event) => !equal(event);
      }
      if (op === "=") return (event) => valuesEqual(read(event), argument);
      return (event) => !valuesEqual(read(event), argument);
    }
    case ">":
    case ">=":
    case "<":
    case "<=": {
      const argument = argumentOf(items, operator, path);
      if (typeof argument !== "number" && typeof argument !== "bigint") {
        throw new CompileError(path, `${operator} compares with a number`);
      }
      return comparison(op, read, Number(argument));
    }
    case "pos?":
    case "neg?":
    case "zero?": {
      if (items.length !== 2) throw new CompileError(path, `${operator} takes a field only`);
      const sign = op === "pos?" ? 1 : op === "neg?" ? -1 : 0;
      return (event) => {
        const value = read(event);
        return typeof value === "number" && Math.sign(value) === sign && !Number.isNaN(value);
      };
    }
    case "contains":
    case "absent": {
      const argument = ednToJson(argumentOf(items, operator, path));
      const contains = (event: Event) => {
        const value = read(event);
        return Array.isArray(value) && value.some((item) => valuesEqual(item, argument));
      };
      return op === "contains" ? contains : (event) => !contains(event);
    }
    case "regex": {
      const source = nameOf(argumentOf(items, operator, path));
      const pattern = typeof source === "string" ? source : regexSource(items[2]);
      if (pattern === undefined) throw new CompileError(path, ":regex takes a string pattern");
      let regex: LinearRegex;
      try {
        regex = compileLinearRegex(pattern);
      } catch (error) {
        if (!(error instanceof RegexError)) throw error;
        throw new CompileError(
          path,
          `invalid regular expression ${JSON.stringify(pattern)}: ${error.message} (RE2 syntax, which runs in linear time: no backreferences or lookaround)`,
        );
      }
      // The whole value must match, as Java's String.matches does (Mirabelle's semantics).
      const matches = memoized(regex);
      return (event) => {
        const value = read(event);
        return typeof value === "string" && matches(value);
      };
    }
    case "nil?":
    case "not-nil?": {
      if (items.length !== 2) throw new CompileError(path, `${operator} takes a field only`);
      if (op === "nil?") return (event) => read(event) == null;
      return (event) => read(event) != null;
    }
    default:
      throw new CompileError(path, `unknown condition operator ${operator}`);
  }
}

/** Values longer than this are matched every time rather than remembered. */
const MEMO_MAX_LENGTH = 256;

/**
 * Characters of long values (beyond {@link MEMO_MAX_LENGTH}) that the `:regex` conditions of the
 * evaluation under way may still read; unbounded outside {@link matchWithin}.
 */
let regexAllowance = Number.POSITIVE_INFINITY;

/** An evaluation whose regular expressions would read more than {@link matchWithin} allows. */
export class RegexAllowanceError extends Error {
  constructor(readonly characters: number) {
    super(`the query's regular expressions read more than ${characters} characters of one event`);
    this.name = "RegexAllowanceError";
  }
}

/**
 * Evaluates a predicate compiled from a query of the API (an index search, a subscription, a
 * Riemann query), its `:regex` conditions reading at most `characters` characters of the event's
 * values in all: matching is linear in its input, but a query may test one long value with many
 * patterns, and one evaluation must not hold the event loop for long. Values the memory of recent
 * results answers are not counted.
 * @throws RegexAllowanceError when they would read more (the evaluation stops there)
 */
export function matchWithin(predicate: Predicate, event: Event, characters: number): boolean {
  const saved = regexAllowance;
  regexAllowance = characters;
  try {
    return predicate(event);
  } catch (error) {
    if (error instanceof RegexAllowanceError) throw new RegexAllowanceError(characters);
    throw error;
  } finally {
    regexAllowance = saved;
  }
}
/** Results remembered per condition; the memory starts over when full. */
const MEMO_MAX_ENTRIES = 4096;

/**
 * Whole-value matching with a bounded memory of recent results. Streams see the same few values
 * (host names, services) again and again, and a lookup costs a fraction of running the automaton,
 * so the hot path stays near the cost of `:=`. At most {@link MEMO_MAX_ENTRIES} values of at most
 * {@link MEMO_MAX_LENGTH} characters are kept per condition.
 */
function memoized(regex: LinearRegex): (value: string) => boolean {
  let memo = new Map<string, boolean>();
  return (value) => {
    if (value.length > MEMO_MAX_LENGTH) {
      regexAllowance -= value.length;
      if (regexAllowance < 0) throw new RegexAllowanceError(0); // matchWithin names its allowance
      return regex.testWhole(value);
    }
    let result = memo.get(value);
    if (result === undefined) {
      result = regex.testWhole(value);
      if (memo.size >= MEMO_MAX_ENTRIES) memo = new Map();
      memo.set(value, result);
    }
    return result;
  };
}

/** The pattern of an EDN regex literal `#"..."` (edn-data reads it as a tagged value). */
function regexSource(value: EdnValue | undefined): string | undefined {
  if (typeof value === "object" && value !== null && "tag" in value && "val" in value) {
    return typeof value.val === "string" ? value.val : undefined;
  }
  return undefined;
}
