/**
 * `vigie backup FILE` against the real process: taken while comments are being posted, the backup
 * restored (a new process on the copied file) holds every comment acknowledged before the backup
 * began; the file is 0600; an existing file, PostgreSQL and in-memory databases are refused (exit 2).
 */
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, runCli, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

/** The answer of a math question `what is the result of: a op b`. */
function solve(question: string): string {
  const match = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(question);
  if (match === null) throw new Error(`not a math question: ${question}`);
  const [left, right] = [Number(match[1]), Number(match[3])];
  return String(match[2] === "+" ? left + right : match[2] === "-" ? left - right : left * right);
}

/** A configuration with one auto-approving website and no practical rate limit. */
function writeConfig(directory: string, port: number, database: string): string {
  const file = join(directory, `vigie-${port}.yaml`);
  writeFileSync(
    file,
    [
      `http:\n  port: ${port}`,
      `database:\n  url: sqlite:${database}`,
      "comments:\n  rate-limit:\n    comments: 1000000\n    per: 1s",
      "  websites:\n    - name: blog\n      auto-approve: true",
      "",
    ].join("\n"),
  );
  return file;
}

/** Posts one comment (challenge, answer, post); resolves with whether it was acknowledged (201). */
async function post(base: string, content: string): Promise<boolean> {
  const challenge = (await (await fetch(`${base}/api/v1/challenge/blog/backup`)).json()) as {
    question: string;
    signature: string;
    timestamp: number;
  };
  const response = await fetch(`${base}/api/v1/comment/blog/backup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      author: "Ann",
      content,
      answer: solve(challenge.question),
      signature: challenge.signature,
      timestamp: challenge.timestamp,
    }),
  });
  await response.body?.cancel();
  return response.status === 201;
}

describe("vigie backup", () => {
  const running: VigieProcess[] = [];
  afterEach(async () => {
    for (const vigie of running.splice(0)) await stopVigie(vigie);
  });

  it("copies the database while comments are posted; the restored copy has every acknowledged one", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = writeConfig(directory, port, join(directory, "vigie.db"));
    const vigie = await startVigie({ configFile, port, cwd: directory });
    running.push(vigie);

    // Comments go on being posted, one after another, before, during and after the backup.
    const acknowledged: Array<{ content: string; at: number }> = [];
    let posting = true;
    const poster = (async () => {
      for (let n = 0; posting && n < 5_000; n++) {
        const content = `comment ${n}`;
        if (await post(vigie.baseUrl, content)) acknowledged.push({ content, at: Date.now() });
      }
    })();
    while (acknowledged.length < 30) await new Promise((wait) => setTimeout(wait, 20));
    const backupFile = join(directory, "backup.db");
    const started = Date.now();
    const result = await runCli(["backup", backupFile, "--config", configFile], { cwd: directory });
    await new Promise((wait) => setTimeout(wait, 200));
    posting = false;
    await poster;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/vigie\.db copied to .*backup\.db \(\d+ pages, mode 0600\)/);
    expect(statSync(backupFile).mode & 0o777).toBe(0o600);
    // At or before `started`: the 30 comments awaited above were acknowledged in its millisecond or
    // earlier (a strict comparison lost the last one in a CI run), and any comment acknowledged then
    // was committed before the backup process, spawned at that moment, began copying.
    const before = acknowledged.filter((entry) => entry.at <= started).map((entry) => entry.content);
    expect(before.length).toBeGreaterThanOrEqual(30);
    expect(acknowledged.length).toBeGreaterThan(before.length); // posting went on during the backup

    // Restored: a new process on the copy lists every comment acknowledged before the backup began.
    await stopVigie(vigie);
    const restoredPort = await freePort();
    const restored = await startVigie({
      configFile: writeConfig(directory, restoredPort, backupFile),
      port: restoredPort,
      cwd: directory,
    });
    running.push(restored);
    // Without limit, the public list is every approved comment of the article.
    const list = (await (await fetch(`${restored.baseUrl}/api/v1/comment/blog/backup`)).json()) as Array<{
      content: string;
    }>;
    const contents = list.map((comment) => comment.content);
    const restoredSet = new Set(contents);
    expect(before.filter((content) => !restoredSet.has(content))).toEqual([]);
  }, 60_000);

  it("refuses an existing file, an in-memory database and PostgreSQL (exit 2)", async () => {
    const directory = temporaryDirectory();
    const existing = join(directory, "taken.db");
    writeFileSync(existing, "keep me");
    const fileConfig = writeConfig(directory, 1, join(directory, "vigie.db"));
    const taken = await runCli(["backup", existing, "--config", fileConfig], { cwd: directory });
    // The database does not exist yet either; an existing destination is never touched.
    expect(taken.code).toBe(2);
    const memory = join(directory, "memory.yaml");
    writeFileSync(memory, 'database:\n  url: "sqlite::memory:"\n');
    const inMemory = await runCli(["backup", join(directory, "a.db"), "--config", memory], { cwd: directory });
    expect({ code: inMemory.code, stderr: inMemory.stderr }).toEqual({
      code: 2,
      stderr: "vigie: database.url is an in-memory database: there is nothing to back up\n",
    });
    const postgres = join(directory, "postgres.yaml");
    writeFileSync(postgres, "database:\n  url: postgres://postgres@127.0.0.1:5432/test\n");
    const onPostgres = await runCli(["backup", join(directory, "b.db"), "--config", postgres], { cwd: directory });
    expect(onPostgres.code).toBe(2);
    expect(onPostgres.stderr).toContain("pg_dump");
  });
});
