/**
 * The moderation page's logic without a browser (docs/comments.md): the registry token's name, the
 * session kept in sessionStorage, the websites typed, the order of the pending list, the summary
 * of an action.
 */
import { describe, expect, it } from "vitest";
import {
  actionSummary,
  isWebsiteName,
  moderatedComments,
  newestFirst,
  parseSession,
  parseWebsites,
  tokenName,
  websiteList,
} from "../../../src/comments/browser/admin-logic.js";
import { isArticleName } from "../../../src/comments/browser/widget-logic.js";

const comment = { id: "b", content: "c", author: "a", approved: false, timestamp: 5 };

describe("tokenName", () => {
  it("is comments-admin- and the random bytes in hex", () => {
    expect(tokenName(new Uint8Array([0, 1, 171, 255, 16, 32, 64, 128]))).toBe("comments-admin-0001abff10204080");
  });
});

describe("parseSession", () => {
  it("reads a session kept by the page", () => {
    expect(parseSession('{"token":"t"}')).toEqual({ token: "t" });
    expect(parseSession('{"token":"vigie_x","user":"root","tokenName":"comments-admin-00"}')).toEqual({
      token: "vigie_x",
      user: "root",
      tokenName: "comments-admin-00",
    });
  });

  it("takes anything else for no session", () => {
    for (const text of [null, "", "not json", "null", "[]", '{"token":""}', '{"token":3}', '"t"']) {
      expect(parseSession(text), String(text)).toBeUndefined();
    }
  });

  it("drops fields of the wrong type", () => {
    expect(parseSession('{"token":"t","user":3,"tokenName":null}')).toEqual({ token: "t" });
  });
});

describe("parseWebsites", () => {
  it("splits on spaces and commas, without duplicates, in the order typed", () => {
    expect(parseWebsites(" blog, docs  blog\nshop ")).toEqual({ websites: ["blog", "docs", "shop"], invalid: [] });
    expect(parseWebsites("")).toEqual({ websites: [], invalid: [] });
  });

  it("sets apart what is not a website name", () => {
    expect(parseWebsites("blog my/site é x".replace("x", "a".repeat(65)))).toEqual({
      websites: ["blog"],
      invalid: ["my/site", "é", "a".repeat(65)],
    });
  });
});

describe("isWebsiteName and isArticleName", () => {
  it("follow the name rules of docs/comments.md", () => {
    expect(isWebsiteName("blog.example_1-2")).toBe(true);
    expect(isWebsiteName("a".repeat(64))).toBe(true);
    expect(isWebsiteName("a".repeat(65))).toBe(false);
    expect(isWebsiteName("a~b")).toBe(false);
    expect(isWebsiteName("")).toBe(false);
    expect(isArticleName("my-post.v2_~x")).toBe(true);
    expect(isArticleName("a".repeat(200))).toBe(true);
    expect(isArticleName("")).toBe(false);
    expect(isArticleName("a/b")).toBe(false);
    expect(isArticleName("a".repeat(201))).toBe(false);
  });
});

describe("newestFirst", () => {
  it("orders by timestamp, then id, both descending", () => {
    const comments = [
      { ...comment, id: "a", timestamp: 1 },
      { ...comment, id: "c", timestamp: 2 },
      { ...comment, id: "d", timestamp: 2 },
      { ...comment, id: "b", timestamp: 3 },
    ];
    expect(comments.sort(newestFirst).map((each) => each.id)).toEqual(["b", "d", "c", "a"]);
  });
});

describe("moderatedComments", () => {
  it("adds the website to a website's list, whose comments carry their article", () => {
    expect(moderatedComments("blog", [{ ...comment, article: "post" }])).toEqual([
      { ...comment, article: "post", website: "blog" },
    ]);
  });

  it("adds the website and the article to an article's list", () => {
    expect(moderatedComments("blog", [comment], "post")).toEqual([{ ...comment, article: "post", website: "blog" }]);
  });

  it("refuses anything else", () => {
    expect(moderatedComments("blog", [comment])).toBeUndefined();
    expect(moderatedComments("blog", { error: "website blog not found" })).toBeUndefined();
    expect(moderatedComments("blog", [{ ...comment, timestamp: "5" }], "post")).toBeUndefined();
  });
});

describe("actionSummary", () => {
  it("says what was done, and what failed once per reason", () => {
    expect(actionSummary("approve", 1, [])).toBe("Approved 1 comment.");
    expect(actionSummary("delete", 3, [])).toBe("Deleted 3 comments.");
    expect(actionSummary("delete", 0, ["comment x not found", "comment x not found"])).toBe(
      "Deleted 0 comments. 2 failed: comment x not found.",
    );
  });
});

describe("websiteList", () => {
  it("reads the names of GET /api/admin/website, refusing any other shape", () => {
    expect(websiteList({ websites: ["blog", "docs.example"] })).toEqual(["blog", "docs.example"]);
    expect(websiteList({ websites: [] })).toEqual([]);
    for (const value of [null, [], "blog", { websites: "blog" }, { websites: ["blog", 3] }, { websites: ["a/b"] }]) {
      expect(websiteList(value)).toBeUndefined();
    }
  });
});
