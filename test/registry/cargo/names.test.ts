import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidError } from "../../../src/platform/errors.js";
import {
  CRATE_NAME_MAX,
  canonicalCrateName,
  crateName,
  indexPath,
  nameFromIndexPath,
  quoted,
  reservedCrateName,
} from "../../../src/registry/cargo/names.js";

/** The sentence of the InvalidError (400) that `run` throws. */
function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (!(error instanceof InvalidError)) throw error;
    expect(error.code).toBe("VIGIE_ERR_INVALID");
    return error.message;
  }
  throw new Error("expected an InvalidError");
}

// Seeded so that a failure can be replayed; fast-check prints the seed and the counterexample.
const SEED = Number(process.env.FUZZ_SEED ?? 20_241_124);

/** Valid crate names: a letter then up to 63 letters, digits, `-`, `_`. */
const validName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/);

describe("crateName", () => {
  it("accepts 1 to 64 ASCII letters, digits, - and _, starting with a letter", () => {
    for (const name of ["a", "A", "serde", "Foo_bar", "foo-bar", "x1", "a-", "a_", `a${"b".repeat(63)}`]) {
      expect(crateName(name)).toBe(name);
    }
  });

  it("refuses a value that is not a string", () => {
    expect(refusal(() => crateName(3))).toBe("invalid crate name: must be a string");
    expect(refusal(() => crateName(null))).toBe("invalid crate name: must be a string");
    expect(refusal(() => crateName(undefined))).toBe("invalid crate name: must be a string");
  });

  it("refuses an empty name", () => {
    expect(refusal(() => crateName(""))).toBe('invalid crate name "": must not be empty');
  });

  it("refuses more than 64 characters", () => {
    const long = `a${"b".repeat(CRATE_NAME_MAX)}`;
    expect(refusal(() => crateName(long))).toBe(`invalid crate name ${quoted(long)}: must be at most 64 characters`);
  });

  it("refuses a name that does not start with an ASCII letter", () => {
    expect(refusal(() => crateName("9abc"))).toBe('invalid crate name "9abc": must start with an ASCII letter');
    expect(refusal(() => crateName("_abc"))).toBe('invalid crate name "_abc": must start with an ASCII letter');
    expect(refusal(() => crateName("-abc"))).toBe('invalid crate name "-abc": must start with an ASCII letter');
    expect(refusal(() => crateName("éa"))).toBe('invalid crate name "éa": must start with an ASCII letter');
  });

  it("names the first character that is not allowed", () => {
    expect(refusal(() => crateName("a b"))).toBe(
      'invalid crate name "a b": character " " is not allowed (only ASCII letters, digits, "-" and "_")',
    );
    expect(refusal(() => crateName("a.b"))).toBe(
      'invalid crate name "a.b": character "." is not allowed (only ASCII letters, digits, "-" and "_")',
    );
    expect(refusal(() => crateName("caf\u00e9"))).toBe(
      'invalid crate name "café": character "é" is not allowed (only ASCII letters, digits, "-" and "_")',
    );
    expect(refusal(() => crateName("a\nb"))).toBe(
      'invalid crate name "a\\nb": character "\\n" is not allowed (only ASCII letters, digits, "-" and "_")',
    );
  });

  it("names the value as the caller says", () => {
    expect(refusal(() => crateName("9", "dependency name"))).toBe(
      'invalid dependency name "9": must start with an ASCII letter',
    );
  });
});

describe("reservedCrateName", () => {
  it("reserves the Windows device names in any case, as crates.io", () => {
    const devices = ["con", "prn", "aux", "nul"];
    for (let digit = 0; digit <= 9; digit += 1) devices.push(`com${digit}`, `lpt${digit}`);
    for (const name of devices.flatMap((device) => [
      device,
      device.toUpperCase(),
      `${device[0]?.toUpperCase()}${device.slice(1)}`,
    ])) {
      expect(reservedCrateName(name), name).toMatch(/^is a Windows device name/);
    }
  });

  it("reserves the names crates.io keeps for Rust's own crates, - and _ alike", () => {
    for (const name of [
      "std",
      "Core",
      "alloc",
      "proc_macro",
      "proc-macro",
      "test",
      "compiler_builtins",
      "rustc-driver",
    ]) {
      expect(reservedCrateName(name), name).toBe("is the name of one of Rust's own crates, reserved as on crates.io");
    }
  });

  it("leaves other names free, those that only start like a reserved one included", () => {
    for (const name of ["console", "con-rs", "com10", "lpt", "nulls", "stdx", "serde", "auxiliary", "tests"]) {
      expect(reservedCrateName(name), name).toBeUndefined();
    }
  });
});

describe("quoted", () => {
  it("quotes as JSON and cuts very long values", () => {
    expect(quoted('a"b')).toBe('"a\\"b"');
    expect(quoted("x".repeat(100))).toBe(`"${"x".repeat(80)}"…`);
  });
});

describe("canonicalCrateName", () => {
  it("lower-cases and turns _ into -", () => {
    expect(canonicalCrateName("Foo_bar")).toBe("foo-bar");
    expect(canonicalCrateName("foo-bar")).toBe("foo-bar");
    expect(canonicalCrateName("FOO_BAR_baz")).toBe("foo-bar-baz");
  });

  it("makes names equal after lower-casing and - = _ the same crate", () => {
    expect(canonicalCrateName("Foo_bar")).toBe(canonicalCrateName("foo-BAR"));
    expect(canonicalCrateName("foo")).not.toBe(canonicalCrateName("foo-"));
  });
});

describe("indexPath", () => {
  it("follows Cargo's layout by name length, lower-cased", () => {
    expect(indexPath("a")).toBe("1/a");
    expect(indexPath("AB")).toBe("2/ab");
    expect(indexPath("Abc")).toBe("3/a/abc");
    expect(indexPath("serde")).toBe("se/rd/serde");
    expect(indexPath("Serde_JSON")).toBe("se/rd/serde_json");
    expect(indexPath("abcd")).toBe("ab/cd/abcd");
    expect(indexPath("a-b_c")).toBe("a-/b_/a-b_c");
  });
});

describe("nameFromIndexPath", () => {
  it("finds the lower-cased name of a well-formed path, in any case", () => {
    expect(nameFromIndexPath("1/a")).toBe("a");
    expect(nameFromIndexPath("2/ab")).toBe("ab");
    expect(nameFromIndexPath("3/a/abc")).toBe("abc");
    expect(nameFromIndexPath("se/rd/serde")).toBe("serde");
    expect(nameFromIndexPath("SE/rd/Serde")).toBe("serde");
    expect(nameFromIndexPath("se/rd/serde_json")).toBe("serde_json");
  });

  it("refuses anything else", () => {
    for (const path of [
      "",
      "config.json",
      "serde",
      "a",
      "1/ab",
      "2/a",
      "3/b/abc",
      "3/abc",
      "xx/rd/serde",
      "se/xx/serde",
      "se/rd/serde/",
      "/se/rd/serde",
      "se//rd/serde",
      "se/rd/../serde",
      "1/9",
      "3/9/9ab",
      "1/_",
      "se/rd/serde.json",
      `ab/cd/abcd${"e".repeat(CRATE_NAME_MAX)}`,
      "1/\u212a", // Kelvin sign: lower-cases to k
      "2/\u212ab",
      "se/rd/serde%20",
    ]) {
      expect(nameFromIndexPath(path), path).toBeUndefined();
    }
  });

  it("inverts indexPath for every valid name, whatever the case of the path", () => {
    fc.assert(
      fc.property(validName, fc.boolean(), (name, upper) => {
        const path = indexPath(name);
        expect(nameFromIndexPath(upper ? path.toUpperCase() : path)).toBe(name.toLowerCase());
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it("finds a name only at the path indexPath gives it", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_/.-]{0,20}$/), (path) => {
        const name = nameFromIndexPath(path);
        if (name !== undefined) expect(indexPath(name)).toBe(path.toLowerCase());
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });
});
