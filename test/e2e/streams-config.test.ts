import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, temporaryDirectory } from "../support/process.js";

/** Writes `yaml` as a configuration file and runs `vigie <command> --config <file>`. */
async function withConfig(command: readonly string[], yaml: string) {
  const directory = temporaryDirectory();
  const file = join(directory, "vigie.yaml");
  writeFileSync(file, yaml);
  return { directory, ...(await runCli([...command, "--config", file], { cwd: directory })) };
}

describe("streams outputs in vigie config check and at start-up", () => {
  it("accepts declared outputs, async queues and the Riemann input", async () => {
    const directory = temporaryDirectory();
    const result = await withConfig(
      ["config", "check"],
      [
        "streams:",
        "  outputs:",
        "    alerts: {type: alertmanager, url: http://127.0.0.1:9093}",
        "    tsdb: {type: prometheus-remote-write, url: http://127.0.0.1:9090/api/v1/write}",
        "    hook: {type: http, url: https://example.org/hook, headers: {Authorization: Bearer abc}}",
        `    archive: {type: file, path: ${join(directory, "events.jsonl")}}`,
        "  async-queues:",
        "    slow: {size: 10000}",
        "  riemann: {enabled: false, host: 127.0.0.1, port: 5555}",
        "",
      ].join("\n"),
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });

  for (const [what, output, message] of [
    [
      "a wrong type",
      "{type: smtp, url: http://127.0.0.1:25}",
      'streams.outputs.hook.type: must be one of http, file, prometheus-remote-write, alertmanager, loki, elasticsearch, influxdb, graphite, email, slack, discord, telegram, ntfy, matrix, pagerduty, webhook (got "smtp")',
    ],
    [
      "a wrong URL",
      "{type: http, url: 'gopher://user:hunter2@127.0.0.1/'}",
      "streams.outputs.hook.url: must be an http or https URL",
    ],
    [
      "a wrong key",
      "{type: http, url: http://127.0.0.1:8081, retries: 3}",
      "streams.outputs.hook.retries: unknown key",
    ],
  ] as const) {
    it(`exits 2 naming the key for ${what}, from config check and from serve`, async () => {
      const yaml = `streams:\n  outputs:\n    hook: ${output}\n`;
      for (const command of [["config", "check"], ["serve"]]) {
        const result = await withConfig(command, yaml);
        expect(result.code).toBe(2);
        expect(result.stderr).toContain(`vigie: invalid configuration: ${message}`);
        expect(result.stderr).not.toContain("hunter2");
        expect(result.stdout).not.toContain("hunter2");
      }
    });
  }

  it("exits 2 at start when a file output's directory does not exist, which config check and stream test accept", async () => {
    const yaml = "streams:\n  outputs:\n    archive: {type: file, path: ./nowhere/events.jsonl}\n";
    const result = await withConfig(["serve"], yaml);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "invalid configuration: streams.outputs.archive.path: must be in an existing directory",
    );
    // Where the server's directories do not exist (a CI machine), the file still checks and tests.
    expect(await withConfig(["config", "check"], yaml)).toMatchObject({ code: 0 });
    const streams = temporaryDirectory();
    const tests = join(temporaryDirectory(), "tests.edn");
    writeFileSync(join(streams, "s.edn"), "{:s {:default true :actions {:action :output :params [:archive]}}}");
    writeFileSync(tests, '{:archived {:input [{:host "a"}] :taps {:archive [{:host "a"}]}}}');
    const tested = await withConfig(["stream", "test", tests], `${yaml}  directories: [${JSON.stringify(streams)}]\n`);
    expect(tested.stdout).toBe("All tests successful\n");
    expect(tested.code).toBe(0);
  });

  it("exits 2 when security.require-token is on and the Riemann input has no client certificates", async () => {
    const result = await withConfig(
      ["config", "check"],
      "security:\n  require-token: true\nstreams:\n  riemann: {enabled: true}\n",
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "vigie: invalid configuration: streams.riemann.tls-ca: is required when security.require-token is true",
    );
  });
});
