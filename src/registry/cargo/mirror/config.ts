/**
 * `registry.cargo.mirror` (docs/cargo.md, "Using the mirror for CI"; docs/configuration.md): a
 * caching mirror of a sparse index, crates.io's by default, off unless enabled.
 */
import { isAbsolute, relative, resolve, sep } from "node:path";
import type { Duration } from "../../../platform/duration.js";
import {
  boolean,
  described,
  duration,
  type Infer,
  object,
  optional,
  string,
  ValidationError,
  type Validator,
  withDefault,
} from "../../../platform/validation.js";

/** crates.io's sparse index. */
export const CRATES_IO_INDEX = "https://index.crates.io/";

/** The default `max-age`: 10 minutes. */
const TEN_MINUTES: Duration = { text: "10m", milliseconds: 600_000 };

const HTTP_URL_RULE = "must be an http or https URL without a user, password or fragment (an index: no query)";

/**
 * An absolute http(s) URL. Credentials are refused: they would end in logs and error sentences,
 * and the mirror only reads public indexes. `markers` keeps the text as written (cargo's `{crate}`
 * markers are not URL syntax); otherwise a trailing `/` is added, as index URLs need one.
 */
function httpUrl(markers: boolean): Validator<string> {
  return described(
    (value, path) => {
      if (typeof value !== "string") throw new ValidationError(path, HTTP_URL_RULE, value);
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        throw new ValidationError(path, HTTP_URL_RULE, value);
      }
      // A download template may carry its markers in a query (`?crate={crate}`); an index may not.
      const plain = url.username === "" && url.password === "" && url.hash === "" && (markers || url.search === "");
      if ((url.protocol !== "http:" && url.protocol !== "https:") || !plain) {
        throw new ValidationError(path, HTTP_URL_RULE, value);
      }
      if (markers) return value;
      return url.href.endsWith("/") ? url.href : `${url.href}/`;
    },
    { type: "string", pattern: "^https?://" },
  );
}

/**
 * `registry.cargo.mirror`: `enabled`, `upstream-index` (a sparse index URL), `cache` (a directory),
 * `max-age` (a duration) and `upstream-download` (a `dl` template replacing the upstream's own).
 */
export const mirrorSection = object(
  {
    enabled: withDefault(boolean(), false),
    /** The sparse index mirrored (without `sparse+`). */
    "upstream-index": withDefault(httpUrl(false), CRATES_IO_INDEX),
    /** Where copies are kept; default `<data directory>/crates-mirror`, never inside the crate storage. */
    cache: optional(string({ min: 1 })),
    /** How long a copy of an index file is served before the upstream is asked again. */
    "max-age": withDefault(duration(0), TEN_MINUTES),
    /** A `dl` template (cargo's `{crate}`, `{version}` … markers) used instead of the upstream's. */
    "upstream-download": optional(httpUrl(true)),
  },
  { unknownKeys: "reject", optional: true },
);

/** The validated `registry.cargo.mirror` section. */
export type MirrorSettings = Infer<typeof mirrorSection>;

/** Whether one directory is the other or lies inside it (after resolving both). */
export function overlaps(first: string, second: string): boolean {
  const inside = (child: string, parent: string) => {
    const path = relative(resolve(parent), resolve(child));
    return !(path === ".." || path.startsWith(`..${sep}`) || isAbsolute(path));
  };
  return inside(first, second) || inside(second, first);
}

/**
 * Refuses, when both are written in the configuration, a mirror cache that is the crate storage,
 * lies inside it or holds it (start-up checks the defaults too). Run by `vigie config check`.
 * @throws ValidationError naming `registry.cargo.mirror.cache`
 */
export function checkMirrorConfig(mirror: MirrorSettings, storage: string | undefined): void {
  if (!mirror.enabled || mirror.cache === undefined || storage === undefined) return;
  if (overlaps(mirror.cache, storage)) {
    throw new ValidationError(
      "registry.cargo.mirror.cache",
      "must be outside registry.cargo.storage, and not hold it (vigie registry check would take cached files for orphans)",
      mirror.cache,
    );
  }
}
