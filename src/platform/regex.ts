/**
 * Regular expressions that come from users (configuration files and APIs: `body-regexp` of http
 * checks, `:regex` conditions of streams), compiled with RE2 through re2js so that matching takes
 * time linear in the input whatever the pattern (docs/security.md): no catastrophic backtracking, so a
 * pattern such as `(a+)+$` cannot freeze the event loop. The price is RE2's syntax
 * (https://github.com/google/re2/wiki/Syntax): backreferences and lookaround are refused.
 */
import { RE2JS } from "re2js";
import { errorMessage } from "./errors.js";
import { ValidationError, type Validator } from "./validation.js";

/** A pattern RE2 cannot run; the message says why (`invalid escape sequence: \1`). */
export class RegexError extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(reason);
    this.name = "RegexError";
  }
}

/** A compiled user regular expression. */
export interface LinearRegex {
  /** The pattern as given. */
  readonly source: string;
  /** Whether the pattern matches somewhere in `input` (a string, or UTF-8 bytes). */
  test(input: string | Uint8Array): boolean;
  /** Whether the pattern matches the whole of `input`, as Java's `String.matches` does. */
  testWhole(input: string): boolean;
  /** Capture groups of the pattern (0 when it has none). */
  readonly groups: number;
  /**
   * What the first capture group captured at the first match in `input` (searched, unanchored),
   * or undefined when nothing matched or the group took no part in the match.
   */
  firstGroup(input: string): string | undefined;
}

/** What RE2 says of a pattern, without its `error parsing regexp: ` preamble. */
function re2Reason(error: unknown): string {
  return errorMessage(error).replace(/^error parsing regexp: /, "");
}

/**
 * Compiles a user pattern with RE2.
 * @throws RegexError for a pattern RE2 cannot run: a syntax error, a backreference (`\1`),
 *   lookaround (`(?=`, `(?<=`, `(?!`), or a repeat count over 1000
 */
export function compileLinearRegex(pattern: string): LinearRegex {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (error) {
    throw new RegexError(pattern, re2Reason(error));
  }
  return {
    source: pattern,
    test: (input) => compiled.test(input),
    testWhole: (input) => compiled.testExact(input),
    groups: compiled.groupCount(),
    firstGroup: (input) => {
      const matcher = compiled.matcher(input);
      return matcher.find() ? (matcher.group(1) ?? undefined) : undefined;
    },
  };
}

/** The rule a refused pattern breaks, worded to follow a field name. */
export const LINEAR_REGEX_RULE =
  "must be a regular expression in RE2 syntax, which runs in linear time (no backreferences or lookaround)";

/** A field holding a user regular expression; returns the pattern as given. */
export const linearRegexPattern: Validator<string> = (value, path) => {
  if (typeof value !== "string") throw new ValidationError(path, LINEAR_REGEX_RULE, value);
  try {
    compileLinearRegex(value);
  } catch (error) {
    if (error instanceof RegexError) throw new ValidationError(path, `${LINEAR_REGEX_RULE}: ${error.message}`, value);
    throw error;
  }
  return value;
};
