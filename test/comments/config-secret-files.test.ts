/**
 * `comments.admin-token-file` and `comments.challenge.secret-file`: the secret is the content of a
 * file the configuration names, read on every validation, refused together with the inline key,
 * and never echoed.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commentsModule } from "../../src/comments/index.js";
import { ConfigError, loadConfig, parseConfig } from "../../src/platform/config.js";

const directory = mkdtempSync(join(tmpdir(), "vigie-secret-files-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** A file of `directory` holding `content`, mode 0600. */
function secretFile(name: string, content: string): string {
  const file = join(directory, name);
  writeFileSync(file, content, { mode: 0o600 });
  return file;
}

function parse(comments: unknown, environment: Record<string, string> = {}) {
  return parseConfig({ comments }, environment, [commentsModule]).modules.comments as Record<string, unknown>;
}

function refusal(comments: unknown, environment: Record<string, string> = {}): string {
  try {
    parse(comments, environment);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  return "accepted";
}

describe("comments secrets in files", () => {
  it("reads the admin token and the challenge secret from their files, trailing line break removed", () => {
    const token = secretFile("admin-token", "token-from-a-file\n");
    const key = secretFile("challenge-secret", "key-from-a-file\r\n\n");
    const section = parse({ "admin-token-file": token, challenge: { "secret-file": key } });
    expect(section["admin-token-file"]).toBe("token-from-a-file");
    expect(section["admin-token"]).toBeUndefined();
    expect(section.challenge).toMatchObject({ "secret-file": "key-from-a-file" });
  });

  it("reads the file again on every load, as a reload does", async () => {
    const token = secretFile("reloaded-token", "first-token");
    const config = join(directory, "vigie.yaml");
    writeFileSync(config, `comments:\n  admin-token-file: ${token}\n`);
    const first = await loadConfig(config, {}, [commentsModule]);
    writeFileSync(token, "second-token\n");
    const second = await loadConfig(config, {}, [commentsModule]);
    expect(first.modules.comments?.["admin-token-file"]).toBe("first-token");
    expect(second.modules.comments?.["admin-token-file"]).toBe("second-token");
  });

  it("refuses a key given inline and through a file, naming both keys", () => {
    const token = secretFile("both-token", "token-in-a-file");
    expect(refusal({ "admin-token": "inline-token", "admin-token-file": token })).toBe(
      "invalid configuration: comments.admin-token: must not be set together with comments.admin-token-file: set one of comments.admin-token and comments.admin-token-file",
    );
    expect(refusal({ challenge: { secret: "inline-secret", "secret-file": token } })).toBe(
      "invalid configuration: comments.challenge.secret: must not be set together with comments.challenge.secret-file: set one of comments.challenge.secret and comments.challenge.secret-file",
    );
    // The environment sets the inline key: with a file too, the same refusal.
    expect(refusal({ "admin-token-file": token }, { VIGIE_COMMENTS_ADMIN_TOKEN: "from-env" })).toMatch(
      /^invalid configuration: comments\.admin-token: must not be set together with comments\.admin-token-file/,
    );
  });

  it("names the key and the path of a file it cannot read", () => {
    const missing = join(directory, "missing");
    expect(refusal({ "admin-token-file": missing })).toBe(
      `invalid configuration: comments.admin-token-file: cannot read ${missing}: ENOENT`,
    );
    expect(refusal({ challenge: { "secret-file": directory } })).toBe(
      `invalid configuration: comments.challenge.secret-file: cannot read ${directory}: not a regular file`,
    );
    expect(refusal({ "admin-token-file": "/dev/zero" })).toBe(
      "invalid configuration: comments.admin-token-file: cannot read /dev/zero: not a regular file",
    );
    const large = secretFile("large", "x".repeat(70_000));
    expect(refusal({ "admin-token-file": large })).toBe(
      `invalid configuration: comments.admin-token-file: cannot read ${large}: larger than 65536 bytes`,
    );
  });

  it.skipIf(process.getuid?.() === 0)("names the key and the path of a file it may not read", () => {
    const locked = secretFile("locked", "locked-token");
    chmodSync(locked, 0o000);
    expect(refusal({ "admin-token-file": locked })).toBe(
      `invalid configuration: comments.admin-token-file: cannot read ${locked}: EACCES`,
    );
  });

  it("never echoes the content of a file", () => {
    const spaced = secretFile("spaced", " leaked-secret-value ");
    const message = refusal({ "admin-token-file": spaced });
    expect(message).toBe(
      `invalid configuration: comments.admin-token-file: the content of ${spaced} must not start or end with white space`,
    );
    expect(message).not.toContain("leaked-secret-value");
    const empty = secretFile("empty", "\n");
    expect(refusal({ challenge: { "secret-file": empty } })).toMatch(
      /^invalid configuration: comments\.challenge\.secret-file: the content of .*empty must /,
    );
    expect(refusal({ "admin-token-file": 42 })).toMatch(/^invalid configuration: comments\.admin-token-file: must be/);
  });
});
