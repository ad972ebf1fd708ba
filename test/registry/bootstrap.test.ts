import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/platform/config.js";
import { bootstrapAdminFrom } from "../../src/registry/bootstrap.js";
import { createRegistryModule } from "../../src/registry/index.js";
import { UserStore } from "../../src/registry/storage.js";
import type { VigieServer } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestServer } from "../support/server.js";
import { RegistryClient } from "./client.js";

describe("bootstrap admin from the environment", () => {
  it("reads both variables, or neither", () => {
    expect(bootstrapAdminFrom({})).toBeUndefined();
    expect(bootstrapAdminFrom({ VIGIE_ADMIN_NAME: "", VIGIE_ADMIN_PASSWORD: "" })).toBeUndefined();
    expect(bootstrapAdminFrom({ VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "12345678" })).toEqual({
      name: "root",
      password: "12345678",
    });
    expect(() => bootstrapAdminFrom({ VIGIE_ADMIN_NAME: "root" })).toThrow(
      new ConfigError("invalid configuration: VIGIE_ADMIN_NAME and VIGIE_ADMIN_PASSWORD must be set together"),
    );
    expect(() => bootstrapAdminFrom({ VIGIE_ADMIN_PASSWORD: "12345678" })).toThrow(ConfigError);
  });

  it("refuses values that break the rules of users, never showing the password", () => {
    expect(() => bootstrapAdminFrom({ VIGIE_ADMIN_NAME: "r o o t", VIGIE_ADMIN_PASSWORD: "12345678" })).toThrow(
      'invalid configuration: VIGIE_ADMIN_NAME: must contain only the characters A-Z a-z 0-9 . _ - (got "r o o t")',
    );
    let message = "";
    try {
      bootstrapAdminFrom({ VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "secret7" });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe("invalid configuration: VIGIE_ADMIN_PASSWORD: must have at least 8 characters");
  });
});

describe("bootstrap admin at start-up", () => {
  let testDatabase: TestDatabase | undefined;
  let server: VigieServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await testDatabase?.drop();
    testDatabase = undefined;
  });

  const start = async (environment: Record<string, string>) => {
    testDatabase ??= await createTestDatabase("sqlite");
    await server?.close();
    server = await startTestServer({
      modules: [createRegistryModule({ environment })],
      config: { database: { url: testDatabase.url } },
    });
    return server;
  };

  it("creates the admin once, and leaves an existing user of that name as it is", async () => {
    const first = await start({ VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "first-password" });
    const users = await new UserStore(first.context.database).list();
    expect(users).toEqual([expect.objectContaining({ name: "root", role: "admin", active: true })]);
    const client = new RegistryClient(first.app);
    await client.token("root", "first-password");

    // A restart with another password neither resets it nor creates a second user.
    const second = await start({ VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "other-password" });
    const again = new RegistryClient(second.app);
    await again.token("root", "first-password");
    expect(await new UserStore(second.context.database).list()).toHaveLength(1);
  });

  it("creates nobody without the variables", async () => {
    const started = await start({});
    expect(await new UserStore(started.context.database).list()).toEqual([]);
  });

  it("refuses to start with invalid variables", async () => {
    testDatabase = await createTestDatabase("sqlite");
    await expect(
      startTestServer({
        modules: [createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "short" } })],
        config: { database: { url: testDatabase.url } },
      }),
    ).rejects.toThrow(ConfigError);
  });
});
