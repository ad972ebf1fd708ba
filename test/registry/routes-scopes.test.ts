/**
 * Token scopes through the API (docs/cargo.md), on SQLite and on PostgreSQL: tokens created with
 * `scopes` and `crates`, listed back; bad values answered 400 naming the field; a scoped token
 * refused by the registry's user and token API and by every guard but one created with `scoped`
 * (the Cargo routes'), which sees the limits on the principal; unscoped tokens unchanged.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defineModule } from "../../src/platform/module.js";
import { type CargoScope, missingScope } from "../../src/registry/cargo/scopes.js";
import { createRegistryModule } from "../../src/registry/index.js";
import { hashPassword } from "../../src/registry/passwords.js";
import { registryDb, UserStore } from "../../src/registry/storage.js";
import type { VigieServer } from "../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { startTestServer } from "../support/server.js";
import { RegistryClient } from "./client.js";
import { dropWhenClosed } from "./sessions.js";

const USERS = "/api/v1/registry/user";
const TOKENS = "/api/v1/registry/token";
const ROOT_PASSWORD = "root-password-1";
const BOB_PASSWORD = "bob-password-1";
const SCOPED = { status: 403, body: { error: "a token with scopes is for Cargo only" } };

/**
 * Guards as other modules create them: admin, tech, and a Cargo-like route created with `scoped`
 * that answers what `missingScope` says of `?scope=&crate=`.
 */
const guarded = defineModule({
  name: "guarded",
  configShape: {},
  migrations: {},
  plugin: async (app, { context }) => {
    app.get("/guarded/admin", { preHandler: context.auth.require("admin") }, async () => ({ ok: true }));
    app.get("/guarded/tech", { preHandler: context.auth.require("tech") }, async () => ({ ok: true }));
    app.get<{ Querystring: { scope: CargoScope; crate: string } }>(
      "/guarded/cargo",
      { preHandler: context.auth.require("tech", { scoped: true }) },
      async (request, reply) => {
        const principal = request.principal;
        if (principal === undefined) throw new Error("no principal");
        const missing = missingScope(principal, request.query.scope, request.query.crate);
        if (missing !== undefined) return reply.code(403).send({ error: missing });
        return { user: principal.name, scopes: principal.scopes ?? null, crates: principal.crates ?? null };
      },
    );
  },
});

describe.each(DATABASE_KINDS)("token scopes on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let server: VigieServer;
    let client: RegistryClient;
    let rootHash: string;
    let root: string;

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      const registry = createRegistryModule({
        environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: ROOT_PASSWORD },
      });
      server = await startTestServer({
        modules: [registry, guarded],
        config: { database: { url: testDatabase.url } },
      });
      client = new RegistryClient(server.app);
      client.remember({ password: ROOT_PASSWORD });
      client.remember({ password: BOB_PASSWORD });
      rootHash = await hashPassword(ROOT_PASSWORD);
    });

    afterAll(async () => {
      await server?.close();
      await dropWhenClosed(testDatabase);
    });

    beforeEach(async () => {
      const db = registryDb(server.context.database);
      await db.deleteFrom("registry_token_failure").execute();
      await db.deleteFrom("registry_token").execute();
      await db.deleteFrom("registry_user").execute();
      await new UserStore(server.context.database).create(
        { name: "root", description: "first admin", role: "admin", active: true, passwordHash: rootHash },
        Date.now(),
      );
      root = await client.token("root", ROOT_PASSWORD, "root-token");
    });

    /** Creates a token with a body of extra fields, expecting 201. */
    async function scopedToken(user: string, password: string, name: string, extra: object): Promise<string> {
      const answer = await client.call("POST", TOKENS, { body: { name, user, password, ...extra } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      expect(Object.keys(answer.body)).toEqual(["token"]);
      client.remember({ token: answer.body.token });
      return answer.body.token as string;
    }

    it("creates tokens with scopes and crates and lists them back, duplicates removed", async () => {
      await scopedToken("root", ROOT_PASSWORD, "publish", {
        scopes: ["publish-new", "publish-update", "publish-new"],
        crates: ["acme-*", "Serde_json", "serde-json", "ACME-*"],
      });
      await scopedToken("root", ROOT_PASSWORD, "yank only", { scopes: ["yank"] });
      await scopedToken("root", ROOT_PASSWORD, "one crate", { crates: ["tool"] });
      await scopedToken("root", ROOT_PASSWORD, "nulls", { scopes: null, crates: null });

      const list = await client.call("GET", TOKENS, { token: root });
      expect(list.status).toBe(200);
      const byName = Object.fromEntries(
        (list.body.tokens as Array<Record<string, unknown>>).map((token) => [token.name, token]),
      );
      expect(Object.keys(byName)).toEqual(["nulls", "one crate", "publish", "root-token", "yank only"]);
      expect(byName.publish).toMatchObject({
        scopes: ["publish-new", "publish-update"],
        crates: ["acme-*", "Serde_json"],
      });
      expect(byName["yank only"]).toMatchObject({ scopes: ["yank"] });
      expect(byName["yank only"]).not.toHaveProperty("crates");
      expect(byName["one crate"]).toMatchObject({ crates: ["tool"] });
      expect(byName["one crate"]).not.toHaveProperty("scopes");
      const plain = ["created-at", "expires-at", "id", "last-used-at", "name"];
      expect(Object.keys(byName["root-token"] as object).sort()).toEqual(plain);
      expect(Object.keys(byName.nulls as object).sort()).toEqual(plain);
    });

    it("answers 400 naming the field of a bad scope or crate pattern", async () => {
      const base = { name: "bad", user: "root", password: ROOT_PASSWORD };
      const pattern =
        "must be a crate name (1 to 64 ASCII letters, digits, - or _, starting with a letter), optionally followed by *";
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ scopes: [] }, "field scopes: must not be empty (leave the field out to allow all)"],
        [{ scopes: "yank" }, "field scopes: must be an array"],
        [
          { scopes: ["yank", "read"] },
          "field scopes[1]: must be one of publish-new, publish-update, yank, change-owners",
        ],
        [{ scopes: [7] }, "field scopes[0]: must be one of publish-new, publish-update, yank, change-owners"],
        [{ crates: [] }, "field crates: must not be empty (leave the field out to allow all)"],
        [{ crates: { a: 1 } }, "field crates: must be an array"],
        [{ crates: ["ok", "*"] }, `field crates[1]: ${pattern}`],
        [{ crates: ["9lives"] }, `field crates[0]: ${pattern}`],
        [{ crates: ["foo**"] }, `field crates[0]: ${pattern}`],
        [{ crates: [`a${"b".repeat(64)}`] }, `field crates[0]: ${pattern}`],
        [
          { crates: Array.from({ length: 101 }, (_, index) => `c${index}`) },
          "field crates: must have at most 100 items",
        ],
      ];
      for (const [extra, error] of cases) {
        expect(await client.call("POST", TOKENS, { body: { ...base, ...extra } }), error).toMatchObject({
          status: 400,
          body: { error },
        });
      }
      // Validation comes before the password check: nothing was counted by the rate limit.
      const failures = await registryDb(server.context.database)
        .selectFrom("registry_token_failure")
        .select("key")
        .execute();
      expect(failures).toEqual([]);
      expect((await client.call("GET", TOKENS, { token: root })).body.tokens).toHaveLength(1);
    });

    it("refuses a scoped token on every route of the user and token API with 403", async () => {
      await client.user(root, { name: "bob", password: BOB_PASSWORD, role: "tech" });
      const adminScoped = await scopedToken("root", ROOT_PASSWORD, "admin cargo", { scopes: ["publish-new"] });
      const adminCrates = await scopedToken("root", ROOT_PASSWORD, "admin crates", { crates: ["acme-*"] });
      const techScoped = await scopedToken("bob", BOB_PASSWORD, "bob cargo", { scopes: ["yank"] });
      const calls: Array<["GET" | "POST" | "DELETE", string, unknown]> = [
        ["GET", USERS, undefined],
        ["POST", USERS, { name: "carl", description: "", password: "carl-password", role: "tech", active: true }],
        ["POST", `${USERS}/bob`, { description: "changed" }],
        ["POST", `${USERS}/root`, { description: "changed" }],
        ["DELETE", `${USERS}/bob`, undefined],
        ["GET", TOKENS, undefined],
        ["GET", `${TOKENS}?user=bob`, undefined],
        ["DELETE", `${TOKENS}/root-token`, undefined],
        ["DELETE", `${TOKENS}/bob%20cargo?user=bob`, undefined],
        ["DELETE", `${TOKENS}/admin%20cargo`, undefined],
      ];
      for (const token of [adminScoped, adminCrates, techScoped]) {
        for (const [method, url, body] of calls) {
          const answer = await client.call(method, url, { token, ...(body === undefined ? {} : { body }) });
          expect(answer, `${method} ${url}`).toMatchObject(SCOPED);
        }
      }
      // Nothing changed: the users and tokens are all there.
      const users = await client.call("GET", USERS, { token: root });
      expect(users.body.users.map((user: { name: string }) => user.name)).toEqual(["bob", "root"]);
      const rootTokens = await client.call("GET", TOKENS, { token: root });
      expect(rootTokens.body.tokens.map((token: { name: string }) => token.name)).toEqual([
        "admin cargo",
        "admin crates",
        "root-token",
      ]);
      // The password, not a token, creates tokens: a scoped token's owner still can.
      await client.token("bob", BOB_PASSWORD, "bob plain");
    });

    it("refuses a scoped token on the admin and tech guards of other modules, lets it through Cargo's", async () => {
      const cargo = await scopedToken("root", ROOT_PASSWORD, "cargo", {
        scopes: ["publish-new", "yank"],
        crates: ["acme-*", "tool"],
      });
      for (const url of ["/guarded/admin", "/guarded/tech"]) {
        expect(await client.call("GET", url, { token: cargo }), url).toMatchObject(SCOPED);
        // Again, from the cache this time.
        expect(await client.call("GET", url, { token: cargo }), url).toMatchObject(SCOPED);
      }
      const cargoRoute = (scope: string, crate: string) =>
        client.call("GET", `/guarded/cargo?scope=${scope}&crate=${crate}`, { token: cargo });
      expect(await cargoRoute("publish-new", "acme_http")).toMatchObject({
        status: 200,
        body: { user: "root", scopes: ["publish-new", "yank"], crates: ["acme-*", "tool"] },
      });
      expect((await cargoRoute("yank", "Tool")).status).toBe(200);
      expect(await cargoRoute("publish-update", "tool")).toMatchObject({
        status: 403,
        body: { error: "this token lacks the scope publish-update" },
      });
      expect(await cargoRoute("change-owners", "tool")).toMatchObject({
        status: 403,
        body: { error: "this token lacks the scope change-owners" },
      });
      expect(await cargoRoute("yank", "serde")).toMatchObject({
        status: 403,
        body: { error: "this token is not for crate serde (its crates: acme-*, tool)" },
      });
    });

    it("keeps unscoped tokens working everywhere, with every scope", async () => {
      await client.user(root, { name: "bob", password: BOB_PASSWORD, role: "tech" });
      const bob = await client.token("bob", BOB_PASSWORD, "bob plain");
      expect((await client.call("GET", USERS, { token: root })).status).toBe(200);
      expect((await client.call("GET", TOKENS, { token: root })).status).toBe(200);
      expect((await client.call("GET", TOKENS, { token: bob })).status).toBe(200);
      expect((await client.call("POST", `${USERS}/bob`, { token: bob, body: { description: "me" } })).status).toBe(200);
      expect((await client.call("GET", "/guarded/admin", { token: root })).status).toBe(200);
      expect((await client.call("GET", "/guarded/tech", { token: bob })).status).toBe(200);
      expect(await client.call("GET", "/guarded/admin", { token: bob })).toMatchObject({
        status: 403,
        body: { error: "forbidden" },
      });
      for (const scope of ["publish-new", "publish-update", "yank", "change-owners"]) {
        expect(await client.call("GET", `/guarded/cargo?scope=${scope}&crate=anything`, { token: bob })).toMatchObject({
          status: 200,
          body: { user: "bob", scopes: null, crates: null },
        });
      }
      expect((await client.call("DELETE", `${TOKENS}/bob%20plain`, { token: bob })).status).toBe(200);
    });

    it("counts a refused scoped token as forbidden in registry_auth_total", async () => {
      const metric = async () => {
        const text = (await server.app.inject({ method: "GET", url: "/metrics" })).body;
        return Number(/^registry_auth_total\{result="forbidden"\} (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
      };
      const cargo = await scopedToken("root", ROOT_PASSWORD, "cargo", { crates: ["a"] });
      const before = await metric();
      await client.call("GET", USERS, { token: cargo });
      await client.call("GET", "/guarded/tech", { token: cargo });
      expect(await metric()).toBe(before + 2);
    });
  });
});
