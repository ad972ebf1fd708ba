/**
 * Crate names (docs/cargo.md) and where a crate sits in Cargo's sparse index (see
 * https://doc.rust-lang.org/cargo/reference/registry-index.html#index-files).
 */
import { InvalidError } from "../../platform/errors.js";

/** The most characters a crate name may have (as on crates.io). */
export const CRATE_NAME_MAX = 64;

/** What a crate name may hold once its first character is a letter. */
const NAME_CHARACTERS = /^[A-Za-z0-9_-]*$/;

/** A whole valid name, for paths that only need a yes or no. */
const VALID_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** The longest part of a rejected value quoted back in an error sentence. */
const SHOWN_MAX = 80;

/**
 * A value quoted for an error sentence: JSON string syntax (so control characters and quotes show
 * escaped), cut after {@link SHOWN_MAX} characters so that a huge value does not make a huge error.
 */
export function quoted(value: string): string {
  return value.length > SHOWN_MAX ? `${JSON.stringify(value.slice(0, SHOWN_MAX))}…` : JSON.stringify(value);
}

/**
 * Checks a crate name: 1–64 characters, ASCII letters, digits, `-` and `_`, starting
 * with an ASCII letter. Returns it unchanged (case and `-`/`_` as given).
 *
 * @param what how the sentence names the value: `crate name` (default), `dependency name` …
 * @throws InvalidError naming the broken rule, e.g. `invalid crate name "9abc": must start with an
 *   ASCII letter`
 */
export function crateName(value: unknown, what = "crate name"): string {
  if (typeof value !== "string") throw new InvalidError(`invalid ${what}: must be a string`);
  if (value.length === 0) throw new InvalidError(`invalid ${what} "": must not be empty`);
  const shown = quoted(value);
  if (value.length > CRATE_NAME_MAX) {
    throw new InvalidError(`invalid ${what} ${shown}: must be at most ${CRATE_NAME_MAX} characters`);
  }
  if (!/^[A-Za-z]/.test(value)) throw new InvalidError(`invalid ${what} ${shown}: must start with an ASCII letter`);
  if (!NAME_CHARACTERS.test(value)) {
    const bad = [...value].find((character) => !NAME_CHARACTERS.test(character)) ?? "";
    throw new InvalidError(
      `invalid ${what} ${shown}: character ${quoted(bad)} is not allowed (only ASCII letters, digits, "-" and "_")`,
    );
  }
  return value;
}

/**
 * Windows device names, which no file or directory may take on Windows (`con`, `con.rs` …): a
 * crate of that name could not be unpacked there. crates.io reserves them (its migrations
 * `reserve_windows_crate_names` and `reserve_com0_lpt0`, https://github.com/rust-lang/crates.io).
 */
const WINDOWS_DEVICE_NAMES: ReadonlySet<string> = new Set([
  "con",
  "prn",
  "aux",
  "nul",
  ...Array.from({ length: 10 }, (_, digit) => `com${digit}`),
  ...Array.from({ length: 10 }, (_, digit) => `lpt${digit}`),
]);

/**
 * Names of Rust's own crates (the standard library, the compiler and its old tools) that crates.io
 * keeps from publishers (its migration `create_reserved_crate_names`), in canonical form.
 */
const RUST_CRATE_NAMES: ReadonlySet<string> = new Set(
  [
    "alloc",
    "arena",
    "ast",
    "builtins",
    "collections",
    "compiler-builtins",
    "compiler-rt",
    "compiletest",
    "core",
    "coretest",
    "debug",
    "driver",
    "flate",
    "fmt_macros",
    "grammar",
    "graphviz",
    "macro",
    "macros",
    "proc_macro",
    "rbml",
    "rust-installer",
    "rustbook",
    "rustc",
    "rustc_back",
    "rustc_borrowck",
    "rustc_driver",
    "rustc_llvm",
    "rustc_resolve",
    "rustc_trans",
    "rustc_typeck",
    "rustdoc",
    "rustllvm",
    "rustuv",
    "serialize",
    "std",
    "syntax",
    "test",
    "unicode",
  ].map((name) => canonicalCrateName(name)),
);

/**
 * Why a valid crate name may not be published, as crates.io rules: a Windows device name (`con`,
 * `prn`, `aux`, `nul`, `com0`–`com9`, `lpt0`–`lpt9`) or one of Rust's own crates (`std`, `core`,
 * `proc_macro` …), compared as {@link canonicalCrateName} does (any case, `-` and `_` alike).
 *
 * @returns the rule it breaks (`is a Windows device name, reserved as on crates.io`), or undefined
 */
export function reservedCrateName(name: string): string | undefined {
  const canonical = canonicalCrateName(name);
  if (WINDOWS_DEVICE_NAMES.has(canonical)) {
    return "is a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9), reserved as on crates.io";
  }
  if (RUST_CRATE_NAMES.has(canonical)) return "is the name of one of Rust's own crates, reserved as on crates.io";
  return undefined;
}

/**
 * The form under which two names are the same crate: lower-cased, `_` replaced by
 * `-` (`Foo_bar` and `foo-bar` → `foo-bar`). Expects a valid name (ASCII only).
 */
export function canonicalCrateName(name: string): string {
  return name.toLowerCase().replaceAll("_", "-");
}

/**
 * The path of a crate's file in the sparse index, relative to the index root: the lower-cased name
 * under `1/`, `2/`, `3/<first character>/` or `<characters 1–2>/<characters 3–4>/` by its length
 * (`a` → `1/a`, `abc` → `3/a/abc`, `Serde` → `se/rd/serde`). Cargo's layout,
 * https://doc.rust-lang.org/cargo/reference/registry-index.html#index-files. Expects a valid name.
 */
export function indexPath(name: string): string {
  const lower = name.toLowerCase();
  switch (lower.length) {
    case 1:
      return `1/${lower}`;
    case 2:
      return `2/${lower}`;
    case 3:
      return `3/${lower.slice(0, 1)}/${lower}`;
    default:
      return `${lower.slice(0, 2)}/${lower.slice(2, 4)}/${lower}`;
  }
}

/**
 * The crate an index request asks for: `path` is what follows `/api/v1/cargo/index/` (`se/rd/serde`).
 * Matched case-insensitively, ASCII only, so that `SE/rd/Serde` finds `serde`.
 *
 * @returns the lower-cased crate name, or undefined when `path` is not exactly {@link indexPath} of
 *   a valid name (`config.json`, `se/rd/serde/`, `xx/rd/serde`): the route answers 404
 */
export function nameFromIndexPath(path: string): string | undefined {
  // Checked before lower-casing: toLowerCase maps some non-ASCII characters to ASCII (K, U+212A → k).
  if (path.length > 2 * CRATE_NAME_MAX || !/^[A-Za-z0-9_/-]+$/.test(path)) return undefined;
  const lower = path.toLowerCase();
  const name = lower.slice(lower.lastIndexOf("/") + 1);
  if (!VALID_NAME.test(name)) return undefined;
  return indexPath(name) === lower ? name : undefined;
}
