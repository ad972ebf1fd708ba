import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, runCli, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

describe("vigie serve (real process)", () => {
  let vigie: VigieProcess | undefined;
  afterEach(() => {
    vigie?.child.kill("SIGKILL");
    vigie = undefined;
  });

  async function start(extra = ""): Promise<{ process: VigieProcess; directory: string }> {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, `http:\n  port: ${port}\ndatabase:\n  url: sqlite:./state/vigie.db\n${extra}`);
    vigie = await startVigie({ configFile, port, cwd: directory });
    return { process: vigie, directory };
  }

  it("serves health, metrics and JSON 404s, and stops cleanly on SIGTERM", async () => {
    const { process: server, directory } = await start();
    expect(existsSync(join(directory, "state", "vigie.db"))).toBe(true);

    const health = await fetch(`${server.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ message: "ok" });
    expect(await (await fetch(`${server.baseUrl}/health`)).json()).toEqual({ message: "ok" });

    const missing = await fetch(`${server.baseUrl}/no/such/route`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: "route GET /no/such/route not found" });

    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(metrics).toContain("process_resident_memory_bytes");
    expect(metrics).toMatch(/http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    expect(metrics).toContain('http_requests_total{method="GET",route="unmatched",status="404"} 1');

    // Logs are JSON lines carrying request ids.
    const line = server
      .output()
      .split("\n")
      .find((text) => text.includes("Server listening"));
    expect(line && JSON.parse(line)).toMatchObject({ level: 30, msg: expect.stringContaining("127.0.0.1") });
    // Where everything is, what is off, and the absolute paths Vigie writes.
    const messages = server
      .output()
      .split("\n")
      .filter((text) => text.startsWith("{"))
      .map((text) => (JSON.parse(text) as { msg: string }).msg);
    expect(messages).toContain(`stream API: ${server.baseUrl}/api/v1/stream`);
    expect(messages).toContain("status page is off (healthchecks.status-page.enabled: true)");
    expect(messages).toContain(`database: ${join(directory, "state", "vigie.db")}`);
    expect(messages).toContain(`data directory: ${join(directory, "state")}`);

    const started = Date.now();
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(server.output()).toContain('"msg":"stopped"');
  });

  it("stops on SIGINT with exit code 0, and survives SIGHUP", async () => {
    const { process: server } = await start();
    server.child.kill("SIGHUP");
    await new Promise((wait) => setTimeout(wait, 300));
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    expect(server.output()).toContain('"msg":"reloaded"');
    server.child.kill("SIGINT");
    expect(await server.exited).toBe(0);
  });

  it("exits 2 with a message naming key, rule and value on an invalid configuration", async () => {
    const directory = temporaryDirectory();
    const configFile = join(directory, "bad.yaml");
    writeFileSync(configFile, "http:\n  port: abc\n");
    const result = await runCli(["serve", "--config", configFile], { cwd: directory });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'invalid configuration: http.port: must be an integer between 1 and 65535 (got "abc")',
    );
  });

  it("exits 1 when the port is taken", async () => {
    const { process: first } = await start();
    const directory = temporaryDirectory();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, `http:\n  port: ${new URL(first.baseUrl).port}\n`);
    const result = await runCli(["serve", "--config", configFile], { cwd: directory });
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toContain("EADDRINUSE");
  });
});

describe("vigie config check", () => {
  it("exits 0 for a valid file and 2 for an invalid one", async () => {
    const directory = temporaryDirectory();
    const good = join(directory, "good.yaml");
    writeFileSync(good, "http:\n  port: 9000\nlog-level: warn\n");
    const ok = await runCli(["config", "check", "--config", good]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe(`configuration ${good} is valid\n`);

    const bad = join(directory, "bad.yaml");
    writeFileSync(bad, "http:\n  prot: 9000\n");
    const refused = await runCli(["config", "check", "--config", bad]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/invalid configuration: http\.prot: unknown key/);
  });

  it("reads VIGIE_CONFIG and lets VIGIE_DATABASE_URL override the file", async () => {
    const directory = temporaryDirectory();
    const file = join(directory, "vigie.yaml");
    writeFileSync(file, "database:\n  url: sqlite:./a.db\n");
    const viaEnvironment = await runCli(["config", "check"], { env: { VIGIE_CONFIG: file } });
    expect(viaEnvironment.code).toBe(0);
    const overridden = await runCli(["config", "check"], {
      env: { VIGIE_CONFIG: file, VIGIE_DATABASE_URL: "mysql://x" },
    });
    expect(overridden.code).toBe(2);
    expect(overridden.stderr).toContain("invalid configuration: database.url: must be sqlite:<file>");
    expect(overridden.stderr).not.toContain("mysql://x");
  });
});

describe("vigie CLI usage", () => {
  it("prints help with exit 0", async () => {
    const result = await runCli(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: vigie");
    expect(result.stdout).toContain("serve");
    expect(result.stdout).toContain("config");
  });

  it("exits 2 on an unknown command or option", async () => {
    expect((await runCli(["frobnicate"])).code).toBe(2);
    expect((await runCli(["serve", "--no-such-option"])).code).toBe(2);
    const bare = await runCli([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("Usage: vigie");
  });
});
