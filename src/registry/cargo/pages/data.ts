/**
 * What a crate page shows, assembled from what storage returns (docs/cargo.md, "Web pages"): the
 * version shown, its metadata and dependencies (read back from its index line). Plain TypeScript.
 */
import type Semver from "semver";
import { lazyLibrary } from "../../../platform/lazy.js";
import { isPlainObject } from "../../../platform/validation.js";
import type { CratePage, PageDependency, PageVersion } from "./view.js";

/** semver, loaded with the first page of the Cargo registry (start-up skips it). */
const semver = lazyLibrary<typeof Semver>("semver");

/**
 * The version a crate page shows: the highest by SemVer that is not yanked, else (every version
 * yanked) the last published. `undefined` for no version.
 */
export function shownVersion<V extends PageVersion>(versions: readonly V[]): V | undefined {
  let best: V | undefined;
  for (const version of versions) {
    if (!version.yanked && (best === undefined || semver().gt(version.vers, best.vers))) best = version;
  }
  return best ?? versions.at(-1);
}

function text(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

/** The dependencies of an index line (JSON, index format of docs/cargo.md), in its order. */
export function dependenciesOf(indexLine: string): PageDependency[] {
  let line: unknown;
  try {
    line = JSON.parse(indexLine);
  } catch {
    return [];
  }
  const deps = isPlainObject(line) && Array.isArray(line.deps) ? line.deps : [];
  const found: PageDependency[] = [];
  for (const dep of deps) {
    if (!isPlainObject(dep)) continue;
    // `package` is the real name when the dependent renamed it; `name` is then its own name for it.
    const name = text(dep.package) ?? text(dep.name);
    if (name === null) continue;
    const kind = dep.kind === "dev" || dep.kind === "build" ? dep.kind : "normal";
    found.push({
      name,
      req: text(dep.req) ?? "*",
      kind,
      optional: dep.optional === true,
      target: text(dep.target),
      cratesIo: text(dep.registry) !== null,
    });
  }
  return found;
}

/** What {@link cratePage} puts together. */
export interface CratePageSources {
  readonly name: string;
  /** Every version in publication order. */
  readonly versions: readonly PageVersion[];
  readonly shown: PageVersion;
  /** The shown version's metadata as published. */
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly indexLine: string;
  /** The README as HTML (readme.ts), or null. */
  readonly readmeHtml: string | null;
  readonly owners: readonly { readonly login: string; readonly name: string }[];
  readonly publicUrl: string;
}

/** Labels of the metadata links, in the order they are shown. */
const LINKS = [
  ["repository", "Repository"],
  ["homepage", "Homepage"],
  ["documentation", "Documentation"],
] as const;

/** A crate page's data. */
export function cratePage(sources: CratePageSources): CratePage {
  const { metadata } = sources;
  const links: { label: string; url: string }[] = [];
  for (const [key, label] of LINKS) {
    const url = text(metadata[key]);
    // Publishing accepts only http(s) URLs there; a check costs nothing and keeps the rule here too.
    if (url !== null && /^https?:\/\//i.test(url)) links.push({ label, url });
  }
  const keywords = Array.isArray(metadata.keywords)
    ? metadata.keywords.filter((word): word is string => typeof word === "string")
    : [];
  return {
    name: sources.name,
    version: sources.shown,
    description: text(metadata.description) ?? "",
    license: text(metadata.license),
    links,
    keywords,
    readmeHtml: sources.readmeHtml,
    dependencies: dependenciesOf(sources.indexLine),
    versions: [...sources.versions].reverse(),
    owners: sources.owners,
    downloads: sources.versions.reduce((sum, version) => sum + version.downloads, 0),
    publicUrl: sources.publicUrl,
  };
}
