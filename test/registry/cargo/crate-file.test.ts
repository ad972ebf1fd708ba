import { gzipSync } from "node:zlib";
import fc from "fast-check";
import tar from "tar-stream";
import { describe, expect, it } from "vitest";
import { InvalidError } from "../../../src/platform/errors.js";
import { checkCrateFile } from "../../../src/registry/cargo/crate-file.js";

/** One entry of a test tar: a file unless `type` says otherwise. */
interface TestEntry {
  readonly name: string;
  readonly type?: "file" | "directory" | "symlink" | "link" | "character-device" | "block-device" | "fifo";
  readonly body?: string | Buffer;
  readonly linkname?: string;
}

/** A tar archive built in memory by tar-stream's pack. */
async function tarball(entries: readonly TestEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const entry of entries) {
    const type = entry.type ?? "file";
    const header = { name: entry.name, type, ...(entry.linkname === undefined ? {} : { linkname: entry.linkname }) };
    if (type === "file") pack.entry(header, entry.body ?? "");
    else pack.entry(header);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) {
    if (Buffer.isBuffer(chunk)) chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** A `.crate`: the gzip of a tar. */
async function crateOf(entries: readonly TestEntry[]): Promise<Buffer> {
  return gzipSync(await tarball(entries));
}

const MANIFEST = { name: "a-0.1.0/Cargo.toml", body: '[package]\nname = "a"\nversion = "0.1.0"\n' };

/** What `cargo package` writes for a small library. */
async function validCrate(): Promise<Buffer> {
  return crateOf([
    { name: "a-0.1.0/.cargo_vcs_info.json", body: "{}" },
    MANIFEST,
    { name: "a-0.1.0/Cargo.toml.orig", body: "[package]" },
    { name: "a-0.1.0/src/lib.rs", body: "pub fn a() {}\n" },
  ]);
}

/** The sentence of the 400 a check rejects with. */
async function refusal(check: Promise<void>): Promise<string> {
  try {
    await check;
  } catch (error) {
    if (!(error instanceof InvalidError)) throw error;
    expect(error.code).toBe("VIGIE_ERR_INVALID");
    return error.message;
  }
  throw new Error("expected the check to reject");
}

/** The sentence for one crate `a` 0.1.0 made of `entries` (Cargo.toml added). */
async function refusalOf(entries: readonly TestEntry[]): Promise<string> {
  return refusal(checkCrateFile(await crateOf([MANIFEST, ...entries]), "a", "0.1.0"));
}

/** Writes the checksum of a 512-byte tar header after a change (POSIX ustar: 6 octal digits, NUL, space). */
function fixChecksum(header: Buffer): void {
  header.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
}

const SEED = Number(process.env.FUZZ_SEED ?? 20_241_124);

describe("checkCrateFile", () => {
  describe("accepts", () => {
    it("a crate as cargo package writes it", async () => {
      await expect(checkCrateFile(await validCrate(), "a", "0.1.0")).resolves.toBeUndefined();
    });

    it("directory entries, the top one included", async () => {
      const crate = await crateOf([
        { name: "a-0.1.0", type: "directory" },
        { name: "a-0.1.0/src", type: "directory" },
        MANIFEST,
        { name: "a-0.1.0/src/lib.rs", body: "" },
      ]);
      await expect(checkCrateFile(crate, "a", "0.1.0")).resolves.toBeUndefined();
    });

    it("the name as given, case and _ kept, and build metadata in the version", async () => {
      const crate = await crateOf([{ name: "Foo_bar-1.0.0-rc.1+abc/Cargo.toml", body: "" }]);
      await expect(checkCrateFile(crate, "Foo_bar", "1.0.0-rc.1+abc")).resolves.toBeUndefined();
    });

    it("paths longer than 100 bytes (pax or ustar prefix) and names with dots", async () => {
      const deep = `a-0.1.0/${"d".repeat(90)}/${"e".repeat(90)}/${"f".repeat(120)}.rs`;
      const crate = await crateOf([MANIFEST, { name: deep, body: "x" }, { name: "a-0.1.0/..rs", body: "" }]);
      await expect(checkCrateFile(crate, "a", "0.1.0")).resolves.toBeUndefined();
    });

    it("a larger file streamed through", async () => {
      const crate = await crateOf([MANIFEST, { name: "a-0.1.0/data.bin", body: Buffer.alloc(5 * 1024 * 1024, 7) }]);
      await expect(checkCrateFile(crate, "a", "0.1.0")).resolves.toBeUndefined();
    });
  });

  describe("refuses paths", () => {
    it("with a .. segment", async () => {
      expect(await refusalOf([{ name: "a-0.1.0/../evil", body: "x" }])).toBe(
        "the .crate holds a path outside a-0.1.0/: a-0.1.0/../evil",
      );
      expect(await refusalOf([{ name: "a-0.1.0/src/../../evil", body: "x" }])).toBe(
        "the .crate holds a path outside a-0.1.0/: a-0.1.0/src/../../evil",
      );
      expect(await refusalOf([{ name: "a-0.1.0/..", type: "directory" }])).toBe(
        "the .crate holds a path outside a-0.1.0/: a-0.1.0/..",
      );
    });

    it("outside the prefix", async () => {
      for (const name of ["b-0.1.0/x", "A-0.1.0/x", "a-0.1.1/x", "a-0.1.0x/x", "a-0.1.0.rs", "x", "../a-0.1.0/x"]) {
        expect(await refusalOf([{ name, body: "x" }])).toBe(`the .crate holds a path outside a-0.1.0/: ${name}`);
      }
      // The top directory may stand alone as a directory, not as a file.
      expect(await refusalOf([{ name: "a-0.1.0", body: "x" }])).toBe(
        "the .crate holds a path outside a-0.1.0/: a-0.1.0",
      );
    });

    it("absolute", async () => {
      expect(await refusalOf([{ name: "/etc/passwd", body: "x" }])).toBe(
        "the .crate holds an absolute path: /etc/passwd",
      );
      expect(await refusalOf([{ name: "/a-0.1.0/x", body: "x" }])).toBe(
        "the .crate holds an absolute path: /a-0.1.0/x",
      );
    });

    it("with a backslash", async () => {
      expect(await refusalOf([{ name: "a-0.1.0\\..\\evil", body: "x" }])).toBe(
        "the .crate holds a path with a backslash: a-0.1.0\\..\\evil",
      );
      expect(await refusalOf([{ name: "a-0.1.0/src\\lib.rs", body: "x" }])).toBe(
        "the .crate holds a path with a backslash: a-0.1.0/src\\lib.rs",
      );
    });

    it("showing control characters escaped", async () => {
      expect(await refusalOf([{ name: "b\u001b[31m/x", body: "x" }])).toBe(
        "the .crate holds a path outside a-0.1.0/: b\\u001b[31m/x",
      );
    });
  });

  describe("refuses entries other than files and directories", () => {
    it("symbolic links", async () => {
      expect(await refusalOf([{ name: "a-0.1.0/passwd", type: "symlink", linkname: "/etc/passwd" }])).toBe(
        "the .crate holds a symbolic link (only files and directories are allowed): a-0.1.0/passwd",
      );
    });

    it("hard links", async () => {
      expect(await refusalOf([{ name: "a-0.1.0/lib2.rs", type: "link", linkname: "a-0.1.0/Cargo.toml" }])).toBe(
        "the .crate holds a hard link (only files and directories are allowed): a-0.1.0/lib2.rs",
      );
    });

    it("devices and FIFOs", async () => {
      expect(await refusalOf([{ name: "a-0.1.0/tty", type: "character-device" }])).toBe(
        "the .crate holds a device (only files and directories are allowed): a-0.1.0/tty",
      );
      expect(await refusalOf([{ name: "a-0.1.0/sda", type: "block-device" }])).toBe(
        "the .crate holds a device (only files and directories are allowed): a-0.1.0/sda",
      );
      expect(await refusalOf([{ name: "a-0.1.0/pipe", type: "fifo" }])).toBe(
        "the .crate holds a FIFO (only files and directories are allowed): a-0.1.0/pipe",
      );
    });
  });

  describe("needs the manifest", () => {
    it("refuses a crate without <name>-<vers>/Cargo.toml", async () => {
      const crate = await crateOf([{ name: "a-0.1.0/src/lib.rs", body: "" }]);
      expect(await refusal(checkCrateFile(crate, "a", "0.1.0"))).toBe("the .crate does not hold a-0.1.0/Cargo.toml");
    });

    it("at the top of the crate, as a file, with that exact case", async () => {
      for (const entry of [
        { name: "a-0.1.0/sub/Cargo.toml", body: "" },
        { name: "a-0.1.0/cargo.toml", body: "" },
        { name: "a-0.1.0/Cargo.toml", type: "directory" as const },
      ]) {
        const crate = await crateOf([entry]);
        expect(await refusal(checkCrateFile(crate, "a", "0.1.0"))).toBe("the .crate does not hold a-0.1.0/Cargo.toml");
      }
    });

    it("refuses an empty tar", async () => {
      expect(await refusal(checkCrateFile(await crateOf([]), "a", "0.1.0"))).toBe(
        "the .crate does not hold a-0.1.0/Cargo.toml",
      );
    });
  });

  describe("refuses what is not a gzip tar", () => {
    it("bytes that are not gzip", async () => {
      for (const bytes of [Buffer.alloc(0), Buffer.from([0x1f]), Buffer.from("hello"), await tarball([MANIFEST])]) {
        expect(await refusal(checkCrateFile(bytes, "a", "0.1.0"))).toBe("the .crate is not a gzip file");
      }
      // The gzip magic followed by a header zlib does not know.
      expect(await refusal(checkCrateFile(Buffer.from([0x1f, 0x8b, 0x09, 0, 0, 0, 0, 0, 0, 3]), "a", "0.1.0"))).toBe(
        "the .crate is not a gzip file",
      );
    });

    it("a truncated gzip", async () => {
      const crate = await validCrate();
      for (const length of [2, 10, 30, crate.length - 1]) {
        expect(await refusal(checkCrateFile(crate.subarray(0, length), "a", "0.1.0"))).toBe(
          "the .crate is a truncated gzip file",
        );
      }
    });

    it("a corrupt gzip", async () => {
      const crate = Buffer.from(await validCrate());
      // The CRC-32 of the uncompressed data sits 8 bytes before the end (RFC 1952).
      crate[crate.length - 8] = (crate[crate.length - 8] ?? 0) ^ 1;
      expect(await refusal(checkCrateFile(crate, "a", "0.1.0"))).toBe(
        "the .crate is a corrupt gzip file (incorrect data check)",
      );
    });

    it("bytes after the gzip data", async () => {
      const crate = await validCrate();
      const trailing = Buffer.concat([crate, Buffer.from("trailing")]);
      expect(await refusal(checkCrateFile(trailing, "a", "0.1.0"))).toBe("the .crate has bytes after its gzip data");
      // Zero padding is ignored, and a second member is more of the same stream (RFC 1952 §2.2).
      await expect(checkCrateFile(Buffer.concat([crate, Buffer.alloc(16)]), "a", "0.1.0")).resolves.toBeUndefined();
    });

    it("a gzip of bytes that are not a tar", async () => {
      expect(await refusal(checkCrateFile(gzipSync(Buffer.from("hello world")), "a", "0.1.0"))).toBe(
        "the .crate is not a valid tar archive: it ends in the middle of a header or an entry",
      );
      expect(await refusal(checkCrateFile(gzipSync(Buffer.alloc(4096, "x")), "a", "0.1.0"))).toBe(
        "the .crate is not a valid tar archive: a header has a wrong checksum",
      );
    });

    it("a tar cut in the middle of an entry", async () => {
      const archive = await tarball([MANIFEST, { name: "a-0.1.0/big", body: Buffer.alloc(4096, 1) }]);
      expect(await refusal(checkCrateFile(gzipSync(archive.subarray(0, 2048)), "a", "0.1.0"))).toBe(
        "the .crate is not a valid tar archive: it ends in the middle of a header or an entry",
      );
    });

    it("a tar header of an unknown format", async () => {
      const archive = await tarball([MANIFEST]);
      archive.fill(0, 257, 265); // ustar magic and version: an old v7 header
      fixChecksum(archive.subarray(0, 512));
      expect(await refusal(checkCrateFile(gzipSync(archive), "a", "0.1.0"))).toBe(
        "the .crate is not a valid tar archive: a header is neither ustar nor GNU",
      );
    });
  });

  describe("limits", () => {
    it("refuses more entries than allowed", async () => {
      const crate = await validCrate();
      await expect(checkCrateFile(crate, "a", "0.1.0", { maxEntries: 4 })).resolves.toBeUndefined();
      expect(await refusal(checkCrateFile(crate, "a", "0.1.0", { maxEntries: 3 }))).toBe(
        "the .crate holds more than 3 entries",
      );
    });

    it("refuses more unpacked bytes than allowed, headers included", async () => {
      const archive = await tarball([
        MANIFEST,
        ...Array.from({ length: 10 }, (_, index) => ({ name: `a-0.1.0/${index}` })),
      ]);
      const crate = gzipSync(archive);
      await expect(checkCrateFile(crate, "a", "0.1.0", { maxUnpackedBytes: archive.length })).resolves.toBeUndefined();
      expect(await refusal(checkCrateFile(crate, "a", "0.1.0", { maxUnpackedBytes: 4096 }))).toBe(
        "the .crate unpacks to more than 4096 bytes",
      );
    });

    it("stops a gzip bomb at the limit", async () => {
      // 64 MiB of zeros compress to about 64 kB.
      const crate = await crateOf([MANIFEST, { name: "a-0.1.0/zeros", body: Buffer.alloc(64 * 1024 * 1024) }]);
      expect(crate.length).toBeLessThan(200_000);
      const started = performance.now();
      expect(await refusal(checkCrateFile(crate, "a", "0.1.0", { maxUnpackedBytes: 1024 * 1024 }))).toBe(
        "the .crate unpacks to more than 1 MiB",
      );
      expect(performance.now() - started).toBeLessThan(1000);
    });
  });

  describe("always settles", () => {
    it("on arbitrary bytes, with or without the gzip magic", async () => {
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), fc.boolean(), async (bytes, magic) => {
          const input = magic ? Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0]), bytes]) : Buffer.from(bytes);
          await refusal(checkCrateFile(input, "a", "0.1.0"));
        }),
        { seed: SEED, numRuns: 300 },
      );
    });

    it("on a valid crate with one byte changed", async () => {
      const crate = await validCrate();
      await fc.assert(
        fc.asyncProperty(fc.nat({ max: crate.length - 1 }), fc.integer({ min: 1, max: 255 }), async (index, flip) => {
          const broken = Buffer.from(crate);
          broken[index] = (broken[index] ?? 0) ^ flip;
          // Some changes (the mtime of the gzip header) leave a valid crate: resolved or 400, never hanging.
          await checkCrateFile(broken, "a", "0.1.0").catch((error: unknown) => {
            expect(error).toBeInstanceOf(InvalidError);
          });
        }),
        { seed: SEED, numRuns: 300 },
      );
    });
  });
});
