/**
 * The platform guard fed by registry tokens: a test-only module guards one route with `tech` and
 * one with `admin` through `context.auth.require`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commentsModule } from "../../src/comments/index.js";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { defineModule } from "../../src/platform/module.js";
import { createRegistryModule } from "../../src/registry/index.js";
import { registryDb } from "../../src/registry/storage.js";
import { hashToken } from "../../src/registry/tokens.js";
import type { VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { startTestServer } from "../support/server.js";
import { RegistryClient } from "./client.js";
import { dropWhenClosed } from "./sessions.js";

const guarded = defineModule({
  name: "guarded",
  configShape: {},
  migrations: {},
  plugin: async (app, { context }) => {
    app.get("/guarded/tech", { preHandler: context.auth.require("tech") }, async (request) => ({
      caller: request.principal,
    }));
    app.get("/guarded/admin", { preHandler: context.auth.require("admin") }, async (request) => ({
      caller: request.principal,
    }));
  },
});

describe.each(DATABASE_KINDS)("guards of other modules on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let server: VigieServer;
    let client: RegistryClient;

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      const registry = createRegistryModule({
        environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
      });
      server = await startTestServer({
        modules: [registry, guarded],
        config: { database: { url: testDatabase.url } },
      });
      client = new RegistryClient(server.app);
    });
    afterAll(async () => {
      await server?.close();
      await dropWhenClosed(testDatabase);
    });

    it("lets an admin through both, a tech user through the tech route only, nobody without a token", async () => {
      const admin = await client.token("root", "root-password");
      await client.user(admin, { name: "tina", password: "tina-password", role: "tech" });
      const tech = await client.token("tina", "tina-password");

      const adminOnTech = await client.call("GET", "/guarded/tech", { token: admin });
      expect(adminOnTech.status).toBe(200);
      expect(adminOnTech.body.caller).toMatchObject({ name: "root", role: "admin" });
      expect((await client.call("GET", "/guarded/admin", { token: admin })).status).toBe(200);

      const techOnTech = await client.call("GET", "/guarded/tech", { token: tech });
      expect(techOnTech.status).toBe(200);
      expect(techOnTech.body.caller).toMatchObject({ name: "tina", role: "tech" });
      expect(await client.call("GET", "/guarded/admin", { token: tech })).toMatchObject({
        status: 403,
        body: { error: "forbidden" },
      });

      for (const url of ["/guarded/tech", "/guarded/admin"]) {
        expect(await client.call("GET", url)).toMatchObject({ status: 401, body: { error: "missing token" } });
        expect(await client.call("GET", url, { token: `${tech}x` })).toMatchObject({
          status: 401,
          body: { error: "invalid token" },
        });
      }
    });

    it("refuses the tokens of an inactive user and expired tokens on the routes of other modules", async () => {
      const admin = await client.token("root", "root-password");
      await client.user(admin, { name: "ivan", password: "ivan-password", role: "admin" });
      const ivan = await client.token("ivan", "ivan-password");
      const expired = await client.token("ivan", "ivan-password");
      await registryDb(server.context.database)
        .updateTable("registry_token")
        .set({ expires_at: Date.now() - 1000 })
        .where("hash", "=", hashToken(expired))
        .execute();
      for (const url of ["/guarded/tech", "/guarded/admin"]) {
        expect((await client.call("GET", url, { token: ivan })).status).toBe(200);
        expect(await client.call("GET", url, { token: expired })).toMatchObject({
          status: 401,
          body: { error: "token expired" },
        });
      }
      expect(
        (await client.call("POST", "/api/v1/registry/user/ivan", { token: admin, body: { active: false } })).status,
      ).toBe(200);
      for (const url of ["/guarded/tech", "/guarded/admin"]) {
        expect(await client.call("GET", url, { token: ivan })).toMatchObject({
          status: 403,
          body: { error: "user is not active" },
        });
      }
    });
  });
});

/**
 * Every module behind `security.require-token`, the registry creating the admin root; each
 * describe has its own server, since one deactivates root.
 */
function startRealModules(): Promise<VigieServer> {
  const registry = createRegistryModule({
    environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
  });
  return startTestServer({
    modules: [registry, commentsModule, healthchecksModule, streamsModule],
    config: {
      security: { "require-token": true },
      comments: { "admin-token": "comments-admin-token", challenge: { secret: "s" }, websites: [{ name: "blog" }] },
    },
  });
}

describe("registry tokens on the routes of the real modules", () => {
  let server: VigieServer;
  let client: RegistryClient;

  beforeAll(async () => {
    server = await startRealModules();
    client = new RegistryClient(server.app);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("lets registry admins moderate comments, and active users read healthchecks and streams", async () => {
    const admin = await client.token("root", "root-password");
    await client.user(admin, { name: "tina", password: "tina-password", role: "tech" });
    const tech = await client.token("tina", "tina-password");
    const comments = "/api/admin/comment/blog/post";
    const open = ["/healthcheck", "/api/v1/stream"];

    expect((await client.call("GET", comments, { token: admin })).status).toBe(200);
    expect((await client.call("GET", comments, { authorization: "comments-admin-token" })).status).toBe(200);
    expect(await client.call("GET", comments, { token: tech })).toMatchObject({
      status: 403,
      body: { error: "forbidden" },
    });
    for (const url of open) {
      expect((await client.call("GET", url, { token: tech })).status, url).toBe(200);
      expect((await client.call("GET", url, { token: admin })).status, url).toBe(200);
      expect(await client.call("GET", url), url).toMatchObject({ status: 401, body: { error: "missing token" } });
    }

    // Deactivated: refused everywhere.
    await client.user(admin, { name: "second", password: "second-password", role: "admin" });
    const second = await client.token("second", "second-password");
    await client.call("POST", "/api/v1/registry/user/tina", { token: admin, body: { active: false } });
    await client.call("POST", "/api/v1/registry/user/root", { token: second, body: { active: false } });
    for (const url of [comments, ...open]) {
      for (const token of [admin, tech]) {
        expect(await client.call("GET", url, { token }), url).toMatchObject({
          status: 403,
          body: { error: "user is not active" },
        });
      }
    }
    expect((await client.call("GET", comments, { token: second })).status).toBe(200);
  });
});

describe("scoped tokens on the routes of the real modules", () => {
  let server: VigieServer;
  let client: RegistryClient;

  beforeAll(async () => {
    server = await startRealModules();
    client = new RegistryClient(server.app);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("refuses tokens created with scopes or crates on every guarded route: they are for Cargo only", async () => {
    const password = "scoped-password";
    const admin = await client.token("root", "root-password");
    await client.user(admin, { name: "sam", password, role: "admin" });
    const scoped: string[] = [];
    for (const [name, extra] of [
      ["scopes", { scopes: ["publish-new"] }],
      ["crates", { crates: ["acme-*"] }],
    ] as const) {
      const created = await client.call("POST", "/api/v1/registry/token", {
        body: { name, user: "sam", password, ...extra },
      });
      expect(created.status).toBe(201);
      client.remember({ token: created.body.token });
      scoped.push(created.body.token);
    }
    const plain = await client.token("sam", password);
    const urls = ["/api/admin/comment/blog/post", "/healthcheck", "/api/v1/stream", "/api/v1/registry/user"];
    for (const url of urls) {
      for (const token of scoped) {
        expect(await client.call("GET", url, { token }), url).toMatchObject({
          status: 403,
          body: { error: "a token with scopes is for Cargo only" },
        });
      }
      expect((await client.call("GET", url, { token: plain })).status, url).toBe(200);
    }
  });
});
