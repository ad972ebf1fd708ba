/**
 * The logic of the registry pages' script (src/registry/browser/session.ts): the session kept in
 * `sessionStorage`, the name of the token it creates, and which links it follows itself.
 */
import { describe, expect, it } from "vitest";
import { isRegistryPage, parseSession, tokenName } from "../../../src/registry/browser/session.js";

describe("the registry pages' session", () => {
  it("reads back what it kept, and nothing else", () => {
    expect(parseSession(JSON.stringify({ token: "vigie_x", user: "alice", tokenName: "registry-pages-00" }))).toEqual({
      token: "vigie_x",
      user: "alice",
      tokenName: "registry-pages-00",
    });
    expect(parseSession(JSON.stringify({ token: "vigie_x" }))).toEqual({ token: "vigie_x" });
    for (const text of [null, "", "{", "null", "[]", '{"token": ""}', '{"token": 3}', '{"user": "a"}']) {
      expect(parseSession(text), String(text)).toBeUndefined();
    }
  });

  it("names its tokens registry-pages-<16 hex digits>", () => {
    expect(tokenName(new Uint8Array([0, 1, 2, 171, 255, 16, 32, 64]))).toBe("registry-pages-000102abff102040");
  });

  it("follows only the registry's pages on its own origin", () => {
    const origin = "http://vigie.test";
    const page = (href: string) => isRegistryPage(new URL(href, `${origin}/registry`), origin);
    expect(page("/registry")).toBe(true);
    expect(page("/registry?q=parser&page=2")).toBe(true);
    expect(page("/registry/serde")).toBe(true);
    expect(page("/registry/registry.js")).toBe(false);
    expect(page("/me")).toBe(false);
    expect(page("/registry/a/b")).toBe(false);
    expect(page("/api/v1/registry/crates")).toBe(false);
    expect(page("https://evil.example/registry")).toBe(false);
    expect(page("http://vigie.test:8080/registry")).toBe(false);
  });
});
