/**
 * Where a `.crate` is downloaded from, built from the `dl` of a sparse index's `config.json` the way
 * cargo builds it (https://doc.rust-lang.org/cargo/reference/registry-index.html#index-configuration):
 * the markers `{crate}`, `{version}`, `{prefix}`, `{lowerprefix}` and `{sha256-checksum}` are
 * replaced; a `dl` holding none of them gets `/{crate}/{version}/download` appended.
 */

/** The markers cargo replaces in `dl`. */
const MARKERS = ["{crate}", "{version}", "{prefix}", "{lowerprefix}", "{sha256-checksum}"] as const;

/** What a download URL is built from: the crate's name as its index line spells it, and the version's. */
export interface DownloadTarget {
  /** The crate name of the index line (`name`), case kept. */
  readonly name: string;
  /** The version of the index line (`vers`). */
  readonly vers: string;
  /** The SHA-256 of the `.crate`, hexadecimal (the index line's `cksum`). */
  readonly cksum: string;
}

/**
 * The directory prefix of a crate in an index, case kept: `1`, `2`, `3/<first character>` or
 * `<characters 1–2>/<characters 3–4>` by the name's length (cargo's `make_dep_prefix`).
 */
export function dependencyPrefix(name: string): string {
  switch (name.length) {
    case 1:
      return "1";
    case 2:
      return "2";
    case 3:
      return `3/${name.slice(0, 1)}`;
    default:
      return `${name.slice(0, 2)}/${name.slice(2, 4)}`;
  }
}

/**
 * Expands a `dl` template for one version, as cargo does (`https://static.crates.io/crates` →
 * `https://static.crates.io/crates/serde/1.0.0/download`). Expects a name and version already
 * validated: nothing is escaped, as cargo escapes nothing.
 *
 * @throws TypeError when the result is not an absolute http or https URL
 */
export function expandDownloadUrl(dl: string, target: DownloadTarget): URL {
  let url = dl;
  if (!MARKERS.some((marker) => url.includes(marker))) url += `/${target.name}/${target.vers}/download`;
  const prefix = dependencyPrefix(target.name);
  url = url
    .replaceAll("{crate}", target.name)
    .replaceAll("{version}", target.vers)
    .replaceAll("{prefix}", prefix)
    .replaceAll("{lowerprefix}", prefix.toLowerCase())
    .replaceAll("{sha256-checksum}", target.cksum);
  const parsed = new URL(url);
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new TypeError(`the download URL must be http or https, not ${parsed.protocol}`);
  }
  return parsed;
}
