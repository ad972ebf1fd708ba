/**
 * Publishing (docs/cargo.md): the frame `cargo publish` sends, the rules of its metadata, and the
 * sparse index line a version becomes. Plain TypeScript: the route reads the body, the storage keeps
 * the line; every refusal is an {@link InvalidError} whose sentence cargo prints to the user.
 *
 * Sources: https://doc.rust-lang.org/cargo/reference/registry-web-api.html#publish (frame and
 * metadata) and https://doc.rust-lang.org/cargo/reference/registry-index.html#json-schema (index line).
 */
import { createHash } from "node:crypto";
import type Semver from "semver";
import { InvalidError } from "../../platform/errors.js";
import { lazyLibrary } from "../../platform/lazy.js";
import { isPlainObject } from "../../platform/validation.js";
import { crateName, quoted, reservedCrateName } from "./names.js";

/** semver, loaded with the first publish (start-up skips it). */
const semver = lazyLibrary<typeof Semver>("semver");

function refuse(sentence: string): never {
  throw new InvalidError(sentence);
}

// ---------------------------------------------------------------------------------------------
// The frame

/** The JSON metadata and the `.crate` bytes of a publish request. */
export interface PublishFrame {
  /** The parsed JSON object (checked by {@link publishMetadata}). */
  readonly metadata: unknown;
  /** The `.crate` file: a view into the request body, not a copy. */
  readonly crate: Buffer;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Splits the body of `PUT /api/v1/crates/new` (Cargo's web API "Publish"): a u32
 * little-endian length, that many bytes of UTF-8 JSON metadata, a u32 little-endian length, that
 * many bytes of `.crate`, and nothing after. The size limit (413) is the route's: it knows
 * `max-crate-size` and can check `crate.length`.
 *
 * @throws InvalidError naming the inconsistency: a body shorter than 4 bytes, a metadata length
 *   past the end, metadata that is not UTF-8, not JSON or not a JSON object, a missing `.crate`
 *   length, a `.crate` length past the end, bytes after the `.crate`
 */
export function parsePublishFrame(body: Buffer): PublishFrame {
  if (body.length < 4) {
    refuse(`publish body is ${body.length} bytes long: too short to hold the metadata length (4 bytes)`);
  }
  const metadataLength = body.readUInt32LE(0);
  const metadataEnd = 4 + metadataLength;
  if (metadataEnd > body.length) {
    refuse(`publish body declares ${metadataLength} bytes of metadata but only ${body.length - 4} follow`);
  }
  let text: string;
  try {
    text = strictUtf8.decode(body.subarray(4, metadataEnd));
  } catch {
    refuse("publish metadata is not valid UTF-8");
  }
  let metadata: unknown;
  try {
    metadata = JSON.parse(text);
  } catch {
    refuse("publish metadata is not valid JSON");
  }
  if (!isPlainObject(metadata)) refuse(`publish metadata must be a JSON object, not ${jsonKind(metadata)}`);
  if (metadataEnd + 4 > body.length) {
    refuse("publish body ends after the metadata: the length of the .crate (4 bytes) is missing");
  }
  const crateLength = body.readUInt32LE(metadataEnd);
  const crateStart = metadataEnd + 4;
  const crateEnd = crateStart + crateLength;
  if (crateEnd > body.length) {
    refuse(`publish body declares a .crate of ${crateLength} bytes but only ${body.length - crateStart} follow`);
  }
  if (crateEnd < body.length) refuse(`publish body has ${body.length - crateEnd} bytes after the .crate`);
  return { metadata, crate: body.subarray(crateStart, crateEnd) };
}

function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

// ---------------------------------------------------------------------------------------------
// The metadata

/** What a dependency is for: `normal`, `dev` (tests, examples, benches) or `build` (build script). */
export type DependencyKind = "normal" | "dev" | "build";

const KINDS: readonly DependencyKind[] = ["normal", "dev", "build"];

function isKind(value: unknown): value is DependencyKind {
  return KINDS.some((kind) => kind === value);
}

/**
 * The index URLs by which Cargo names crates.io in a dependency's `registry`: the git index and the
 * sparse one (https://doc.rust-lang.org/cargo/reference/registry-index.html#index-protocols).
 */
export const CRATES_IO_INDEXES: readonly string[] = [
  "https://github.com/rust-lang/crates.io-index",
  "sparse+https://index.crates.io/",
];

/** One dependency of a published version, checked. */
export interface PublishDependency {
  /** The real name of the crate depended on (as published, case kept). */
  readonly name: string;
  /** Cargo's version requirement as sent (`^0.1`, `>=1, <2`). */
  readonly versionReq: string;
  /** Features of the dependency turned on. */
  readonly features: readonly string[];
  readonly optional: boolean;
  readonly defaultFeatures: boolean;
  /** The platform it is limited to (`cfg(unix)`, a target triple), or null for all. */
  readonly target: string | null;
  readonly kind: DependencyKind;
  /** Null for this registry, else one of {@link CRATES_IO_INDEXES}. */
  readonly registry: string | null;
  /** The name the dependent uses when it renamed the dependency in its Cargo.toml, else null. */
  readonly explicitNameInToml: string | null;
}

/**
 * The checked metadata of a publish: what the index line needs (name, vers, deps, features, links,
 * rustVersion) and what `GET /api/v1/registry/crates/<name>` shows. Cargo's other
 * fields (`authors`, `badges`, `readme_file`, `license_file`) and unknown keys are dropped.
 */
export interface PublishMetadata {
  /** As sent (case and `-`/`_` kept): the `.crate` paths and the index use it. */
  readonly name: string;
  /** Strict SemVer 2.0, build metadata kept (`1.0.0+abc`). */
  readonly vers: string;
  readonly deps: readonly PublishDependency[];
  /** Feature name → what it turns on (`dep:x`, `x/feature`, `x?/feature`, another feature). */
  readonly features: Readonly<Record<string, readonly string[]>>;
  /** The native library the crate links (`links` of Cargo.toml), or null. */
  readonly links: string | null;
  /** The minimal Rust version (`1.70`, `1.70.0`), or null. */
  readonly rustVersion: string | null;
  readonly description: string | null;
  readonly keywords: readonly string[];
  readonly categories: readonly string[];
  /** An SPDX expression as written in Cargo.toml; not parsed. */
  readonly license: string | null;
  /** http(s) URLs. */
  readonly repository: string | null;
  readonly documentation: string | null;
  readonly homepage: string | null;
  /** The README's text. */
  readonly readme: string | null;
}

// Bounds. Where crates.io documents one (Cargo manifest reference, `keywords` and `categories`:
// https://doc.rust-lang.org/cargo/reference/manifest.html#the-keywords-field) it is taken as is;
// the others are ours, generous for real crates and small enough to keep rows and pages sane.

/** crates.io: at most 5 keywords. */
export const MAX_KEYWORDS = 5;
/** crates.io: at most 20 characters per keyword. */
export const MAX_KEYWORD_LENGTH = 20;
/** crates.io: at most 5 categories. */
export const MAX_CATEGORIES = 5;
/** Ours: a category slug (`development-tools::cargo-plugins`) is far shorter. */
export const MAX_CATEGORY_LENGTH = 100;
/** Ours, in characters (UTF-16 code units). */
export const MAX_DESCRIPTION_LENGTH = 1000;
/** Ours, in characters: an SPDX expression. */
export const MAX_LICENSE_LENGTH = 256;
/** Ours, in characters: repository, documentation and homepage. */
export const MAX_URL_LENGTH = 1024;
/** Ours, in bytes of UTF-8. */
export const MAX_README_BYTES = 1024 * 1024;
/** Ours, in characters: the `links` library name. */
export const MAX_LINKS_LENGTH = 256;
/** crates.io: at most 500 dependencies (its publish limits' default). */
export const MAX_DEPENDENCIES = 500;
/**
 * crates.io's default (its publish limits, `features: 300`): at most 300 features per version, and
 * at most 300 features enabled by one feature. The default of `registry.cargo.max-features`, which
 * also bounds the features one dependency turns on.
 */
export const DEFAULT_MAX_FEATURES = 300;
/**
 * Ours: the most bytes of UTF-8 one version's index line may take, 256 KiB (the default of
 * `registry.cargo.max-index-line`). Every version's line is in its crate's index file, which
 * cargo fetches whole, so one huge line weighs on every later fetch; the largest lines on
 * crates.io (crates generated from platform APIs) stay far below.
 */
export const DEFAULT_MAX_INDEX_LINE = 256 * 1024;
/** Ours, in characters: a feature name, or one entry of a feature (`dep:x`, `x?/y`). */
export const MAX_FEATURE_LENGTH = 200;
/** Ours, in characters: a version requirement. */
export const MAX_VERSION_REQ_LENGTH = 256;
/** Ours, in characters: a dependency's `target` (`cfg(...)` or a triple). */
export const MAX_TARGET_LENGTH = 256;

/** The configurable bounds of a publish (`registry.cargo`). */
export interface PublishLimits {
  /**
   * Features per version, entries of one feature and features one dependency turns on
   * (`max-features`); default {@link DEFAULT_MAX_FEATURES}.
   */
  readonly maxFeatures: number;
}

/** The defaults: crates.io's. */
export const DEFAULT_PUBLISH_LIMITS: PublishLimits = { maxFeatures: DEFAULT_MAX_FEATURES };

/** crates.io's keyword rule (Cargo manifest reference): ASCII letters, digits, `_`, `-`, `+`. */
const KEYWORD = /^[A-Za-z0-9][A-Za-z0-9_+-]*$/;

/**
 * A feature name as crates.io accepts it: an ASCII letter, digit or `_`, then letters, digits and
 * `_ - + .` (Cargo also allows Unicode letters; crates.io does not).
 */
const FEATURE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_+.-]*$/;

/** An entry of a feature: another feature, `dep:<dependency>`, `<dependency>/<feature>`, `<dependency>?/<feature>`. */
const FEATURE_VALUE = /^(?:dep:)?[A-Za-z0-9_][A-Za-z0-9_+.-]*(?:\??\/[A-Za-z0-9_][A-Za-z0-9_+.-]*)?$/;

/** A Rust version: one to three numbers without leading zeros, no pre-release (`1.70`, `1.70.0`). */
const RUST_VERSION = /^(?:0|[1-9]\d{0,8})(?:\.(?:0|[1-9]\d{0,8})){0,2}$/;

/**
 * One comparator of Cargo's requirement syntax: an optional operator, then a version whose missing
 * or wildcard parts (`*`, `x`, `X`) stand for any (https://doc.rust-lang.org/cargo/reference/specifying-dependencies.html).
 */
const COMPARATOR =
  /^(?:=|>=|<=|>|<|~|\^)?\s*(?:\d+|[*xX])(?:\.(?:\d+|[*xX])(?:\.(?:\d+|[*xX])(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)?)?$/;

/** The own property `key` of a JSON object; never one inherited from Object.prototype. */
function own(object: Readonly<Record<string, unknown>>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** A text field that may be absent or null; bounded in UTF-16 code units. */
function optionalText(value: unknown, field: string, max: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") refuse(`${field} must be a string or null`);
  if (value.length > max) refuse(`${field} is too long: ${value.length} characters, at most ${max}`);
  return value;
}

function optionalUrl(value: unknown, field: string): string | null {
  const text = optionalText(value, field, MAX_URL_LENGTH);
  if (text === null) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    refuse(`${field} ${quoted(text)} is not a URL`);
  }
  // As crates.io: a link the registry shows must not be `javascript:` or `file:`.
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    refuse(`${field} ${quoted(text)} must be an http or https URL`);
  }
  return text;
}

function optionalBoolean(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "boolean") refuse(`${field} must be true or false`);
  return value;
}

/** An array of strings, each checked by `item`; absent or null is empty. */
function stringList(
  value: unknown,
  field: string,
  maxItems: number,
  item: (entry: string) => string | undefined,
): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) refuse(`${field} must be a list of strings`);
  if (value.length > maxItems) refuse(`${field} has ${value.length} entries: at most ${maxItems} are allowed`);
  const result: string[] = [];
  for (const entry of value) {
    if (typeof entry !== "string") refuse(`${field} must be a list of strings`);
    const broken = item(entry);
    if (broken !== undefined) refuse(broken);
    result.push(entry);
  }
  return result;
}

/**
 * Checks a version: strict SemVer 2.0 as the `semver` package parses it, written in
 * its normal form (no `v` or `=` prefix, no spaces), build metadata allowed.
 *
 * @throws InvalidError `invalid version "1.0": must be strict SemVer 2.0 ...`
 */
export function publishVersion(value: unknown): string {
  if (typeof value !== "string") refuse("invalid version: vers must be a string");
  const parsed = semver().parse(value, { loose: false });
  // SemVer's `version` leaves out build metadata: put it back to compare with what was sent.
  const build = parsed === null || parsed.build.length === 0 ? "" : `+${parsed.build.join(".")}`;
  if (parsed === null || `${parsed.version}${build}` !== value) {
    refuse(
      `invalid version ${quoted(value)}: must be strict SemVer 2.0 (MAJOR.MINOR.PATCH with optional -pre-release and +build, e.g. 1.0.0)`,
    );
  }
  return value;
}

/**
 * Checks a dependency's version requirement in Cargo's syntax: comparators separated by commas
 * (`>=1, <2`), each an optional operator (`= > >= < <= ~ ^`) and a version that may be partial or
 * wildcard (`0.1`, `1.*`). Confirmed by `semver.validRange` once the commas are spaces, since
 * node-semver separates comparators with spaces. `||` and hyphen ranges are node-semver's, not
 * Cargo's, and are refused.
 */
function versionRequirement(value: unknown, dependency: string): string {
  if (typeof value !== "string") refuse(`dependency ${dependency}: version_req must be a string`);
  const invalid = `dependency ${dependency} has an invalid version requirement ${quoted(value)}`;
  if (value.length > MAX_VERSION_REQ_LENGTH) refuse(`${invalid}: longer than ${MAX_VERSION_REQ_LENGTH} characters`);
  const comparators = value.split(",").map((part) => part.trim());
  if (comparators.some((part) => !COMPARATOR.test(part))) {
    refuse(`${invalid}: expected comparators such as ^1.2, ~1.2.3, =1.0.0, >=1, <2 or 1.*, separated by commas`);
  }
  if (semver().validRange(comparators.join(" "), { loose: false }) === null) refuse(invalid);
  return value;
}

function featureValue(entry: string, field: string): string | undefined {
  if (entry.length > MAX_FEATURE_LENGTH) {
    return `${field}: ${quoted(entry)} is longer than ${MAX_FEATURE_LENGTH} characters`;
  }
  if (!FEATURE_VALUE.test(entry)) {
    return `${field}: ${quoted(entry)} is not a feature, dep:<dependency>, <dependency>/<feature> or <dependency>?/<feature>`;
  }
  return undefined;
}

function dependency(value: unknown, index: number, limits: PublishLimits): PublishDependency {
  if (!isPlainObject(value)) refuse(`dependency ${index + 1} must be a JSON object`);
  const name = crateName(own(value, "name"), "dependency name");
  const versionReq = versionRequirement(own(value, "version_req"), name);
  const field = `dependency ${name}: features`;
  const features = stringList(own(value, "features"), field, limits.maxFeatures, (entry) => featureValue(entry, field));
  const optional = optionalBoolean(own(value, "optional"), `dependency ${name}: optional`, false);
  const defaultFeatures = optionalBoolean(own(value, "default_features"), `dependency ${name}: default_features`, true);
  const target = optionalText(own(value, "target"), `dependency ${name}: target`, MAX_TARGET_LENGTH);
  const kind = own(value, "kind") ?? "normal";
  if (!isKind(kind)) {
    const shown = typeof kind === "string" ? quoted(kind) : jsonKind(kind);
    refuse(`dependency ${name} has kind ${shown}: must be normal, dev or build`);
  }
  const registry = own(value, "registry") ?? null;
  if (registry !== null && (typeof registry !== "string" || !CRATES_IO_INDEXES.includes(registry))) {
    const shown = typeof registry === "string" ? quoted(registry) : jsonKind(registry);
    refuse(`dependency ${name} comes from registry ${shown}: only this registry and crates.io are allowed`);
  }
  const rename = own(value, "explicit_name_in_toml") ?? null;
  const explicitNameInToml = rename === null ? null : crateName(rename, `name in Cargo.toml of dependency ${name}`);
  return { name, versionReq, features, optional, defaultFeatures, target, kind, registry, explicitNameInToml };
}

function featureMap(value: unknown, limits: PublishLimits): Record<string, readonly string[]> {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) refuse("features must be a JSON object of feature name → list of strings");
  const entries = Object.entries(value);
  if (entries.length > limits.maxFeatures) {
    refuse(
      `features has ${entries.length} features: at most ${limits.maxFeatures} are allowed (the registry's max-features)`,
    );
  }
  const checked: [string, readonly string[]][] = [];
  for (const [feature, list] of entries) {
    if (feature.length === 0 || feature.length > MAX_FEATURE_LENGTH || !FEATURE_NAME.test(feature)) {
      refuse(
        `invalid feature name ${quoted(feature)}: must be 1 to ${MAX_FEATURE_LENGTH} ASCII letters, digits, "_", "-", "+" or ".", starting with a letter, digit or "_"`,
      );
    }
    const field = `feature ${feature}`;
    checked.push([feature, stringList(list, field, limits.maxFeatures, (entry) => featureValue(entry, field))]);
  }
  // fromEntries defines own properties, so a feature named `__proto__` stays a feature.
  return Object.fromEntries(checked);
}

function keyword(entry: string): string | undefined {
  if (entry.length === 0 || entry.length > MAX_KEYWORD_LENGTH || !KEYWORD.test(entry)) {
    return `invalid keyword ${quoted(entry)}: must be 1 to ${MAX_KEYWORD_LENGTH} ASCII letters, digits, "_", "-" or "+", starting with a letter or digit`;
  }
  return undefined;
}

function category(entry: string): string | undefined {
  // Control characters would reach the browsing page and terminals.
  if (entry.length === 0 || entry.length > MAX_CATEGORY_LENGTH || /\p{Cc}/u.test(entry)) {
    return `invalid category ${quoted(entry)}: must be 1 to ${MAX_CATEGORY_LENGTH} characters without control characters`;
  }
  return undefined;
}

/**
 * Checks the metadata object of a publish (fields of
 * https://doc.rust-lang.org/cargo/reference/registry-web-api.html#publish). `name` follows
 * {@link crateName}; `vers` {@link publishVersion}; each dependency has a valid name (and rename,
 * `explicit_name_in_toml`), a Cargo version requirement, a kind among normal/dev/build and a
 * `registry` that is absent/null (this registry) or crates.io's index. Cargo always sends `deps`,
 * `features`, `keywords` and `categories`; absent or null they read as empty, and a dependency's
 * `optional`/`default_features`/`kind` as false/true/normal. Unknown keys are ignored. Text fields
 * are bounded (the `MAX_*` constants; crates.io's limits where it documents them), and so are
 * features (`limits`, crates.io's 300 by default). The name must not be reserved
 * ({@link reservedCrateName}: Windows device names and the names crates.io keeps for Rust's own
 * crates).
 *
 * @throws InvalidError with a sentence naming the field and the rule, e.g. `dependency a comes
 *   from registry "https://example.com/index": only this registry and crates.io are allowed`
 */
export function publishMetadata(value: unknown, limits: PublishLimits = DEFAULT_PUBLISH_LIMITS): PublishMetadata {
  if (!isPlainObject(value)) refuse(`publish metadata must be a JSON object, not ${jsonKind(value)}`);
  const name = crateName(own(value, "name"));
  const reserved = reservedCrateName(name);
  if (reserved !== undefined) refuse(`invalid crate name ${quoted(name)}: ${reserved}`);
  const vers = publishVersion(own(value, "vers"));
  const rawDeps = own(value, "deps") ?? [];
  if (!Array.isArray(rawDeps)) refuse("deps must be a list of dependencies");
  if (rawDeps.length > MAX_DEPENDENCIES) {
    refuse(`deps has ${rawDeps.length} dependencies: at most ${MAX_DEPENDENCIES} are allowed`);
  }
  const deps = rawDeps.map((dep, index) => dependency(dep, index, limits));
  const features = featureMap(own(value, "features"), limits);
  const links = optionalText(own(value, "links"), "links", MAX_LINKS_LENGTH);
  const rustVersion = optionalText(own(value, "rust_version"), "rust_version", 32);
  if (rustVersion !== null && !RUST_VERSION.test(rustVersion)) {
    refuse(`invalid rust_version ${quoted(rustVersion)}: must be a Rust version such as 1.70 or 1.70.0`);
  }
  const description = optionalText(own(value, "description"), "description", MAX_DESCRIPTION_LENGTH);
  const keywords = stringList(own(value, "keywords"), "keywords", MAX_KEYWORDS, keyword);
  const categories = stringList(own(value, "categories"), "categories", MAX_CATEGORIES, category);
  const license = optionalText(own(value, "license"), "license", MAX_LICENSE_LENGTH);
  const repository = optionalUrl(own(value, "repository"), "repository");
  const documentation = optionalUrl(own(value, "documentation"), "documentation");
  const homepage = optionalUrl(own(value, "homepage"), "homepage");
  const rawReadme = own(value, "readme") ?? null;
  if (rawReadme !== null && typeof rawReadme !== "string") refuse("readme must be a string or null");
  const readmeBytes = rawReadme === null ? 0 : Buffer.byteLength(rawReadme, "utf8");
  if (readmeBytes > MAX_README_BYTES) refuse(`readme is too long: ${readmeBytes} bytes, at most ${MAX_README_BYTES}`);
  return {
    name,
    vers,
    deps,
    features,
    links,
    rustVersion,
    description,
    keywords,
    categories,
    license,
    repository,
    documentation,
    homepage,
    readme: rawReadme,
  };
}

/**
 * The version under which two publishes are the same version: `vers` without its build metadata
 * (`1.0.0+abc` → `1.0.0`), since SemVer ignores it for precedence and a publish of an existing
 * version is refused (409) whatever its build metadata. Storage puts its unique constraint on
 * (crate, versionKey). Case is kept (`1.0.0-Alpha` and `1.0.0-alpha` are two versions).
 */
export function versionKey(vers: string): string {
  const plus = vers.indexOf("+");
  return plus < 0 ? vers : vers.slice(0, plus);
}

/** The SHA-256 of some bytes in 64 lower-case hex digits: the `cksum` of a `.crate`. */
export function sha256Hex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

// ---------------------------------------------------------------------------------------------
// The index line

/**
 * A dependency in an index line. `name` is the name the dependent uses: the rename when there is
 * one, with the real crate in `package`. `registry` is absent for this registry.
 */
export interface IndexDependency {
  readonly name: string;
  readonly req: string;
  readonly features: readonly string[];
  readonly optional: boolean;
  readonly default_features: boolean;
  readonly target: string | null;
  readonly kind: DependencyKind;
  readonly registry?: string;
  readonly package?: string;
}

/**
 * One line of a crate's sparse index file, index format version 2
 * (https://doc.rust-lang.org/cargo/reference/registry-index.html#json-schema), keys in the order
 * JSON.stringify writes them. Every feature, `dep:` and `?/` syntax included, stays in `features`:
 * Cargo ≥ 1.60 reads both `features` and `features2`, and `v: 2` keeps older ones off the line.
 */
export interface IndexEntry {
  readonly name: string;
  readonly vers: string;
  readonly deps: readonly IndexDependency[];
  /** SHA-256 of the `.crate`, hex. */
  readonly cksum: string;
  readonly features: Readonly<Record<string, readonly string[]>>;
  readonly yanked: boolean;
  readonly links: string | null;
  readonly v: 2;
  readonly rust_version?: string;
}

function indexDependency(dep: PublishDependency): IndexDependency {
  const line: {
    -readonly [K in keyof IndexDependency]: IndexDependency[K];
  } = {
    name: dep.explicitNameInToml ?? dep.name,
    req: dep.versionReq,
    features: dep.features,
    optional: dep.optional,
    default_features: dep.defaultFeatures,
    target: dep.target,
    kind: dep.kind,
  };
  if (dep.registry !== null) line.registry = dep.registry;
  if (dep.explicitNameInToml !== null) line.package = dep.name;
  return line;
}

/**
 * The index line of a newly published version: not yanked, `links` null when absent,
 * `rust_version` only when set. Storage keeps `JSON.stringify(indexEntry(...))` and the index route
 * joins the stored lines with `\n`; a yank rewrites the stored line with {@link withYanked}.
 *
 * @param cksum the SHA-256 of the `.crate` ({@link sha256Hex})
 */
export function indexEntry(metadata: PublishMetadata, cksum: string): IndexEntry {
  const deps = metadata.deps.map(indexDependency);
  const base: IndexEntry = {
    name: metadata.name,
    vers: metadata.vers,
    deps,
    cksum,
    features: metadata.features,
    yanked: false,
    links: metadata.links,
    v: 2,
  };
  return metadata.rustVersion === null ? base : { ...base, rust_version: metadata.rustVersion };
}

/**
 * The stored text of a version's index line: `JSON.stringify` of its {@link indexEntry}, refused
 * when longer than `maxBytes` of UTF-8 (`registry.cargo.max-index-line`), before anything is
 * written.
 *
 * @param maxBytes default {@link DEFAULT_MAX_INDEX_LINE}
 * @throws InvalidError `the index line of this version would be 300000 bytes: at most 262144 are
 *   allowed (the registry's max-index-line); fewer or shorter features or dependencies`
 */
export function indexLine(metadata: PublishMetadata, cksum: string, maxBytes = DEFAULT_MAX_INDEX_LINE): string {
  const line = JSON.stringify(indexEntry(metadata, cksum));
  const bytes = Buffer.byteLength(line, "utf8");
  if (bytes > maxBytes) {
    refuse(
      `the index line of this version would be ${bytes} bytes: at most ${maxBytes} are allowed (the registry's max-index-line); fewer or shorter features or dependencies`,
    );
  }
  return line;
}

/**
 * A stored index line (JSON of an {@link IndexEntry}) with `yanked` set, every other key kept in
 * its place: what yank and unyank store.
 *
 * @throws Error when `line` is not a JSON object (a corrupt row, never a user's mistake)
 */
export function withYanked(line: string, yanked: boolean): string {
  const entry: unknown = JSON.parse(line);
  if (!isPlainObject(entry)) throw new Error("an index line must be a JSON object");
  // Assigning an existing key keeps its position in JSON.stringify's output.
  entry.yanked = yanked;
  return JSON.stringify(entry);
}
