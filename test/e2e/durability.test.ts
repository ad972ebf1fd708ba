import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

describe("durability (platform.md §3)", () => {
  let vigie: VigieProcess | undefined;
  afterEach(() => {
    vigie?.child.kill("SIGKILL");
    vigie = undefined;
  });

  it("keeps a write the API acknowledged when the process is killed with SIGKILL right after", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, `http:\n  port: ${port}\ndatabase:\n  url: sqlite:./data/vigie.db\n`);
    const env = { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "correct-horse-battery" };
    vigie = await startVigie({ configFile, port, cwd: directory, env });
    const post = (path: string, body: unknown, token?: string) =>
      fetch(`${vigie?.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
    const created = await post("/api/v1/registry/token", {
      name: "t",
      user: "root",
      password: env.VIGIE_ADMIN_PASSWORD,
    });
    const { token } = (await created.json()) as { token: string };
    const user = await post(
      "/api/v1/registry/user",
      { name: "alice", description: "", password: "another-password", role: "tech", active: true },
      token,
    );
    expect(user.status).toBe(201);
    vigie.child.kill("SIGKILL");
    expect(await vigie.exited).toBe("SIGKILL");

    vigie = await startVigie({ configFile, port, cwd: directory, env });
    const listed = await fetch(`${vigie.baseUrl}/api/v1/registry/user`, { headers: { authorization: token } });
    expect(listed.status).toBe(200);
    const { users } = (await listed.json()) as { users: Array<{ name: string }> };
    expect(users.map((entry) => entry.name)).toEqual(["alice", "root"]);
  });
});
