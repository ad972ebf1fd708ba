// What the Cargo benchmarks share: small `.crate` files and the publish frames Cargo sends.
import { gzipSync } from "node:zlib";
import tar from "tar-stream";

/** A `.crate`: a gzip tar with `<name>-<vers>/Cargo.toml`, `src/lib.rs` and the given extra files. */
export async function crateBytes(name, vers, extra = {}) {
  const pack = tar.pack();
  const files = {
    "Cargo.toml": `[package]\nname = "${name}"\nversion = "${vers}"\nedition = "2021"\nlicense = "MIT"\n`,
    "src/lib.rs": `pub fn version() -> &'static str {\n    "${vers}"\n}\n`,
    ...extra,
  };
  for (const [path, content] of Object.entries(files)) {
    pack.entry({ name: `${name}-${vers}/${path}`, mode: 0o644, mtime: new Date(0) }, content);
  }
  pack.finalize();
  const chunks = [];
  for await (const chunk of pack) chunks.push(chunk);
  return gzipSync(Buffer.concat(chunks));
}

/** The body of PUT /api/v1/crates/new as Cargo sends it. */
export function publishFrame(name, vers, crate) {
  const metadata = Buffer.from(
    JSON.stringify({
      name,
      vers,
      deps: [],
      features: {},
      authors: [],
      description: `benchmark crate ${name}`,
      documentation: null,
      homepage: null,
      readme: null,
      readme_file: null,
      keywords: ["bench"],
      categories: [],
      license: "MIT",
      license_file: null,
      repository: null,
      badges: {},
      links: null,
      rust_version: null,
    }),
  );
  const head = Buffer.alloc(4);
  head.writeUInt32LE(metadata.length);
  const length = Buffer.alloc(4);
  length.writeUInt32LE(crate.length);
  return Buffer.concat([head, metadata, length, crate]);
}

/** Sends one publish frame; throws unless 200. */
export async function publish(client, token, frame) {
  const { statusCode, body } = await client.request({
    path: "/api/v1/crates/new",
    method: "PUT",
    headers: { authorization: token },
    body: frame,
  });
  const text = await body.text();
  if (statusCode !== 200) throw new Error(`publish answered ${statusCode}: ${text}`);
}
