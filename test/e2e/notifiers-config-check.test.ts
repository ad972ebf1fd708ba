/**
 * `vigie config check` on the notifier outputs `email`, `matrix` and `pagerduty`: a broken template
 * fails the check naming its key; secrets come from `<key>-env` and `<key>-file` and are never
 * printed.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, temporaryDirectory } from "../support/process.js";

const PASSWORD = "s3cret-SMTP-pa55";
const TOKEN = "syt_SecretMatrixToken_0a1b";

/** A configuration file of `outputs:`, each output's lines already indented under its name. */
function configFile(outputs: string): string {
  const file = join(temporaryDirectory(), "vigie.yaml");
  writeFileSync(file, `database:\n  url: sqlite:./vigie.db\noutputs:\n${outputs}`);
  return file;
}

const EMAIL = `  mail:
    type: email
    smtp-url: smtp://vigie:${PASSWORD}@mail.example.org:587
    from: Vigie <vigie@example.org>
    to: [ops@example.org]
`;
const MATRIX = `  room:
    type: matrix
    homeserver: https://matrix.example.org
    room-id: "!ops:example.org"
    access-token-env: VIGIE_TEST_MATRIX_TOKEN
`;

describe("vigie config check with notifier outputs", () => {
  it("accepts them, secrets from the environment and files, and prints none", async () => {
    const keyFile = join(temporaryDirectory(), "routing-key");
    writeFileSync(keyFile, "R0UT1NGKEY\n");
    const file = configFile(`${EMAIL}${MATRIX}  pager:\n    type: pagerduty\n    routing-key-file: ${keyFile}\n`);
    const checked = await runCli(["config", "check", "--config", file], { env: { VIGIE_TEST_MATRIX_TOKEN: TOKEN } });
    expect(checked.stderr).toBe("");
    expect(checked.code).toBe(0);
    expect(checked.stdout).not.toContain(PASSWORD);
    expect(checked.stdout).not.toContain(TOKEN);
  });

  it("fails on a broken template, naming its key", async () => {
    for (const [outputs, key] of [
      [`${EMAIL}    template: "{{#alerts}}{{name}}"\n`, "outputs.mail.template"],
      [`${MATRIX}    html-template: "{{/alerts}}"\n`, "outputs.room.html-template"],
      [
        `  pager:\n    type: pagerduty\n    routing-key: K\n    title-template: "{{name"\n`,
        "outputs.pager.title-template",
      ],
    ] as const) {
      const refused = await runCli(["config", "check", "--config", configFile(outputs)], {
        env: { VIGIE_TEST_MATRIX_TOKEN: TOKEN },
      });
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(`invalid configuration: ${key}: is not a valid template: `);
      expect(refused.stderr).not.toContain(PASSWORD);
      expect(refused.stderr).not.toContain(TOKEN);
    }
  });

  it("fails on a variable that is not set, without printing the other secrets", async () => {
    const refused = await runCli(["config", "check", "--config", configFile(`${EMAIL}${MATRIX}`)], {
      env: { VIGIE_TEST_MATRIX_TOKEN: "" },
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "outputs.room.access-token-env: names the environment variable VIGIE_TEST_MATRIX_TOKEN, which is not set",
    );
    expect(refused.stderr).not.toContain(PASSWORD);
  });
});
