/**
 * The signed links of comment e-mail: a token names its action, comment and expiry; a changed
 * byte, another key, a malformed token or a passed expiry is refused.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MODERATION_LINK_TTL_MS, signLink, TOKEN_MAX_LENGTH, verifyLink } from "../../src/comments/mail-links.js";

const ID = "6f1c0e2a-1b2c-4d3e-8f40-5a6b7c8d9e0f";
const NOW = 1_700_000_000_000;

describe("mail links", () => {
  it("round-trips action, comment and expiry, within the URL-safe alphabet and length bound", () => {
    for (const action of ["approve", "delete", "unsubscribe"] as const) {
      const link = { action, commentId: ID, expiresAt: NOW + MODERATION_LINK_TTL_MS };
      const token = signLink("key", link);
      expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      expect(token.length).toBeLessThanOrEqual(TOKEN_MAX_LENGTH);
      expect(verifyLink("key", token, NOW)).toEqual(link);
    }
  });

  it("is valid up to its expiry, then expired", () => {
    const token = signLink("key", { action: "approve", commentId: ID, expiresAt: NOW + 1000 });
    expect(verifyLink("key", token, NOW + 1000)).toMatchObject({ action: "approve" });
    expect(verifyLink("key", token, NOW + 1001)).toBe("expired");
  });

  it("refuses another key, a changed payload or signature, and malformed tokens", () => {
    const token = signLink("key", { action: "approve", commentId: ID, expiresAt: NOW + 1000 });
    expect(verifyLink("other-key", token, NOW)).toBe("invalid");
    const [payload, mac] = token.split(".") as [string, string];
    const forged = Buffer.from(JSON.stringify(["delete", ID, NOW + 1000])).toString("base64url");
    expect(verifyLink("key", `${forged}.${mac}`, NOW)).toBe("invalid");
    const flipped = `${mac.slice(0, -1)}${mac.endsWith("A") ? "B" : "A"}`;
    expect(verifyLink("key", `${payload}.${flipped}`, NOW)).toBe("invalid");
    for (const bad of [undefined, 1, "", ".", "abc", `${payload}.`, `.${mac}`, "x".repeat(TOKEN_MAX_LENGTH + 1)]) {
      expect(verifyLink("key", bad, NOW)).toBe("invalid");
    }
  });

  it("refuses a well-signed payload that is not [action, uuid, integer]", () => {
    /** A token over any payload, signed as signLink signs. */
    const signed = (value: unknown) => {
      const payload = Buffer.from(JSON.stringify(value)).toString("base64url");
      const mac = createHmac("sha256", "key").update(`vigie-comments-mail\n${payload}`).digest("base64url");
      return `${payload}.${mac}`;
    };
    expect(verifyLink("key", signed(["approve", ID, NOW]), NOW)).toMatchObject({ commentId: ID });
    for (const value of [
      ["publish", ID, NOW],
      ["approve", "not-a-uuid", NOW],
      ["approve", ID, "soon"],
      ["approve", ID, 1.5],
      ["approve", ID],
      { action: "approve" },
      null,
    ]) {
      expect(verifyLink("key", signed(value), NOW), JSON.stringify(value)).toBe("invalid");
    }
  });
});
