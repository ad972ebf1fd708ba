import { describe, expect, it } from "vitest";
import { runCommand } from "../../src/healthchecks/command.js";
import { type CommandDefinition, validateDefinition } from "../../src/healthchecks/definition.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

function command(fields: Record<string, unknown>): CommandDefinition {
  return validateDefinition("command", { name: "run", interval: "10s", timeout: "5s", ...fields }, RULES, {
    unknownKeys: "ignore",
  });
}

describe("command executor", () => {
  it("succeeds on exit code 0", async () => {
    expect(await runCommand(command({ command: "true" }))).toEqual({ success: true, message: "success" });
  });

  it("reports the exit code and the first 1000 bytes of stderr", async () => {
    expect(await runCommand(command({ command: "sh", arguments: ["-c", "echo err >&2; exit 2"] }))).toEqual({
      success: false,
      message: "command exited with code 2: err",
    });
    expect(await runCommand(command({ command: "false" }))).toEqual({
      success: false,
      message: "command exited with code 1",
    });
    const long = await runCommand(
      command({ command: "sh", arguments: ["-c", "head -c 5000 /dev/zero | tr '\\0' e >&2; exit 3"] }),
    );
    expect(long).toEqual({ success: false, message: `command exited with code 3: ${"e".repeat(1000)}` });
  });

  it("runs without a shell: arguments are passed as they are", async () => {
    expect(await runCommand(command({ command: "sh", arguments: ["-c", 'test "$0" = "a b;c"', "a b;c"] }))).toEqual({
      success: true,
      message: "success",
    });
  });

  it("reports a command that cannot start", async () => {
    expect(await runCommand(command({ command: "/nonexistent/vigie-command" }))).toEqual({
      success: false,
      message: "command failed to start: spawn /nonexistent/vigie-command ENOENT",
    });
  });

  it("kills a command still running at the timeout, with its children", async () => {
    const started = Date.now();
    expect(await runCommand(command({ command: "sleep", arguments: ["5"], timeout: "300ms" }))).toEqual({
      success: false,
      message: "command timed out after 300ms",
    });
    expect(Date.now() - started).toBeLessThan(4_000);
    // The shell's child `sleep` holds stderr open; it is killed with the group.
    const shell = await runCommand(
      command({ command: "sh", arguments: ["-c", "sleep 5; echo late"], timeout: "300ms" }),
    );
    expect(shell).toEqual({ success: false, message: "command timed out after 300ms" });
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it("does not wait for a background child that keeps stderr open after the command exited", async () => {
    const started = Date.now();
    expect(await runCommand(command({ command: "sh", arguments: ["-c", "sleep 3 & exit 0"], timeout: "10s" }))).toEqual(
      {
        success: true,
        message: "success",
      },
    );
    expect(Date.now() - started).toBeLessThan(2_500);
  });
});
