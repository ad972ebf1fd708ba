/**
 * Runs the real `vigie` process (the built `dist/cli.js`) for end-to-end tests.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { resolve } from "node:path";
import { temporaryDirectory as makeTemporaryDirectory } from "./temporary.js";

/** The built CLI; `npm test` builds it before running the tests. */
export const CLI = resolve(import.meta.dirname, "../../dist/cli.js");

/** The ports {@link freePort} returned in this test file's process. */
const handedOut = new Set<number>();

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  // The kernel may hand out a closed ephemeral port again, so two calls in a row (an HTTP and a
  // Riemann port) could get the same one: a port is returned at most once per test file. Another
  // process may still take a port before the server listens; that race remains.
  for (;;) {
    const port = await ephemeralPort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

function ephemeralPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

/** A new temporary directory, removed after the test file. */
export function temporaryDirectory(): string {
  return makeTemporaryDirectory("vigie-e2e-");
}

/** A running `vigie` process with its collected output. */
export interface VigieProcess {
  readonly child: ChildProcess;
  readonly baseUrl: string;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  readonly exited: Promise<number | string>;
}

/** Runs `vigie <args>` to completion and returns its exit code and output. */
export async function runCli(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; input?: string } = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  assertBuilt();
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? temporaryDirectory(),
    env: { ...process.env, ...options.env },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  child.stdin.end(options.input ?? "");
  const code = await new Promise<number | string>((done) =>
    child.on("exit", (exit, signal) => done(exit ?? signal ?? -1)),
  );
  return { code, stdout, stderr };
}

function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first (npm test does)`);
}

/**
 * Starts `vigie serve --config <file>` in `cwd` and waits until `/healthz` answers.
 * @throws Error when the process exits or does not answer within 20 s
 */
export async function startVigie(options: {
  configFile: string;
  port: number;
  cwd: string;
  env?: Record<string, string>;
  /** The command's file (default: the built dist/cli.js). */
  command?: string;
}): Promise<VigieProcess> {
  assertBuilt();
  const child = spawn(process.execPath, [options.command ?? CLI, "serve", "--config", options.configFile], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | string>((done) => child.on("exit", (code, signal) => done(code ?? signal ?? -1)));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const baseUrl = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (gone) throw new Error(`vigie exited before answering:\n${output}`);
    try {
      const response = await fetch(`${baseUrl}/healthz`);
      if (response.ok) return { child, baseUrl, output: () => output, exited };
    } catch {
      // not listening yet
    }
    await new Promise((wait) => setTimeout(wait, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`vigie did not answer /healthz within 20 s:\n${output}`);
}

/**
 * The set-up of an end-to-end test under `security.require-token`: creates the `tech` user `ops`
 * with the CLI, starts `vigie serve` on `configFile` and issues a token for `ops`.
 * @returns the running process and the token
 * @throws Error when the user cannot be created or no token is issued
 */
export async function startVigieWithToken(options: {
  configFile: string;
  port: number;
  cwd: string;
}): Promise<{ vigie: VigieProcess; token: string }> {
  const created = await runCli(["user", "create", "--name", "ops", "--role", "tech", "--config", options.configFile], {
    cwd: options.cwd,
    input: "ops-password\n",
  });
  if (created.code !== 0) throw new Error(`vigie user create failed (${created.code}): ${created.stderr}`);
  const vigie = await startVigie(options);
  const response = await fetch(`${vigie.baseUrl}/api/v1/registry/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "e2e", user: "ops", password: "ops-password" }),
  });
  const body = (await response.json()) as { token?: unknown };
  if (response.status !== 201 || typeof body.token !== "string") {
    await stopVigie(vigie);
    throw new Error(`no token issued (${response.status}): ${JSON.stringify(body)}`);
  }
  return { vigie, token: body.token };
}

/**
 * Creates (or replaces) a stream through `POST /api/v1/stream/<name>` of a running process.
 * @param edn the stream configuration, EDN text (base64-encoded here)
 * @returns the answer's status (201 when the stream was added)
 */
export async function addStream(baseUrl: string, name: string, edn: string): Promise<number> {
  const response = await fetch(`${baseUrl}/api/v1/stream/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ config: Buffer.from(edn, "utf8").toString("base64") }),
  });
  await response.body?.cancel();
  return response.status;
}

/**
 * A running process's longest event-loop stall since the previous scrape of its `/metrics`, in ms:
 * prom-client's `nodejs_eventloop_lag_max_seconds`, the longest time between two turns of Node's
 * event-loop delay monitor (`perf_hooks.monitorEventLoopDelay`, which turns every 10 ms, so an idle
 * loop reads about 10 ms), reset at each scrape. Measured by the server itself: unlike a client's
 * round trips, it carries none of the test process's own pauses.
 */
export async function longestStallMs(baseUrl: string): Promise<number> {
  const name = "nodejs_eventloop_lag_max_seconds";
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = text.split("\n").find((item) => item.startsWith(`${name} `));
  if (line === undefined) throw new Error(`${name} is not in /metrics`);
  return Number(line.slice(name.length + 1)) * 1000;
}

/** Sends SIGTERM to a process still running and waits for its exit (nothing when there is none). */
export async function stopVigie(vigie: VigieProcess | undefined): Promise<void> {
  if (vigie === undefined) return;
  if (vigie.child.exitCode === null && vigie.child.signalCode === null) vigie.child.kill("SIGTERM");
  await vigie.exited;
}
