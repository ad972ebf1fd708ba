import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Auth,
  type AuthOutcome,
  constantTimeEqual,
  isScoped,
  readToken,
  SCOPED_TOKEN_ERROR,
  type TokenVerification,
} from "../../src/platform/auth.js";
import { defineModule } from "../../src/platform/module.js";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";

describe("readToken", () => {
  it("reads raw and Bearer tokens", () => {
    expect(readToken("abc")).toBe("abc");
    expect(readToken("Bearer abc")).toBe("abc");
    expect(readToken("bearer   abc ")).toBe("abc");
    expect(readToken("BEARER abc")).toBe("abc");
  });

  it("gives undefined for a missing or blank header", () => {
    expect(readToken(undefined)).toBeUndefined();
    expect(readToken("")).toBeUndefined();
    expect(readToken("   ")).toBeUndefined();
    expect(readToken("Bearer ")).toBeUndefined();
  });
});

describe("constantTimeEqual", () => {
  it("compares content and length", () => {
    expect(constantTimeEqual("secret", "secret")).toBe(true);
    expect(constantTimeEqual("secret", "secreT")).toBe(false);
    expect(constantTimeEqual("secret", "secret2")).toBe(false);
    expect(constantTimeEqual("", "secret")).toBe(false);
  });
});

// Tokens a verifier of this test knows; the registry module registers the real one.
const TOKENS: Record<string, TokenVerification | Promise<TokenVerification>> = {
  admin: { outcome: "ok", principal: { id: "1", name: "root", role: "admin" } },
  tech: { outcome: "ok", principal: { id: "2", name: "ops", role: "tech" } },
  slowtech: Promise.resolve({ outcome: "ok", principal: { id: "2", name: "ops", role: "tech" } }),
  old: { outcome: "expired" },
  asleep: { outcome: "inactive" },
  // Scoped tokens (docs/cargo.md): for Cargo only.
  cargo: { outcome: "ok", principal: { id: "2", name: "ops", role: "tech", scopes: ["yank"] } },
  cargoadmin: { outcome: "ok", principal: { id: "1", name: "root", role: "admin", crates: ["acme-*"] } },
  slowcargo: Promise.resolve({ outcome: "ok", principal: { id: "2", name: "ops", role: "tech", scopes: ["yank"] } }),
  unscoped: {
    outcome: "ok",
    principal: { id: "2", name: "ops", role: "tech", scopes: undefined, crates: undefined },
  },
};

const guarded = defineModule({
  name: "guarded",
  configShape: {},
  migrations: {},
  plugin: async (app, { context }) => {
    context.auth.setVerifier((token) => TOKENS[token] ?? { outcome: "invalid" });
    app.get("/tech", { preHandler: context.auth.require("tech") }, async (request) => ({
      user: request.principal?.name ?? null,
    }));
    app.get("/admin", { preHandler: context.auth.require("admin") }, async (request) => ({
      user: request.principal?.name ?? null,
    }));
    app.get(
      "/admin-or-own",
      { preHandler: context.auth.require("admin", { alsoAccept: (token) => constantTimeEqual(token, "own-secret") }) },
      async (request) => ({ user: request.principal?.name ?? null }),
    );
    app.get("/cargo", { preHandler: context.auth.require("tech", { scoped: true }) }, async (request) => ({
      user: request.principal?.name ?? null,
      scopes: request.principal?.scopes ?? null,
      crates: request.principal?.crates ?? null,
    }));
    app.get("/cargo-admin", { preHandler: context.auth.require("admin", { scoped: true }) }, async (request) => ({
      user: request.principal?.name ?? null,
    }));
  },
});

describe("Auth.require", () => {
  let server: VigieServer;
  const outcomes: AuthOutcome[] = [];
  beforeAll(async () => {
    server = await startTestServer({ modules: [guarded] });
    server.context.auth.onOutcome((outcome) => outcomes.push(outcome));
  });
  afterAll(() => server.close());

  const get = async (url: string, authorization?: string) => {
    const response = await server.app.inject({
      method: "GET",
      url,
      headers: authorization === undefined ? {} : { authorization },
    });
    return { status: response.statusCode, body: response.json() as unknown };
  };

  it("lets an admin through both routes and a tech user through the tech route only", async () => {
    expect(await get("/tech", "Bearer admin")).toEqual({ status: 200, body: { user: "root" } });
    expect(await get("/admin", "admin")).toEqual({ status: 200, body: { user: "root" } });
    expect(await get("/tech", "tech")).toEqual({ status: 200, body: { user: "ops" } });
    expect(await get("/tech", "slowtech")).toEqual({ status: 200, body: { user: "ops" } });
    expect(await get("/admin", "Bearer tech")).toEqual({ status: 403, body: { error: "forbidden" } });
  });

  it("answers a missing, invalid or expired token with 401 and an inactive user with 403", async () => {
    expect(await get("/tech")).toEqual({ status: 401, body: { error: "missing token" } });
    expect(await get("/tech", "Bearer ")).toEqual({ status: 401, body: { error: "missing token" } });
    expect(await get("/tech", "nope")).toEqual({ status: 401, body: { error: "invalid token" } });
    expect(await get("/tech", "old")).toEqual({ status: 401, body: { error: "token expired" } });
    expect(await get("/tech", "asleep")).toEqual({ status: 403, body: { error: "user is not active" } });
  });

  it("accepts a module's own secret without a principal", async () => {
    expect(await get("/admin-or-own", "Bearer own-secret")).toEqual({ status: 200, body: { user: null } });
    expect(await get("/admin-or-own", "admin")).toEqual({ status: 200, body: { user: "root" } });
    expect(await get("/admin-or-own", "tech")).toEqual({ status: 403, body: { error: "forbidden" } });
  });

  it("refuses scoped tokens with 403 but where the guard is created with scoped (docs/cargo.md)", async () => {
    const refused = { status: 403, body: { error: "a token with scopes is for Cargo only" } };
    for (const token of ["cargo", "cargoadmin", "slowcargo"]) {
      for (const url of ["/tech", "/admin", "/admin-or-own"])
        expect(await get(url, token), `${token} ${url}`).toEqual(refused);
    }
    expect(await get("/cargo", "cargo")).toEqual({
      status: 200,
      body: { user: "ops", scopes: ["yank"], crates: null },
    });
    expect(await get("/cargo", "slowcargo")).toMatchObject({ status: 200, body: { user: "ops" } });
    expect(await get("/cargo", "cargoadmin")).toEqual({
      status: 200,
      body: { user: "root", scopes: null, crates: ["acme-*"] },
    });
    // The role still counts on a Cargo route; the module's own secret still opens its route.
    expect(await get("/cargo-admin", "cargoadmin")).toEqual({ status: 200, body: { user: "root" } });
    expect(await get("/cargo-admin", "cargo")).toEqual({ status: 403, body: { error: "forbidden" } });
    expect(await get("/admin-or-own", "own-secret")).toEqual({ status: 200, body: { user: null } });
  });

  it("lets unscoped tokens through every guard, Cargo's included", async () => {
    expect(await get("/tech", "unscoped")).toEqual({ status: 200, body: { user: "ops" } });
    expect(await get("/cargo", "unscoped")).toEqual({ status: 200, body: { user: "ops", scopes: null, crates: null } });
    expect(await get("/cargo", "tech")).toEqual({ status: 200, body: { user: "ops", scopes: null, crates: null } });
    expect(await get("/cargo-admin", "admin")).toEqual({ status: 200, body: { user: "root" } });
    expect(await get("/cargo")).toEqual({ status: 401, body: { error: "missing token" } });
    expect(await get("/cargo", "old")).toEqual({ status: 401, body: { error: "token expired" } });
  });

  it("counts a refused scoped token as forbidden", async () => {
    outcomes.length = 0;
    await get("/tech", "cargo");
    await get("/cargo", "cargo");
    expect(outcomes).toEqual(["forbidden", "ok"]);
  });

  it("reports every outcome to listeners", async () => {
    outcomes.length = 0;
    await get("/tech", "tech");
    await get("/tech");
    await get("/tech", "nope");
    await get("/tech", "old");
    await get("/tech", "asleep");
    await get("/admin", "tech");
    expect(outcomes).toEqual(["ok", "missing", "invalid", "expired", "inactive", "forbidden"]);
  });
});

describe("scoped principals", () => {
  it("are those with scopes or crates", () => {
    const base = { id: "1", name: "a", role: "tech" } as const;
    expect(isScoped(base)).toBe(false);
    expect(isScoped({ ...base, scopes: undefined, crates: undefined })).toBe(false);
    expect(isScoped({ ...base, scopes: ["yank"] })).toBe(true);
    expect(isScoped({ ...base, crates: ["a*"] })).toBe(true);
    expect(SCOPED_TOKEN_ERROR).toBe("a token with scopes is for Cargo only");
  });

  it("are refused by check unless asked for, before the role", async () => {
    const auth = new Auth();
    const principal = { id: "1", name: "a", role: "tech" as const, scopes: ["yank"] };
    auth.setVerifier(() => ({ outcome: "ok", principal }));
    expect(auth.check("t", "tech")).toEqual({ outcome: "forbidden", reason: "scoped" });
    expect(auth.check("t", "admin")).toEqual({ outcome: "forbidden", reason: "scoped" });
    expect(auth.check("t", "tech", { scoped: true })).toEqual({ outcome: "ok", principal });
    expect(auth.check("t", "admin", { scoped: true })).toEqual({ outcome: "forbidden", reason: "role" });
  });
});

describe("Auth without a verifier", () => {
  it("refuses every token as invalid (registry disabled)", () => {
    const auth = new Auth();
    expect(auth.check("anything", "tech")).toEqual({ outcome: "invalid" });
    expect(auth.check(undefined, "tech")).toEqual({ outcome: "missing" });
  });
});
