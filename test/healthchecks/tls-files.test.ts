import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkTlsDirectory,
  checkTlsFiles,
  isTlsFileName,
  MAX_TLS_FILE_BYTES,
  readTlsFiles,
  TLS_FILE_PATHS,
  TlsDirectoryError,
  TlsFileError,
} from "../../src/healthchecks/tls-files.js";
import { ValidationError } from "../../src/platform/validation.js";
import { temporaryDirectory } from "../support/temporary.js";

const FILE_RULE = "must name a regular file of at most 1 MiB in healthchecks.tls-directory";
const NAME_RULE =
  "must be a file name relative to healthchecks.tls-directory, not an absolute path and without .. segments";

/** The error `checkTlsFiles` throws, or undefined when it accepts. */
async function refusal(fields: Record<string, string>, directory: string | undefined) {
  try {
    await checkTlsFiles(fields, directory);
    return undefined;
  } catch (error) {
    if (error instanceof ValidationError) return { path: error.path, message: error.message, hasValue: error.hasValue };
    throw error;
  }
}

let directory: string;
let outside: string;
beforeAll(() => {
  directory = temporaryDirectory("vigie-tls-directory-");
  outside = temporaryDirectory("vigie-tls-outside-");
  writeFileSync(join(directory, "ca.pem"), "CA");
  mkdirSync(join(directory, "clients"));
  writeFileSync(join(directory, "clients", "web.pem"), "CERT");
  writeFileSync(join(directory, "exactly-1mib.pem"), Buffer.alloc(MAX_TLS_FILE_BYTES, 65));
  writeFileSync(join(directory, "too-large.pem"), Buffer.alloc(MAX_TLS_FILE_BYTES + 1, 65));
  execFileSync("mkfifo", [join(directory, "ca.fifo")]);
  symlinkSync("/dev/zero", join(directory, "zero.pem"));
  // A link the operator put there: followed.
  writeFileSync(join(outside, "shared-ca.pem"), "SHARED");
  symlinkSync(join(outside, "shared-ca.pem"), join(directory, "shared-ca.pem"));
});
afterAll(() => {
  rmSync(directory, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

describe("isTlsFileName", () => {
  it("accepts relative names, subdirectories included", () => {
    for (const name of ["ca.pem", "clients/web.pem", "./ca.pem", "a..b", "..pem", "...", "é.pem"]) {
      expect(isTlsFileName(name)).toBe(true);
    }
  });

  it("refuses absolute paths, .. segments, control characters and the empty name", () => {
    for (const name of [
      "/etc/passwd",
      "/dev/zero",
      "../x",
      "a/../b",
      "a/..",
      "..",
      "..\\x",
      "C:\\x",
      "C:/x",
      "a\0b",
      "",
    ]) {
      expect(isTlsFileName(name)).toBe(false);
    }
  });
});

describe("checkTlsFiles (an API definition, when posted or restored)", () => {
  it("accepts regular files of at most 1 MiB under the directory, following the operator's links", async () => {
    expect(await refusal({ cacert: "ca.pem" }, directory)).toBeUndefined();
    expect(await refusal({ key: "clients/web.pem", cert: "clients/web.pem" }, directory)).toBeUndefined();
    expect(await refusal({ cacert: "exactly-1mib.pem" }, directory)).toBeUndefined();
    expect(await refusal({ cacert: "shared-ca.pem" }, directory)).toBeUndefined();
    expect(await refusal({}, undefined)).toBeUndefined();
  });

  it("refuses /dev/zero, /etc/passwd and ../x by their name, naming the field", async () => {
    expect(await refusal({ cacert: "/dev/zero" }, directory)).toEqual({
      path: "cacert",
      message: `cacert: ${NAME_RULE}`,
      hasValue: false,
    });
    expect(await refusal({ key: "/etc/passwd", cert: "ca.pem" }, directory)).toMatchObject({ path: "key" });
    expect(await refusal({ key: "ca.pem", cert: "../x" }, directory)).toMatchObject({
      path: "cert",
      message: `cert: ${NAME_RULE}`,
    });
  });

  it("gives one answer for a missing file, a directory, a FIFO, a device and a file over 1 MiB", async () => {
    const answers = [];
    for (const name of ["missing.pem", "clients", "clients/", "ca.fifo", "zero.pem", "too-large.pem"]) {
      answers.push(await refusal({ cacert: name }, directory));
    }
    for (const answer of answers) {
      expect(answer).toEqual({ path: "cacert", message: `cacert: ${FILE_RULE}`, hasValue: false });
    }
  });

  it("refuses every file without a directory", async () => {
    expect(await refusal({ cacert: "ca.pem" }, undefined)).toEqual({
      path: "cacert",
      message: "cacert: cannot be set through the API: healthchecks.tls-directory is not configured",
      hasValue: false,
    });
  });

  it("names the first failing field in the order key, cert, cacert", async () => {
    expect(await refusal({ key: "missing", cert: "missing", cacert: "missing" }, directory)).toMatchObject({
      path: "key",
    });
    expect(await refusal({ key: "ca.pem", cert: "missing", cacert: "missing" }, directory)).toMatchObject({
      path: "cert",
    });
  });
});

describe("readTlsFiles (at each execution)", () => {
  const names = () => ({ kind: "names" as const, directory });

  it("reads API names under the directory and configuration paths as given", async () => {
    expect(await readTlsFiles({ cacert: "ca.pem", cert: "clients/web.pem", key: "ca.pem" }, names())).toEqual({
      ca: Buffer.from("CA"),
      cert: Buffer.from("CERT"),
      key: Buffer.from("CA"),
    });
    expect(await readTlsFiles({ cacert: join(directory, "ca.pem") }, TLS_FILE_PATHS)).toEqual({
      ca: Buffer.from("CA"),
    });
    expect((await readTlsFiles({ cacert: "exactly-1mib.pem" }, names())).ca).toHaveLength(MAX_TLS_FILE_BYTES);
  });

  it("never reads outside the directory for an API check, nor without one", async () => {
    await expect(readTlsFiles({ cacert: "../x" }, names())).rejects.toThrow(
      new TlsFileError("cacert", "../x", "not a file name under healthchecks.tls-directory"),
    );
    await expect(readTlsFiles({ cacert: "/etc/passwd" }, names())).rejects.toThrow(
      "cannot read cacert /etc/passwd: not a file name under healthchecks.tls-directory",
    );
    await expect(readTlsFiles({ cacert: "ca.pem" }, { kind: "names", directory: undefined })).rejects.toThrow(
      "cannot read cacert ca.pem: healthchecks.tls-directory is not configured",
    );
  });

  it("fails on a file that is not regular or is larger than 1 MiB, naming the file as the check does", async () => {
    await expect(readTlsFiles({ cacert: "too-large.pem" }, names())).rejects.toThrow(
      "cannot read cacert too-large.pem: larger than 1 MiB",
    );
    await expect(readTlsFiles({ cacert: "ca.fifo" }, names())).rejects.toThrow(
      "cannot read cacert ca.fifo: not a regular file",
    );
    await expect(readTlsFiles({ cacert: "zero.pem" }, names())).rejects.toThrow(
      "cannot read cacert zero.pem: not a regular file",
    );
    await expect(readTlsFiles({ cacert: "clients" }, names())).rejects.toThrow(
      "cannot read cacert clients: not a regular file",
    );
    await expect(readTlsFiles({ key: "/dev/zero", cert: "/dev/zero" }, TLS_FILE_PATHS)).rejects.toThrow(
      "not a regular file",
    );
    await expect(readTlsFiles({ cacert: join(directory, "missing.pem") }, TLS_FILE_PATHS)).rejects.toThrow(
      `cannot read cacert ${join(directory, "missing.pem")}: ENOENT`,
    );
  });
});

describe("checkTlsDirectory (at start-up)", () => {
  it("returns the absolute path of a readable directory", async () => {
    expect(await checkTlsDirectory(directory)).toBe(directory);
    expect(await checkTlsDirectory(`${directory}/clients/..`)).toBe(directory);
  });

  it("says why another path cannot be used", async () => {
    await expect(checkTlsDirectory(join(directory, "missing"))).rejects.toThrow(
      new TlsDirectoryError("it does not exist"),
    );
    await expect(checkTlsDirectory(join(directory, "ca.pem"))).rejects.toThrow(
      new TlsDirectoryError("it is not a directory"),
    );
  });

  it.skipIf(process.getuid?.() === 0)("refuses a directory the process cannot read", async () => {
    const locked = temporaryDirectory("vigie-tls-locked-");
    chmodSync(locked, 0o000);
    try {
      await expect(checkTlsDirectory(locked)).rejects.toThrow(new TlsDirectoryError("it is not readable"));
    } finally {
      chmodSync(locked, 0o700);
      rmSync(locked, { recursive: true, force: true });
    }
  });
});
