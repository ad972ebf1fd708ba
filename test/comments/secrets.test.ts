import { chmodSync, existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { commentsModule } from "../../src/comments/index.js";
import { ADMIN_TOKEN_FILE } from "../../src/comments/secrets.js";
import { parseConfig } from "../../src/platform/config.js";
import { sqlitePath } from "../../src/platform/database.js";
import { readSetting } from "../../src/platform/settings.js";
import { buildServer, type VigieServer } from "../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { temporaryDirectory } from "../support/process.js";
import { admin, postComment, solvedBody } from "./support.js";

/** A server whose log lines are collected. */
async function startLogged(
  url: string,
  comments: Record<string, unknown> = {},
  environment: Record<string, string> = {},
): Promise<{ server: VigieServer; log: () => string }> {
  let log = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      log += chunk;
      done();
    },
  });
  const config = parseConfig({ database: { url }, comments }, environment, [commentsModule]);
  const server = await buildServer(config, { modules: [commentsModule], logger: pino({ level: "info" }, stream) });
  return { server, log: () => log };
}

describe.each(DATABASE_KINDS)("comments secrets on $kind (first start)", ({ kind, skip }) => {
  let database: TestDatabase;
  let dataDirectory: string;
  const servers: VigieServer[] = [];
  const cwd = process.cwd();

  beforeAll(async () => {
    if (skip) return;
    database = await createTestDatabase(kind);
    if (kind === "sqlite") {
      dataDirectory = dirname(sqlitePath(database.url));
    } else {
      // PostgreSQL keeps files in ./data of the working directory: work in a directory of our own.
      const directory = temporaryDirectory();
      process.chdir(directory);
      dataDirectory = join(directory, "data");
    }
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });
  afterAll(async () => {
    process.chdir(cwd);
    if (!skip) await database.drop();
  });

  it.skipIf(skip)("generates the admin token and challenge secret once, and reuses them", async () => {
    const file = join(dataDirectory, ADMIN_TOKEN_FILE);
    expect(existsSync(file)).toBe(false);
    const first = await startLogged(database.url);
    servers.push(first.server);

    const token = readFileSync(file, "utf8");
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(await readSetting(first.server.context.database, "comments.admin-token")).toBe(token);
    const secret = await readSetting(first.server.context.database, "comments.challenge-secret");
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(secret).not.toBe(token);
    // The log says where the token is, never what it is.
    expect(first.log()).toContain(file);
    expect(first.log()).not.toContain(token);
    expect(first.log()).not.toContain(secret);

    const app = first.server.app;
    expect((await admin(app, "GET", "/api/admin/event/site", token)).statusCode).toBe(200);
    expect((await admin(app, "GET", "/api/admin/event/site", `Bearer ${token}`)).statusCode).toBe(200);
    expect((await admin(app, "GET", "/api/admin/event/site", "wrong")).statusCode).toBe(401);

    // A second server on the same database (a restart, or another instance) uses the same values:
    // its token file is rewritten with the same token, its mode tightened again.
    chmodSync(file, 0o644);
    const body = await solvedBody(app, "site", "post");
    const second = await startLogged(database.url);
    servers.push(second.server);
    expect(readFileSync(file, "utf8")).toBe(token);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(second.log()).toContain(file);
    expect(second.log()).not.toContain(token);
    expect((await admin(second.server.app, "GET", "/api/admin/event/site", token)).statusCode).toBe(200);
    // A challenge issued by the first verifies on the second.
    expect((await postComment(second.server.app, "site", "post", body)).statusCode).toBe(201);
  });

  it.skipIf(skip)("lets configured values (file or environment) win over generated ones", async () => {
    const generated = await startLogged(database.url);
    servers.push(generated.server);
    const token = readFileSync(join(dataDirectory, ADMIN_TOKEN_FILE), "utf8");
    const body = await solvedBody(generated.server.app, "site", "configured");

    const configured = await startLogged(database.url, { "admin-token": "configured-token" });
    servers.push(configured.server);
    const app = configured.server.app;
    expect((await admin(app, "GET", "/api/admin/event/site", token)).statusCode).toBe(401);
    expect((await admin(app, "GET", "/api/admin/event/site", "configured-token")).statusCode).toBe(200);
    expect(configured.log()).not.toContain(ADMIN_TOKEN_FILE);

    const fromEnvironment = await startLogged(
      database.url,
      {},
      {
        VIGIE_COMMENTS_ADMIN_TOKEN: "env-token",
        VIGIE_COMMENTS_CHALLENGE_SECRET: "env-secret",
      },
    );
    servers.push(fromEnvironment.server);
    const envApp = fromEnvironment.server.app;
    expect((await admin(envApp, "GET", "/api/admin/event/site", "env-token")).statusCode).toBe(200);
    expect((await admin(envApp, "GET", "/api/admin/event/site", token)).statusCode).toBe(401);
    // Signed with the generated secret: not valid under the configured one.
    const refused = await postComment(envApp, "site", "configured", body);
    expect([refused.statusCode, refused.json()]).toEqual([400, { error: "Bad challenge response" }]);
    // The generated values stay in the database for when the configuration drops them.
    expect(await readSetting(fromEnvironment.server.context.database, "comments.admin-token")).toBe(token);
  });
});
