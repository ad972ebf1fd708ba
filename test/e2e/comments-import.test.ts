/**
 * `vigie comments import` and `export` as a user runs them: the real CLI against a configuration,
 * then the comments read through the API of the real server; a second run, a dry run, a malformed
 * file and the export's file mode.
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, runCli, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const FIXTURES = resolve(import.meta.dirname, "../fixtures/comments-import");

describe("vigie comments import and export (real process)", () => {
  let vigie: VigieProcess | undefined;
  afterEach(async () => {
    await stopVigie(vigie);
    vigie = undefined;
  });

  it("imports a Disqus export that the API then lists, once, and exports it back", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        `http:\n  port: ${port}`,
        "database:\n  url: sqlite:./state/vigie.db",
        'comments:\n  websites:\n    - name: blog\n      allowed-origins: ["*"]',
        "",
      ].join("\n"),
    );
    const run = (args: string[]) => runCli(["comments", ...args, "-c", configFile], { cwd: directory });
    const disqus = join(FIXTURES, "disqus.xml");
    // The server runs during the import, its list of the article already cached (empty).
    vigie = await startVigie({ configFile, port, cwd: directory });
    const listUrl = `${vigie.baseUrl}/api/v1/comment/blog/posts-first-post`;
    expect(await (await fetch(listUrl)).json()).toEqual([]);

    const dry = await run(["import", "--format", "disqus", "--website", "blog", "--dry-run", disqus]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toBe(
      [
        "posts-caf-C3-A9-cr-C3-A8me: 1 comment (0 replies, 0 approved), 1 new",
        "posts-first-post: 3 comments (2 replies, 3 approved), 3 new",
        "4 comments read, would add 4, 0 already imported",
        "skipped: 1 deleted, 1 spam",
        "",
      ].join("\n"),
    );
    const unknown = await run(["import", "--format", "disqus", "--website", "nope", disqus]);
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.stderr).toContain("website nope not found");

    const first = await run(["import", "--format", "disqus", "--website", "blog", disqus]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("4 comments read, added 4, 0 already imported");
    // The running server sees another process's write within a second or so.
    await expect
      .poll(async () => ((await (await fetch(listUrl)).json()) as unknown[]).length, { timeout: 5000 })
      .toBe(3);
    const again = await run(["import", "--format", "disqus", "--website", "blog", disqus]);
    expect(again.stdout).toContain("4 comments read, added 0, 4 already imported");
    expect(again.stdout).toContain("nothing new");

    const broken = await run([
      "import",
      "--format",
      "disqus",
      "--website",
      "blog",
      join(FIXTURES, "disqus-malformed.xml"),
    ]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/import stopped: .*disqus-malformed\.xml:6:\d+: unexpected close tag/);

    const out = join(directory, "export.jsonl");
    const exported = await run(["export", "--website", "blog", "--out", out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const lines = readFileSync(out, "utf8").trim().split("\n");
    // The header, the 4 imported comments; none of the malformed file (its batch was not written).
    expect(lines).toHaveLength(5);
    expect(lines[1]).toContain('"email":"ann@example.org"');
    expect((await run(["export", "--website", "blog", "--out", out])).code).toBe(2);

    const list = (await (await fetch(listUrl)).json()) as {
      author: string;
      parent?: string;
      id: string;
    }[];
    expect(list.map((comment) => comment.author)).toEqual(["Ann", "Bøb", "Guest"]);
    expect(list[1]?.parent).toBe(list[0]?.id);
    expect(list[2]?.parent).toBe(list[1]?.id);
    expect(JSON.stringify(list)).not.toContain("@example.org");
  }, 60_000);
});
