/**
 * The registry through the real `vigie` process: `vigie user create`, the VIGIE_ADMIN_* bootstrap,
 * tokens and roles over HTTP, on SQLite and (when VIGIE_TEST_POSTGRES_URL is set) PostgreSQL.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, POSTGRES_URL, type TestDatabase } from "../support/databases.js";
import { freePort, runCli, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const USERS = "/api/v1/registry/user";
const TOKENS = "/api/v1/registry/token";

async function request(
  vigie: VigieProcess,
  method: string,
  path: string,
  options: { token?: string; body?: unknown } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${vigie.baseUrl}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function tokenOf(vigie: VigieProcess, user: string, password: string, name = "e2e"): Promise<string> {
  const answer = await request(vigie, "POST", TOKENS, { body: { name, user, password } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.token as string;
}

/** Writes a configuration file with the port and database URL; returns its path. */
function writeConfig(directory: string, port: number, databaseUrl: string): string {
  const file = join(directory, "vigie.yaml");
  writeFileSync(file, `http:\n  port: ${port}\ndatabase:\n  url: ${JSON.stringify(databaseUrl)}\n`);
  return file;
}

describe("registry (real process)", () => {
  const running: VigieProcess[] = [];
  let postgres: TestDatabase | undefined;
  afterEach(async () => {
    for (const vigie of running.splice(0)) vigie.child.kill("SIGKILL");
    await postgres?.drop();
    postgres = undefined;
  });

  async function start(configFile: string, port: number, cwd: string, env: Record<string, string> = {}) {
    const vigie = await startVigie({ configFile, port, cwd, env });
    running.push(vigie);
    return vigie;
  }

  async function stop(vigie: VigieProcess): Promise<void> {
    vigie.child.kill("SIGTERM");
    expect(await vigie.exited).toBe(0);
    running.splice(running.indexOf(vigie), 1);
  }

  it("creates the first admin with vigie user create, then manages users and tokens over HTTP", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = writeConfig(directory, port, "sqlite:./state/vigie.db");

    const created = await runCli(["user", "create", "--name", "root", "--role", "admin", "--config", configFile], {
      cwd: directory,
      input: "root-password\n",
    });
    expect(created, created.stderr).toMatchObject({ code: 0, stdout: "user root created\n" });
    const duplicate = await runCli(["user", "create", "--name", "root", "--role", "tech", "--config", configFile], {
      cwd: directory,
      input: "other-password\n",
    });
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain("user root already exists");
    const short = await runCli(["user", "create", "--name", "x", "--role", "tech", "--config", configFile], {
      cwd: directory,
      input: "short\n",
    });
    expect(short.code).toBe(2);
    expect(short.stderr).toContain("invalid password: must have at least 8 characters");
    const badRole = await runCli(["user", "create", "--name", "x", "--role", "owner", "--config", configFile], {
      cwd: directory,
      input: "long-enough\n",
    });
    expect(badRole.code).toBe(2);
    expect(badRole.stderr).toContain("invalid --role: must be one of admin, tech");
    expect((await runCli(["user", "create", "--role", "tech", "--config", configFile], { cwd: directory })).code).toBe(
      2,
    );
    const passwordFile = join(directory, "ops.password");
    writeFileSync(passwordFile, "ops-password\n");
    const fromFile = await runCli(
      [
        "user",
        "create",
        "--name",
        "ops",
        "--role",
        "tech",
        "--description",
        "on call",
        "--password-file",
        passwordFile,
      ],
      { cwd: directory, env: { VIGIE_CONFIG: configFile } },
    );
    expect(fromFile, fromFile.stderr).toMatchObject({ code: 0, stdout: "user ops created\n" });

    const vigie = await start(configFile, port, directory);
    const admin = await tokenOf(vigie, "root", "root-password");
    expect(admin).toMatch(/^vigie_[A-Za-z0-9_-]{43}$/);
    // The trailing newline of the password file was not part of the password.
    await tokenOf(vigie, "ops", "ops-password");

    expect(
      await request(vigie, "POST", USERS, {
        token: admin,
        body: { name: "tina", description: "tech", password: "tina-password", role: "tech", active: true },
      }),
    ).toEqual({ status: 201, body: { ok: true } });
    const tech = await tokenOf(vigie, "tina", "tina-password");
    expect(await request(vigie, "GET", USERS, { token: tech })).toEqual({ status: 403, body: { error: "forbidden" } });
    const own = await request(vigie, "GET", TOKENS, { token: tech });
    expect(own.status).toBe(200);
    expect((own.body.tokens as Array<{ name: string }>).map((token) => token.name)).toEqual(["e2e"]);
    const users = await request(vigie, "GET", USERS, { token: admin });
    expect((users.body.users as Array<{ name: string; role: string }>).map((user) => [user.name, user.role])).toEqual([
      ["ops", "tech"],
      ["root", "admin"],
      ["tina", "tech"],
    ]);

    expect(await request(vigie, "POST", `${USERS}/tina`, { token: admin, body: { active: false } })).toEqual({
      status: 200,
      body: { ok: true },
    });
    expect(await request(vigie, "GET", TOKENS, { token: tech })).toEqual({
      status: 403,
      body: { error: "user is not active" },
    });
    const metrics = await (await fetch(`${vigie.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^registry_auth_total\{result="inactive"\} 1$/m);
    expect(metrics).toMatch(/^registry_auth_total\{result="forbidden"\} 1$/m);
    await stop(vigie);

    // A second start with VIGIE_ADMIN_NAME/VIGIE_ADMIN_PASSWORD adds that admin to the same database.
    const again = await start(configFile, port, directory, {
      VIGIE_ADMIN_NAME: "boot",
      VIGIE_ADMIN_PASSWORD: "boot-password",
    });
    const boot = await tokenOf(again, "boot", "boot-password");
    const listed = await request(again, "GET", USERS, { token: boot });
    expect(listed.status).toBe(200);
    expect(listed.body.users).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "boot", role: "admin", active: true }),
        expect.objectContaining({ name: "root", role: "admin", active: true }),
      ]),
    );
    // Tokens survive the restart.
    expect((await request(again, "GET", TOKENS, { token: admin })).status).toBe(200);
    await stop(again);
  });

  it("exits 2 when VIGIE_ADMIN_PASSWORD breaks the password rules", async () => {
    const directory = temporaryDirectory();
    const configFile = writeConfig(directory, await freePort(), "sqlite:./vigie.db");
    const result = await runCli(["serve", "--config", configFile], {
      cwd: directory,
      env: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "short" },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("invalid configuration: VIGIE_ADMIN_PASSWORD: must have at least 8 characters");
    expect(result.stderr).not.toContain("short");
  });

  it.skipIf(POSTGRES_URL === undefined)("creates users with vigie user create on PostgreSQL", async () => {
    postgres = await createTestDatabase("postgres");
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = writeConfig(directory, port, postgres.url);
    const created = await runCli(["user", "create", "--name", "root", "--role", "admin", "--config", configFile], {
      cwd: directory,
      input: "root-password\n",
    });
    expect(created, created.stderr).toMatchObject({ code: 0, stdout: "user root created\n" });
    const duplicate = await runCli(["user", "create", "--name", "root", "--role", "admin", "--config", configFile], {
      cwd: directory,
      input: "root-password\n",
    });
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain("user root already exists");

    const vigie = await start(configFile, port, directory);
    const admin = await tokenOf(vigie, "root", "root-password");
    const users = await request(vigie, "GET", USERS, { token: admin });
    expect(users.status).toBe(200);
    expect(users.body.users).toEqual([expect.objectContaining({ name: "root", role: "admin", active: true })]);
    await stop(vigie);
  });
});
