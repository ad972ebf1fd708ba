/**
 * The platform guard fed by registry tokens: a test-only module guards one route with `tech` and
 * one with `admin` through `context.auth.require` (platform.md §5).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineModule } from "../../src/platform/module.js";
import { createRegistryModule } from "../../src/registry/index.js";
import type { VigieServer } from "../../src/server.js";
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
  });
});
