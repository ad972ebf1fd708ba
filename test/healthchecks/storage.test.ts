import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Definition, validateDefinition } from "../../src/healthchecks/definition.js";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { HealthcheckStore, healthcheckMigrations } from "../../src/healthchecks/storage.js";
import { parseConfig } from "../../src/platform/config.js";
import { openDatabase, platformMigrations } from "../../src/platform/database.js";
import { buildServer, type VigieServer } from "../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";

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

  /** The stored JSON of each API check, read from the database itself. */
  async function stored(): Promise<Record<string, Record<string, unknown>>> {
    const opened = await openDatabase(database.url, { ...platformMigrations, ...healthcheckMigrations });
    try {
      const rows = await new HealthcheckStore(opened).list();
      return Object.fromEntries(rows.map((row) => [row.name, row.definition as Record<string, unknown>]));
    } finally {
      await opened.close();
    }
  }

  /** A server whose log lines are collected in `lines`. */
  async function startLogged(healthchecks: Record<string, unknown>, lines: string[]): Promise<VigieServer> {
    const config = parseConfig({ database: { url: database.url }, healthchecks }, {}, [healthchecksModule]);
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const server = await buildServer(config, { modules: [healthchecksModule], logger });
    servers.push(server);
    return server;
  }

  const secretHeaders = { Authorization: "Bearer st0red-t0ken", "X-Api-Key": "st0red-key" };
  const secretCheck = (name: string, fields: Record<string, unknown> = {}) =>
    quiet(name, {
      "valid-status": [200],
      headers: secretHeaders,
      description: "mirror of https://ann:st0red-pw@example.org",
      ...fields,
    });

  it.skipIf(skip)(
    "stores secrets as given, shows them redacted, and keeps them when posted back (docs/security.md)",
    async () => {
      const first = await start();
      expect((await post(first, "/healthcheck/http", secretCheck("web"))).statusCode).toBe(201);
      await first.close();
      expect((await stored()).web).toMatchObject({
        headers: secretHeaders,
        description: "mirror of https://ann:st0red-pw@example.org",
      });

      const second = await start();
      const view = (await second.app.inject({ method: "GET", url: "/healthcheck/web" })).json();
      expect(view).toMatchObject({
        headers: { Authorization: "<redacted>", "X-Api-Key": "<redacted>" },
        description: "mirror of https://ann:<redacted>@example.org",
      });
      // GET → edit → POST after a restart, single and bulk.
      expect((await post(second, "/healthcheck/http", { ...view, port: 10 })).statusCode).toBe(201);
      expect((await stored()).web).toMatchObject({ port: 10, headers: secretHeaders });
      expect((await post(second, "/healthcheck/bulk", { "http-checks": [{ ...view, port: 11 }] })).statusCode).toBe(
        201,
      );
      expect((await stored()).web).toMatchObject({
        port: 11,
        headers: secretHeaders,
        description: "mirror of https://ann:st0red-pw@example.org",
      });
    },
  );

  it.skipIf(skip)(
    "restores a stored TLS file name only while it leads to a file of the tls-directory (docs/security.md)",
    async () => {
      const directory = temporaryDirectory("vigie-tls-stored-");
      try {
        writeFileSync(join(directory, "ca.pem"), "CA");
        const lines: string[] = [];
        const first = await startLogged({ "tls-directory": directory }, lines);
        expect((await post(first, "/healthcheck/tls", quiet("with-ca", { cacert: "ca.pem" }))).statusCode).toBe(201);
        expect((await post(first, "/healthcheck/http", secretCheck("secret", { interval: "2s" }))).statusCode).toBe(
          201,
        );
        await first.close();
        const names = async (server: VigieServer) => (await list(server)).map((check: { name: string }) => check.name);

        // Without the directory, and with the file gone: logged and not restored, still stored.
        const withoutDirectory = await startLogged({}, lines);
        expect(await names(withoutDirectory)).toEqual(["secret"]);
        await withoutDirectory.close();
        rmSync(join(directory, "ca.pem"));
        const withoutFile = await startLogged({ "tls-directory": directory }, lines);
        expect(await names(withoutFile)).toEqual(["secret"]);
        await withoutFile.close();
        expect(Object.keys(await stored())).toEqual(["secret", "with-ca"]);
        const errors = lines.map((line) => JSON.parse(line)).filter((line) => line.level >= 50);
        expect(errors.map((line) => line.msg)).toEqual([
          "stored healthcheck with-ca is invalid and was not restored: cacert: cannot be set through the API: healthchecks.tls-directory is not configured",
          "stored healthcheck with-ca is invalid and was not restored: cacert: must name a regular file of at most 1 MiB in healthchecks.tls-directory",
        ]);

        // A stored check refused for another reason is logged without its secrets either.
        const strict = await startLogged({ "tls-directory": directory, "min-interval": "1m" }, lines);
        expect(await names(strict)).toEqual([]);
        await strict.close();
        expect(lines.join("\n")).toContain(
          "stored healthcheck secret is invalid and was not restored: interval: must be at least 1m",
        );
        for (const secret of ["st0red-t0ken", "st0red-key", "st0red-pw"])
          expect(lines.join("\n")).not.toContain(secret);

        writeFileSync(join(directory, "ca.pem"), "CA");
        const restored = await startLogged({ "tls-directory": directory }, lines);
        expect(await names(restored)).toEqual(["secret", "with-ca"]);
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    },
  );

  it.skipIf(skip)("rolls back a bulk replacement that fails", async () => {
    const opened = await openDatabase(database.url, { ...platformMigrations, ...healthcheckMigrations });
    try {
      const storage = new HealthcheckStore(opened);
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
