/**
 * Token scopes of the Cargo registry (docs/cargo.md), without I/O: what `missingScope` allows and
 * the sentence it answers otherwise; the validators of the token request's `scopes` and `crates`.
 */
import { describe, expect, it } from "vitest";
import type { Principal } from "../../../src/platform/auth.js";
import {
  CARGO_SCOPES,
  type CargoScope,
  CRATE_PATTERN_RULE,
  CRATE_PATTERNS_MAX,
  cratePatterns,
  EMPTY_LIST_RULE,
  matchesCratePattern,
  missingScope,
  tokenScopes,
} from "../../../src/registry/cargo/scopes.js";
import { validationError } from "../../support/validation.js";

const rule = (run: () => unknown): string => validationError(run).message;

const principal = (limits: { scopes?: readonly string[]; crates?: readonly string[] } = {}): Principal => ({
  id: "u1",
  name: "ann",
  role: "tech",
  ...limits,
});

describe("missingScope", () => {
  it("allows everything to a token without scopes or crates", () => {
    for (const scope of CARGO_SCOPES) {
      expect(missingScope(principal(), scope, "anything")).toBeUndefined();
      expect(missingScope({ ...principal(), scopes: undefined, crates: undefined }, scope, "x")).toBeUndefined();
    }
  });

  it("allows each scope only to a token that has it, naming the one missing", () => {
    for (const scope of CARGO_SCOPES) {
      const only = principal({ scopes: [scope] });
      for (const asked of CARGO_SCOPES) {
        expect(missingScope(only, asked, "foo"), `${scope} asked ${asked}`).toBe(
          asked === scope ? undefined : `this token lacks the scope ${asked}`,
        );
      }
    }
    const two = principal({ scopes: ["publish-new", "publish-update"] });
    expect(missingScope(two, "publish-update", "foo")).toBeUndefined();
    expect(missingScope(two, "yank", "foo")).toBe("this token lacks the scope yank");
    expect(missingScope(two, "change-owners", "foo")).toBe("this token lacks the scope change-owners");
  });

  it("gives every scope to a token limited by crates only, on those crates only", () => {
    const token = principal({ crates: ["bar", "baz*"] });
    for (const scope of CARGO_SCOPES) {
      expect(missingScope(token, scope, "bar")).toBeUndefined();
      expect(missingScope(token, scope, "baz-core")).toBeUndefined();
      expect(missingScope(token, scope, "foo")).toBe("this token is not for crate foo (its crates: bar, baz*)");
    }
  });

  it("checks the scope before the crate", () => {
    const token = principal({ scopes: ["yank"], crates: ["bar"] });
    expect(missingScope(token, "publish-new", "foo")).toBe("this token lacks the scope publish-new");
    expect(missingScope(token, "yank", "foo")).toBe("this token is not for crate foo (its crates: bar)");
    expect(missingScope(token, "yank", "bar")).toBeUndefined();
  });

  it("names the crate as the request gave it", () => {
    expect(missingScope(principal({ crates: ["bar"] }), "yank", "Foo_Bar")).toBe(
      "this token is not for crate Foo_Bar (its crates: bar)",
    );
  });
});

describe("crate patterns", () => {
  it("match the canonical crate name on both sides: lower case, _ as -", () => {
    for (const [pattern, crate] of [
      ["foo-bar", "foo-bar"],
      ["foo-bar", "foo_bar"],
      ["foo_bar", "Foo-Bar"],
      ["FOO_BAR", "foo-bar"],
      ["Serde", "serde"],
    ] as const) {
      expect(matchesCratePattern(pattern, crate), `${pattern} ${crate}`).toBe(true);
    }
    for (const [pattern, crate] of [
      ["foo", "foo-bar"],
      ["foo-bar", "foo"],
      ["foo-bar", "foobar"],
      ["serde", "serde1"],
      ["abc", "abd"],
    ] as const) {
      expect(matchesCratePattern(pattern, crate), `${pattern} ${crate}`).toBe(false);
    }
  });

  it("with a trailing * match every crate starting with the rest, the rest itself included", () => {
    for (const crate of ["foo", "foobar", "foo-bar", "Foo_Bar", "FOO9"]) {
      expect(matchesCratePattern("foo*", crate), crate).toBe(true);
    }
    for (const crate of ["fo", "bar-foo", "f"]) expect(matchesCratePattern("foo*", crate), crate).toBe(false);
    expect(matchesCratePattern("acme_*", "acme-tools")).toBe(true);
    expect(matchesCratePattern("acme-*", "acme_tools")).toBe(true);
    expect(matchesCratePattern("acme-*", "acme")).toBe(false);
    expect(matchesCratePattern("acme-*", "acmetools")).toBe(false);
  });

  it("decide through missingScope with several patterns", () => {
    const token = principal({ crates: ["serde", "acme-*"] });
    expect(missingScope(token, "publish-new", "Serde")).toBeUndefined();
    expect(missingScope(token, "publish-new", "acme_http")).toBeUndefined();
    expect(missingScope(token, "publish-new", "serde-json")).toBe(
      "this token is not for crate serde-json (its crates: serde, acme-*)",
    );
  });
});

describe("validators of the token request", () => {
  it("take scopes as a non-empty array of known scopes, duplicates removed", () => {
    expect(tokenScopes(["yank"], "scopes")).toEqual(["yank"]);
    expect(tokenScopes(["yank", "publish-new", "yank"], "scopes")).toEqual(["yank", "publish-new"]);
    expect(tokenScopes([...CARGO_SCOPES, ...CARGO_SCOPES], "scopes")).toEqual([...CARGO_SCOPES]);
    const scope: CargoScope[] = tokenScopes(["change-owners"], "scopes");
    expect(scope).toEqual(["change-owners"]);
  });

  it("name the scope that breaks the rules", () => {
    expect(rule(() => tokenScopes([], "scopes"))).toBe(`scopes: ${EMPTY_LIST_RULE}`);
    expect(rule(() => tokenScopes("yank", "scopes"))).toBe("scopes: must be an array");
    expect(rule(() => tokenScopes({}, "scopes"))).toBe("scopes: must be an array");
    for (const bad of ["read", "Yank", "", "publish", 3, null, ["yank"]]) {
      expect(
        rule(() => tokenScopes(["yank", bad], "scopes")),
        JSON.stringify(bad),
      ).toBe("scopes[1]: must be one of publish-new, publish-update, yank, change-owners");
    }
  });

  it("take crates as a non-empty array of crate names with an optional trailing *", () => {
    const valid = ["a", "serde", "Serde_JSON", "acme-*", "x*", `a${"b".repeat(63)}`, `a${"b".repeat(63)}*`, "a-_9"];
    expect(cratePatterns(valid, "crates")).toEqual(valid);
    expect(
      cratePatterns(
        Array.from({ length: CRATE_PATTERNS_MAX }, (_, index) => `c${index}`),
        "crates",
      ),
    ).toHaveLength(CRATE_PATTERNS_MAX);
  });

  it("remove patterns equal once canonical, keeping the first as given", () => {
    expect(cratePatterns(["Foo_bar", "foo-bar", "FOO-BAR", "foo*", "Foo*", "foo_*", "foo-*"], "crates")).toEqual([
      "Foo_bar",
      "foo*",
      "foo_*",
    ]);
  });

  it("name the pattern that breaks the rules", () => {
    expect(rule(() => cratePatterns([], "crates"))).toBe(`crates: ${EMPTY_LIST_RULE}`);
    expect(rule(() => cratePatterns("serde", "crates"))).toBe("crates: must be an array");
    expect(
      rule(() =>
        cratePatterns(
          Array.from({ length: CRATE_PATTERNS_MAX + 1 }, (_, index) => `c${index}`),
          "crates",
        ),
      ),
    ).toBe(`crates: must have at most ${CRATE_PATTERNS_MAX} items`);
    for (const bad of [
      "",
      "*",
      "**",
      "foo**",
      "*foo",
      "f*o",
      "9lives",
      "-dash",
      "_under",
      "has space",
      "dot.ted",
      "é",
      `a${"b".repeat(64)}`,
      `a${"b".repeat(64)}*`,
      3,
      null,
    ]) {
      expect(
        rule(() => cratePatterns(["ok", bad], "crates")),
        JSON.stringify(bad),
      ).toBe(`crates[1]: ${CRATE_PATTERN_RULE}`);
    }
  });
});
