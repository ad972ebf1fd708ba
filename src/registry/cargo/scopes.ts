/**
 * Token scopes of the Cargo registry (docs/cargo.md): what a token may do (`scopes`) and on which
 * crates (`crates`, name patterns), both set when the token is created and absent meaning all.
 * The platform guard refuses a token with either one everywhere but on the Cargo routes; those
 * call {@link missingScope} once they know the crate a request is about.
 */
import type { Principal } from "../../platform/auth.js";
import { array, described, oneOf, schemaOf, ValidationError, type Validator } from "../../platform/validation.js";

/** The scopes a Cargo token may have, in the order error messages list them. */
export const CARGO_SCOPES = ["publish-new", "publish-update", "yank", "change-owners"] as const;

/**
 * What a Cargo request needs: `publish-new` (the first version of a crate),
 * `publish-update` (a new version of an existing crate), `yank` (yank and unyank),
 * `change-owners` (add or remove owners).
 */
export type CargoScope = "publish-new" | "publish-update" | "yank" | "change-owners";

/** The most patterns a token's `crates` may hold. */
export const CRATE_PATTERNS_MAX = 100;

/**
 * A crate name (1–64 ASCII letters, digits, `-`, `_`, starting with a letter),
 * optionally followed by one `*`.
 */
const CRATE_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}\*?$/;

/** The rule of crate patterns, worded for errors. */
export const CRATE_PATTERN_RULE =
  "must be a crate name (1 to 64 ASCII letters, digits, - or _, starting with a letter), optionally followed by *";

/** The rule of an empty list: leaving the field out is how a token gets every scope or crate. */
export const EMPTY_LIST_RULE = "must not be empty (leave the field out to allow all)";

const scopeList = array(oneOf(CARGO_SCOPES));

/**
 * The `scopes` of a token request: a non-empty array of {@link CARGO_SCOPES}, duplicates removed
 * (first occurrence kept, order kept).
 *
 * @throws ValidationError `scopes: must be an array`, `scopes: must not be empty (...)`,
 *   `scopes[1]: must be one of publish-new, publish-update, yank, change-owners`
 */
export const tokenScopes: Validator<CargoScope[]> = described(
  (value, path) => {
    if (Array.isArray(value) && value.length === 0) throw new ValidationError(path, EMPTY_LIST_RULE, value);
    return [...new Set(scopeList(value, path))];
  },
  { ...schemaOf(scopeList), minItems: 1 },
);

/**
 * One crate pattern: a crate name, optionally followed by one `*` (`serde`, `my-company-*`).
 *
 * @throws ValidationError with {@link CRATE_PATTERN_RULE}
 */
export const cratePattern: Validator<string> = described(
  (value, path) => {
    if (typeof value !== "string" || !CRATE_PATTERN.test(value)) {
      throw new ValidationError(path, CRATE_PATTERN_RULE, value);
    }
    return value;
  },
  { type: "string", pattern: CRATE_PATTERN.source },
);

const patternList = array(cratePattern, { max: CRATE_PATTERNS_MAX });

/**
 * The `crates` of a token request: a non-empty array of at most {@link CRATE_PATTERNS_MAX}
 * {@link cratePattern}s; patterns equal once canonical (`Foo_bar`, `foo-bar`) are duplicates, the
 * first one is kept as given.
 *
 * @throws ValidationError `crates: must be an array`, `crates: must not be empty (...)`,
 *   `crates: must have at most 100 items`, `crates[0]: must be a crate name (...)`
 */
export const cratePatterns: Validator<string[]> = described(
  (value, path) => {
    if (Array.isArray(value) && value.length === 0) throw new ValidationError(path, EMPTY_LIST_RULE, value);
    const seen = new Set<string>();
    return patternList(value, path).filter((pattern) => {
      const key = pattern.toLowerCase().replaceAll("_", "-");
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  },
  { ...schemaOf(patternList), minItems: 1 },
);

/** A character code of a crate name in canonical form: ASCII lower case, `_` as `-`. */
function canonical(code: number): number {
  if (code >= 65 && code <= 90) return code + 32;
  return code === 95 ? 45 : code;
}

/**
 * Whether a crate pattern matches a crate name, both compared in canonical form (lower case, `_`
 * as `-`): `foo_bar` matches `Foo-Bar`; `foo*` matches `foo` and every crate starting
 * with `foo`. Allocates nothing (compares character codes).
 */
export function matchesCratePattern(pattern: string, crate: string): boolean {
  const prefix = pattern.endsWith("*");
  const length = prefix ? pattern.length - 1 : pattern.length;
  if (prefix ? crate.length < length : crate.length !== length) return false;
  for (let index = 0; index < length; index += 1) {
    if (canonical(pattern.charCodeAt(index)) !== canonical(crate.charCodeAt(index))) return false;
  }
  return true;
}

/**
 * Why a principal may not do `scope` on `crate`, as the sentence of the 403, or
 * `undefined` when it may. A principal without `scopes` has every scope, one without `crates` is
 * for every crate; the scope is checked before the crate. Allocates nothing when allowed.
 *
 * @param crate the crate name of the request, shown as given in the sentence
 * @returns `this token lacks the scope <scope>`, or `this token is not for crate <crate> (its
 *   crates: <pattern>, <pattern>)`, or `undefined`
 */
export function missingScope(principal: Principal, scope: CargoScope, crate: string): string | undefined {
  const { scopes, crates } = principal;
  if (scopes !== undefined && !scopes.includes(scope)) return `this token lacks the scope ${scope}`;
  if (crates === undefined) return undefined;
  for (const pattern of crates) if (matchesCratePattern(pattern, crate)) return undefined;
  return `this token is not for crate ${crate} (its crates: ${crates.join(", ")})`;
}
