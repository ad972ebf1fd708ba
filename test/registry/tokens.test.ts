import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { rfc3339 } from "../../src/platform/time.js";
import {
  DAY_MS,
  generateToken,
  hashToken,
  isTokenFormat,
  newTokenBody,
  TOKEN_NAME_RULE,
  TOKEN_PREFIX,
  tokenName,
  tokenView,
} from "../../src/registry/tokens.js";
import { validationError } from "../support/validation.js";

const rule = (run: () => unknown): string => validationError(run).message;

describe("token format", () => {
  it("is vigie_ and 32 random bytes in base64url (43 characters)", () => {
    const token = generateToken();
    expect(token.startsWith(TOKEN_PREFIX)).toBe(true);
    expect(token).toMatch(/^vigie_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token.slice(TOKEN_PREFIX.length), "base64url")).toHaveLength(32);
    expect(isTokenFormat(token)).toBe(true);
  });

  it("never repeats", () => {
    const tokens = new Set(Array.from({ length: 1000 }, generateToken));
    expect(tokens.size).toBe(1000);
  });

  it("refuses anything else without a lookup", () => {
    const token = generateToken();
    expect(isTokenFormat(token.slice(0, -1))).toBe(false);
    expect(isTokenFormat(`${token}A`)).toBe(false);
    expect(isTokenFormat(token.replace("vigie_", "vigi3_"))).toBe(false);
    expect(isTokenFormat(`vigie_${"=".repeat(43)}`)).toBe(false);
    expect(isTokenFormat("")).toBe(false);
  });
});

describe("token hash", () => {
  it("is the SHA-256 of the token in lower-case hex", () => {
    expect(hashToken("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const token = generateToken();
    expect(hashToken(token)).toBe(createHash("sha256").update(token).digest("hex"));
    expect(hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("token request body", () => {
  it("defaults validity to 365 days and ignores unknown keys", () => {
    expect(newTokenBody({ name: "ci", user: "ann", password: "x", extra: 1 }, "")).toEqual({
      name: "ci",
      user: "ann",
      password: "x",
      validity: 365,
    });
  });

  it("takes optional scopes and crates, duplicates removed; absent or null means all (docs/cargo.md)", () => {
    const base = { name: "a", user: "b", password: "c" };
    expect(newTokenBody(base, "")).not.toHaveProperty("scopes");
    expect(newTokenBody(base, "")).not.toHaveProperty("crates");
    expect(newTokenBody({ ...base, scopes: null, crates: null }, "")).toEqual({ ...base, validity: 365 });
    expect(
      newTokenBody({ ...base, scopes: ["yank", "publish-new", "yank"], crates: ["acme-*", "Serde", "serde"] }, ""),
    ).toEqual({ ...base, validity: 365, scopes: ["yank", "publish-new"], crates: ["acme-*", "Serde"] });
  });

  it("names the scope or crate pattern that breaks the rules", () => {
    const base = { name: "a", user: "b", password: "c" };
    expect(rule(() => newTokenBody({ ...base, scopes: [] }, ""))).toBe(
      "scopes: must not be empty (leave the field out to allow all)",
    );
    expect(rule(() => newTokenBody({ ...base, scopes: ["yank", "read"] }, ""))).toBe(
      "scopes[1]: must be one of publish-new, publish-update, yank, change-owners",
    );
    expect(rule(() => newTokenBody({ ...base, scopes: "yank" }, ""))).toBe("scopes: must be an array");
    expect(rule(() => newTokenBody({ ...base, crates: [] }, ""))).toBe(
      "crates: must not be empty (leave the field out to allow all)",
    );
    expect(rule(() => newTokenBody({ ...base, crates: ["ok", "*"] }, ""))).toBe(
      "crates[1]: must be a crate name (1 to 64 ASCII letters, digits, - or _, starting with a letter), optionally followed by *",
    );
  });

  it("accepts validity 1 to 3650 days", () => {
    expect(newTokenBody({ name: "a", user: "b", password: "c", validity: 1 }, "").validity).toBe(1);
    expect(newTokenBody({ name: "a", user: "b", password: "c", validity: 3650 }, "").validity).toBe(3650);
    for (const validity of [0, 3651, 1.5, "10", -1, null]) {
      expect(rule(() => newTokenBody({ name: "a", user: "b", password: "c", validity }, ""))).toBe(
        "validity: must be an integer between 1 and 3650",
      );
    }
  });

  it("names the missing or invalid field", () => {
    expect(rule(() => newTokenBody({ user: "b", password: "c" }, ""))).toBe("name: is required");
    for (const name of [
      "",
      "x".repeat(101),
      "bell\u0007",
      "nul\u0000",
      "del\u007f",
      "c1\u0085",
      "line\u2028",
      "\ud800",
      "evil\u202egnp.exe",
      "iso\u2066late",
      3,
    ]) {
      expect(
        rule(() => newTokenBody({ name, user: "b", password: "c" }, "")),
        JSON.stringify(name),
      ).toBe(`name: ${TOKEN_NAME_RULE}`);
    }
    expect(rule(() => newTokenBody({ name: "a", password: "c" }, ""))).toBe("user: is required");
    expect(rule(() => newTokenBody({ name: "a", user: "b" }, ""))).toBe("password: is required");
    expect(rule(() => newTokenBody({ name: "a", user: "b", password: "" }, ""))).toBe("password: must not be empty");
    expect(rule(() => newTokenBody({ name: "a", user: "b", password: "x".repeat(1025) }, ""))).toBe(
      "password: must have at most 1024 characters",
    );
    expect(rule(() => newTokenBody([], ""))).toBe("must be an object");
  });
});

describe("token names", () => {
  it("are 1 to 100 characters of printable text, spaces included, counted as code points", () => {
    for (const name of [
      "laptop ci",
      "clé de déploiement",
      " leading and trailing ",
      "a",
      "x".repeat(100),
      "🔑".repeat(100),
      "家族 👨‍👩‍👧",
    ]) {
      expect(tokenName(name, "name"), name).toBe(name);
    }
    expect(rule(() => tokenName("🔑".repeat(101), "name"))).toBe(`name: ${TOKEN_NAME_RULE}`);
  });
});

describe("token view", () => {
  it("shows RFC 3339 UTC dates and null before the first use", () => {
    const createdAt = Date.UTC(2025, 0, 2, 3, 4, 5, 6);
    const view = tokenView({
      id: "id",
      userId: "user",
      name: "ci",
      createdAt,
      expiresAt: createdAt + 365 * DAY_MS,
      lastUsedAt: null,
    });
    expect(view).toEqual({
      id: "id",
      name: "ci",
      "created-at": "2025-01-02T03:04:05.006Z",
      "expires-at": "2026-01-02T03:04:05.006Z",
      "last-used-at": null,
    });
    expect(rfc3339(0)).toBe("1970-01-01T00:00:00.000Z");
  });

  it("shows scopes and crates only when the token has them (docs/cargo.md)", () => {
    const token = { id: "id", userId: "user", name: "ci", createdAt: 0, expiresAt: DAY_MS, lastUsedAt: null };
    const keys = (view: object) => Object.keys(view).sort();
    const plain = ["created-at", "expires-at", "id", "last-used-at", "name"];
    expect(keys(tokenView(token))).toEqual(plain);
    expect(keys(tokenView({ ...token, scopes: undefined, crates: undefined }))).toEqual(plain);
    expect(tokenView({ ...token, scopes: ["yank"] })).toMatchObject({ scopes: ["yank"] });
    expect(keys(tokenView({ ...token, scopes: ["yank"] }))).toEqual([...plain, "scopes"].sort());
    expect(keys(tokenView({ ...token, crates: ["a*"] }))).toEqual([...plain, "crates"].sort());
    expect(tokenView({ ...token, scopes: ["yank", "publish-new"], crates: ["a*", "b"] })).toMatchObject({
      scopes: ["yank", "publish-new"],
      crates: ["a*", "b"],
    });
  });
});
