/**
 * `vigie config check` on notifier outputs (docs/notifiers.md): valid ones pass, secrets come from
 * the environment or a file, and a broken template or a bad key fails naming it, never printing a
 * secret.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, temporaryDirectory } from "../support/process.js";

const SECRET = "123456:s3cr3tT0k3n";

/** Writes `yaml` as a configuration file and runs `vigie config check --config <file>`. */
async function check(yaml: string, env: Record<string, string> = {}) {
  const directory = temporaryDirectory();
  const file = join(directory, "vigie.yaml");
  writeFileSync(file, yaml);
  writeFileSync(join(directory, "ntfy-token"), "tk_s3cr3t\n");
  return runCli(["config", "check", "--config", file], { cwd: directory, env });
}

describe("notifier outputs in vigie config check", () => {
  it("accepts every notifier type, secrets from the environment and from files", async () => {
    const result = await check(
      [
        "outputs:",
        "  chat: {type: slack, webhook-url-env: VIGIE_TEST_SLACK}",
        "  discord: {type: discord, webhook-url: https://discord.example/api/webhooks/1/s3cr3t}",
        `  phone: {type: telegram, token: "${SECRET}", chat-id: -100123, title-template: "{{name}}"}`,
        "  push: {type: ntfy, url: https://ntfy.example/alerts, token-file: ntfy-token}",
        `  hook: {type: webhook, url: https://hook.example/in, method: PUT, template: '{"t": "{{name}}"}'}`,
        "",
      ].join("\n"),
      { VIGIE_TEST_SLACK: "https://hooks.slack.example/services/s3cr3t" },
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain("s3cr3t");
  });

  for (const [what, output, message] of [
    [
      "a broken template",
      `{type: telegram, token: "${SECRET}", chat-id: 1, template: "{{#alerts}}{{name}}"}`,
      "outputs.phone.template: is not a valid template: Unclosed section",
    ],
    [
      "a broken title template",
      "{type: slack, webhook-url: https://hooks.slack.example/s3cr3t, title-template: '{{name'}",
      "outputs.phone.title-template: is not a valid template",
    ],
    [
      "a missing secret variable",
      "{type: discord, webhook-url-env: VIGIE_TEST_UNSET}",
      "outputs.phone.webhook-url-env",
    ],
    ["a bad token", '{type: telegram, token: "s3cr3t/x", chat-id: 1}', "outputs.phone.token: must be a bot token"],
  ] as const) {
    it(`exits 2 naming the key for ${what}, without printing the secret`, async () => {
      const result = await check(`outputs:\n  phone: ${output}\n`);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`vigie: invalid configuration: ${message}`);
      expect(`${result.stdout}${result.stderr}`).not.toContain("s3cr3t");
    });
  }
});
