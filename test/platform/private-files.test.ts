/**
 * Files Vigie creates are its user's only: data directories 0700, database and secret files 0600,
 * whatever the umask; an existing path wider than that is reported once, naming path and mode.
 * The tests run under umask 022 (the usual one, which leaves new files world-readable).
 */
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, platformMigrations } from "../../src/platform/database.js";
import { makePrivateDirectory, octalMode } from "../../src/platform/private-files.js";
import { CrateFiles } from "../../src/registry/cargo/files.js";
import { writeStreamFile } from "../../src/streams/storage.js";
import { temporaryDirectory } from "../support/temporary.js";

const modeOf = (path: string): number => statSync(path).mode & 0o777;

/** A warning callback that records what it is called with. */
function recorder(): { warn: (details: { path: string; mode: string }, message: string) => void; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    warn: (details, message) => calls.push(`${details.path} ${details.mode} ${message}`),
  };
}

describe("private files", () => {
  let umask: number;
  beforeAll(() => {
    umask = process.umask(0o022);
  });
  afterAll(() => {
    process.umask(umask);
  });

  it("creates the data directory 0700 and the database, -wal and -shm files 0600", async () => {
    const data = join(temporaryDirectory(), "state", "data");
    const file = join(data, "vigie.db");
    const { warn, calls } = recorder();
    const database = await openDatabase(`sqlite:${file}`, platformMigrations, { warn });
    try {
      // The migrations wrote: in WAL mode both side files exist while the database is open.
      expect(existsSync(`${file}-wal`)).toBe(true);
      expect(existsSync(`${file}-shm`)).toBe(true);
      expect(octalMode(modeOf(data))).toBe("0700");
      // The parent Vigie created on the way is private too.
      expect(octalMode(modeOf(join(data, "..")))).toBe("0700");
      for (const path of [file, `${file}-wal`, `${file}-shm`]) expect(octalMode(modeOf(path))).toBe("0600");
      expect(calls).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it("warns once, naming path and mode, about an existing data directory or database file open to others", async () => {
    const data = join(temporaryDirectory(), "data");
    mkdirSync(data);
    chmodSync(data, 0o755);
    const file = join(data, "vigie.db");
    writeFileSync(file, "");
    chmodSync(file, 0o644);
    const { warn, calls } = recorder();
    const database = await openDatabase(`sqlite:${file}`, platformMigrations, { warn });
    await database.close();
    expect(calls).toHaveLength(2);
    expect(calls[0]).toContain(`${data} 0755 data directory ${data} has mode 0755`);
    expect(calls[0]).toContain(`chmod 700 ${data}`);
    expect(calls[1]).toContain(`${file} 0644 database file ${file} has mode 0644`);
    // Left as they were (a warning, not an error, and no change behind the operator's back).
    expect(modeOf(data)).toBe(0o755);
    // Once per path: a second start in the same process says nothing more.
    const again = await openDatabase(`sqlite:${file}`, platformMigrations, { warn });
    await again.close();
    expect(calls).toHaveLength(2);
  });

  it("says nothing about an existing private data directory", async () => {
    const data = join(temporaryDirectory(), "data");
    mkdirSync(data, { mode: 0o700 });
    const { warn, calls } = recorder();
    const database = await openDatabase(`sqlite:${join(data, "vigie.db")}`, platformMigrations, { warn });
    await database.close();
    expect(calls).toEqual([]);
  });

  it("creates every missing directory of a path 0700 and leaves an existing one alone", async () => {
    const root = temporaryDirectory();
    chmodSync(root, 0o755);
    await makePrivateDirectory(join(root, "a", "b", "c"));
    for (const path of ["a", "a/b", "a/b/c"]) expect(octalMode(modeOf(join(root, path)))).toBe("0700");
    expect(modeOf(root)).toBe(0o755);
  });

  it("writes crate files 0600 in directories 0700", async () => {
    const storage = join(temporaryDirectory(), "crates");
    const files = new CrateFiles(storage);
    expect(await files.write("demo", "1.0.0", Buffer.from("crate"))).toBe(true);
    expect(octalMode(modeOf(storage))).toBe("0700");
    expect(octalMode(modeOf(join(storage, "demo")))).toBe("0700");
    expect(octalMode(modeOf(files.path("demo", "1.0.0")))).toBe("0600");
  });

  it("writes stream files 0600 in a directory it creates 0700", async () => {
    const directory = join(temporaryDirectory(), "streams");
    const file = await writeStreamFile(directory, "alerts", null);
    expect(octalMode(modeOf(directory))).toBe("0700");
    expect(octalMode(modeOf(file))).toBe("0600");
  });
});
