/**
 * The disagreements between the database and the `.crate` files (docs/cargo.md): `checkCrateFiles`
 * on a temporary storage directory, and the same check run when Vigie starts (on SQLite every
 * orphan is a crash's and goes; on PostgreSQL only those older than the grace period).
 */
import { appendFile, mkdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/platform/config.js";
import { checkCrateFiles, hasDisagreements, ORPHAN_GRACE_MS, reportLines } from "../../../src/registry/cargo/check.js";
import { CrateFiles } from "../../../src/registry/cargo/files.js";
import type { StoredFile } from "../../../src/registry/cargo/storage.js";
import { createRegistryModule } from "../../../src/registry/index.js";
import { buildServer, type VigieServer } from "../../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { temporaryDirectory } from "../../support/temporary.js";
import { dropWhenClosed } from "../sessions.js";
import { publication } from "./frames.js";

const MINUTE = 60_000;

/** Sets a file's modification time to `ageMs` milliseconds before `now`. */
async function age(path: string, now: number, ageMs: number): Promise<void> {
  const when = new Date(now - ageMs);
  await utimes(path, when, when);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** What the database would say of a file written with `bytes`. */
function stored(canonical: string, vers: string, bytes: Buffer): StoredFile {
  return { canonical, vers, size: bytes.length, cksum: "0".repeat(64) };
}

describe("checkCrateFiles", () => {
  const bytes = Buffer.from("a crate's bytes");

  it("finds nothing to say when the files and the database agree", async () => {
    const files = new CrateFiles(temporaryDirectory("vigie-check-"));
    expect(await files.write("a", "0.1.0", bytes)).toBe(true);
    expect(await files.write("a", "0.2.0+build", bytes)).toBe(true);
    const report = await checkCrateFiles(
      [stored("a", "0.1.0", bytes), stored("a", "0.2.0+build", bytes)],
      files,
      Date.now(),
      ORPHAN_GRACE_MS,
    );
    expect(report).toEqual({
      missing: [],
      wrongSize: [],
      orphans: [],
      temporary: [],
      unknown: [],
      removed: [],
      versions: 2,
      files: 2,
    });
    expect(hasDisagreements(report)).toBe(false);
    expect(reportLines(report)).toEqual(["2 versions in the database, 2 crate files"]);
  });

  it("treats a missing storage directory as empty", async () => {
    const files = new CrateFiles(join(temporaryDirectory("vigie-check-"), "not-yet"));
    const report = await checkCrateFiles([stored("a", "0.1.0", bytes)], files, Date.now(), ORPHAN_GRACE_MS);
    expect(report.missing).toEqual([stored("a", "0.1.0", bytes)]);
    expect(report.files).toBe(0);
  });

  it("removes an orphan file older than the grace period and keeps (reports) a younger one", async () => {
    const now = Date.now();
    const files = new CrateFiles(temporaryDirectory("vigie-check-"));
    await files.write("old", "0.1.0", bytes);
    await files.write("young", "0.1.0", bytes);
    await files.write("a", "0.1.0", bytes);
    await age(files.path("old", "0.1.0"), now, ORPHAN_GRACE_MS + MINUTE);
    await age(files.path("young", "0.1.0"), now, ORPHAN_GRACE_MS - MINUTE);
    await age(files.path("a", "0.1.0"), now, 10 * ORPHAN_GRACE_MS);

    const report = await checkCrateFiles([stored("a", "0.1.0", bytes)], files, now, ORPHAN_GRACE_MS);
    expect(report.orphans.map((file) => [file.canonical, file.vers, file.size, file.path]).sort()).toEqual([
      ["old", "0.1.0", bytes.length, files.path("old", "0.1.0")],
      ["young", "0.1.0", bytes.length, files.path("young", "0.1.0")],
    ]);
    expect(report.removed).toEqual([files.path("old", "0.1.0")]);
    expect(await exists(files.path("old", "0.1.0"))).toBe(false);
    expect(await exists(files.path("young", "0.1.0"))).toBe(true);
    // A file with its row is never touched, however old.
    expect(await readFile(files.path("a", "0.1.0"))).toEqual(bytes);
    expect(hasDisagreements(report)).toBe(true);
    expect(reportLines(report)).toEqual([
      `removed orphan file: ${files.path("old", "0.1.0")}`,
      `orphan file: ${files.path("young", "0.1.0")}`,
      "1 versions in the database, 3 crate files",
    ]);

    // Once the young one is old too, the next check removes it and has nothing left to say.
    const later = await checkCrateFiles([stored("a", "0.1.0", bytes)], files, now + 2 * MINUTE, ORPHAN_GRACE_MS);
    expect(later.removed).toEqual([files.path("young", "0.1.0")]);
    expect(hasDisagreements(later)).toBe(false);
    const after = await checkCrateFiles([stored("a", "0.1.0", bytes)], files, now + 2 * MINUTE, ORPHAN_GRACE_MS);
    expect(after.orphans).toEqual([]);
  });

  it("removes an old temporary file and keeps a young one", async () => {
    const now = Date.now();
    const directory = temporaryDirectory("vigie-check-");
    const files = new CrateFiles(directory);
    await files.write("a", "0.1.0", bytes);
    const old = join(directory, "a", ".tmp-0123456789abcdef");
    const young = join(directory, "a", ".tmp-fedcba9876543210");
    await writeFile(old, "half a crate");
    await writeFile(young, "half a crate");
    await age(old, now, ORPHAN_GRACE_MS);
    await age(young, now, 1_000);

    const report = await checkCrateFiles([stored("a", "0.1.0", bytes)], files, now, ORPHAN_GRACE_MS);
    expect([...report.temporary].sort()).toEqual([old, young].sort());
    expect(report.removed).toEqual([old]);
    expect(report.orphans).toEqual([]);
    expect(await exists(old)).toBe(false);
    expect(await exists(young)).toBe(true);
    expect(hasDisagreements(report)).toBe(true);
    expect(reportLines(report)).toContain(`removed temporary file: ${old}`);
    expect(reportLines(report)).toContain(`temporary file: ${young}`);
  });

  it("only reports when asked not to remove", async () => {
    const now = Date.now();
    const directory = temporaryDirectory("vigie-check-");
    const files = new CrateFiles(directory);
    await files.write("old", "0.1.0", bytes);
    await age(files.path("old", "0.1.0"), now, 100 * ORPHAN_GRACE_MS);
    await mkdir(join(directory, "old"), { recursive: true });
    const temporary = join(directory, "old", ".tmp-aaaaaaaaaaaaaaaa");
    await writeFile(temporary, "");
    await age(temporary, now, 100 * ORPHAN_GRACE_MS);
    const report = await checkCrateFiles([], files, now, undefined);
    expect(report.orphans.map((file) => file.path)).toEqual([files.path("old", "0.1.0")]);
    expect(report.temporary).toEqual([temporary]);
    expect(report.removed).toEqual([]);
    expect(await exists(files.path("old", "0.1.0"))).toBe(true);
    expect(await exists(temporary)).toBe(true);
  });

  it("reports a missing file and a file of the wrong size, and leaves unknown files alone", async () => {
    const now = Date.now();
    const directory = temporaryDirectory("vigie-check-");
    const files = new CrateFiles(directory);
    await files.write("a", "0.1.0", bytes);
    await files.write("b", "1.0.0", bytes);
    await appendFile(files.path("b", "1.0.0"), "more");
    const unknown = join(directory, "a", "notes.txt");
    await writeFile(unknown, "not a crate");
    await age(unknown, now, 100 * ORPHAN_GRACE_MS);
    const stray = join(directory, "stray.txt");
    await writeFile(stray, "");

    const rows = [stored("a", "0.1.0", bytes), stored("a", "0.2.0", bytes), stored("b", "1.0.0", bytes)];
    const report = await checkCrateFiles(rows, files, now, ORPHAN_GRACE_MS);
    expect(report.missing).toEqual([stored("a", "0.2.0", bytes)]);
    expect(report.wrongSize).toEqual([
      {
        stored: stored("b", "1.0.0", bytes),
        file: expect.objectContaining({
          canonical: "b",
          vers: "1.0.0",
          size: bytes.length + 4,
          path: files.path("b", "1.0.0"),
        }),
      },
    ]);
    expect([...report.unknown].sort()).toEqual([unknown, stray].sort());
    expect(report.orphans).toEqual([]);
    expect(report.removed).toEqual([]);
    expect(await exists(unknown)).toBe(true);
    expect(await exists(stray)).toBe(true);
    // Nothing is repaired: the file of the wrong size stays.
    expect((await stat(files.path("b", "1.0.0"))).size).toBe(bytes.length + 4);
    expect(report.versions).toBe(3);
    expect(report.files).toBe(2);
    expect(hasDisagreements(report)).toBe(true);
    const lines = reportLines(report);
    expect(lines).toContain("missing file: a 0.2.0");
    expect(lines).toContain(
      `wrong size: ${files.path("b", "1.0.0")} has ${bytes.length + 4} bytes, the database says ${bytes.length}`,
    );
    expect(lines).toContain(`unknown file: ${unknown}`);
    expect(lines.at(-1)).toBe("3 versions in the database, 2 crate files");
  });
});

describe.each(DATABASE_KINDS)("the start-up check on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let storage: string;
    const logs: { msg: string }[] = [];

    const start = async (): Promise<VigieServer> => {
      const modules = [
        createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password-1" } }),
      ];
      const config = parseConfig(
        {
          database: { url: testDatabase.url },
          http: { "public-url": "http://registry.test:8080" },
          registry: { enabled: true, cargo: { enabled: true, storage } },
        },
        {},
        modules,
      );
      const logger = pino({ level: "warn" }, { write: (line: string) => void logs.push(JSON.parse(line)) });
      return buildServer(config, { modules, logger });
    };

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      storage = temporaryDirectory("vigie-crates-");
    });
    afterAll(async () => {
      await dropWhenClosed(testDatabase);
    });

    it("reports missing and resized files and removes orphans (all on SQLite, old ones on PostgreSQL)", async () => {
      const first = await start();
      const login = await first.app.inject({
        method: "POST",
        url: "/api/v1/registry/token",
        payload: { name: "root", user: "root", password: "root-password-1" },
      });
      expect(login.statusCode, login.body).toBe(201);
      const token = login.json().token as string;
      const made: Record<string, Buffer> = {};
      for (const name of ["kept", "gone", "resized"]) {
        const publish = await publication(name, "0.1.0");
        const answer = await first.app.inject({
          method: "PUT",
          url: "/api/v1/crates/new",
          headers: { authorization: token },
          payload: publish.body,
        });
        expect(answer.statusCode, answer.body).toBe(200);
        made[name] = publish.crate;
      }
      await first.close();

      const files = new CrateFiles(storage);
      const now = Date.now();
      await rm(files.path("gone", "0.1.0"));
      await appendFile(files.path("resized", "0.1.0"), "x");
      const orphans = {
        old: files.path("old-orphan", "0.1.0"),
        young: files.path("young-orphan", "0.1.0"),
        oldTemporary: join(storage, "kept", ".tmp-0000000000000000"),
        youngTemporary: join(storage, "kept", ".tmp-1111111111111111"),
      };
      await files.write("old-orphan", "0.1.0", Buffer.from("orphan"));
      await files.write("young-orphan", "0.1.0", Buffer.from("orphan"));
      await writeFile(orphans.oldTemporary, "half");
      await writeFile(orphans.youngTemporary, "half");
      await age(orphans.old, now, ORPHAN_GRACE_MS + MINUTE);
      await age(orphans.oldTemporary, now, ORPHAN_GRACE_MS + MINUTE);
      await age(orphans.young, now, MINUTE);
      await age(orphans.youngTemporary, now, MINUTE);
      const unknown = join(storage, "kept", "notes.txt");
      await writeFile(unknown, "mine");

      logs.length = 0;
      const second = await start();
      try {
        const messages = logs.map((entry) => entry.msg);
        expect(await exists(orphans.old)).toBe(false);
        expect(await exists(orphans.oldTemporary)).toBe(false);
        expect(messages).toContain(`cargo registry: removed orphan file: ${orphans.old}`);
        expect(messages).toContain(`cargo registry: removed temporary file: ${orphans.oldTemporary}`);
        if (kind === "sqlite") {
          // One instance per SQLite database: any orphan is a crash's, whatever its age.
          expect(await exists(orphans.young)).toBe(false);
          expect(await exists(orphans.youngTemporary)).toBe(false);
          expect(messages).toContain(`cargo registry: removed orphan file: ${orphans.young}`);
        } else {
          // Another instance may be publishing it right now.
          expect(await exists(orphans.young)).toBe(true);
          expect(await exists(orphans.youngTemporary)).toBe(true);
          expect(messages).toContain(`cargo registry: orphan file: ${orphans.young}`);
          expect(messages).toContain(`cargo registry: temporary file: ${orphans.youngTemporary}`);
        }
        expect(messages).toContain("cargo registry: missing file: gone 0.1.0");
        expect(messages).toContain(
          `cargo registry: wrong size: ${files.path("resized", "0.1.0")} has ${(made.resized?.length ?? 0) + 1} bytes, the database says ${made.resized?.length}`,
        );
        expect(messages).toContain(`cargo registry: unknown file: ${unknown}`);
        expect(await exists(unknown)).toBe(true);
        // What has its row stays, and is served.
        const download = await second.app.inject({ method: "GET", url: "/api/v1/crates/kept/0.1.0/download" });
        expect(download.statusCode).toBe(200);
        expect(download.rawPayload).toEqual(made.kept);
        expect(await readFile(files.path("resized", "0.1.0"))).toHaveLength((made.resized?.length ?? 0) + 1);
      } finally {
        await second.close();
      }
    });
  });
});
