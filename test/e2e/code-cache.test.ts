/**
 * The command runs its bundle with V8's code cache of it (scripts/cli-launcher.mjs,
 * docs/operations.md "Installing", docs/benchmarks.md "V8's code cache"): the build writes dist/bundle/cli.cjs.cache, and the launcher
 * hands it to V8 only when its digest is the bundle's. Node's `--profile-deserialization` (a flag
 * that does not change the flags a cache must match) prints `[Deserializing from N bytes …]` for
 * each cache V8 reads: N is the cache file's size less the 32 bytes of the digest. A command
 * without a fitting cache writes one in the user's cache directory 5 s after its start.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CLI, freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const ROOT = resolve(dirname(CLI), "..");
const BUNDLE = join(ROOT, "dist", "bundle", "cli.cjs");
const VERSION: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;

/**
 * The environment of a command under test: a user's cache directory of its own (never the real
 * one; systemd's `CACHE_DIRECTORY`, which would come first, emptied), then `env`.
 */
function isolated(env: Record<string, string>): Record<string, string> {
  return { CACHE_DIRECTORY: "", XDG_CACHE_HOME: temporaryDirectory(), ...env };
}

/**
 * `node --profile-deserialization [flags] <command> --version`: its output and the sizes of the
 * caches V8 read.
 */
function version(
  command: string,
  flags: readonly string[] = [],
  env: Record<string, string> = {},
): { stdout: string; status: number | null; deserialized: number[] } {
  const run = spawnSync(process.execPath, ["--profile-deserialization", ...flags, command, "--version"], {
    encoding: "utf8",
    env: { ...process.env, ...isolated(env) },
  });
  const deserialized = [...run.stdout.matchAll(/\[Deserializing from (\d+) bytes/g)].map((match) => Number(match[1]));
  const stdout = run.stdout.replace(/^\[.*\]\n/gm, "");
  return { stdout, status: run.status, deserialized };
}

/**
 * A copy of the built server (dist/, proto/) in a directory of its own, its bundle changed by
 * `change`, with the build's cache unless `withCache` is false.
 */
function copyOfCommand(change: (source: string) => string, withCache = true): string {
  const root = temporaryDirectory();
  cpSync(join(ROOT, "dist"), join(root, "dist"), { recursive: true });
  cpSync(join(ROOT, "proto"), join(root, "proto"), { recursive: true });
  if (!withCache) rmSync(join(root, "dist", "bundle", "cli.cjs.cache"));
  writeFileSync(join(root, "dist", "bundle", "cli.cjs"), change(readFileSync(BUNDLE, "utf8")));
  copyFileSync(join(ROOT, "package.json"), join(root, "package.json"));
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  return join(root, "dist", "cli.js");
}

let servers: VigieProcess[] = [];
afterEach(async () => {
  for (const server of servers) await stopVigie(server);
  servers = [];
});

/** Starts `command`'s server in a new directory with `env`; resolves once `/healthz` answers. */
async function serve(command: string, env: Record<string, string>): Promise<VigieProcess> {
  const directory = temporaryDirectory();
  const port = await freePort();
  const configFile = join(directory, "vigie.yaml");
  writeFileSync(
    configFile,
    ["http:", `  port: ${port}`, "database:", `  url: sqlite:${join(directory, "vigie.db")}`, ""].join("\n"),
  );
  const server = await startVigie({ configFile, port, cwd: directory, env: isolated(env), command });
  servers.push(server);
  return server;
}

describe("the code cache of the bundle", () => {
  it("is made by the build and read by the command", () => {
    const run = version(CLI);
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(VERSION);
    expect(run.deserialized).toContain(statSync(`${BUNDLE}.cache`).size - 32);
  });

  it("is not used for a bundle whose bytes differ, even of the same length, and the command still runs", () => {
    // Same length, another byte: V8 alone would take the cache (it checks the source's length,
    // not its bytes), and run code compiled from another source.
    const command = copyOfCommand((source) => {
      const changed = source.replace('"use strict";', "'use strict';");
      expect(changed).not.toBe(source);
      return changed;
    });
    const run = version(command);
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(VERSION);
    expect(run.deserialized).not.toContain(statSync(`${BUNDLE}.cache`).size - 32);
  });

  it("is not used when it is missing or cut short, and the command still runs", () => {
    const command = copyOfCommand((source) => source);
    expect(version(command).deserialized).toContain(statSync(`${BUNDLE}.cache`).size - 32);
    writeFileSync(join(dirname(command), "bundle", "cli.cjs.cache"), readFileSync(`${BUNDLE}.cache`).subarray(0, 20));
    const run = version(command);
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(VERSION);
    expect(run.deserialized).not.toContain(statSync(`${BUNDLE}.cache`).size - 32);
  });

  it("is not used with source maps on, where Node loads the bundle itself", () => {
    const run = version(CLI, ["--enable-source-maps"]);
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(VERSION);
    expect(run.deserialized).not.toContain(statSync(`${BUNDLE}.cache`).size - 32);
  });

  it("is written to the user's cache directory by a server started without one, and read by the next start", async () => {
    const command = copyOfCommand((source) => source, false);
    const cache = temporaryDirectory();
    const off = temporaryDirectory();
    const started = Date.now();
    await Promise.all([
      serve(command, { XDG_CACHE_HOME: cache }),
      serve(command, { XDG_CACHE_HOME: off, VIGIE_CODE_CACHE: "off" }),
    ]);
    const file = join(cache, "vigie", "cli.cjs.cache");
    expect(existsSync(file)).toBe(false);
    await vi.waitFor(() => expect(existsSync(file)).toBe(true), { timeout: 20_000, interval: 100 });
    // Written 5 s after the start, not before.
    expect(Date.now() - started).toBeGreaterThanOrEqual(5_000);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(file)).mode & 0o777).toBe(0o700);
    const run = version(command, [], { XDG_CACHE_HOME: cache });
    expect(run.stdout.trim()).toBe(VERSION);
    expect(run.deserialized).toContain(statSync(file).size - 32);
    // VIGIE_CODE_CACHE=off: the other server, past the same 5 s, wrote nothing.
    expect(existsSync(join(off, "vigie"))).toBe(false);
  }, 40_000);

  it("is written to the user's directory when V8 refuses the build's (other flags), read first by the next start, and removed when the build's flags come back", async () => {
    // A V8 flag in the cache's flags: V8 refuses a cache made without it, as it does one of
    // another Node.js version.
    const flags = { NODE_OPTIONS: "--stack-trace-limit=20" };
    const cache = temporaryDirectory();
    expect(version(CLI, [], { ...flags, XDG_CACHE_HOME: cache }).deserialized).not.toContain(
      statSync(`${BUNDLE}.cache`).size - 32,
    );
    await serve(CLI, { ...flags, XDG_CACHE_HOME: cache });
    const file = join(cache, "vigie", "cli.cjs.cache");
    await vi.waitFor(() => expect(existsSync(file)).toBe(true), { timeout: 20_000, interval: 100 });
    const run = version(CLI, [], { ...flags, XDG_CACHE_HOME: cache });
    expect(run.stdout.trim()).toBe(VERSION);
    expect(run.deserialized).toContain(statSync(file).size - 32);
    // Back to the build's flags: V8 refuses the user's cache, which goes (kept, it would cost
    // every start without a process living 5 s to write another); the next start takes the build's.
    const back = version(CLI, [], { XDG_CACHE_HOME: cache });
    expect(back.stdout.trim()).toBe(VERSION);
    expect(existsSync(file)).toBe(false);
    expect(version(CLI, [], { XDG_CACHE_HOME: cache }).deserialized).toContain(statSync(`${BUNDLE}.cache`).size - 32);
  }, 40_000);
});
