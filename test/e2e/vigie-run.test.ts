/**
 * `vigie run --key KEY -- COMMAND` against a real command and a local receiver standing in for
 * Vigie's ping routes: start, then the exit status with the output's last 10 KiB, one run id, the
 * command's status as the wrapper's; a ping that fails never changes the job's outcome. Then a real
 * job against a real server and its heartbeat check.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, runCli, startVigie, stopVigie, temporaryDirectory } from "../support/process.js";
import { type Receiver, startReceiver } from "../support/receiver.js";

const KEY = "abcdefghijklmnopqrstuv_-42";

describe("vigie run", () => {
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  it("pings start, then the exit status with the output, and exits with the command's status", async () => {
    receiver = await startReceiver();
    const run = await runCli([
      "run",
      "--key",
      KEY,
      "--url",
      receiver.url,
      "--",
      "sh",
      "-c",
      "echo out; echo err >&2; exit 3",
    ]);
    expect(run.code).toBe(3);
    expect(run.stdout).toBe("out\n");
    expect(run.stderr).toBe("err\n");
    const [start, end] = receiver.requests;
    expect(receiver.requests).toHaveLength(2);
    const rid = /^\/ping\/[\w-]+\/start\?rid=([0-9a-f-]{36})$/.exec(start?.url ?? "")?.[1];
    expect(start?.url).toBe(`/ping/${KEY}/start?rid=${rid}`);
    expect(end?.url).toBe(`/ping/${KEY}/3?rid=${rid}`);
    expect(end?.method).toBe("POST");
    expect(end?.body.toString()).toBe("out\nerr\n");
  });

  it("sends only the last 10 KiB of a long output and exits 0 for a successful command", async () => {
    receiver = await startReceiver();
    const script = "i=0; while [ $i -lt 3000 ]; do echo line-$i; i=$((i+1)); done";
    const run = await runCli(["run", "--key", KEY, "--url", `${receiver.url}/`, "--", "sh", "-c", script]);
    expect(run.code).toBe(0);
    const body = receiver.requests[1]?.body.toString() ?? "";
    expect(receiver.requests[1]?.url).toMatch(new RegExp(`^/ping/${KEY}/0\\?rid=`));
    expect(Buffer.byteLength(body)).toBe(10 * 1024);
    expect(body.endsWith("line-2999\n")).toBe(true);
  });

  it("reports a command that does not exist as status 127, to the server and as its own exit code", async () => {
    receiver = await startReceiver();
    const run = await runCli(["run", "--key", KEY, "--url", receiver.url, "--", "/nonexistent/backup"]);
    expect(run.code).toBe(127);
    expect(receiver.requests[1]?.url).toMatch(new RegExp(`^/ping/${KEY}/127\\?rid=`));
    expect(receiver.requests[1]?.body.toString()).toContain("cannot run /nonexistent/backup");
  });

  it("reports a command killed by a signal as 128 + the signal's number", async () => {
    receiver = await startReceiver();
    const run = await runCli(["run", "--key", KEY, "--url", receiver.url, "--", "sh", "-c", "kill -TERM $$"]);
    expect(run.code).toBe(143);
    expect(receiver.requests[1]?.url).toMatch(new RegExp(`^/ping/${KEY}/143\\?rid=`));
  });

  it("retries a ping answered 503, and warns without the key when a ping is refused", async () => {
    receiver = await startReceiver((_request, index) =>
      index === 0 ? { status: 503 } : { status: 404, body: "not found" },
    );
    const run = await runCli(["run", "--key", KEY, "--url", receiver.url, "--", "true"]);
    expect(run.code).toBe(0);
    // start: 503 then 404 (not retried); end: 404 (not retried).
    expect(receiver.requests.map((request) => request.url.split("?")[0])).toEqual([
      `/ping/${KEY}/start`,
      `/ping/${KEY}/start`,
      `/ping/${KEY}/0`,
    ]);
    expect(run.stderr).toContain("the start ping could not be delivered");
    expect(run.stderr).toContain("answered 404 not found");
    expect(run.stderr).not.toContain(KEY);
  });

  it("refuses a malformed key or URL and a missing command with exit code 2, running nothing", async () => {
    expect((await runCli(["run", "--key", "short", "--", "true"])).code).toBe(2);
    expect((await runCli(["run", "--key", KEY, "--url", "ftp://x", "--", "true"])).code).toBe(2);
    expect((await runCli(["run", "--key", KEY, "--url", "http://127.0.0.1:9"])).code).toBe(2);
  });

  it("reports a real job to a real server: up with its output, then down with the failure's", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        `http:\n  port: ${port}`,
        `database:\n  url: sqlite:${join(directory, "vigie.db")}`,
        "healthchecks:",
        "  heartbeat-checks:",
        `    - { name: backup, period: 1h, key: ${KEY} }`,
        "",
      ].join("\n"),
    );
    const vigie = await startVigie({ configFile, port, cwd: directory });
    try {
      const result = async () =>
        (await (await fetch(`${vigie.baseUrl}/result/backup`)).json()) as Record<string, unknown>;
      const ok = await runCli(["run", "--key", KEY, "--url", vigie.baseUrl, "--", "sh", "-c", "echo 12 files copied"]);
      expect(ok.code).toBe(0);
      expect(await result()).toMatchObject({ success: true, state: "up", message: "12 files copied\n" });
      const failed = await runCli(["run", "--key", KEY, "--", "sh", "-c", "echo disk full >&2; exit 4"], {
        env: { VIGIE_URL: vigie.baseUrl },
      });
      expect(failed.code).toBe(4);
      expect(await result()).toMatchObject({ success: false, state: "down", message: "disk full\n" });
    } finally {
      await stopVigie(vigie);
    }
  });
});
