/**
 * `vigie init --dir DIR` against the real command: it writes vigie.yaml and the comments secrets in
 * files of mode 0600 (directory 0700), no secret in vigie.yaml nor on standard output; `vigie config
 * check` accepts the file; a second init exits 2 and changes nothing; and `vigie serve` with it
 * takes the admin token from its file: that token opens the comments admin API, another does not.
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, runCli, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

/** The permission bits of `path`. */
function mode(path: string): number {
  return statSync(path).mode & 0o777;
}

/** The status of `GET /api/admin/website` with `token`. */
async function adminStatus(baseUrl: string, token: string): Promise<number> {
  const response = await fetch(`${baseUrl}/api/admin/website`, { headers: { authorization: `Bearer ${token}` } });
  await response.body?.cancel();
  return response.status;
}

describe("vigie init", () => {
  let vigie: VigieProcess | undefined;
  afterEach(async () => {
    await stopVigie(vigie);
    vigie = undefined;
  });

  it("writes a configuration that config check and serve accept, its secrets only in private files", async () => {
    const directory = join(temporaryDirectory(), "site");
    const init = await runCli(["init", "--dir", directory]);
    expect(init.code, init.stderr).toBe(0);
    const config = join(directory, "vigie.yaml");
    const tokenFile = join(directory, "secrets/admin-token");
    const secretFile = join(directory, "secrets/challenge-secret");
    expect(mode(join(directory, "secrets"))).toBe(0o700);
    expect(mode(tokenFile)).toBe(0o600);
    expect(mode(secretFile)).toBe(0o600);
    const token = readFileSync(tokenFile, "utf8").trim();
    const secret = readFileSync(secretFile, "utf8").trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(secret).not.toBe(token);

    const yaml = readFileSync(config, "utf8");
    for (const value of [token, secret]) {
      expect(yaml).not.toContain(value);
      expect(init.stdout + init.stderr).not.toContain(value);
    }
    expect(yaml).toContain(`admin-token-file: ${tokenFile}\n`);
    expect(yaml).toContain(`secret-file: ${secretFile}\n`);
    // Every module is there, commented out at its defaults.
    for (const line of ["# http:", "  # port: 8080", "# registry:", "# streams:", "comments:", "# healthchecks:"]) {
      expect(yaml).toContain(`${line}\n`);
    }
    expect(init.stdout).toContain(`vigie config check -c ${config}\n`);
    expect(init.stdout).toContain(`vigie serve -c ${config}\n`);

    const check = await runCli(["config", "check", "-c", config]);
    expect(check.code, check.stderr).toBe(0);

    // A second init refuses and leaves every file as it was.
    const again = await runCli(["init", "--dir", directory]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${config} exists: nothing written`);
    expect(readFileSync(config, "utf8")).toBe(yaml);
    expect(readFileSync(tokenFile, "utf8").trim()).toBe(token);
    expect(readFileSync(secretFile, "utf8").trim()).toBe(secret);

    // Served with it (on a free port, its database in the temporary directory): the token of the
    // file opens the admin API, another token does not, and neither appears in the log.
    const port = await freePort();
    const env = { VIGIE_DATABASE_URL: `sqlite:${join(directory, "vigie.db")}` };
    const served = join(directory, "served.yaml");
    writeFileSync(served, yaml.replace("# http:\n", "http:\n").replace("  # port: 8080\n", `  port: ${port}\n`));
    vigie = await startVigie({ configFile: served, port, cwd: directory, env });
    expect(await adminStatus(vigie.baseUrl, token)).toBe(200);
    expect(await adminStatus(vigie.baseUrl, "another-token-that-is-not-the-one")).toBe(401);
    expect(vigie.output()).not.toContain(token);
    expect(vigie.output()).not.toContain(secret);
  });
});
