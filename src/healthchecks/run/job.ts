/**
 * `vigie run --key KEY -- COMMAND ARGS…` (docs/healthchecks.md#vigie-run): runs a job under a
 * heartbeat check. It pings `start` as the command starts, runs the command (no shell) with its output passed through,
 * then pings the command's exit status with the last 10 KiB of its output, and exits with the
 * command's status. A ping that cannot be delivered is reported on standard error and never stops
 * or changes the job: the job matters more than its monitoring.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { constants } from "node:os";
import { errorMessage } from "../../platform/errors.js";
import { loadUndici } from "../../platform/undici.js";
import { OutputTail } from "./output-tail.js";

/** A ping key as the server generates and accepts them: 22 or more of `[A-Za-z0-9_-]`. */
export const PING_KEY = /^[A-Za-z0-9_-]{22,}$/;

/** Milliseconds one ping may take (as `curl -m 10`). */
const PING_TIMEOUT_MS = 10_000;
/** Attempts of one ping (as `curl --retry 3`: the first and three more) and the pause between them. */
const PING_ATTEMPTS = 4;
const PING_RETRY_PAUSE_MS = 1_000;
/** Signals passed on to the job, so that stopping the wrapper stops the job. */
const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
/** Exit statuses of a command that could not be started, as shells give them. */
const NOT_FOUND_STATUS = 127;
const NOT_EXECUTABLE_STATUS = 126;

/** What {@link runJob} needs. */
export interface JobOptions {
  /** The Vigie base URL, e.g. `https://vigie.example.com` (a path prefix is kept). */
  readonly url: string;
  /** The heartbeat check's ping key. */
  readonly key: string;
  /** The command: an executable name (looked up in PATH) or path, run without a shell. */
  readonly command: string;
  readonly args: readonly string[];
  /** Where diagnostics go; default standard error. */
  readonly warn?: (message: string) => void;
  /** Milliseconds between ping attempts; default 1 s (tests shorten it). */
  readonly retryPauseMs?: number;
}

/** The ping URL of `key` for `action` (`start`, an exit status), with the run id. */
export function pingUrl(base: string, key: string, action: string, rid: string): string {
  const url = new URL(base);
  const prefix = url.pathname.endsWith("/") ? url.pathname : `${url.pathname}/`;
  url.pathname = `${prefix}ping/${encodeURIComponent(key)}/${action}`;
  url.search = `?rid=${rid}`;
  return url.toString();
}

/** Whether a ping answer is worth another attempt: the server is busy or failing. */
function retryable(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * Sends one ping (POST, `text/plain` body), retried on network errors, 429 and 5xx; a failure is
 * reported through `warn`, never thrown.
 */
async function ping(options: JobOptions, action: string, rid: string, body: Buffer | string): Promise<void> {
  const warn = options.warn ?? ((message: string) => process.stderr.write(`vigie run: ${message}\n`));
  const url = pingUrl(options.url, options.key, action, rid);
  let reason = "";
  for (let attempt = 1; attempt <= PING_ATTEMPTS; attempt++) {
    try {
      const { request } = await loadUndici();
      const answer = await request(url, {
        method: "POST",
        body,
        headers: { "content-type": "text/plain; charset=utf-8" },
        headersTimeout: PING_TIMEOUT_MS,
        bodyTimeout: PING_TIMEOUT_MS,
      });
      const text = (await answer.body.text()).trim().slice(0, 200);
      if (answer.statusCode < 300) return;
      reason = `answered ${answer.statusCode} ${text}`;
      if (!retryable(answer.statusCode)) break;
    } catch (error) {
      reason = errorMessage(error);
    }
    if (attempt < PING_ATTEMPTS)
      await new Promise((done) => setTimeout(done, options.retryPauseMs ?? PING_RETRY_PAUSE_MS));
  }
  // The URL without the key: the key is the check's capability, kept out of cron mail.
  warn(`the ${action} ping could not be delivered to ${new URL(options.url).origin}: ${reason}`);
}

/** How a finished command ended: its exit status (128 + the signal's number when a signal killed it). */
function exitStatusOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const number = signal === null ? undefined : constants.signals[signal];
  return 128 + (number ?? 0);
}

/**
 * Runs the command with standard input inherited and its standard output and error passed through
 * (and kept, the last 10 KiB of both interleaved).
 *
 * @returns the exit status, and the output tail (or why the command could not start)
 */
function execute(options: JobOptions): Promise<{ status: number; output: Buffer | string }> {
  return new Promise((resolve) => {
    const tail = new OutputTail();
    const child = spawn(options.command, [...options.args], { stdio: ["inherit", "pipe", "pipe"] });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    for (const signal of FORWARDED_SIGNALS) process.on(signal, forward);
    const settle = (result: { status: number; output: Buffer | string }) => {
      for (const signal of FORWARDED_SIGNALS) process.off(signal, forward);
      resolve(result);
    };
    child.stdout.on("data", (chunk: Buffer) => {
      tail.write(chunk);
      process.stdout.write(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      tail.write(chunk);
      process.stderr.write(chunk);
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      const status = error.code === "ENOENT" ? NOT_FOUND_STATUS : NOT_EXECUTABLE_STATUS;
      const message = `cannot run ${options.command}: ${error.message}`;
      process.stderr.write(`vigie run: ${message}\n`);
      settle({ status, output: message });
    });
    // `close`, not `exit`: the output is complete only once both pipes are closed.
    child.on("close", (code, signal) => settle({ status: exitStatusOf(code, signal), output: tail.bytes() }));
  });
}

/**
 * Runs the job: pings `start`, runs the command, pings its exit status with its output's tail.
 * Both pings carry the same `rid`, so overlapping runs of one job pair correctly.
 *
 * @returns the command's exit status (127 when it does not exist, 126 when it cannot be run)
 */
export async function runJob(options: JobOptions): Promise<number> {
  const rid = randomUUID();
  // The job does not wait for the start ping (a server that is down must not delay it); the end
  // ping waits for it, so the two arrive in order.
  const started = ping(options, "start", rid, "");
  const { status, output } = await execute(options);
  await started;
  await ping(options, String(Math.min(status, 255)), rid, output);
  return status;
}
