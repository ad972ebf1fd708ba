/**
 * The import on SQLite and PostgreSQL: rows written with their replies and hidden e-mail addresses,
 * read back through the API; a second run adds nothing; a dry run writes nothing; a malformed file
 * leaves the batches before it and a re-run completes the import; the export reads back identically.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { type ImportFormat, importedId } from "../../src/comments/import/items.js";
import { type ImportSettings, itemsOf, reportLines, runImport } from "../../src/comments/import/run.js";
import { exportHeader, exportLine } from "../../src/comments/import/vigie-format.js";
import { ImportStore } from "../../src/comments/storage-import.js";
import type { Database } from "../../src/platform/database.js";
import { DATABASE_KINDS } from "../support/databases.js";
import { temporaryDirectory } from "../support/temporary.js";
import { FIXTURES, issoDatabase } from "./import-support.js";
import { admin, commentsServers } from "./support.js";

const settings = (website: string, format: ImportFormat, extra: Partial<ImportSettings> = {}): ImportSettings => ({
  website,
  format,
  articleFrom: "path",
  dryRun: false,
  ...extra,
});

/** The number of comments of a website. */
async function countOf(database: Database, website: string): Promise<number> {
  const { rows } = await sql<{
    count: number | string;
  }>`select count(*) as count from comments_comment where website = ${website}`.execute(database.kysely);
  return Number(rows[0]?.count ?? 0);
}

/** The export of a website as text. */
async function exported(store: ImportStore, website: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const row of store.exportRows(website, 2)) lines.push(exportLine(row));
  return lines;
}

describe.each(DATABASE_KINDS)("the comments import on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip);

  it.skipIf(skip)(
    "writes comments and replies that the API lists, without e-mail addresses nor events; twice adds nothing",
    async () => {
      const server = await servers.start();
      const store = new ImportStore(server.context.database);
      const file = join(FIXTURES, "disqus.xml");
      const first = await runImport(itemsOf("disqus", file), store, settings("imported", "disqus"));
      expect(first).toMatchObject({ read: 4, added: 4, existing: 0 });
      expect(Object.fromEntries(first.skipped)).toEqual({ spam: 1, deleted: 1 });

      const list = await server.app.inject({ url: "/api/v1/comment/imported/posts-first-post" });
      const comments = list.json() as Record<string, unknown>[];
      expect(comments.map((comment) => comment.author)).toEqual(["Ann", "Bøb", "Guest"]);
      const ann = importedId("imported", "disqus", "1000");
      expect(comments[0]).toMatchObject({ id: ann, timestamp: Date.parse("2019-03-02T08:30:00Z"), approved: true });
      expect(comments[0]?.content).toBe(
        "Great post &amp; thanks!\n\nSee the docs (https://example.com/docs) — really.",
      );
      expect(comments[0]).not.toHaveProperty("parent");
      expect(comments[1]).toMatchObject({ parent: ann, content: "Agreed, Ann. Déjà vu &lt;script&gt; is text" });
      expect(list.body).not.toContain("@example.org");
      // The pending one is in the admin list only.
      const pending = await admin(server.app, "GET", "/api/admin/comment/imported/posts-caf-C3-A9-cr-C3-A8me");
      expect(pending.json()).toMatchObject([{ approved: false, author: "Dave" }]);
      expect((await admin(server.app, "GET", "/api/admin/event/imported")).json()).toEqual([]);

      const second = await runImport(itemsOf("disqus", file), store, settings("imported", "disqus"));
      expect(second).toMatchObject({ read: 4, added: 0, existing: 4 });
      expect(reportLines(second, settings("imported", "disqus"))).toContain(
        "nothing new: every comment of the file is already there",
      );
      expect(await countOf(server.context.database, "imported")).toBe(4);
    },
  );

  it.skipIf(skip)("prints per article in a dry run and writes nothing", async () => {
    const server = await servers.start();
    const store = new ImportStore(server.context.database);
    const dry = settings("dry", "wordpress", { dryRun: true, articleFrom: "slug" });
    const report = await runImport(itemsOf("wordpress", join(FIXTURES, "wordpress.xml")), store, dry);
    expect(reportLines(report, dry)).toEqual([
      "hello-world: 3 comments (2 replies, 2 approved), 3 new",
      "3 comments read, would add 3, 0 already imported",
      "skipped: 1 deleted, 1 pingback, 1 spam",
    ]);
    expect(await countOf(server.context.database, "dry")).toBe(0);
  });

  it.skipIf(skip)(
    "stops at a malformed file keeping the batches before it; a re-run completes the import",
    async () => {
      const server = await servers.start();
      const store = new ImportStore(server.context.database);
      const broken = join(FIXTURES, "disqus-malformed.xml");
      // One transaction for the whole file: nothing is written.
      await expect(runImport(itemsOf("disqus", broken), store, settings("whole", "disqus"))).rejects.toThrow(
        /disqus-malformed\.xml:6:\d+/,
      );
      expect(await countOf(server.context.database, "whole")).toBe(0);
      // Batches of one: the two posts before the error are written, the third is not.
      await expect(
        runImport(itemsOf("disqus", broken), store, settings("batches", "disqus", { batchSize: 1 })),
      ).rejects.toThrow(/unexpected close tag/);
      expect(await countOf(server.context.database, "batches")).toBe(2);
      const fixed = join(temporaryDirectory("vigie-import-"), "fixed.xml");
      writeFileSync(
        fixed,
        readFileSync(broken, "utf8").replace(
          "</mesage></post>",
          '</message><createdAt>2019-03-02T08:32:00Z</createdAt><thread dsq:id="100"/></post>',
        ),
      );
      const rerun = await runImport(itemsOf("disqus", fixed), store, settings("batches", "disqus", { batchSize: 1 }));
      expect(rerun).toMatchObject({ read: 3, added: 1, existing: 2 });
    },
  );

  it.skipIf(skip)("exports a website as JSON lines that import --format vigie reads back identically", async () => {
    const server = await servers.start();
    const store = new ImportStore(server.context.database);
    await runImport(itemsOf("isso", issoDatabase()), store, settings("round", "isso"));
    await runImport(itemsOf("commento", join(FIXTURES, "commento.json")), store, settings("round", "commento"));
    const before = await exported(store, "round");
    expect(before).toHaveLength(6);
    // The e-mail addresses and the wish to be told of replies are in the export.
    expect(before.join("\n")).toContain('"email":"ines@example.org"');
    expect(before.join("\n")).toContain('"notify-replies":true');
    const file = join(temporaryDirectory("vigie-export-"), "export.jsonl");
    writeFileSync(file, `${[exportHeader("round", 0), ...before].join("\n")}\n`);

    await server.app.inject({
      method: "DELETE",
      url: "/api/admin/comment/round/posts-first-post",
      headers: { authorization: "test-admin-token" },
    });
    await sql`delete from comments_comment where website = 'round'`.execute(server.context.database.kysely);
    const report = await runImport(itemsOf("vigie", file), store, settings("round", "vigie"));
    expect(report).toMatchObject({ read: 6, added: 6 });
    expect(await exported(store, "round")).toEqual(before);
    // Idempotent too, and the source identity kept: the Isso file adds nothing now.
    expect(await runImport(itemsOf("vigie", file), store, settings("round", "vigie"))).toMatchObject({ added: 0 });
    expect(await runImport(itemsOf("isso", issoDatabase()), store, settings("round", "isso"))).toMatchObject({
      added: 0,
    });
  });

  it.skipIf(skip)("keeps the import identity unique per website (migration comments-0003)", async () => {
    const server = await servers.start();
    const db = server.context.database;
    const query =
      db.dialect === "sqlite"
        ? sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'comments_comment'`
        : sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'comments_comment'`;
    expect((await query.execute(db.kysely)).rows.map((row) => row.name)).toContain("comments_comment_source");
    // The same source id in two websites: two comments; twice in one: the second is refused.
    const insert = (id: string, website: string) =>
      sql`insert into comments_comment (id, website, article, author, content, approved, created_at, source, source_id)
        values (${id}, ${website}, 'a', 'x', 'y', 1, 0, 'disqus', '1')`.execute(db.kysely);
    await insert("00000000-0000-4000-8000-000000000001", "one");
    await insert("00000000-0000-4000-8000-000000000002", "two");
    await expect(insert("00000000-0000-4000-8000-000000000003", "one")).rejects.toThrow();
  });
});
