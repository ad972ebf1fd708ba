import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Definition, validateDefinition } from "../../src/healthchecks/definition.js";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { HealthcheckStorage, healthcheckMigrations } from "../../src/healthchecks/storage.js";
import { openDatabase, platformMigrations } from "../../src/platform/database.js";
import type { VigieServer } from "../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { startTestServer } from "../support/server.js";

const quiet = (name: string, fields: Record<string, unknown> = {}) => ({
  name,
  target: "127.0.0.1",
  port: 9,
  timeout: "1s",
  interval: "1h",
  ...fields,
});

describe.each(DATABASE_KINDS)("healthcheck storage on $kind", ({ kind, skip }) => {
  let database: TestDatabase;
  const servers: VigieServer[] = [];
  beforeEach(async () => {
    if (!skip) database = await createTestDatabase(kind);
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close().catch(() => {});
    if (!skip) await database.drop();
  });

  async function start(healthchecks: Record<string, unknown> = {}): Promise<VigieServer> {
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: { database: { url: database.url }, healthchecks },
    });
    servers.push(server);
    return server;
  }
  const list = async (server: VigieServer) => (await server.app.inject({ method: "GET", url: "/healthcheck" })).json();
  const post = (server: VigieServer, url: string, payload: Record<string, unknown>) =>
    server.app.inject({ method: "POST", url, payload });

  it.skipIf(skip)("restores API checks on a new server over the same database, not file checks", async () => {
    const first = await start({ "tcp-checks": [quiet("from-file")] });
    expect((await post(first, "/healthcheck/tcp", quiet("tcp", { labels: { env: "prod" } }))).statusCode).toBe(201);
    expect(
      (await post(first, "/healthcheck/http", quiet("http", { "valid-status": [200, 301], interval: "1h30m" })))
        .statusCode,
    ).toBe(201);
    expect(
      (await post(first, "/healthcheck/dns", { name: "dns", domain: "localhost", interval: "90s" })).statusCode,
    ).toBe(201);
    expect((await post(first, "/healthcheck/tls", quiet("tls", { "expiration-delay": "168h" }))).statusCode).toBe(201);
    expect(
      (await post(first, "/healthcheck/command", { name: "command", command: "true", timeout: "1s", interval: "1h" }))
        .statusCode,
    ).toBe(201);
    // Replaced: only the last definition is kept.
    expect((await post(first, "/healthcheck/tcp", quiet("tcp", { description: "second" }))).statusCode).toBe(201);
    const before = await list(first);
    expect(before.map((check: { name: string }) => check.name)).toEqual([
      "command",
      "dns",
      "from-file",
      "http",
      "tcp",
      "tls",
    ]);
    await first.close();

    const second = await start();
    expect(await list(second)).toEqual(before.filter((check: { name: string }) => check.name !== "from-file"));
    expect((await second.app.inject({ method: "DELETE", url: "/healthcheck/dns" })).statusCode).toBe(200);
    await second.close();

    const third = await start();
    expect((await list(third)).map((check: { name: string }) => check.name)).toEqual(["command", "http", "tcp", "tls"]);
  });

  it.skipIf(skip)("stores bulk changes: the payload replaces every stored API check", async () => {
    const first = await start();
    await post(first, "/healthcheck/tcp", quiet("old"));
    const payload = {
      "tcp-checks": Array.from({ length: 600 }, (_, index) => quiet(`tcp-${String(index).padStart(3, "0")}`)),
      "dns-checks": [{ name: "dns", domain: "localhost", interval: "1h" }],
    };
    expect((await post(first, "/healthcheck/bulk", payload)).statusCode).toBe(201);
    await first.close();
    const second = await start();
    const names = (await list(second)).map((check: { name: string }) => check.name);
    expect(names).toHaveLength(601);
    expect(names).not.toContain("old");
    expect((await post(second, "/healthcheck/bulk", { "dns-checks": payload["dns-checks"] })).statusCode).toBe(201);
    await second.close();
    const third = await start();
    expect((await list(third)).map((check: { name: string }) => check.name)).toEqual(["dns"]);
  });

  it.skipIf(skip)("keeps, without scheduling it, a stored check that the current rules refuse", async () => {
    const first = await start({ "min-interval": "1s" });
    await post(first, "/healthcheck/tcp", quiet("frequent", { interval: "2s" }));
    await post(first, "/healthcheck/tcp", quiet("rare"));
    await first.close();
    const strict = await start({ "min-interval": "1m" });
    expect((await list(strict)).map((check: { name: string }) => check.name)).toEqual(["rare"]);
    await strict.close();
    const relaxed = await start({ "min-interval": "1s" });
    expect((await list(relaxed)).map((check: { name: string }) => check.name)).toEqual(["frequent", "rare"]);
  });

  it.skipIf(skip)("rolls back a bulk replacement that fails", async () => {
    const opened = await openDatabase(database.url, { ...platformMigrations, ...healthcheckMigrations });
    try {
      const storage = new HealthcheckStorage(opened);
      const rules = { minInterval: { text: "1s", milliseconds: 1_000 } };
      const definition = (name: string) => validateDefinition("tcp", quiet(name), rules, { unknownKeys: "ignore" });
      await storage.save(definition("kept"));
      // 600 good rows (a first INSERT of 500 that succeeds), then one that breaks NOT NULL.
      const good = Array.from({ length: 600 }, (_, index) => definition(`new-${index}`));
      const broken = [...good, { ...definition("bad"), kind: null } as unknown as Definition];
      await expect(storage.replaceAll(broken)).rejects.toThrow();
      expect((await storage.list()).map((stored) => stored.name)).toEqual(["kept"]);
      await storage.replaceAll([definition("new")]);
      expect((await storage.list()).map((stored) => stored.name)).toEqual(["new"]);
      expect(await storage.delete("new")).toBe(true);
      expect(await storage.delete("new")).toBe(false);
    } finally {
      await opened.close();
    }
  });
});
