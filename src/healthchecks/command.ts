/**
 * The command executor (docs/healthchecks.md): an executable run without a shell, successful when it
 * exits 0 within the timeout; a command still running at the timeout is killed with SIGKILL, with
 * every process it started.
 */
import { spawn } from "node:child_process";
import { startDeadline } from "./deadline.js";
import type { CommandDefinition } from "./definition.js";
import { failure, type Outcome, SUCCESS } from "./outcome.js";

/** Bytes of standard error quoted in a failure message (docs/healthchecks.md). */
export const STDERR_BYTES = 1000;

// Once the command has exited, how long its standard error may still take to close (a background
// grandchild can hold it open): the verdict does not wait longer.
const STDERR_GRACE_MS = 100;

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    // The child leads its own process group (detached): a negative pid signals the whole group, so
    // `sh -c "sleep 100"` leaves no orphan behind.
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * Executes one command check. Never throws. Standard output is discarded; standard error is kept up
 * to 1000 bytes (the rest is read and dropped, so a chatty command never blocks on a full pipe).
 *
 * @param stop aborted when the module stops; the command is killed
 * @returns success on exit code 0; otherwise `command exited with code 2: <first 1000 bytes of
 *   stderr, trailing white space trimmed>` (without `: ...` when stderr is empty), `command killed
 *   by signal SIGTERM: ...`, `command timed out after 5s`, or `command failed to start: spawn x
 *   ENOENT`
 */
export function runCommand(definition: CommandDefinition, stop?: AbortSignal): Promise<Outcome> {
  const deadline = startDeadline(definition.timeout.milliseconds, stop);
  return new Promise<Outcome>((resolve) => {
    const child = spawn(definition.command, [...definition.arguments], {
      shell: false,
      detached: true,
      stdio: ["ignore", "ignore", "pipe"],
    });
    const stderr: Buffer[] = [];
    let stderrLength = 0;
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderrLength >= STDERR_BYTES) return;
      stderr.push(chunk);
      stderrLength += chunk.length;
    });
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      deadline.clear();
      clearTimeout(graceTimer);
      child.stderr.destroy();
      resolve(outcome);
    };
    const stderrText = () => {
      const text = Buffer.concat(stderr, stderrLength).subarray(0, STDERR_BYTES).toString("utf8").trimEnd();
      return text === "" ? "" : `: ${text}`;
    };
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const verdict = () => {
      if (exit === undefined) return;
      if (exit.code === 0) settle(SUCCESS);
      else if (exit.code !== null) settle(failure(`command exited with code ${exit.code}${stderrText()}`));
      else settle(failure(`command killed by signal ${exit.signal}${stderrText()}`));
    };
    child.once("error", (error) => settle(failure(`command failed to start: ${error.message}`)));
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      graceTimer = setTimeout(verdict, STDERR_GRACE_MS);
      graceTimer.unref();
    });
    child.once("close", verdict);
    deadline.onAbort(() => {
      killGroup(child.pid);
      settle(
        failure(
          deadline.timedOut()
            ? `command timed out after ${definition.timeout.text}`
            : "command stopped: the healthchecks module is stopping",
        ),
      );
    });
  });
}
