/**
 * `npm start` in a clone: a signal to the process that was started (npm) stops the server, leaving
 * nothing on the port. (The script execs node, so npm's own signal forwarding reaches the server.)
 * Run with --ignore-scripts so that `prestart` does not rebuild dist/ under the other tests.
 */
import { spawn } from "node:child_process";
import { statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { freePort, temporaryDirectory } from "../support/process.js";
import { until } from "../support/until.js";

const ROOT = resolve(import.meta.dirname, "../..");

describe("npm start", () => {
  it("finds dist/cli.js executable after the build (npx vigie in a clone)", () => {
    expect(statSync(join(ROOT, "dist/cli.js")).mode & 0o111).toBe(0o111);
  });

  it("stops the server when the started npm process gets SIGTERM", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const config = join(directory, "vigie.yaml");
    writeFileSync(config, `http:\n  port: ${port}\ndatabase:\n  url: "sqlite::memory:"\n`);
    const npm = spawn("npm", ["start", "--ignore-scripts", "--prefix", ROOT, "--", "--config", config], {
      cwd: directory,
      stdio: "ignore",
    });
    const exited = new Promise<number | string>((done) => npm.on("exit", (code, signal) => done(code ?? signal ?? -1)));
    const healthz = () => fetch(`http://127.0.0.1:${port}/healthz`).then((answer) => answer.status);
    await until(
      () =>
        healthz()
          .then((status) => (status === 200 ? true : undefined))
          .catch(() => undefined),
      "npm start to serve",
      20_000,
    );
    npm.kill("SIGTERM");
    await exited;
    await until(
      () =>
        healthz().then(
          () => undefined,
          () => true,
        ),
      "the port to be free after npm stopped",
      10_000,
    );
    expect(await healthz().catch((error: Error) => error.name)).toBe("TypeError");
  });
});
