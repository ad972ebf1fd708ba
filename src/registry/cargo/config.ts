/**
 * The `registry.cargo` section of the configuration (docs/cargo.md): the private Cargo registry, off by
 * default. Unknown keys are refused, as in every section (docs/configuration.md).
 */
import type { PlatformConfig } from "../../platform/config.js";
import {
  boolean,
  type Infer,
  integer,
  object,
  optional,
  size,
  string,
  ValidationError,
  type Validator,
  withDefault,
} from "../../platform/validation.js";
import { checkMirrorConfig, mirrorSection } from "./mirror/config.js";
import { DEFAULT_MAX_FEATURES, DEFAULT_MAX_INDEX_LINE } from "./publish.js";

/** The default largest `.crate` accepted (`max-crate-size`), in bytes: 10 MiB, crates.io's. */
export const DEFAULT_MAX_CRATE_SIZE = 10 * 1024 * 1024;

/** A size of at least 1 KiB: a smaller index line could not even hold a version without features. */
const lineSize: Validator<number> = (value, path) => {
  const bytes = size()(value, path);
  if (bytes < 1024) throw new ValidationError(path, "must be at least 1KiB", value);
  return bytes;
};

/** The default memory of rendered index files, in bytes: 64 MiB. */
export const DEFAULT_INDEX_CACHE_SIZE = 64 * 1024 * 1024;

/**
 * `registry.cargo`: `enabled`, `auth-required`, `max-crate-size` (bytes), `max-features`,
 * `max-index-line` (bytes), `index-cache-size` (bytes), `storage` (a directory) and `mirror`.
 */
export const cargoSection = object(
  {
    enabled: withDefault(boolean(), false),
    /** True: the index and downloads need a token too (a private registry). */
    "auth-required": withDefault(boolean(), false),
    "max-crate-size": withDefault(size(), DEFAULT_MAX_CRATE_SIZE),
    /**
     * Features per published version, entries of one feature and features one dependency turns
     * on; default 300, crates.io's.
     */
    "max-features": withDefault(integer(1, 100_000), DEFAULT_MAX_FEATURES),
    /** Bytes of one version's index line (its dependencies and features); default 256 KiB. */
    "max-index-line": withDefault(lineSize, DEFAULT_MAX_INDEX_LINE),
    /**
     * Bytes of rendered index files (plain and gzip) kept in memory; default 64 MiB, 0 keeps none.
     * The least recently served go first.
     */
    "index-cache-size": withDefault(size(), DEFAULT_INDEX_CACHE_SIZE),
    /** Where the `.crate` files live; default `<data directory>/crates`. */
    storage: optional(string({ min: 1 })),
    /** A caching mirror of crates.io (or another sparse index): docs/cargo.md. */
    mirror: mirrorSection,
  },
  { unknownKeys: "reject", optional: true },
);

/** The validated `registry.cargo` section. */
export type CargoSettings = Infer<typeof cargoSection>;

/** Hosts that mean "every address" to a listening socket and no address to a client. */
const WILDCARD_HOSTS = new Set(["0.0.0.0", "[::]"]);

/**
 * Refuses a Cargo registry whose public URL names a wildcard address: Cargo would be
 * told to download from `0.0.0.0`; and a mirror cache inside the crate storage. Run by
 * `vigie config check` and at start-up.
 *
 * @throws ValidationError naming `http.public-url` or `registry.cargo.mirror.cache`
 */
export function checkCargoPublicUrl(settings: CargoSettings, platform: PlatformConfig): void {
  checkMirrorConfig(settings.mirror, settings.storage);
  if (!settings.enabled && !settings.mirror.enabled) return;
  const url = new URL(platform.http["public-url"]);
  if (WILDCARD_HOSTS.has(url.hostname)) {
    throw new ValidationError(
      "http.public-url",
      `must name an address clients can reach when registry.cargo or its mirror is enabled (not ${url.hostname}): set http.public-url`,
      platform.http["public-url"],
    );
  }
}
