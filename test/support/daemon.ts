/**
 * Real third-party servers for end-to-end tests (Prometheus, Alertmanager from Debian's packages):
 * finding the binary, starting it, waiting until it is ready, stopping it.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { freePort } from "./process.js";
import { until } from "./until.js";

/**
 * The path of a command (`command -v`), or "" after printing why the tests that need it are
 * skipped, with the Debian package that provides it.
 */
export function commandPath(command: string, debianPackage: string, tests: string): string {
  const path = spawnSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).stdout.trim();
  if (path === "") console.warn(`skipping ${tests}: no ${command} binary (apt-get install -y ${debianPackage})`);
  return path;
}

/** A running third-party server. */
export interface Daemon {
  readonly child: ChildProcess;
  /** What it wrote to stdout and stderr so far. */
  output(): string;
  /** Sends SIGTERM (when still running) and waits for the exit. */
  stop(): Promise<void>;
}

/**
 * Starts `command args` and waits until `readyUrl` answers 2xx, or until `127.0.0.1:readyPort`
 * takes a TCP connection (a server without HTTP, such as carbon).
 * @param what its name in error messages ("Prometheus")
 * @throws Error with the end of its output when it is not ready within `timeoutMs` (it is stopped)
 */
export async function startDaemon(options: {
  readonly command: string;
  readonly args: readonly string[];
  readonly readyUrl?: string;
  readonly readyPort?: number;
  readonly what: string;
  readonly timeoutMs?: number;
}): Promise<Daemon> {
  const child = spawn(options.command, options.args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk;
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const daemon: Daemon = {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
  try {
    await until(
      async () => {
        if (options.readyPort !== undefined) return (await accepts(options.readyPort)) ? true : undefined;
        try {
          return (await fetch(options.readyUrl ?? "")).ok ? true : undefined;
        } catch {
          return undefined;
        }
      },
      `${options.what} to be ready`,
      options.timeoutMs ?? 30_000,
    );
  } catch (error) {
    await daemon.stop();
    throw new Error(`${error}; ${options.what} said:\n${output.slice(-3000)}`);
  }
  return daemon;
}

/** Whether 127.0.0.1:`port` takes a TCP connection (closed at once). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Starts Debian's Alertmanager (`binary`) on a free loopback port with storage under `directory`,
 * one receiver that notifies nobody (tests read alerts through its API), and no cluster.
 * @returns the daemon and its base URL
 */
export async function startAlertmanager(binary: string, directory: string): Promise<{ daemon: Daemon; url: string }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = join(directory, "alertmanager.yml");
  writeFileSync(config, "route:\n  receiver: nobody\nreceivers:\n  - name: nobody\n");
  const storage = join(directory, "alertmanager-data");
  mkdirSync(storage, { recursive: true });
  const daemon = await startDaemon({
    command: binary,
    args: [
      `--config.file=${config}`,
      `--storage.path=${storage}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // Empty: no cluster, so nothing listens beyond the loopback port.
      "--cluster.listen-address=",
    ],
    readyUrl: `${url}/-/ready`,
    what: "Alertmanager",
  });
  return { daemon, url };
}
