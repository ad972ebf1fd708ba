/**
 * The storage behind paging and counts (docs/comments.md) on SQLite and PostgreSQL: walking the
 * pages of an article (oldest first within a page) or of a website (newest first) gives every
 * comment exactly once, whatever the ties of timestamps and the page size (property test, seeded:
 * `PAGING_SEED`, printed by fast-check on failure); the bound of a page that ends inside a
 * millisecond; counts in one query; the indexes of migration 0002.
 */
import fc from "fast-check";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import type { Comment } from "../../src/comments/resources.js";
import { type ArticleComment, type CommentStore, PAGE_TIE_MAX } from "../../src/comments/storage.js";
import { DATABASE_KINDS } from "../support/databases.js";
import { oldestFirst, seed, seedStore } from "./seed.js";
import { commentsServers } from "./support.js";

const SEED = Number(process.env.PAGING_SEED ?? 20_261_124);
const NOW = 1_700_000_000_000;

/** Comments with few distinct timestamps (many ties), some pending, over two articles. */
const seeds = fc.array(
  fc.record({
    offset: fc.integer({ min: 0, max: 6 }),
    approved: fc.boolean(),
    second: fc.boolean(),
  }),
  { maxLength: 18 },
);

describe.each(DATABASE_KINDS)("comment pages and counts in storage on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip);
  const open = async (): Promise<CommentStore> => seedStore(await servers.start());

  it.skipIf(skip)("walks the pages of an article and of a website: each comment once, ties included", async () => {
    const store = await open();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(seeds, fc.integer({ min: 1, max: 5 }), async (drawn, limit) => {
        const website = `walk-${run++}`;
        const stored = await seed(
          store,
          drawn.map(({ offset, approved, second }) => ({
            website,
            article: second ? "second" : "first",
            timestamp: NOW + offset,
            approved,
          })),
        );
        const articleOf = new Map(
          stored.map((comment, index) => [comment.id, drawn[index]?.second ? "second" : "first"]),
        );

        // The article: pages oldest first, the next one before the first comment of the last.
        const pages: Comment[][] = [];
        let before: number | undefined;
        for (;;) {
          const page = await store.articlePage(website, "first", { limit, before });
          expect([...page].sort(oldestFirst)).toEqual(page);
          if (page.length === 0) break;
          pages.push(page);
          expect(page.length).toBeLessThanOrEqual(limit + PAGE_TIE_MAX);
          before = page[0]?.timestamp;
        }
        // Every page but the oldest is full; only the oldest may be short.
        for (const page of pages.slice(0, -1)) expect(page.length).toBeGreaterThanOrEqual(limit);
        const approvedFirst = stored
          .filter((comment) => comment.approved && articleOf.get(comment.id) === "first")
          .sort(oldestFirst);
        expect(pages.reverse().flat()).toEqual(approvedFirst);

        // The website, for each filter: pages newest first, the next one before the last comment.
        for (const approved of [undefined, true, false]) {
          const walked: ArticleComment[] = [];
          let older: number | undefined;
          for (;;) {
            const page = await store.websitePage(website, approved, { limit, before: older });
            if (page.length === 0) break;
            walked.push(...page);
            older = page.at(-1)?.timestamp;
          }
          const expected = stored
            .filter((comment) => approved === undefined || comment.approved === approved)
            .sort(oldestFirst)
            .reverse()
            .map((comment) => ({ ...comment, article: articleOf.get(comment.id) }));
          expect(walked).toEqual(expected);
        }
      }),
      { seed: SEED, numRuns: 25 },
    );
  });

  it.skipIf(skip)("ends a page inside a millisecond only past PAGE_TIE_MAX comments of that millisecond", async () => {
    const store = await open();
    const count = PAGE_TIE_MAX + 3;
    await seed(
      store,
      Array.from({ length: count }, () => ({ website: "ties", article: "post", timestamp: NOW, approved: true })),
    );
    const page = await store.articlePage("ties", "post", { limit: 2, before: undefined });
    expect(page).toHaveLength(2 + PAGE_TIE_MAX);
    const site = await store.websitePage("ties", true, { limit: 2, before: undefined });
    expect(site).toHaveLength(2 + PAGE_TIE_MAX);
    // The page is the newest of them (by id), as the order says.
    const all = await store.list("ties", "post", true);
    expect(page).toEqual(all.slice(count - page.length));
  });

  it.skipIf(skip)("counts approved comments per article in one query, absent articles left out", async () => {
    const store = await open();
    const at = (article: string, approved: boolean, offset: number) => ({
      website: "count",
      article,
      timestamp: NOW + offset,
      approved,
    });
    await seed(store, [
      at("a", true, 0),
      at("a", true, 1),
      at("a", false, 2),
      at("__proto__", true, 3),
      at("b", false, 4),
      { ...at("a", true, 5), website: "other" },
    ]);
    const counts = await store.countApproved("count", ["a", "b", "__proto__", "missing"]);
    expect([...counts.entries()].sort()).toEqual([
      ["__proto__", 1],
      ["a", 2],
    ]);
    expect((await store.countApproved("count", [])).size).toBe(0);
  });

  it.skipIf(skip)("creates the indexes of the website pages (migration comments-0002)", async () => {
    await open();
    const db = servers.current().context.database;
    const query =
      db.dialect === "sqlite"
        ? sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'comments_comment'`
        : sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'comments_comment'`;
    const names = (await query.execute(db.kysely)).rows.map((row) => row.name);
    expect(names).toEqual(expect.arrayContaining(["comments_comment_website_approved", "comments_comment_website"]));
  });
});
