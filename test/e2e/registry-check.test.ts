/**
 * `vigie registry check` (docs/cargo.md) against the database and storage directory of a real
 * configuration: it needs the Cargo registry enabled, reports an orphan `.crate` (a file without
 * its version, as a crash between the file and the commit leaves), keeps a young one (a publish may
 * be running), removes an old one unless `--dry-run`, and its exit code says whether anything is
 * left to report (test/registry/cargo/check.test.ts covers missing files and sizes).
 */
import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, runCli, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const directory = temporaryDirectory();
const storage = join(directory, "crates");
const configFile = join(directory, "vigie.yaml");
let vigie: VigieProcess | undefined;

afterAll(async () => {
  await stopVigie(vigie);
  rmSync(directory, { recursive: true, force: true });
});

/** Writes the configuration, with the Cargo registry on or off. */
function configure(port: number, cargo: boolean): void {
  writeFileSync(
    configFile,
    [
      `http: {host: 127.0.0.1, port: ${port}}`,
      `database: {url: "sqlite:${join(directory, "vigie.db")}"}`,
      `registry: {cargo: {enabled: ${cargo}, storage: "${storage}"}}`,
      "",
    ].join("\n"),
  );
}

describe("vigie registry check", () => {
  it("reports and removes orphan files, keeps young ones, and exits 1 while a disagreement is left", async () => {
    const port = await freePort();
    configure(port, false);
    const disabled = await runCli(["registry", "check", "--config", configFile]);
    expect(disabled.code).toBe(2);
    expect(disabled.stderr).toContain("registry.cargo.enabled");

    configure(port, true);
    // A server run creates the database; its start-up check finds an empty storage.
    vigie = await startVigie({ configFile, port, cwd: directory });
    await stopVigie(vigie);
    vigie = undefined;

    const clean = await runCli(["registry", "check", "--config", configFile]);
    expect([clean.code, clean.stdout]).toEqual([0, "0 versions in the database, 0 crate files\n"]);

    mkdirSync(join(storage, "ghost"), { recursive: true });
    const orphan = join(storage, "ghost", "ghost-1.0.0.crate");
    writeFileSync(orphan, "not really a crate");
    const young = await runCli(["registry", "check", "--config", configFile]);
    expect(young.code).toBe(1);
    expect(young.stdout).toContain(`orphan file: ${orphan}\n`);

    // An hour old: not a publish in progress any more.
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(orphan, hourAgo, hourAgo);
    const dryRun = await runCli(["registry", "check", "--dry-run", "--config", configFile]);
    expect([dryRun.code, dryRun.stdout]).toEqual([
      1,
      `orphan file: ${orphan}\n0 versions in the database, 1 crate files\n`,
    ]);
    const repaired = await runCli(["registry", "check", "--config", configFile]);
    expect([repaired.code, repaired.stdout]).toEqual([
      0,
      `removed orphan file: ${orphan}\n0 versions in the database, 1 crate files\n`,
    ]);
    const after = await runCli(["registry", "check", "--config", configFile]);
    expect([after.code, after.stdout]).toEqual([0, "0 versions in the database, 0 crate files\n"]);
  });
});
