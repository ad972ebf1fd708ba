import { describe, expect, it } from "vitest";
import { allowedOrigin, Websites } from "../../src/comments/websites.js";
import { STATUS_OF, VigieError } from "../../src/platform/errors.js";

function status(action: () => unknown): string {
  try {
    action();
    return "ok";
  } catch (error) {
    if (error instanceof VigieError) return `${STATUS_OF[error.code]} ${error.message}`;
    throw error;
  }
}

describe("Websites in open mode", () => {
  const websites = new Websites([]);

  it("accepts any name that follows the name rules", () => {
    expect(websites.openMode).toBe(true);
    for (const name of ["blog", "a", "My.Site_1-2", "x".repeat(64)]) {
      expect(websites.get(name)).toEqual({ name, moderation: "all", allowedOrigins: "any", articles: undefined });
    }
  });

  it("answers 404 for names that break the rules", () => {
    for (const name of ["", "x".repeat(65), "blog~1", "b/log", "blög", "a b"]) {
      expect(status(() => websites.get(name))).toBe(`404 website ${name} not found`);
    }
  });

  it("checks article names: 1–200 of A-Z a-z 0-9 . _ ~ -", () => {
    expect(status(() => websites.getWithArticle("blog", "my-post_1.2~draft"))).toBe("ok");
    expect(status(() => websites.getWithArticle("blog", "x".repeat(200)))).toBe("ok");
    for (const article of ["", "x".repeat(201), "a/b", "a b", "é", "a?b"]) {
      expect(status(() => websites.getWithArticle("blog", article))).toBe(`404 article ${article} not found`);
    }
    // The website is checked first.
    expect(status(() => websites.getWithArticle("b g", "a b"))).toBe("404 website b g not found");
  });
});

describe("Websites with a configured list", () => {
  const websites = new Websites([
    { name: "blog", "allowed-origins": ["https://blog.example.org"], moderation: "all", articles: [] },
    { name: "docs", "allowed-origins": ["*"], moderation: "none", articles: ["intro", "faq"] },
    { name: "quiet", "allowed-origins": [], moderation: "all", articles: [] },
  ]);

  it("knows only the configured websites, case-sensitively", () => {
    expect(websites.openMode).toBe(false);
    expect(websites.get("blog").moderation).toBe("all");
    expect(websites.get("docs").moderation).toBe("none");
    expect(status(() => websites.get("shop"))).toBe("404 website shop not found");
    expect(status(() => websites.get("Blog"))).toBe("404 website Blog not found");
  });

  it("applies an article allow-list when there is one", () => {
    expect(status(() => websites.getWithArticle("blog", "anything"))).toBe("ok");
    expect(status(() => websites.getWithArticle("docs", "faq"))).toBe("ok");
    expect(status(() => websites.getWithArticle("docs", "other"))).toBe("404 article other not found");
  });

  it("decides CORS origins: listed origins, * for any, none for an empty list", () => {
    const blog = websites.get("blog");
    expect(allowedOrigin(blog, "https://blog.example.org")).toBe("https://blog.example.org");
    expect(allowedOrigin(blog, "https://evil.example.org")).toBeUndefined();
    expect(allowedOrigin(blog, "http://blog.example.org")).toBeUndefined();
    expect(allowedOrigin(blog, undefined)).toBeUndefined();
    expect(allowedOrigin(websites.get("docs"), "https://anywhere.example")).toBe("https://anywhere.example");
    expect(allowedOrigin(websites.get("quiet"), "https://blog.example.org")).toBeUndefined();
    expect(allowedOrigin(new Websites([]).get("open"), "null")).toBe("null");
  });
});
