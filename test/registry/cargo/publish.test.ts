import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InvalidError } from "../../../src/platform/errors.js";
import {
  CRATES_IO_INDEXES,
  DEFAULT_MAX_FEATURES,
  DEFAULT_MAX_INDEX_LINE,
  indexEntry,
  indexLine,
  MAX_DEPENDENCIES,
  MAX_DESCRIPTION_LENGTH,
  MAX_README_BYTES,
  type PublishMetadata,
  parsePublishFrame,
  publishMetadata,
  publishVersion,
  sha256Hex,
  versionKey,
  withYanked,
} from "../../../src/registry/cargo/publish.js";
import { metadataOf } from "./frames.js";

/** The sentence of the 400 that `run` throws. */
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

function u32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32LE(value);
  return buffer;
}

/** A publish body as cargo sends it. */
function frame(metadata: Buffer | string, crate: Buffer): Buffer {
  const json = typeof metadata === "string" ? Buffer.from(metadata) : metadata;
  return Buffer.concat([u32(json.length), json, u32(crate.length), crate]);
}

/** A dependency as cargo 1.95 sends it: `b = "0.1"` from the same registry. */
function cargoDependency(): Record<string, unknown> {
  return {
    optional: false,
    default_features: true,
    name: "b",
    features: [],
    version_req: "^0.1",
    target: null,
    kind: "normal",
    registry: null,
    explicit_name_in_toml: null,
  };
}

/** Metadata as cargo 1.95 sends it for `a` 0.1.0 with one dependency. */
function cargoMetadata(): Record<string, unknown> {
  return metadataOf("a", "0.1.0", {
    deps: [cargoDependency()],
    authors: ["Alice <a@example.com>"],
    description: "A test crate",
  });
}

/** `cargoMetadata()` with some fields replaced. */
function metadataWith(changes: Record<string, unknown>): Record<string, unknown> {
  return { ...cargoMetadata(), ...changes };
}

/** `cargoMetadata()` whose one dependency has some fields replaced. */
function dependencyWith(changes: Record<string, unknown>): Record<string, unknown> {
  return metadataWith({ deps: [{ ...cargoDependency(), ...changes }] });
}

describe("parsePublishFrame", () => {
  it("splits the metadata and the .crate, without copying the .crate", () => {
    const crate = Buffer.from([1, 2, 3, 4, 5]);
    const body = frame('{"name":"a"}', crate);
    const parsed = parsePublishFrame(body);
    expect(parsed.metadata).toEqual({ name: "a" });
    expect(parsed.crate).toEqual(crate);
    expect(parsed.crate.buffer).toBe(body.buffer);
    expect(parsed.crate.byteOffset).toBe(body.byteOffset + 4 + 12 + 4);
  });

  it("accepts an empty .crate (checked later) and UTF-8 metadata", () => {
    const parsed = parsePublishFrame(frame('{"description":"café ☕"}', Buffer.alloc(0)));
    expect(parsed.metadata).toEqual({ description: "café ☕" });
    expect(parsed.crate).toHaveLength(0);
  });

  it("refuses a body shorter than 4 bytes", () => {
    expect(refusal(() => parsePublishFrame(Buffer.alloc(0)))).toBe(
      "publish body is 0 bytes long: too short to hold the metadata length (4 bytes)",
    );
    expect(refusal(() => parsePublishFrame(Buffer.from([1, 0, 0])))).toBe(
      "publish body is 3 bytes long: too short to hold the metadata length (4 bytes)",
    );
  });

  it("refuses a metadata length past the end", () => {
    const body = Buffer.concat([u32(100), Buffer.from("{}")]);
    expect(refusal(() => parsePublishFrame(body))).toBe(
      "publish body declares 100 bytes of metadata but only 2 follow",
    );
    expect(refusal(() => parsePublishFrame(u32(0xffffffff)))).toBe(
      "publish body declares 4294967295 bytes of metadata but only 0 follow",
    );
  });

  it("refuses metadata that is not UTF-8", () => {
    expect(refusal(() => parsePublishFrame(frame(Buffer.from([0x22, 0xff, 0x22]), Buffer.alloc(0))))).toBe(
      "publish metadata is not valid UTF-8",
    );
  });

  it("refuses metadata that is not JSON", () => {
    expect(refusal(() => parsePublishFrame(frame("{name: a}", Buffer.alloc(0))))).toBe(
      "publish metadata is not valid JSON",
    );
    expect(refusal(() => parsePublishFrame(frame("", Buffer.alloc(0))))).toBe("publish metadata is not valid JSON");
  });

  it("refuses metadata that is not a JSON object", () => {
    expect(refusal(() => parsePublishFrame(frame("[]", Buffer.alloc(0))))).toBe(
      "publish metadata must be a JSON object, not an array",
    );
    expect(refusal(() => parsePublishFrame(frame("null", Buffer.alloc(0))))).toBe(
      "publish metadata must be a JSON object, not null",
    );
    expect(refusal(() => parsePublishFrame(frame('"a"', Buffer.alloc(0))))).toBe(
      "publish metadata must be a JSON object, not a string",
    );
    expect(refusal(() => parsePublishFrame(frame("1", Buffer.alloc(0))))).toBe(
      "publish metadata must be a JSON object, not a number",
    );
  });

  it("refuses a missing .crate length", () => {
    const json = Buffer.from("{}");
    for (const tail of [Buffer.alloc(0), Buffer.from([5, 0])]) {
      const body = Buffer.concat([u32(json.length), json, tail]);
      expect(refusal(() => parsePublishFrame(body))).toBe(
        "publish body ends after the metadata: the length of the .crate (4 bytes) is missing",
      );
    }
  });

  it("refuses a .crate length past the end", () => {
    const json = Buffer.from("{}");
    const body = Buffer.concat([u32(json.length), json, u32(10), Buffer.alloc(3)]);
    expect(refusal(() => parsePublishFrame(body))).toBe("publish body declares a .crate of 10 bytes but only 3 follow");
  });

  it("refuses bytes after the .crate", () => {
    const body = Buffer.concat([frame("{}", Buffer.alloc(3)), Buffer.alloc(2)]);
    expect(refusal(() => parsePublishFrame(body))).toBe("publish body has 2 bytes after the .crate");
  });
});

describe("publishVersion", () => {
  it("accepts strict SemVer 2.0, pre-release and build metadata included", () => {
    for (const vers of [
      "0.1.0",
      "1.0.0",
      "10.20.30",
      "1.0.0-alpha.1",
      "1.0.0+abc",
      "1.0.0-rc.1+build.5",
      "1.0.0-x-y",
    ]) {
      expect(publishVersion(vers)).toBe(vers);
    }
  });

  it("refuses anything else, with the rule", () => {
    const rule = "must be strict SemVer 2.0 (MAJOR.MINOR.PATCH with optional -pre-release and +build, e.g. 1.0.0)";
    for (const vers of ["1.0", "1", "v1.0.0", "=1.0.0", " 1.0.0", "1.0.0 ", "01.0.0", "1.0.0-01", "1.0.0+", "", "x"]) {
      expect(refusal(() => publishVersion(vers))).toBe(`invalid version ${JSON.stringify(vers)}: ${rule}`);
    }
    expect(refusal(() => publishVersion(1))).toBe("invalid version: vers must be a string");
  });
});

describe("publishMetadata", () => {
  it("keeps what the index and the browsing API need from cargo's metadata", () => {
    const metadata = publishMetadata(
      metadataWith({
        keywords: ["cli", "c++", "1password"],
        categories: ["command-line-utilities", "development-tools::cargo-plugins"],
        repository: "https://example.com/a.git",
        documentation: "https://docs.example.com/a",
        homepage: "http://example.com",
        readme: "# a\n",
        links: "git2",
        rust_version: "1.70",
        features: { default: ["std"], std: [], serde: ["dep:serde", "b/serde", "b?/std"] },
      }),
    );
    expect(metadata).toEqual({
      name: "a",
      vers: "0.1.0",
      deps: [
        {
          name: "b",
          versionReq: "^0.1",
          features: [],
          optional: false,
          defaultFeatures: true,
          target: null,
          kind: "normal",
          registry: null,
          explicitNameInToml: null,
        },
      ],
      features: { default: ["std"], std: [], serde: ["dep:serde", "b/serde", "b?/std"] },
      links: "git2",
      rustVersion: "1.70",
      description: "A test crate",
      keywords: ["cli", "c++", "1password"],
      categories: ["command-line-utilities", "development-tools::cargo-plugins"],
      license: "MIT",
      repository: "https://example.com/a.git",
      documentation: "https://docs.example.com/a",
      homepage: "http://example.com",
      readme: "# a\n",
    });
  });

  it("reads absent optional fields as empty and ignores unknown keys", () => {
    const metadata = publishMetadata({ name: "a", vers: "1.0.0", future: { anything: true } });
    expect(metadata).toEqual({
      name: "a",
      vers: "1.0.0",
      deps: [],
      features: {},
      links: null,
      rustVersion: null,
      description: null,
      keywords: [],
      categories: [],
      license: null,
      repository: null,
      documentation: null,
      homepage: null,
      readme: null,
    });
    expect(publishMetadata({ name: "a", vers: "1.0.0", deps: [{ name: "b", version_req: "1" }] }).deps[0]).toEqual({
      name: "b",
      versionReq: "1",
      features: [],
      optional: false,
      defaultFeatures: true,
      target: null,
      kind: "normal",
      registry: null,
      explicitNameInToml: null,
    });
  });

  it("never reads inherited properties", () => {
    expect(refusal(() => publishMetadata({ vers: "1.0.0" }))).toBe("invalid crate name: must be a string");
    const features = publishMetadata(metadataWith({ features: JSON.parse('{"__proto__": ["x"]}') })).features;
    expect(Object.keys(features)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(features)).toBe(Object.prototype);
  });

  it("refuses metadata that is not an object", () => {
    expect(refusal(() => publishMetadata([]))).toBe("publish metadata must be a JSON object, not an array");
  });

  it("checks the name and the version", () => {
    expect(refusal(() => publishMetadata(metadataWith({ name: "9abc" })))).toBe(
      'invalid crate name "9abc": must start with an ASCII letter',
    );
    expect(refusal(() => publishMetadata(metadataWith({ vers: "1.0" })))).toMatch(/^invalid version "1.0": must be/);
  });

  describe("dependencies", () => {
    it("refuses a deps that is not a list, or too long", () => {
      expect(refusal(() => publishMetadata(metadataWith({ deps: {} })))).toBe("deps must be a list of dependencies");
      const many = Array.from({ length: MAX_DEPENDENCIES + 1 }, (_, index) => ({
        name: `d${index}`,
        version_req: "1",
      }));
      expect(refusal(() => publishMetadata(metadataWith({ deps: many })))).toBe(
        "deps has 501 dependencies: at most 500 are allowed",
      );
    });

    it("refuses a dependency that is not an object", () => {
      expect(refusal(() => publishMetadata(metadataWith({ deps: [{ name: "b", version_req: "1" }, "c"] })))).toBe(
        "dependency 2 must be a JSON object",
      );
    });

    it("checks the name and the rename", () => {
      expect(refusal(() => publishMetadata(dependencyWith({ name: "9b" })))).toBe(
        'invalid dependency name "9b": must start with an ASCII letter',
      );
      expect(refusal(() => publishMetadata(dependencyWith({ name: undefined })))).toBe(
        "invalid dependency name: must be a string",
      );
      expect(refusal(() => publishMetadata(dependencyWith({ explicit_name_in_toml: "b c" })))).toBe(
        'invalid name in Cargo.toml of dependency b "b c": character " " is not allowed (only ASCII letters, digits, "-" and "_")',
      );
      expect(publishMetadata(dependencyWith({ explicit_name_in_toml: "bee" })).deps[0]?.explicitNameInToml).toBe("bee");
    });

    it("accepts Cargo's version requirements", () => {
      for (const req of [
        "^0.1",
        "0.1",
        "1",
        "1.2.3",
        "~1.2",
        "=1.0.0",
        ">=1, <2",
        ">= 1.2.0, < 1.5",
        "*",
        "1.*",
        "1.2.*",
        "1.2.x",
        "^1.2.3-alpha.1",
        ">1.0.0+build",
      ]) {
        expect(publishMetadata(dependencyWith({ version_req: req })).deps[0]?.versionReq).toBe(req);
      }
    });

    it("refuses other version requirements", () => {
      const shape = "expected comparators such as ^1.2, ~1.2.3, =1.0.0, >=1, <2 or 1.*, separated by commas";
      for (const req of ["", "abc", "1 || 2", "1 - 2", ">=1 <2", ">=1,", "^", "1.2.3.4", "latest", "^v1"]) {
        expect(refusal(() => publishMetadata(dependencyWith({ version_req: req })))).toBe(
          `dependency b has an invalid version requirement ${JSON.stringify(req)}: ${shape}`,
        );
      }
      expect(refusal(() => publishMetadata(dependencyWith({ version_req: 1 })))).toBe(
        "dependency b: version_req must be a string",
      );
      const long = `^${"1".repeat(300)}`;
      expect(refusal(() => publishMetadata(dependencyWith({ version_req: long })))).toMatch(
        /^dependency b has an invalid version requirement ".*"…: longer than 256 characters$/,
      );
    });

    it("checks features, optional, default_features and target", () => {
      expect(publishMetadata(dependencyWith({ features: ["std", "serde"] })).deps[0]?.features).toEqual([
        "std",
        "serde",
      ]);
      expect(refusal(() => publishMetadata(dependencyWith({ features: "std" })))).toBe(
        "dependency b: features must be a list of strings",
      );
      expect(refusal(() => publishMetadata(dependencyWith({ features: [1] })))).toBe(
        "dependency b: features must be a list of strings",
      );
      expect(refusal(() => publishMetadata(dependencyWith({ features: ["a b"] })))).toBe(
        'dependency b: features: "a b" is not a feature, dep:<dependency>, <dependency>/<feature> or <dependency>?/<feature>',
      );
      expect(refusal(() => publishMetadata(dependencyWith({ optional: "yes" })))).toBe(
        "dependency b: optional must be true or false",
      );
      expect(refusal(() => publishMetadata(dependencyWith({ default_features: 0 })))).toBe(
        "dependency b: default_features must be true or false",
      );
      expect(publishMetadata(dependencyWith({ target: 'cfg(target_os = "linux")' })).deps[0]?.target).toBe(
        'cfg(target_os = "linux")',
      );
      expect(refusal(() => publishMetadata(dependencyWith({ target: 3 })))).toBe(
        "dependency b: target must be a string or null",
      );
      expect(refusal(() => publishMetadata(dependencyWith({ target: "x".repeat(257) })))).toBe(
        "dependency b: target is too long: 257 characters, at most 256",
      );
    });

    it("checks the kind", () => {
      for (const kind of ["normal", "dev", "build"]) {
        expect(publishMetadata(dependencyWith({ kind })).deps[0]?.kind).toBe(kind);
      }
      expect(refusal(() => publishMetadata(dependencyWith({ kind: "test" })))).toBe(
        'dependency b has kind "test": must be normal, dev or build',
      );
      expect(refusal(() => publishMetadata(dependencyWith({ kind: 1 })))).toBe(
        "dependency b has kind a number: must be normal, dev or build",
      );
    });

    it("allows this registry and crates.io only", () => {
      for (const registry of CRATES_IO_INDEXES) {
        expect(publishMetadata(dependencyWith({ registry })).deps[0]?.registry).toBe(registry);
      }
      expect(publishMetadata(dependencyWith({ registry: undefined })).deps[0]?.registry).toBeNull();
      expect(refusal(() => publishMetadata(dependencyWith({ registry: "https://example.com/index" })))).toBe(
        'dependency b comes from registry "https://example.com/index": only this registry and crates.io are allowed',
      );
      expect(refusal(() => publishMetadata(dependencyWith({ registry: "sparse+https://index.crates.io" })))).toBe(
        'dependency b comes from registry "sparse+https://index.crates.io": only this registry and crates.io are allowed',
      );
      expect(refusal(() => publishMetadata(dependencyWith({ registry: 1 })))).toBe(
        "dependency b comes from registry a number: only this registry and crates.io are allowed",
      );
    });
  });

  describe("features", () => {
    it("refuses a features that is not an object of lists", () => {
      expect(refusal(() => publishMetadata(metadataWith({ features: [] })))).toBe(
        "features must be a JSON object of feature name → list of strings",
      );
      expect(refusal(() => publishMetadata(metadataWith({ features: { std: "x" } })))).toBe(
        "feature std must be a list of strings",
      );
    });

    it("checks feature names and entries", () => {
      expect(refusal(() => publishMetadata(metadataWith({ features: { "-x": [] } })))).toBe(
        'invalid feature name "-x": must be 1 to 200 ASCII letters, digits, "_", "-", "+" or ".", starting with a letter, digit or "_"',
      );
      expect(refusal(() => publishMetadata(metadataWith({ features: { "": [] } })))).toMatch(
        /^invalid feature name "": must be 1 to 200/,
      );
      expect(refusal(() => publishMetadata(metadataWith({ features: { std: ["dep:"] } })))).toBe(
        'feature std: "dep:" is not a feature, dep:<dependency>, <dependency>/<feature> or <dependency>?/<feature>',
      );
      expect(refusal(() => publishMetadata(metadataWith({ features: { std: ["x".repeat(201)] } })))).toMatch(
        /^feature std: ".*"… is longer than 200 characters$/,
      );
    });

    it("bounds their number as crates.io: 300 features, 300 entries each, 300 per dependency", () => {
      expect(DEFAULT_MAX_FEATURES).toBe(300);
      const features = (count: number) =>
        Object.fromEntries(Array.from({ length: count }, (_, index) => [`f${index}`, []]));
      const entries = (count: number) => Array.from({ length: count }, (_, index) => `f${index}`);
      expect(Object.keys(publishMetadata(metadataWith({ features: features(300) })).features)).toHaveLength(300);
      expect(refusal(() => publishMetadata(metadataWith({ features: features(301) })))).toBe(
        "features has 301 features: at most 300 are allowed (the registry's max-features)",
      );
      expect(publishMetadata(metadataWith({ features: { all: entries(300) } })).features.all).toHaveLength(300);
      expect(refusal(() => publishMetadata(metadataWith({ features: { all: entries(301) } })))).toBe(
        "feature all has 301 entries: at most 300 are allowed",
      );
      const dep = { name: "b", version_req: "1", features: entries(301) };
      expect(refusal(() => publishMetadata(metadataWith({ deps: [dep] })))).toBe(
        "dependency b: features has 301 entries: at most 300 are allowed",
      );
    });

    it("takes the configured max-features", () => {
      const limits = { maxFeatures: 3 };
      expect(refusal(() => publishMetadata(metadataWith({ features: { a: [], b: [], c: [], d: [] } }), limits))).toBe(
        "features has 4 features: at most 3 are allowed (the registry's max-features)",
      );
      expect(
        Object.keys(publishMetadata(metadataWith({ features: { a: [], b: [], c: [] } }), limits).features),
      ).toEqual(["a", "b", "c"]);
    });
  });

  describe("reserved names", () => {
    it("refuses Windows device names and Rust's own crates, as crates.io", () => {
      expect(refusal(() => publishMetadata(metadataWith({ name: "Aux" })))).toBe(
        'invalid crate name "Aux": is a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9), reserved as on crates.io',
      );
      expect(refusal(() => publishMetadata(metadataWith({ name: "std" })))).toBe(
        `invalid crate name "std": is the name of one of Rust's own crates, reserved as on crates.io`,
      );
      // A dependency may carry any valid name: crates.io keeps none of these names, so none is there.
      expect(publishMetadata(metadataWith({ deps: [{ name: "con", version_req: "1" }] })).deps[0]?.name).toBe("con");
    });
  });

  describe("index line", () => {
    it("is refused over max-index-line (256 KiB by default) and kept otherwise", () => {
      expect(DEFAULT_MAX_INDEX_LINE).toBe(256 * 1024);
      const cksum = "0".repeat(64);
      const small = publishMetadata(metadataWith({}));
      expect(indexLine(small, cksum)).toBe(JSON.stringify(indexEntry(small, cksum)));
      // 100 features of 100 entries of 30 characters: about 330 kB.
      const wide = publishMetadata(
        metadataWith({
          features: Object.fromEntries(
            Array.from({ length: 100 }, (_, feature) => [
              `f${feature}`,
              Array.from({ length: 100 }, (_, entry) => `e${entry}_${"x".repeat(26)}`),
            ]),
          ),
        }),
      );
      const bytes = Buffer.byteLength(JSON.stringify(indexEntry(wide, cksum)));
      expect(refusal(() => indexLine(wide, cksum))).toBe(
        `the index line of this version would be ${bytes} bytes: at most 262144 are allowed (the registry's max-index-line); fewer or shorter features or dependencies`,
      );
      expect(indexLine(wide, cksum, bytes)).toHaveLength(bytes);
      expect(() => indexLine(wide, cksum, bytes - 1)).toThrow(/at most \d+ are allowed/);
    });
  });

  describe("displayed metadata", () => {
    it("follows crates.io's keyword rules", () => {
      expect(refusal(() => publishMetadata(metadataWith({ keywords: ["a", "b", "c", "d", "e", "f"] })))).toBe(
        "keywords has 6 entries: at most 5 are allowed",
      );
      const rule = 'must be 1 to 20 ASCII letters, digits, "_", "-" or "+", starting with a letter or digit';
      for (const keyword of ["", "x".repeat(21), "-cli", "two words", "café"]) {
        expect(refusal(() => publishMetadata(metadataWith({ keywords: [keyword] })))).toBe(
          `invalid keyword ${JSON.stringify(keyword)}: ${rule}`,
        );
      }
      expect(refusal(() => publishMetadata(metadataWith({ keywords: "cli" })))).toBe(
        "keywords must be a list of strings",
      );
    });

    it("bounds categories", () => {
      expect(refusal(() => publishMetadata(metadataWith({ categories: ["a", "b", "c", "d", "e", "f"] })))).toBe(
        "categories has 6 entries: at most 5 are allowed",
      );
      expect(refusal(() => publishMetadata(metadataWith({ categories: ["a\u0007"] })))).toBe(
        'invalid category "a\\u0007": must be 1 to 100 characters without control characters',
      );
    });

    it("bounds text fields", () => {
      expect(
        publishMetadata(metadataWith({ description: "x".repeat(MAX_DESCRIPTION_LENGTH) })).description,
      ).toHaveLength(MAX_DESCRIPTION_LENGTH);
      expect(refusal(() => publishMetadata(metadataWith({ description: "x".repeat(1001) })))).toBe(
        "description is too long: 1001 characters, at most 1000",
      );
      expect(refusal(() => publishMetadata(metadataWith({ description: 5 })))).toBe(
        "description must be a string or null",
      );
      expect(refusal(() => publishMetadata(metadataWith({ license: "x".repeat(257) })))).toBe(
        "license is too long: 257 characters, at most 256",
      );
      expect(refusal(() => publishMetadata(metadataWith({ links: "x".repeat(257) })))).toBe(
        "links is too long: 257 characters, at most 256",
      );
    });

    it("bounds the readme in bytes of UTF-8", () => {
      expect(publishMetadata(metadataWith({ readme: "x".repeat(MAX_README_BYTES) })).readme).toHaveLength(
        MAX_README_BYTES,
      );
      expect(refusal(() => publishMetadata(metadataWith({ readme: "é".repeat(MAX_README_BYTES / 2 + 1) })))).toBe(
        "readme is too long: 1048578 bytes, at most 1048576",
      );
      expect(refusal(() => publishMetadata(metadataWith({ readme: ["x"] })))).toBe("readme must be a string or null");
    });

    it("takes http and https URLs only", () => {
      for (const field of ["repository", "documentation", "homepage"]) {
        expect(refusal(() => publishMetadata(metadataWith({ [field]: "not a url" })))).toBe(
          `${field} "not a url" is not a URL`,
        );
        expect(refusal(() => publishMetadata(metadataWith({ [field]: "javascript:alert(1)" })))).toBe(
          `${field} "javascript:alert(1)" must be an http or https URL`,
        );
        expect(refusal(() => publishMetadata(metadataWith({ [field]: `https://e.com/${"x".repeat(1024)}` })))).toBe(
          `${field} is too long: 1038 characters, at most 1024`,
        );
      }
    });

    it("checks rust_version", () => {
      for (const version of ["1", "1.70", "1.70.0"]) {
        expect(publishMetadata(metadataWith({ rust_version: version })).rustVersion).toBe(version);
      }
      for (const version of ["1.70.0-beta", "v1.70", "1.70.0.1", "01.70", "stable", ""]) {
        expect(refusal(() => publishMetadata(metadataWith({ rust_version: version })))).toBe(
          `invalid rust_version ${JSON.stringify(version)}: must be a Rust version such as 1.70 or 1.70.0`,
        );
      }
    });
  });
});

describe("versionKey", () => {
  it("drops build metadata only", () => {
    expect(versionKey("1.0.0")).toBe("1.0.0");
    expect(versionKey("1.0.0+abc")).toBe("1.0.0");
    expect(versionKey("1.0.0-rc.1+build.5")).toBe("1.0.0-rc.1");
    expect(versionKey("1.0.0-Alpha")).toBe("1.0.0-Alpha");
  });
});

describe("sha256Hex", () => {
  it("is the lower-case hex SHA-256", () => {
    expect(sha256Hex(Buffer.from("abc"))).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex(Buffer.alloc(0))).toBe(createHash("sha256").digest("hex"));
  });
});

describe("indexEntry", () => {
  const cksum = "0".repeat(64);

  it("writes the keys of index format 2 in Cargo's order", () => {
    const line = JSON.stringify(indexEntry(publishMetadata(cargoMetadata()), cksum));
    expect(line).toBe(
      `{"name":"a","vers":"0.1.0","deps":[{"name":"b","req":"^0.1","features":[],"optional":false,"default_features":true,"target":null,"kind":"normal"}],"cksum":"${cksum}","features":{},"yanked":false,"links":null,"v":2}`,
    );
  });

  it("adds registry, package and rust_version when set", () => {
    const metadata: PublishMetadata = publishMetadata(
      metadataWith({
        vers: "1.0.0+build",
        deps: [
          {
            name: "serde",
            version_req: "1",
            features: ["derive"],
            optional: true,
            default_features: false,
            target: "cfg(unix)",
            kind: "dev",
            registry: "https://github.com/rust-lang/crates.io-index",
            explicit_name_in_toml: "serde1",
          },
        ],
        features: { json: ["dep:serde1"] },
        links: "z",
        rust_version: "1.70",
      }),
    );
    expect(indexEntry(metadata, cksum)).toStrictEqual({
      name: "a",
      vers: "1.0.0+build",
      deps: [
        {
          name: "serde1",
          req: "1",
          features: ["derive"],
          optional: true,
          default_features: false,
          target: "cfg(unix)",
          kind: "dev",
          registry: "https://github.com/rust-lang/crates.io-index",
          package: "serde",
        },
      ],
      cksum,
      features: { json: ["dep:serde1"] },
      yanked: false,
      links: "z",
      v: 2,
      rust_version: "1.70",
    });
    const keys = Object.keys(indexEntry(metadata, cksum));
    expect(keys).toEqual(["name", "vers", "deps", "cksum", "features", "yanked", "links", "v", "rust_version"]);
    expect(Object.keys(indexEntry(metadata, cksum).deps[0] ?? {})).toEqual([
      "name",
      "req",
      "features",
      "optional",
      "default_features",
      "target",
      "kind",
      "registry",
      "package",
    ]);
  });
});

describe("withYanked", () => {
  it("flips yanked and keeps every other key in place", () => {
    const line = JSON.stringify(indexEntry(publishMetadata(metadataWith({ rust_version: "1.70" })), "f".repeat(64)));
    const yanked = withYanked(line, true);
    expect(yanked).toBe(line.replace('"yanked":false', '"yanked":true'));
    expect(withYanked(yanked, false)).toBe(line);
  });

  it("refuses a line that is not a JSON object", () => {
    expect(() => withYanked("[]", true)).toThrow("an index line must be a JSON object");
  });
});
