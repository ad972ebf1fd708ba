/**
 * The npm package as users install it (docs/operations.md#installing): `npm pack` of the built
 * clone holds dist/ (the browser assets the server serves included), proto/, docs/, deploy/ and
 * examples/, and no tests, sources or source maps, in under 2 MiB; `npm install -g` of the tarball
 * into a temporary prefix (dependencies from the npm cache or the registry, better-sqlite3 built as
 * by `npm ci`, nothing of Vigie built) gives a `vigie` that works from an empty directory:
 * `--version`, `--help` with every command, and `serve` answering /healthz, naming the absolute
 * path of its database, and stopping on SIGTERM.
 *
 * `npm pack` runs with --ignore-scripts so that `prepare` does not rebuild dist/ under the other
 * tests. The install takes minutes (it compiles better-sqlite3 when no prebuilt binary can be
 * fetched): the test has its own time limit. An install that fails for a reason of the machine
 * (no network and an empty cache, no compiler) skips the rest with the reason printed.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, freePort, temporaryDirectory } from "../support/process.js";
import { until } from "../support/until.js";

const ROOT = resolve(import.meta.dirname, "../..");
const VERSION: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;

/** The largest tarball accepted. */
const MAX_TARBALL_BYTES = 2 * 1024 * 1024;
/** How long `npm install -g` may take (compiling better-sqlite3 takes about three minutes here). */
const INSTALL_TIMEOUT_MS = 8 * 60_000;

/** Failures of `npm install` that come from the machine rather than from the package. */
const ENVIRONMENT_FAILURE =
  /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|gyp ERR!|timed out/;

/** An environment for the commands: this Node.js first on the PATH. */
const ENV = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}` };

interface Run {
  readonly code: number | string;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `command` to completion, killed after `timeoutMs` (its code is then `timed out`). */
function run(command: string, args: readonly string[], cwd: string, timeoutMs: number): Promise<Run> {
  return new Promise((done, reject) => {
    const child = spawn(command, args, { cwd, env: ENV, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      done({ code: timedOut ? "timed out" : (code ?? signal ?? -1), stdout, stderr });
    });
  });
}

/** The subcommands listed under `Commands:` by `--help`. */
function commandsOf(help: string): string[] {
  const section = help.split(/^Commands:$/m)[1] ?? "";
  return [...section.matchAll(/^ {2}(\w[\w-]*)/gm)].map((match) => match[1] ?? "").sort();
}

/** One entry of `npm pack --json`. */
interface PackEntry {
  readonly filename: string;
  readonly size: number;
  readonly files: ReadonlyArray<{ readonly path: string; readonly mode: number }>;
}

describe("the npm package", () => {
  it(
    "packs the built server without tests, installs from the tarball and runs from an empty directory",
    async (context) => {
      statSync(CLI); // npm test builds dist/ first
      const work = temporaryDirectory();
      const started = Date.now();

      const pack = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", work], ROOT, 120_000);
      expect(pack.code, pack.stderr).toBe(0);
      const [entry]: PackEntry[] = JSON.parse(pack.stdout);
      if (entry === undefined) throw new Error(`npm pack --json gave no entry: ${pack.stdout}`);
      const files = new Map(entry.files.map((file) => [file.path, file.mode]));
      const paths = [...files.keys()];
      expect((files.get("dist/cli.js") ?? 0) & 0o111).toBe(0o111);
      for (const expected of [
        "package.json",
        "README.md",
        "LICENSE",
        "dist/bundle/cli.cjs",
        "dist/comments/browser/widget.js",
        "dist/comments/browser/admin.js",
        "dist/comments/browser/admin.css",
        "dist/healthchecks/browser/status.js",
        "dist/registry/browser/pages.js",
        "proto/riemann.proto",
        "docs/configuration.md",
        "deploy/systemd/vigie.service",
        "examples/streams/vigie.yaml",
      ]) {
        expect(paths).toContain(expected);
      }
      expect(paths.filter((path) => /^(test|bench|src|scripts|node_modules)\//.test(path))).toEqual([]);
      expect(paths.filter((path) => /\.(ts|map)$/.test(path) || /\.test\./.test(path))).toEqual([]);
      // V8's code cache of the bundle would double the tarball (docs/operations.md): the installed
      // command compiles the bundle without it.
      expect(paths.filter((path) => path.endsWith(".cache"))).toEqual([]);
      const tarball = join(work, entry.filename);
      const size = statSync(tarball).size;
      console.info(`npm pack: ${paths.length} files, ${(size / 1024).toFixed(0)} KiB`);
      expect(size).toBeLessThan(MAX_TARBALL_BYTES);

      const prefix = join(work, "prefix");
      const installStarted = Date.now();
      const install = await run(
        "npm",
        ["install", "-g", "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund", tarball],
        work,
        INSTALL_TIMEOUT_MS,
      );
      const installSeconds = ((Date.now() - installStarted) / 1000).toFixed(0);
      if (install.code !== 0) {
        const output = `${install.stdout}\n${install.stderr}`;
        if (!ENVIRONMENT_FAILURE.test(output)) expect.fail(`npm install -g of the tarball failed:\n${output}`);
        console.warn(
          `skipping the installed package: npm install -g failed here (${install.code}):\n${output.slice(-2000)}`,
        );
        context.skip();
      }
      console.info(`npm install -g of the tarball: ${installSeconds} s`);
      // A global install reads neither the lockfile nor `overrides`: the dependency ranges alone
      // must pick versions that support every Node.js version the package accepts.
      expect(`${install.stdout}\n${install.stderr}`).not.toMatch(/EBADENGINE/);
      const vigie = join(prefix, "bin/vigie");
      const empty = join(work, "empty");
      mkdirSync(empty);

      const version = await run(vigie, ["--version"], empty, 30_000);
      expect(version.code, version.stderr).toBe(0);
      expect(version.stdout.trim()).toBe(VERSION);
      const help = await run(vigie, ["--help"], empty, 30_000);
      const cloneHelp = await run(process.execPath, [CLI, "--help"], empty, 30_000);
      expect(help.code, help.stderr).toBe(0);
      const commands = commandsOf(help.stdout);
      expect(commands).toEqual(commandsOf(cloneHelp.stdout));
      for (const command of ["serve", "init", "config", "backup", "user", "registry", "stream"]) {
        expect(commands).toContain(command);
      }

      const port = await freePort();
      const config = join(work, "vigie.yaml");
      writeFileSync(config, `http:\n  port: ${port}\n`);
      const serving = spawn(vigie, ["serve", "--config", config], {
        cwd: empty,
        env: ENV,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let log = "";
      serving.stdout.on("data", (chunk) => {
        log += chunk;
      });
      serving.stderr.on("data", (chunk) => {
        log += chunk;
      });
      const exited = new Promise<number | string>((done) =>
        serving.on("exit", (code, signal) => done(code ?? signal ?? -1)),
      );
      try {
        await until(
          () =>
            fetch(`http://127.0.0.1:${port}/healthz`).then(
              (answer) => (answer.status === 200 ? true : undefined),
              () => undefined,
            ),
          "the installed vigie to answer /healthz",
          20_000,
        );
        expect(log).toContain(`"msg":"database: ${join(empty, "data/vigie.db")}"`);
      } finally {
        serving.kill("SIGTERM");
      }
      expect(await exited).toBe(0);
      expect(log).toContain('"msg":"stopped"');
      console.info(`the package test took ${((Date.now() - started) / 1000).toFixed(0)} s`);
    },
    INSTALL_TIMEOUT_MS + 120_000,
  );
});
