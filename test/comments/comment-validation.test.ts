import { describe, expect, it } from "vitest";
import {
  ANSWER_RULE,
  AUTHOR_RULE,
  AUTHOR_WEBSITE_RULE,
  CONTENT_RULE,
  NUL_RULE,
  parseCommentFields,
  SIGNATURE_RULE,
  TIMESTAMP_RULE,
} from "../../src/comments/comment-validation.js";
import { fieldError } from "../../src/platform/errors.js";
import { ValidationError } from "../../src/platform/validation.js";

const SIGNATURE = "a".repeat(64);
const valid = { author: "Ann", content: "Nice post", answer: "10", signature: SIGNATURE, timestamp: 1_700_000_000_000 };

/** The 400 message a body gets, or "ok". */
function messageOf(body: unknown): string {
  try {
    parseCommentFields(body);
    return "ok";
  } catch (error) {
    if (error instanceof ValidationError) return fieldError(error).message;
    throw error;
  }
}

describe("parseCommentFields", () => {
  it("returns the fields, trimmed, and ignores unknown fields", () => {
    expect(parseCommentFields({ ...valid, author: "  Ann ", content: "\n Nice post \n", challenge: "x" })).toEqual({
      author: "Ann",
      authorWebsite: undefined,
      content: "Nice post",
      answer: "10",
      signature: SIGNATURE,
      timestamp: 1_700_000_000_000,
      parent: undefined,
      email: undefined,
      notifyReplies: false,
      honeypot: false,
    });
  });

  it("homepage, the honeypot: filled with anything but blank or null", () => {
    for (const homepage of ["http://spam.example", 1, true, {}, " x "]) {
      expect(parseCommentFields({ ...valid, homepage }).honeypot, JSON.stringify(homepage)).toBe(true);
    }
    for (const homepage of ["", "  ", null, undefined]) {
      expect(parseCommentFields({ ...valid, homepage }).honeypot, JSON.stringify(homepage)).toBe(false);
    }
  });

  it("parent, email and notify-replies: optional; parent lower-cased, email trimmed", () => {
    const parent = "6F1C0E2A-1B2C-4D3E-8F40-5A6B7C8D9E0F";
    expect(parseCommentFields({ ...valid, parent, email: " ann@example.org ", "notify-replies": true })).toMatchObject({
      parent: parent.toLowerCase(),
      email: "ann@example.org",
      notifyReplies: true,
    });
    expect(messageOf({ ...valid, email: "ann@example" })).toMatch(/^field email: must be an e-mail address/);
    expect(messageOf({ ...valid, email: "ann@exa mple.org" })).toMatch(/^field email: /);
    expect(messageOf({ ...valid, email: "ann@exam\u0000ple.org" })).toMatch(/^field email: /);
    expect(messageOf({ ...valid, parent: "x" })).toMatch(/^field parent: /);
  });

  it("refuses a body that is not an object", () => {
    for (const body of [undefined, null, [], "text", 42]) {
      expect(messageOf(body)).toBe("request body must be a JSON object");
    }
  });

  it("author: required, string, 1–100 characters after trimming", () => {
    expect(messageOf({ ...valid, author: undefined })).toBe("field author: is required");
    for (const author of ["", "   ", 42, null, "x".repeat(101), ["Ann"]]) {
      expect(messageOf({ ...valid, author })).toBe(`field author: ${AUTHOR_RULE}`);
    }
    expect(AUTHOR_RULE).toBe("must be a non-empty string of at most 100 characters");
    expect(messageOf({ ...valid, author: "x".repeat(100) })).toBe("ok");
    expect(messageOf({ ...valid, author: ` ${"x".repeat(100)} ` })).toBe("ok");
    // Characters, not UTF-16 code units: 100 emoji are 100 characters.
    expect(messageOf({ ...valid, author: "👋".repeat(100) })).toBe("ok");
    expect(messageOf({ ...valid, author: "👋".repeat(101) })).toBe(`field author: ${AUTHOR_RULE}`);
    expect(messageOf({ ...valid, author: "A\u0000nn" })).toBe(`field author: ${NUL_RULE}`);
  });

  it("author-website: optional bare domain or http(s) URL of at most 200 characters", () => {
    for (const site of [
      "example.org",
      "sub.example.co.uk",
      "http://example.org",
      "https://example.org/blog?x=1#top",
      "https://EXAMPLE.org:8443/",
      "http://127.0.0.1:8080",
    ]) {
      expect(parseCommentFields({ ...valid, "author-website": site }).authorWebsite).toBe(site);
    }
    for (const absent of [undefined, null, "", "   "]) {
      expect(parseCommentFields({ ...valid, "author-website": absent }).authorWebsite).toBeUndefined();
    }
    for (const site of [
      "javascript:alert(1)",
      "ftp://example.org",
      "mailto:ann@example.org",
      "data:text/html,hi",
      "example",
      "-example.org",
      "example.org/path",
      "https://",
      "https://exa mple.org",
      'https://example.org/"onmouseover="x',
      "https://example.org/<script>",
      `https://example.org/${"x".repeat(200)}`,
      42,
      {},
    ]) {
      expect(messageOf({ ...valid, "author-website": site })).toBe(`field author-website: ${AUTHOR_WEBSITE_RULE}`);
    }
  });

  it("content: required, string, 1–10 000 characters after trimming", () => {
    expect(messageOf({ ...valid, content: undefined })).toBe("field content: is required");
    for (const content of ["", " \n ", 1, false, "x".repeat(10_001)]) {
      expect(messageOf({ ...valid, content })).toBe(`field content: ${CONTENT_RULE}`);
    }
    expect(CONTENT_RULE).toBe("must be a non-empty string of at most 10000 characters");
    expect(messageOf({ ...valid, content: `  ${"x".repeat(10_000)}  ` })).toBe("ok");
  });

  it("answer: required string of at most 64 characters", () => {
    expect(messageOf({ ...valid, answer: undefined })).toBe("field answer: is required");
    for (const answer of [10, null, "x".repeat(65)]) {
      expect(messageOf({ ...valid, answer })).toBe(`field answer: ${ANSWER_RULE}`);
    }
    expect(messageOf({ ...valid, answer: "" })).toBe("ok");
    expect(messageOf({ ...valid, answer: "x".repeat(64) })).toBe("ok");
  });

  it("signature: 64 hex characters, returned lower-case", () => {
    expect(messageOf({ ...valid, signature: undefined })).toBe("field signature: is required");
    for (const signature of ["a".repeat(63), "a".repeat(65), "g".repeat(64), 1, ""]) {
      expect(messageOf({ ...valid, signature })).toBe(`field signature: ${SIGNATURE_RULE}`);
    }
    expect(parseCommentFields({ ...valid, signature: "AbCdEf".padEnd(64, "0") }).signature).toBe(
      "abcdef".padEnd(64, "0"),
    );
  });

  it("timestamp: integer milliseconds, or a string of digits", () => {
    expect(messageOf({ ...valid, timestamp: undefined })).toBe("field timestamp: is required");
    expect(parseCommentFields({ ...valid, timestamp: "1700000000000" }).timestamp).toBe(1_700_000_000_000);
    expect(parseCommentFields({ ...valid, timestamp: 0 }).timestamp).toBe(0);
    for (const timestamp of [1.5, -1, "-1", "12a", "", " 1", "1e3", null, true, 2 ** 53, "99999999999999999"]) {
      expect(messageOf({ ...valid, timestamp })).toBe(`field timestamp: ${TIMESTAMP_RULE}`);
    }
  });

  it("checks the fields in the order of the spec table", () => {
    expect(messageOf({})).toBe("field author: is required");
    expect(messageOf({ author: "a", "author-website": "ftp://x" })).toMatch(/^field author-website:/);
    expect(messageOf({ author: "a", answer: 1 })).toBe("field content: is required");
    expect(messageOf({ author: "a", content: "c", signature: "x" })).toBe("field answer: is required");
    expect(messageOf({ author: "a", content: "c", answer: "1", timestamp: "x" })).toBe("field signature: is required");
  });
});
