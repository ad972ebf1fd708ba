/**
 * Publish requests of the Cargo registry built in memory, as `cargo publish` sends them (see
 * https://doc.rust-lang.org/cargo/reference/registry-web-api.html#publish): a u32 little-endian
 * length, the JSON metadata, a u32 little-endian length, the `.crate` (a gzip of a tar, built with
 * tar-stream and node:zlib, never on disk).
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import tar from "tar-stream";

/** One entry of a test tar: a file unless `type` says otherwise. */
export interface TarEntry {
  readonly name: string;
  readonly type?: "file" | "directory";
  readonly body?: string | Buffer;
}

/** A tar archive of `entries`, in order. */
export async function tarball(entries: readonly TarEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const entry of entries) {
    if ((entry.type ?? "file") === "file") pack.entry({ name: entry.name, type: "file" }, entry.body ?? "");
    else pack.entry({ name: entry.name, type: "directory" });
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) {
    if (Buffer.isBuffer(chunk)) chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** A `.crate`: the gzip of a tar of `entries`. */
export async function crateOf(entries: readonly TarEntry[]): Promise<Buffer> {
  return gzipSync(await tarball(entries));
}

/**
 * A valid `.crate` of `name` `vers` as `cargo package` writes it: `Cargo.toml`, `Cargo.toml.orig`,
 * `src/lib.rs`, plus `extra` files under `<name>-<vers>/` (to vary the bytes or the size).
 */
export async function validCrate(name: string, vers: string, extra: Readonly<Record<string, string | Buffer>> = {}) {
  const prefix = `${name}-${vers}`;
  return crateOf([
    { name: `${prefix}/Cargo.toml`, body: `[package]\nname = "${name}"\nversion = "${vers}"\nedition = "2021"\n` },
    { name: `${prefix}/Cargo.toml.orig`, body: `[package]\nname = "${name}"\nversion = "${vers}"\n` },
    { name: `${prefix}/src/lib.rs`, body: `pub fn ${name.replaceAll("-", "_").toLowerCase()}() {}\n` },
    ...Object.entries(extra).map(([path, body]) => ({ name: `${prefix}/${path}`, body })),
  ]);
}

/** A dependency as cargo sends it in the metadata, with cargo's defaults. */
export function dependency(name: string, versionReq: string, fields: Record<string, unknown> = {}) {
  return {
    optional: false,
    default_features: true,
    name,
    features: [],
    version_req: versionReq,
    target: null,
    kind: "normal",
    registry: null,
    explicit_name_in_toml: null,
    ...fields,
  };
}

/** The metadata of a publish as cargo sends it (every key present), overridden by `fields`. */
export function metadataOf(name: string, vers: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    vers,
    deps: [],
    features: {},
    authors: ["Test <test@example.org>"],
    description: null,
    documentation: null,
    homepage: null,
    readme: null,
    readme_file: null,
    keywords: [],
    categories: [],
    license: "MIT",
    license_file: null,
    repository: null,
    badges: {},
    links: null,
    rust_version: null,
    ...fields,
  };
}

/** A u32, little-endian. */
export function u32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32LE(value);
  return buffer;
}

/** A publish body: `metadata` (an object, or raw JSON text/bytes) framed with the `.crate`. */
export function publishBody(metadata: Record<string, unknown> | string | Buffer, crate: Buffer): Buffer {
  const json = Buffer.isBuffer(metadata)
    ? metadata
    : Buffer.from(typeof metadata === "string" ? metadata : JSON.stringify(metadata));
  return Buffer.concat([u32(json.length), json, u32(crate.length), crate]);
}

/** A ready publication: the `.crate`, its SHA-256 and the body that publishes it. */
export interface Publication {
  readonly crate: Buffer;
  readonly cksum: string;
  readonly body: Buffer;
}

/**
 * A valid publication of `name` `vers`.
 * @param fields metadata overrides (`deps`, `description`, …)
 * @param extra files added to the `.crate`
 */
export async function publication(
  name: string,
  vers: string,
  fields: Record<string, unknown> = {},
  extra: Readonly<Record<string, string | Buffer>> = {},
): Promise<Publication> {
  const crate = await validCrate(name, vers, extra);
  return {
    crate,
    cksum: createHash("sha256").update(crate).digest("hex"),
    body: publishBody(metadataOf(name, vers, fields), crate),
  };
}
