// What the benchmarks share: the built server started as a real process on a free loopback port,
// the CPU time of a process, number formatting. (bench/run.mjs runs only the top-level files.)
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root; the benchmarks use its built `dist/`. */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort() {
  return new Promise((done, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

/**
 * Starts `node dist/cli.js serve` with SQLite in a new temporary directory and waits for /healthz.
 * @param options.yaml extra configuration lines (YAML, top level, other than `http`)
 * @param options.http extra keys of the `http` section, e.g. `{ "body-limit": "8MiB" }`
 * @param options.env extra environment variables
 * @param options.nodeArgs arguments of node before the script, e.g. `["--cpu-prof"]`
 * @param options.pollMs milliseconds between two tries of /healthz while it starts
 * @param options.build the checkout whose `dist/` runs; default this one
 * @returns `{ base, child, directory, readyMs, stop() }`: `readyMs` the milliseconds from the spawn to
 *   the first 2xx of /healthz; `stop()` sends SIGTERM and waits for the exit
 * @throws Error when the server exits or does not answer within 20 s
 */
export async function startVigie({ yaml = "", http = {}, env = {}, nodeArgs = [], pollMs = 100, build = root } = {}) {
  const directory = mkdtempSync(join(tmpdir(), "vigie-bench-"));
  const port = await freePort();
  const config = join(directory, "vigie.yaml");
  writeFileSync(
    config,
    [
      "http:",
      `  port: ${port}`,
      ...Object.entries(http).map(([key, value]) => `  ${key}: ${JSON.stringify(value)}`),
      "log-level: warn",
      `database:\n  url: sqlite:${join(directory, "vigie.db")}`,
      yaml,
    ].join("\n"),
  );
  const spawned = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, join(build, "dist/cli.js"), "serve", "--config", config], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, ...env },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/healthz`, child, pollMs);
  const readyMs = performance.now() - spawned;
  const exited = new Promise((done) => child.once("exit", done));
  return {
    base,
    child,
    directory,
    readyMs,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * Waits until `url` answers 2xx, trying every `pollMs` milliseconds.
 * @throws Error when `child` exits first or nothing answers within 20 s
 */
export async function waitFor(url, child, pollMs = 100) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${url}: the server exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${url} did not answer within 20 s`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((wait) => setTimeout(wait, pollMs));
  }
}

/** Clock ticks per second of /proc/<pid>/stat times. */
const TICKS = (() => {
  const ticks = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout?.trim());
  return Number.isFinite(ticks) && ticks > 0 ? ticks : 100;
})();

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may contain spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/** A number rounded, with thousands separators. */
export function fmt(value) {
  return Math.round(value).toLocaleString("en-US");
}

/** The peak resident set size of a process so far (VmHWM of /proc/<pid>/status), in bytes. */
export function peakRssBytes(pid) {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match === null ? Number.NaN : Number(match[1]) * 1024;
}
