/**
 * The body of `PUT /api/v1/crates/new` as Cargo sends it (cargo.md §3), built by hand for the
 * requests the test makes without cargo: u32 LE length, JSON metadata, u32 LE length, `.crate`
 * (a gzip tar whose entries sit under `<name>-<vers>/`).
 */
import { gzipSync } from "node:zlib";
import tar from "tar-stream";

/** A `.crate`: `files` (path → content) under `<name>-<vers>/`, with a minimal `Cargo.toml`. */
export async function crateFile(name: string, vers: string, files: Record<string, string> = {}): Promise<Buffer> {
  const pack = tar.pack();
  const all = {
    "Cargo.toml": `[package]\nname = "${name}"\nversion = "${vers}"\nedition = "2021"\n`,
    "src/lib.rs": "",
    ...files,
  };
  for (const [path, content] of Object.entries(all)) {
    pack.entry({ name: `${name}-${vers}/${path}`, mode: 0o644, mtime: new Date(0) }, content);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

/** Publish metadata as Cargo writes it, with no dependencies. */
export function publishMetadata(name: string, vers: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    vers,
    deps: [],
    features: {},
    authors: [],
    description: `${name} published by hand`,
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
    ...extra,
  };
}

/** The frame: u32 LE length + JSON metadata + u32 LE length + `.crate` bytes. */
export function publishFrame(metadata: unknown, crate: Buffer): Buffer {
  const json = Buffer.from(JSON.stringify(metadata), "utf8");
  const jsonLength = Buffer.alloc(4);
  jsonLength.writeUInt32LE(json.length);
  const crateLength = Buffer.alloc(4);
  crateLength.writeUInt32LE(crate.length);
  return Buffer.concat([jsonLength, json, crateLength, crate]);
}

/** `PUT <baseUrl>/api/v1/crates/new` with `frame` as Cargo sends it (no content type, raw token). */
export async function putCrate(
  baseUrl: string,
  token: string,
  frame: Buffer,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${baseUrl}/api/v1/crates/new`, {
    method: "PUT",
    headers: { authorization: token },
    body: frame,
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the assertion message
  }
  return { status: response.status, body };
}
