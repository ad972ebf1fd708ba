/**
 * The comment widget's logic without a browser (docs/comments.md): the article name of a page, the
 * decoding of the stored text, where a server error goes, the paging cursor, the shape checks.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  articleFromPath,
  authorHref,
  type Comment,
  decodeEntities,
  errorOf,
  isChallenge,
  isComment,
  isCommentList,
  isPosted,
  nextPage,
  PAGE_SIZE,
  pageQuery,
  placeError,
  threadLines,
} from "../../../src/comments/browser/widget-logic.js";
import { escapeHtml } from "../../../src/platform/html.js";

/** An article name: 1–200 characters of `A-Z a-z 0-9 . _ ~ -`. */
const ARTICLE = /^[A-Za-z0-9._~-]{1,200}$/;

/** A seed printed on failure, so a failing run can be replayed. */
const seed = Number(process.env.VIGIE_TEST_SEED ?? Date.now() % 1_000_000);
const runs = { seed, numRuns: 500 };

describe("articleFromPath", () => {
  it.each([
    ["/posts/my-post/", "posts-my-post"],
    ["/posts/my-post", "posts-my-post"],
    ["/posts/my-post/index.html", "posts-my-post"],
    ["/posts/my-post/index.htm", "posts-my-post"],
    ["/2024/01/hello_world.html", "2024-01-hello_world.html"],
    ["/a~b/c.d", "a~b-c.d"],
    ["/caf%C3%A9/", "caf-C3-A9"],
    ["/a//b/", "a-b"],
    ["/a+b/", "a-b"],
    ["/", "index"],
    ["", "index"],
    ["/index.html", "index"],
    ["/%F0%9F%98%80/", "F0-9F-98-80"],
    ["/not-index.html", "not-index.html"],
  ])("reduces %j to %j", (path, article) => {
    expect(articleFromPath(path)).toBe(article);
  });

  it("cuts a long path at 200 characters", () => {
    expect(articleFromPath(`/${"a".repeat(300)}/`)).toBe("a".repeat(200));
  });

  it(`always gives a valid article name (seed ${seed})`, () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 400 }), (path) => {
        expect(articleFromPath(path)).toMatch(ARTICLE);
      }),
      runs,
    );
  });

  it("keeps a path already in the article character set, slashes aside", () => {
    expect(articleFromPath("/Release-1.2_final~draft")).toBe("Release-1.2_final~draft");
  });
});

describe("decodeEntities", () => {
  it("decodes the five entities of src/platform/html.ts", () => {
    expect(decodeEntities("&amp; &lt; &gt; &quot; &#39;")).toBe(`& < > " '`);
  });

  it("decodes in one pass: an escaped entity shows as typed", () => {
    expect(decodeEntities("&amp;lt;b&amp;gt;")).toBe("&lt;b&gt;");
    expect(decodeEntities(escapeHtml("&amp;"))).toBe("&amp;");
  });

  it("leaves other entities and lone ampersands alone", () => {
    expect(decodeEntities("&nbsp; &#60; & &amp")).toBe("&nbsp; &#60; & &amp");
  });

  it("gives back an XSS payload as the characters typed", () => {
    const payload = "<img src=x onerror=alert(1)>";
    expect(decodeEntities(escapeHtml(payload))).toBe(payload);
  });

  it(`undoes escapeHtml for any text (seed ${seed})`, () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), (text) => {
        expect(decodeEntities(escapeHtml(text))).toBe(text);
      }),
      runs,
    );
  });
});

describe("placeError", () => {
  it.each([
    ["field author: must be a non-empty string of at most 100 characters", "author"],
    ["field content: must be a non-empty string of at most 10000 characters", "content"],
    ["field author-website: must be a bare domain (example.org) or an http:// or https:// URL", "author-website"],
    ["field answer: must be a string of at most 64 characters", "answer"],
  ] as const)("puts %j beside %s, without its prefix", (sentence, field) => {
    const placed = placeError(sentence);
    expect(placed.field).toBe(field);
    expect(placed.renew).toBe(false);
    expect(placed.text).toBe(sentence.replace(/^field [\w-]+: m/, "M"));
  });

  it.each(["Bad challenge response", "The challenge has expired", "The challenge has already been used"])(
    "puts the challenge's %j beside the answer and asks for a new question",
    (sentence) => {
      expect(placeError(sentence)).toEqual({ field: "answer", text: sentence, renew: true });
    },
  );

  it("puts errors of the challenge's hidden fields beside the answer, with a new question", () => {
    expect(placeError("field signature: must be 64 hexadecimal characters")).toEqual({
      field: "answer",
      text: "Must be 64 hexadecimal characters",
      renew: true,
    });
    expect(placeError("field timestamp: must be an integer number of milliseconds").renew).toBe(true);
  });

  it.each([
    "too many comments from this address; retry in 120 s",
    "website blog not found",
    "article my-post not found",
    "request body is larger than the limit of 65536 bytes",
    "field other: must be something",
  ])("keeps %j for the whole form", (sentence) => {
    expect(placeError(sentence)).toEqual({ field: undefined, text: sentence, renew: false });
  });
});

/** `count` approved comments, one per `step` milliseconds from `start`, oldest first. */
function comments(count: number, start = 1_000, step = 1): Comment[] {
  return Array.from({ length: count }, (_, index) => ({
    id: `c${start + index * step}-${index}`,
    content: `comment ${index}`,
    author: "Ann",
    approved: true,
    timestamp: start + index * step,
  }));
}

/**
 * The public list route (`?limit=&before=`) over `all` (oldest first): the `limit` newest before
 * `before`, oldest first, then those sharing the oldest one's millisecond when `ties` (the server's
 * pages never end inside a millisecond).
 */
function serve(all: readonly Comment[], query: string, ties: boolean): Comment[] {
  const parameters = new URLSearchParams(query);
  const limit = Number(parameters.get("limit"));
  const before = parameters.has("before") ? Number(parameters.get("before")) : Number.POSITIVE_INFINITY;
  const eligible = all.filter((comment) => comment.timestamp < before);
  let page = eligible.slice(-limit);
  const oldest = page[0];
  if (ties && oldest !== undefined) {
    page = eligible.filter((comment) => comment.timestamp >= oldest.timestamp);
  }
  return page;
}

/** Pages through `all` as the widget does; returns what it shows after each page. */
function pageThrough(all: readonly Comment[], ties: boolean): { shown: Comment[]; pages: number[] } {
  let shown: Comment[] = [];
  const pages: number[] = [];
  for (let more = true; more; ) {
    const page = nextPage(serve(all, pageQuery(shown), ties), shown);
    expect(page.fresh.length).toBeLessThanOrEqual(PAGE_SIZE);
    shown = [...page.fresh, ...shown];
    pages.push(page.fresh.length);
    more = page.more;
    if (pages.length > 100) throw new Error("paging does not end");
  }
  return { shown, pages };
}

describe("paging (pageQuery, nextPage)", () => {
  it("asks first for one more than a page, without cursor", () => {
    expect(pageQuery([])).toBe(`limit=${PAGE_SIZE + 1}`);
  });

  it("then asks up to the oldest shown millisecond included, for as many more as it holds", () => {
    const shown = comments(50, 5_000);
    expect(pageQuery(shown)).toBe(`limit=${PAGE_SIZE + 2}&before=5001`);
    const tied = [...comments(3, 5_000, 0), ...comments(47, 6_000)];
    expect(pageQuery(tied)).toBe(`limit=${PAGE_SIZE + 4}&before=5001`);
  });

  it("shows 50 or fewer without a 'show older' button", () => {
    for (const count of [0, 1, 49, 50]) {
      const { shown, pages } = pageThrough(comments(count), true);
      expect(pages).toEqual([count]);
      expect(shown).toHaveLength(count);
    }
  });

  it("shows the newest 50 of 51, then the oldest one", () => {
    const all = comments(51);
    const first = nextPage(serve(all, pageQuery([]), true), []);
    expect(first.fresh).toEqual(all.slice(1));
    expect(first.more).toBe(true);
    expect(pageThrough(all, true).pages).toEqual([50, 1]);
  });

  it.each([true, false])("shows every comment once, in order, across pages (server page ties: %s)", (ties) => {
    for (const count of [101, 120, 150, 230]) {
      const all = comments(count);
      const { shown, pages } = pageThrough(all, ties);
      expect(shown).toEqual(all);
      expect(pages.slice(0, -1).every((size) => size === PAGE_SIZE)).toBe(true);
    }
  });

  it.each([true, false])(
    "neither skips nor repeats comments that share a millisecond at a page boundary (ties: %s)",
    (ties) => {
      // 130 comments, three per millisecond: every page boundary falls inside a millisecond.
      const all: Comment[] = Array.from({ length: 130 }, (_, index) => ({
        id: `id-${String(index).padStart(3, "0")}`,
        content: `comment ${index}`,
        author: "Ann",
        approved: true,
        timestamp: 10_000 + Math.floor(index / 3),
      }));
      const { shown } = pageThrough(all, ties);
      expect(shown.map((comment) => comment.id)).toEqual(all.map((comment) => comment.id));
    },
  );
});

describe("authorHref", () => {
  it("links a bare domain over https and keeps an http(s) URL", () => {
    expect(authorHref("example.org")).toBe("https://example.org/");
    expect(authorHref("http://example.org/me")).toBe("http://example.org/me");
    expect(authorHref("HTTPS://Example.org")).toBe("https://example.org/");
  });

  it("gives no link for nothing, or for anything that is not then an http(s) URL", () => {
    expect(authorHref(undefined)).toBeUndefined();
    expect(authorHref("")).toBeUndefined();
    expect(authorHref("javascript:alert(1)")).toBeUndefined();
    expect(authorHref("https://")).toBeUndefined();
  });
});

describe("answer shapes", () => {
  const comment = { id: "x", content: "a", author: "b", approved: true, timestamp: 1 };

  it("recognises comments, lists and challenges", () => {
    expect(isComment(comment)).toBe(true);
    expect(isComment({ ...comment, "author-website": "example.org", article: "a" })).toBe(true);
    expect(isCommentList([comment, comment])).toBe(true);
    expect(isCommentList([])).toBe(true);
    expect(isChallenge({ question: "q", signature: "s", timestamp: 1 })).toBe(true);
  });

  it("refuses anything else", () => {
    expect(isComment({ ...comment, timestamp: "1" })).toBe(false);
    expect(isComment({ ...comment, "author-website": 3 })).toBe(false);
    expect(isComment(null)).toBe(false);
    expect(isCommentList({ error: "website blog not found" })).toBe(false);
    expect(isCommentList([comment, {}])).toBe(false);
    expect(isChallenge({ question: "q", signature: "s" })).toBe(false);
    expect(isChallenge(undefined)).toBe(false);
  });

  it("reads the error sentence of an error answer", () => {
    expect(errorOf({ error: "website blog not found" })).toBe("website blog not found");
    expect(errorOf({ error: 3 })).toBeUndefined();
    expect(errorOf("text")).toBeUndefined();
  });
});

describe("isPosted", () => {
  const stored: Comment = {
    id: "x",
    author: "Ann &amp; Bob",
    content: "&lt;b&gt;hi&lt;/b&gt;\nthere",
    approved: true,
    timestamp: 2_000,
  };

  it("finds the comment just posted by its decoded author and content, trimmed as the server does", () => {
    expect(isPosted(stored, " Ann & Bob ", "<b>hi</b>\nthere\n", 1_500)).toBe(true);
  });

  it("does not take an older identical comment, nor another one", () => {
    expect(isPosted(stored, "Ann & Bob", "<b>hi</b>\nthere", 2_500)).toBe(false);
    expect(isPosted(stored, "Ann", "<b>hi</b>\nthere", 1_500)).toBe(false);
  });
});

describe("threadLines", () => {
  const at = (id: string, parent?: string) => ({
    id,
    author: `by-${id}`,
    content: id,
    approved: true,
    timestamp: Number(id.replace(/\D/g, "")),
    ...(parent === undefined ? {} : { parent }),
  });
  const shape = (lines: ReturnType<typeof threadLines>) =>
    lines.map((line) => `${line.comment?.id ?? "deleted"}@${line.depth}${line.replyTo ? `>${line.replyTo}` : ""}`);

  it("puts replies under their parent, depth first, at most three levels deep", () => {
    const comments = [at("c1"), at("c2", "c1"), at("c3"), at("c4", "c2"), at("c5", "c4"), at("c6", "c1")];
    expect(shape(threadLines(comments, true))).toEqual(["c1@0", "c2@1", "c4@2", "c5@2>by-c4", "c6@1", "c3@0"]);
  });

  it("shows a missing parent as deleted when the list is complete, as top level when older pages remain", () => {
    const comments = [at("c2", "gone"), at("c3", "gone"), at("c4")];
    expect(shape(threadLines(comments, true))).toEqual(["deleted@0", "c2@1", "c3@1", "c4@0"]);
    expect(shape(threadLines(comments, false))).toEqual(["c2@0", "c3@0", "c4@0"]);
  });

  it("shows every comment once, even in a cycle of parents", () => {
    expect(shape(threadLines([at("c1", "c2"), at("c2", "c1")], true))).toEqual(["c1@0", "c2@1"]);
  });
});
