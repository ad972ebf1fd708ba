/**
 * The import parsers on the fixtures of test/fixtures/comments-import (written for these tests from
 * each format's published description): comments, replies, HTML to text, entities, CDATA,
 * non-ASCII text, and what is skipped (spam, deleted, pingbacks).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { disqusItems } from "../../src/comments/import/disqus.js";
import { htmlToText } from "../../src/comments/import/html-text.js";
import { issoItems } from "../../src/comments/import/isso.js";
import {
  articleOf,
  ImportFormatError,
  type ImportItem,
  importedId,
  type SourceComment,
  toRow,
} from "../../src/comments/import/items.js";
import { commentoItems, remark42Items } from "../../src/comments/import/json-items.js";
import { wordpressItems } from "../../src/comments/import/wordpress.js";
import { temporaryDirectory } from "../support/temporary.js";
import { FIXTURES, issoDatabase } from "./import-support.js";

async function collect(items: AsyncIterable<ImportItem>): Promise<ImportItem[]> {
  const all: ImportItem[] = [];
  for await (const item of items) all.push(item);
  return all;
}

const comments = (items: ImportItem[]) => items.filter((item): item is SourceComment => item.kind === "comment");
const skipped = (items: ImportItem[]) => items.flatMap((item) => (item.kind === "skipped" ? [item.reason] : [])).sort();

describe("HTML to text", () => {
  it("keeps paragraphs, line breaks, list items and link URLs, and decodes references", () => {
    expect(htmlToText("<p>One &amp; two</p><p>Three<br>four</p>")).toBe("One & two\n\nThree\nfour");
    expect(htmlToText('See <a href="https://example.org/x">the docs</a>.')).toBe(
      "See the docs (https://example.org/x).",
    );
    expect(htmlToText('<a href="https://example.org/">https://example.org/</a>')).toBe("https://example.org/");
    expect(htmlToText('<a href="javascript:alert(1)">click</a>')).toBe("click");
    expect(htmlToText("<ul><li>a</li><li>b</li></ul>")).toBe("- a\n- b");
    expect(htmlToText("caf&eacute; &#233; &#xE9; &hellip; &unknown; &#0;")).toBe("café é é … &unknown; \uFFFD");
    expect(htmlToText("<script>alert(1)</script>kept<!-- a comment -->")).toBe("kept");
    expect(htmlToText("a &lt;b&gt; c")).toBe("a <b> c");
    // Rendered HTML: a line break of the source is a space; WordPress's text: the author's.
    expect(htmlToText("one\ntwo")).toBe("one two");
    expect(htmlToText("one\ntwo", true)).toBe("one\ntwo");
  });
});

describe("article names", () => {
  it("reduce the thread's path as the widget does, or take its slug or id", () => {
    const thread = { url: "https://blog.example.org/posts/caf%C3%A9/index.html", slug: "cafe", id: "42" };
    expect(articleOf(thread, "path")).toBe("posts-caf-C3-A9");
    expect(articleOf(thread, "slug")).toBe("cafe");
    expect(articleOf(thread, "id")).toBe("42");
    expect(articleOf({ url: "https://blog.example.org/posts/a-post/" }, "slug")).toBe("a-post");
    expect(articleOf({ url: "/notes/x" }, "id")).toBe("notes-x");
    expect(articleOf({ url: "https://blog.example.org/" }, "path")).toBe("index");
    expect(articleOf({}, "path")).toBeUndefined();
  });

  it("makes stable ids, one per website, source and source id", () => {
    const id = importedId("blog", "disqus", "1000");
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(importedId("blog", "disqus", "1000")).toBe(id);
    expect(importedId("other", "disqus", "1000")).not.toBe(id);
  });
});

describe("the Disqus parser", () => {
  it("reads posts with their thread, parent, author, e-mail and text; skips spam and deleted posts", async () => {
    const items = await collect(disqusItems(join(FIXTURES, "disqus.xml")));
    expect(skipped(items)).toEqual(["deleted", "spam"]);
    const [first, reply, deeper, pending] = comments(items);
    expect(first).toMatchObject({
      sourceId: "1000",
      thread: { url: "https://blog.example.org/posts/first-post/", id: "post-one" },
      parentSourceId: undefined,
      author: "Ann",
      email: "ann@example.org",
      content: "Great post & thanks!\n\nSee the docs (https://example.com/docs) — really.",
      timestamp: Date.parse("2019-03-02T08:30:00Z"),
      approved: true,
    });
    expect(reply).toMatchObject({
      parentSourceId: "1000",
      author: "Bøb",
      content: "Agreed, Ann. Déjà vu <script> is text",
    });
    expect(deeper).toMatchObject({ parentSourceId: "1001", content: "Reply to the reply: 日本語のコメント" });
    expect(pending).toMatchObject({ approved: false, content: "Plain & simple, not approved yet" });
    // The thread without an identifier is named by its Disqus id.
    expect(pending?.thread.id).toBe("101");
    // An invalid address is dropped when the row is made, not the comment.
    const row = toRow(pending as SourceComment, "blog", "disqus", "path");
    expect(row).toMatchObject({
      email: undefined,
      article: "posts-caf-C3-A9-cr-C3-A8me",
      content: "Plain &amp; simple, not approved yet",
    });
  });

  it("stops at a malformed file with its line and column", async () => {
    const error = await collect(disqusItems(join(FIXTURES, "disqus-malformed.xml"))).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ImportFormatError);
    expect((error as Error).message).toMatch(/disqus-malformed\.xml:6:\d+: unexpected close tag/);
  });
});

describe("the WordPress parser", () => {
  it("reads the comments of each post; skips spam, trash and pingbacks; keeps the author's line breaks", async () => {
    const items = await collect(wordpressItems(join(FIXTURES, "wordpress.xml")));
    expect(skipped(items)).toEqual(["deleted", "pingback", "spam"]);
    const [first, reply, pending] = comments(items);
    expect(first).toMatchObject({
      sourceId: "1",
      thread: { url: "https://blog.example.org/2020/01/hello-world/", slug: "hello-world", id: "12" },
      author: "Zoë",
      authorWebsite: "https://zoe.example.org",
      email: "zoe@example.org",
      content: "First line\nSecond line with emphasis & an entity é.",
      timestamp: Date.parse("2020-01-05T10:00:00Z"),
      approved: true,
    });
    expect(reply).toMatchObject({
      parentSourceId: "1",
      content: "Thanks Zoë! See the FAQ (https://blog.example.org/faq/).",
    });
    // A javascript: website is not kept.
    expect(toRow(reply as SourceComment, "blog", "wordpress", "slug")).toMatchObject({
      authorWebsite: undefined,
      article: "hello-world",
    });
    expect(pending).toMatchObject({ parentSourceId: "2", approved: false });
  });
});

describe("the Isso parser", () => {
  it("reads the database read-only: modes, parents, seconds as milliseconds, notification wishes", async () => {
    const items = await collect(issoItems(issoDatabase()));
    expect(skipped(items)).toEqual(["deleted"]);
    const [first, reply, pending, orphan] = comments(items);
    expect(first).toMatchObject({
      sourceId: "1",
      thread: { url: "/posts/first-post/", id: "1" },
      author: "Ines",
      authorWebsite: "ines.example.org",
      email: "ines@example.org",
      content: "Hello *world* & friends",
      timestamp: 1_577_872_800_500,
      approved: true,
      notifyReplies: true,
    });
    expect(reply).toMatchObject({ parentSourceId: "1", author: "" });
    expect(pending).toMatchObject({ approved: false, parentSourceId: "2" });
    // The parent was deleted: the reply keeps its link (the widget shows the parent as deleted).
    expect(orphan).toMatchObject({ parentSourceId: "4", author: "Øyvind" });
    expect(toRow(orphan as SourceComment, "blog", "isso", "path")).toMatchObject({ article: "notes-na-C3-AFve-idea" });
    expect(toRow(reply as SourceComment, "blog", "isso", "path")).toMatchObject({ author: "Anonymous" });
  });

  it("refuses a file that is not an Isso database", async () => {
    await expect(collect(issoItems(join(FIXTURES, "commento.json")))).rejects.toThrow(ImportFormatError);
  });
});

describe("the Remark42 parser", () => {
  it("reads the backup line by line, skipping the metadata line and deleted comments", async () => {
    const items = await collect(remark42Items(join(FIXTURES, "remark42.jsonl")));
    expect(skipped(items)).toEqual(["deleted"]);
    const [first, reply, deeper] = comments(items);
    expect(first).toMatchObject({
      sourceId: "7e1a6c1e-0001-4000-8000-000000000001",
      author: "Émile",
      content: "Nice write-up & examples.",
      approved: true,
      timestamp: Date.parse("2021-06-01T12:00:00Z"),
    });
    expect(reply).toMatchObject({ content: "Thanks! Code: a < b", timestamp: Date.parse("2021-06-01T11:00:00Z") });
    expect(deeper?.parentSourceId).toBe("7e1a6c1e-0001-4000-8000-000000000002");
  });

  it("names the line of a line that is not JSON", async () => {
    const file = join(temporaryDirectory("vigie-remark42-"), "backup");
    const lines = readFileSync(join(FIXTURES, "remark42.jsonl"), "utf8").split("\n");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(file, [lines[0], lines[1], '{"id": "broken', lines[2]].join("\n"));
    await expect(collect(remark42Items(file))).rejects.toThrow(/^line 3: not JSON/);
  });
});

describe("the Commento parser", () => {
  it("reads comments with their commenters; skips flagged and deleted ones", async () => {
    const items = await collect(commentoItems(join(FIXTURES, "commento.json")));
    expect(skipped(items)).toEqual(["deleted", "spam"]);
    const [first, reply] = comments(items);
    expect(first).toMatchObject({
      sourceId: "c001",
      thread: { url: "/posts/first-post/" },
      author: "Una",
      authorWebsite: "https://una.example.org",
      email: "una@example.org",
      content: "Hello there & welcome",
      approved: true,
    });
    expect(reply).toMatchObject({
      parentSourceId: "c001",
      author: "Jürgen",
      authorWebsite: undefined,
      approved: false,
    });
  });
});
