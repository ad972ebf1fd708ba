/**
 * Heartbeat checks in the real process (`dist/cli.js`, docs/healthchecks.md "Heartbeat checks"):
 * pinged with the real `curl` as a cron line would (any body, no content type, HEAD, a body over
 * 100 KiB), state transitions with a short period and grace, the history and `GET /result/<name>`,
 * and the state kept across a kill and restart.
 */
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";

const run = promisify(execFile);

/** `curl` with the arguments of the documented cron line; its output and exit code. */
async function curl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("curl", ["-sS", "-m", "10", ...args], { maxBuffer: 1 << 20 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

function configuration(port: number): string {
  return [
    "http:",
    `  port: ${port}`,
    "log-level: warn",
    "database:",
    "  url: sqlite:./state/vigie.db",
    "healthchecks:",
    "  min-interval: 100ms",
    "  heartbeat-checks:",
    "    - {name: file-job, period: 1h}",
  ].join("\n");
}

describe("heartbeat checks in the real process", () => {
  let vigie: VigieProcess | undefined;
  afterEach(() => {
    vigie?.child.kill("SIGKILL");
    vigie = undefined;
  });

  it("takes pings from curl, judges missed deadlines and keeps the state across a restart", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, configuration(port));
    vigie = await startVigie({ configFile, port, cwd: directory });
    const base = vigie.baseUrl;
    const json = async (path: string) => {
      const response = await fetch(`${base}${path}`);
      // biome-ignore lint/suspicious/noExplicitAny: test code reads arbitrary JSON shapes
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };

    const created = await fetch(`${base}/healthcheck/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "job", period: "1s", grace: "1s", "max-duration": "5s" }),
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    expect((await json("/result/job")).status).toBe(404);

    // The documented cron line.
    const ok = await curl("-f", "--retry", "3", `${base}/ping/${key}`);
    expect(ok).toMatchObject({ code: 0, stdout: "OK\n" });
    expect((await json("/result/job")).body).toMatchObject({ success: true, state: "up" });

    // A start, then an exit status with the job's output: no content type, then an unusual one.
    expect((await curl("-X", "POST", `${base}/ping/${key}/start`)).stdout).toBe("OK\n");
    expect((await json("/healthcheck/job")).body.state).toBe("started");
    const small = await curl(
      "-X",
      "POST",
      "-H",
      "content-type:",
      "--data-binary",
      "step 1 done",
      `${base}/ping/${key}/log`,
    );
    expect(small).toMatchObject({ code: 0, stdout: "OK\n" });
    // Over 100 KiB: truncated, not refused.
    const big = join(directory, "big.txt");
    writeFileSync(big, "x".repeat(150 * 1024));
    const truncated = await curl(
      "-X",
      "POST",
      "-H",
      "content-type: application/x-weird",
      "--data-binary",
      `@${big}`,
      `${base}/ping/${key}/1`,
    );
    expect(truncated).toMatchObject({ code: 0, stdout: "OK\n" });
    const failed = (await json("/result/job")).body;
    expect(failed).toMatchObject({ success: false, state: "down" });
    expect(failed.message).toHaveLength(100 * 1024);

    // HEAD counts; unknown keys and statuses are 404 in plain text.
    expect((await curl("-I", `${base}/ping/${key}/0`)).stdout).toMatch(/^HTTP\/1\.1 200/);
    expect((await json("/result/job")).body).toMatchObject({ success: true, state: "up" });
    expect(await curl(`${base}/ping/${key}/256`)).toMatchObject({ stdout: "not found\n" });
    expect(await curl(`${base}/ping/${"n".repeat(22)}`)).toMatchObject({ stdout: "not found\n" });

    // No ping: late after the period, then down after the grace, with a missed-deadline result.
    await until(async () => ((await json("/healthcheck/job")).body.state === "late" ? true : undefined), "late");
    const down = await until(async () => {
      const result = (await json("/result/job")).body;
      return result.state === "down" ? result : undefined;
    }, "down");
    expect(down.success).toBe(false);
    expect(down.message).toMatch(/^no ping: one was expected at /);
    const history = await until(async () => {
      const results = (await json("/result/job/history")).body.results as Array<Record<string, unknown>>;
      return results.some((result) => String(result.message).startsWith("no ping")) ? results : undefined;
    }, "the missed deadline in the history");
    expect(history.length).toBeGreaterThanOrEqual(5);

    // The file's heartbeat has a key that survives a restart, and the state survives a kill.
    const fileKey = (await json("/healthcheck/file-job")).body.key as string;
    expect((await curl("-f", `${base}/ping/${fileKey}`)).code).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    vigie.child.kill("SIGKILL");
    vigie = await startVigie({ configFile, port, cwd: directory });
    expect((await json("/healthcheck/file-job")).body).toMatchObject({ key: fileKey, state: "up" });
    expect((await json("/healthcheck/job")).body.state).toBe("down");
    expect((await curl("-f", `${base}/ping/${key}`)).code).toBe(0);
    expect((await json("/healthcheck/job")).body.state).toBe("up");
  });
});
