/**
 * The real process keeps its data to its own user: on a fresh start `./data` is 0700 and the
 * database (with its -wal and -shm files) and the comments admin token 0600, under the usual
 * umask 022; an existing `./data` open to others is reported once at start-up, not refused.
 */
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort, runCli, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const modeOf = (path: string): string => `0${(statSync(path).mode & 0o777).toString(8)}`;

describe("file modes of the data directory (real process)", () => {
  let vigie: VigieProcess | undefined;
  let umask: number;
  beforeAll(() => {
    // Children inherit it: the umask that leaves new files readable by everyone.
    umask = process.umask(0o022);
  });
  afterAll(() => {
    process.umask(umask);
  });
  afterEach(() => {
    vigie?.child.kill("SIGKILL");
    vigie = undefined;
  });

  /** Starts `vigie serve` with the default database URL (sqlite:./data/vigie.db) in `directory`. */
  async function start(directory: string): Promise<VigieProcess> {
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, `http:\n  port: ${port}\n`);
    vigie = await startVigie({ configFile, port, cwd: directory });
    return vigie;
  }

  it("creates ./data 0700 and the database, its -wal and -shm and the admin token file 0600", async () => {
    const directory = temporaryDirectory();
    const server = await start(directory);
    const data = join(directory, "data");
    expect(modeOf(data)).toBe("0700");
    for (const name of ["vigie.db", "vigie.db-wal", "vigie.db-shm", "comments-admin-token"]) {
      expect(existsSync(join(data, name)), name).toBe(true);
      expect(modeOf(join(data, name)), name).toBe("0600");
    }
    expect(server.output()).not.toContain("other local users may read it");
  });

  it("warns once at start-up about an existing ./data of mode 0755, naming path and mode, and runs", async () => {
    const directory = temporaryDirectory();
    const data = join(directory, "data");
    mkdirSync(data);
    chmodSync(data, 0o755);
    const server = await start(directory);
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    const warnings = server
      .output()
      .split("\n")
      .filter((line) => line.includes("other local users may read it"));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] as string)).toMatchObject({
      level: 40,
      path: data,
      mode: "0755",
      msg: expect.stringContaining(`data directory ${data} has mode 0755`),
    });
    // Left as the operator set it.
    expect(modeOf(data)).toBe("0755");
  });

  it("warns on standard error when a CLI command opens a database open to others", async () => {
    const directory = temporaryDirectory();
    const data = join(directory, "data");
    mkdirSync(data);
    chmodSync(data, 0o750);
    const created = await runCli(["user", "create", "--name", "ops", "--role", "admin"], {
      cwd: directory,
      input: "a-long-enough-password\n",
    });
    expect(created.code).toBe(0);
    expect(created.stderr).toContain(`vigie: warning: data directory ${data} has mode 0750`);
    expect(modeOf(join(data, "vigie.db"))).toBe("0600");
  });
});
