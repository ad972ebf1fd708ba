/**
 * The `.crate` files of the Cargo registry (docs/cargo.md): `<storage>/<name>/<name>-<vers>.crate`,
 * with the crate's canonical name. A file is written to a temporary file in the same directory,
 * fsynced, linked to its name and its directory fsynced, so that a crash leaves either no file or
 * the whole file; the database row comes after, so a crash between the two leaves an orphan file
 * that {@link CrateFiles.survey} finds. Paths are built from names the domain validated (crate
 * names are `A-Z a-z 0-9 - _`, versions SemVer), never from a request path. Directories are
 * created 0700 and files 0600: a private registry's crates are for its users only.
 */
import { randomBytes } from "node:crypto";
import { createReadStream, type ReadStream } from "node:fs";
import { type FileHandle, link, open, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { makePrivateDirectory, PRIVATE_FILE_MODE } from "../../platform/private-files.js";

/** The prefix of temporary files: never a crate's file name (those start with a letter). */
const TEMPORARY_PREFIX = ".tmp-";

/** A file found in the storage directory. */
export interface FoundFile {
  readonly canonical: string;
  readonly vers: string;
  /** Bytes. */
  readonly size: number;
  /** Milliseconds since the epoch. */
  readonly modifiedAt: number;
  readonly path: string;
}

/** What the storage directory holds besides the crates' files. */
export interface FoundLeftovers {
  /** Temporary files of publishes that never finished, with their modification time (ms). */
  readonly temporary: readonly { readonly path: string; readonly modifiedAt: number }[];
  /** Files whose name is no crate file (`<name>-<vers>.crate` in the directory `<name>`). */
  readonly unknown: readonly string[];
}

/** Reads and writes the `.crate` files under one directory. */
export class CrateFiles {
  /** @param directory the `registry.cargo.storage` directory; created when missing */
  constructor(readonly directory: string) {}

  /** The path of a version's file. */
  path(canonical: string, vers: string): string {
    return join(this.directory, canonical, `${canonical}-${vers}.crate`);
  }

  /**
   * Writes a version's file durably: temporary file, fsync, hard link to its name, fsync of the
   * directory. The link fails when the name exists, so a file is never replaced: two publishes of
   * one version racing (on this instance or another sharing the directory) cannot overwrite each
   * other's file, and the loser does not delete the winner's.
   *
   * @returns false, writing nothing, when the version's file exists
   */
  async write(canonical: string, vers: string, bytes: Buffer): Promise<boolean> {
    return this.writeWith(canonical, vers, (file) => file.writeFile(bytes));
  }

  /**
   * Writes a version's file as {@link write} does, its bytes written by `fill` into the open
   * temporary file (a body streamed from the network, checked as it comes). When `fill` throws,
   * the temporary file is removed, nothing is linked, and its error is thrown.
   *
   * @returns false, writing nothing, when the version's file exists
   */
  async writeWith(canonical: string, vers: string, fill: (file: FileHandle) => Promise<void>): Promise<boolean> {
    const directory = join(this.directory, canonical);
    // Private crates are served to authenticated users only: their files are the owner's alone.
    await makePrivateDirectory(directory);
    const temporary = join(directory, `${TEMPORARY_PREFIX}${randomBytes(8).toString("hex")}`);
    let linked: boolean;
    try {
      const file = await open(temporary, "wx", PRIVATE_FILE_MODE);
      try {
        await file.chmod(PRIVATE_FILE_MODE);
        await fill(file);
        await file.sync();
      } finally {
        await file.close();
      }
      linked = await link(temporary, this.path(canonical, vers)).then(
        () => true,
        (error: unknown) => {
          if (error instanceof Error && "code" in error && error.code === "EEXIST") return false;
          throw error;
        },
      );
    } finally {
      await rm(temporary, { force: true });
    }
    if (!linked) return false;
    // The new name is durable once the directory's entry is on disk.
    const handle = await open(directory, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    return true;
  }

  /** Removes a version's file; a missing file is fine. */
  async remove(canonical: string, vers: string): Promise<void> {
    await rm(this.path(canonical, vers), { force: true });
  }

  /**
   * A stream of a version's file, opened before it is returned (so a missing file is an error here,
   * not halfway through a response).
   * @throws the `open` error (`ENOENT` when the file is missing)
   */
  async open(canonical: string, vers: string): Promise<ReadStream> {
    const stream = createReadStream(this.path(canonical, vers));
    await new Promise<void>((resolve, reject) => {
      stream.once("open", () => resolve());
      stream.once("error", reject);
    });
    return stream;
  }

  /**
   * Every file of the storage directory: the crates' files (`<name>/<name>-<vers>.crate`), the
   * temporary files of unfinished publishes, and anything else. A missing directory holds nothing.
   */
  async survey(): Promise<{ files: FoundFile[]; leftovers: FoundLeftovers }> {
    const files: FoundFile[] = [];
    const temporary: { path: string; modifiedAt: number }[] = [];
    const unknown: string[] = [];
    let crates: string[];
    try {
      crates = await readdir(this.directory);
    } catch (error) {
      if (isMissing(error)) return { files, leftovers: { temporary, unknown } };
      throw error;
    }
    for (const canonical of crates.sort()) {
      const directory = join(this.directory, canonical);
      if (!(await stat(directory)).isDirectory()) {
        unknown.push(directory);
        continue;
      }
      for (const name of (await readdir(directory)).sort()) {
        const path = join(directory, name);
        const facts = await stat(path);
        const prefix = `${canonical}-`;
        if (name.startsWith(TEMPORARY_PREFIX)) {
          temporary.push({ path, modifiedAt: facts.mtimeMs });
        } else if (facts.isFile() && name.startsWith(prefix) && name.endsWith(".crate")) {
          const vers = name.slice(prefix.length, -".crate".length);
          files.push({ canonical, vers, size: facts.size, modifiedAt: facts.mtimeMs, path });
        } else {
          unknown.push(path);
        }
      }
    }
    return { files, leftovers: { temporary, unknown } };
  }

  /** Removes one file found by {@link survey}; a missing one is fine. */
  async removePath(path: string): Promise<void> {
    await rm(path, { force: true });
  }
}

function isMissing(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "ENOENT";
}
