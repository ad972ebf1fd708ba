/**
 * No secret in the logs: request URLs are logged with the value of every query parameter whose
 * name, percent-decoded as the server decodes it, holds a secret (`token`, `api_key`, `Password`,
 * `Authorization`, any case) redacted. `?%74oken=` is read as `token` by the channel route, so it is
 * redacted too. The log is captured at debug level in memory.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/platform/config.js";
import { defineModule } from "../../src/platform/module.js";
import { decodedName, isSecretName, redactRequestUrl } from "../../src/platform/redaction.js";
import { createRegistryModule } from "../../src/registry/index.js";
import { buildServer, type VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";

describe("isSecretName", () => {
  it("follows the secret-name rule, in any case", () => {
    for (const name of ["Authorization", "proxy-authorization", "COOKIE", "token", "X-Vault-Token", "api_key"]) {
      expect(isSecretName(name), name).toBe(true);
    }
    for (const name of ["client_secret", "Password", "x-auth-user", "OAuth", "KEY"]) {
      expect(isSecretName(name), name).toBe(true);
    }
    for (const name of ["query", "cookies-policy", "name", "k", "tok en", ""]) {
      // "cookies-policy" is not exactly Cookie and holds no secret word.
      expect(isSecretName(name), name).toBe(false);
    }
  });
});

describe("decodedName", () => {
  it("decodes as the server does, then again for a doubly encoded name, and never throws", () => {
    expect(decodedName("%74oken")).toBe("token");
    expect(decodedName("api%5Fkey")).toBe("api_key");
    expect(decodedName("%2574oken")).toBe("token");
    expect(decodedName("x+auth")).toBe("x auth");
    // A malformed escape: decoded byte by byte, the ASCII letters kept.
    expect(decodedName("%E9%74oken")).toBe("étoken");
    expect(decodedName("%ZZtoken%")).toBe("%ZZtoken%");
  });
});

describe("redactRequestUrl", () => {
  it("redacts the values of secret parameters after decoding their names, and keeps the rest", () => {
    const cases: Array<[string, string]> = [
      ["/api/v1/channel/a?token=s1", "/api/v1/channel/a?token=<redacted>"],
      ["/api/v1/channel/a?%74oken=s1&query=eA%3D%3D", "/api/v1/channel/a?%74oken=<redacted>&query=eA%3D%3D"],
      ["/x?TOKEN=s1", "/x?TOKEN=<redacted>"],
      ["/x?api%5Fkey=s1&a=1&Password=s2", "/x?api%5Fkey=<redacted>&a=1&Password=<redacted>"],
      ["/x?a=1;%61uthorization=s1", "/x?a=1;%61uthorization=<redacted>"],
      ["/x?%2574oken=s1", "/x?%2574oken=<redacted>"],
      ["/x?token=s1#frag&token=s2", "/x?token=<redacted>&token=<redacted>"],
      ["/x?token=a=b", "/x?token=<redacted>"],
      ["/x?token&name=tokenish", "/x?token&name=tokenish"],
      ["/x?", "/x?"],
      ["/path/with/token=not-a-query", "/path/with/token=not-a-query"],
      // A heartbeat's ping key (docs/healthchecks.md): returned by the API, kept out of log files.
      ["/ping/abcdefghijklmnopqrstuv", "/ping/<redacted>"],
      ["/ping/abcdefghijklmnopqrstuv/start?rid=x&token=s", "/ping/<redacted>/start?rid=x&token=<redacted>"],
      ["/pings/abc", "/pings/abc"],
    ];
    for (const [url, logged] of cases) expect(redactRequestUrl(url), url).toBe(logged);
  });
});

/** A where-condition for the channel route, base64: `[:= :service "cpu"]`. */
const QUERY = Buffer.from('[:= :service "cpu"]').toString("base64");

/** A pino destination that keeps every line in memory. */
function memoryLog(): { stream: Writable; text: () => string; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const text = () => chunks.join("");
  const lines = () =>
    text()
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { stream, text, lines };
}

describe("request logs at debug level", () => {
  const log = memoryLog();
  let server: VigieServer;
  let token = "";
  const secrets: string[] = [];
  /** A distinct secret value per request, recorded so the log can be searched for every one. */
  const secret = (label: string): string => {
    const value = `S3cr3t-${label}-${secrets.length}-q7Zx`;
    secrets.push(value);
    return value;
  };

  beforeAll(async () => {
    const modules = [
      createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" } }),
      streamsModule,
    ];
    const config = parseConfig(
      { "log-level": "debug", database: { url: "sqlite::memory:" }, security: { "require-token": true } },
      {},
      modules,
    );
    server = await buildServer(config, { modules, logger: pino({ level: "debug" }, log.stream) });
    const issued = await server.app.inject({
      method: "POST",
      url: "/api/v1/registry/token",
      payload: { name: "logs", user: "root", password: "root-password" },
    });
    expect(issued.statusCode, issued.body).toBe(201);
    token = issued.json().token;
    secrets.push(token);
  });
  afterAll(() => server?.close());

  it("never writes a token or key of the query string, however its name is spelt", async () => {
    const requests: Array<[string, number]> = [
      // The channel route reads `?token=`, decoded: `%74oken` is accepted (426: not an upgrade).
      [`/api/v1/channel/alerts?%74oken=${token}`, 426],
      [`/api/v1/channel/alerts?token=${token}&query=${encodeURIComponent(QUERY)}`, 426],
      [`/api/v1/channel/alerts?TOKEN=${secret("upper")}`, 401],
      [`/api/v1/channel/alerts?%74oken=${secret("wrong")}`, 401],
      [`/api/v1/stream?api%5Fkey=${secret("api-key")}`, 401],
      [`/healthz?to%6Ben=${secret("mixed")}&Password=${secret("password")}`, 200],
      [`/healthz?x=1;%61uthorization=${secret("semicolon")}`, 200],
      [`/healthz?%2574oken=${secret("double")}`, 200],
      [`/no/such/route?client_secret=${secret("secret")}`, 404],
    ];
    for (const [url, status] of requests) {
      const answer = await server.app.inject({ method: "GET", url });
      expect(answer.statusCode, `${url}: ${answer.body}`).toBe(status);
    }
    const text = log.text();
    for (const value of secrets) expect(text).not.toContain(value);
    // The requests were logged, with their URLs redacted.
    const urls = log
      .lines()
      .filter((line) => line.msg === "request completed" && line.url !== "/api/v1/registry/token")
      .map((line) => line.url);
    expect(urls).toContain("/api/v1/channel/alerts?%74oken=<redacted>");
    expect(urls).toContain("/api/v1/stream?api%5Fkey=<redacted>");
    expect(urls).toContain("/healthz?to%6Ben=<redacted>&Password=<redacted>");
    expect(urls).toHaveLength(requests.length);
  });
});

describe("Fastify's own request log lines", () => {
  const log = memoryLog();
  let server: VigieServer;
  /** Logs the request the way Fastify's own request lines do (`{req}`), at info level. */
  const logging = defineModule({
    name: "logging",
    configShape: {},
    migrations: {},
    plugin: async (app) => {
      app.get("/logged", async (request) => {
        request.log.info({ req: request }, "incoming request");
        return { ok: true };
      });
    },
  });
  beforeAll(async () => {
    const config = parseConfig({ database: { url: "sqlite::memory:" } }, {}, [logging]);
    server = await buildServer(config, { modules: [logging], logger: pino({ level: "info" }, log.stream) });
  });
  afterAll(() => server?.close());

  it("have the URL redacted", async () => {
    const value = "S3cr3t-req-q7Zx";
    const answer = await server.app.inject({ method: "GET", url: `/logged?a=1&%74oken=${value}` });
    expect(answer.statusCode).toBe(200);
    const line = log.lines().find((entry) => entry.msg === "incoming request");
    expect(line?.req).toMatchObject({ method: "GET", url: "/logged?a=1&%74oken=<redacted>" });
    expect(log.text()).not.toContain(value);
  });
});
