import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";

/** A web server the checks probe. */
let web: ReturnType<typeof createServer>;
let webPort: number;
beforeAll(async () => {
  web = createServer((_request, response) => response.end("ok"));
  await new Promise<void>((resolve) => web.listen(0, "127.0.0.1", resolve));
  webPort = (web.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => web.close(() => resolve())));

function configuration(port: number, checks: string): string {
  return [
    "http:",
    `  port: ${port}`,
    "log-level: warn",
    "database:",
    "  url: sqlite:./state/vigie.db",
    "healthchecks:",
    "  min-interval: 100ms",
    checks,
  ].join("\n");
}

const httpCheck = (name: string, description = "") =>
  `    - {name: ${name}, description: "${description}", target: 127.0.0.1, port: ${webPort}, valid-status: [200], timeout: 500ms, interval: 500ms}`;

describe("healthchecks in the real process", () => {
  let vigie: VigieProcess | undefined;
  afterEach(() => {
    vigie?.child.kill("SIGKILL");
    vigie = undefined;
  });

  it("runs file and API checks, reloads the file on SIGHUP and keeps API checks across a restart", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, configuration(port, `  http-checks:\n${httpCheck("file-a")}\n${httpCheck("file-b")}`));
    vigie = await startVigie({ configFile, port, cwd: directory });
    const base = vigie.baseUrl;
    const get = async (path: string) => {
      const response = await fetch(`${base}${path}`);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> & unknown[] };
    };
    const names = async () => (await get("/healthcheck")).body.map((check) => (check as { name: string }).name);

    expect(await names()).toEqual(["file-a", "file-b"]);
    expect((await get("/healthcheck/file-a")).body).toMatchObject({ source: "configuration", kind: "http" });

    const added = await fetch(`${base}/healthcheck/tcp`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        name: "api-tcp",
        target: "127.0.0.1",
        port: webPort,
        timeout: "500ms",
        interval: "500ms",
      }),
    });
    expect(added.status).toBe(201);
    expect(await added.json()).toEqual({ message: "Healthcheck successfully added" });

    for (const name of ["file-a", "api-tcp"]) {
      const result = await until(async () => {
        const response = await get(`/result/${name}`);
        return response.status === 200 ? response.body : undefined;
      }, `a result of ${name}`);
      expect(result).toMatchObject({ name, success: true, message: "success" });
    }

    // Edit the file: file-a removed, file-b changed, file-c added.
    writeFileSync(
      configFile,
      configuration(port, `  http-checks:\n${httpCheck("file-b", "changed")}\n${httpCheck("file-c")}`),
    );
    vigie.child.kill("SIGHUP");
    await until(async () => ((await names()).includes("file-c") ? true : undefined), "the reload");
    expect(await names()).toEqual(["api-tcp", "file-b", "file-c"]);
    expect((await get("/healthcheck/file-b")).body).toMatchObject({ description: "changed", source: "configuration" });
    expect((await get("/healthcheck/api-tcp")).body).toMatchObject({ source: "api" });

    // An invalid file changes nothing.
    writeFileSync(configFile, configuration(port, "  http-checks:\n    - {name: broken, port: 0}"));
    vigie.child.kill("SIGHUP");
    await until(async () => (vigie?.output().includes("reload refused") ? true : undefined), "the refusal");
    expect(await names()).toEqual(["api-tcp", "file-b", "file-c"]);

    // A restart restores the API check; the file's checks come from the file.
    writeFileSync(
      configFile,
      configuration(
        port,
        `  tcp-checks:\n    - {name: file-d, target: 127.0.0.1, port: ${webPort}, timeout: 1s, interval: 1s}`,
      ),
    );
    vigie.child.kill("SIGTERM");
    expect(await vigie.exited).toBe(0);
    vigie = await startVigie({ configFile, port, cwd: directory });
    expect(await names()).toEqual(["api-tcp", "file-d"]);
    expect((await get("/healthcheck/api-tcp")).body).toMatchObject({ source: "api", interval: "500ms" });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain("healthcheck_scheduled 2");
  });
});
