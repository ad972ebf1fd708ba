import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  defaultPublicUrl,
  HostOriginPolicy,
  parseAllowedHost,
  parseAllowedOrigin,
  parsePublicUrl,
} from "../../src/platform/host-origin.js";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";

describe("configuration values", () => {
  it("normalises allowed hosts and refuses what is not a host", () => {
    expect(parseAllowedHost("Vigie.Example.org.")).toBe("vigie.example.org");
    expect(parseAllowedHost("*.Example.org")).toBe("*.example.org");
    expect(parseAllowedHost("10.0.0.5")).toBe("10.0.0.5");
    expect(parseAllowedHost("::1")).toBe("::1");
    for (const entry of ["", "a b", "*.", "*.*.example.org", "http://example.org", "example.org:8080", "*.10.0.0.1"]) {
      expect(parseAllowedHost(entry), entry).toBeUndefined();
    }
  });

  it("normalises allowed origins as browsers send them and refuses paths, users and other schemes", () => {
    expect(parseAllowedOrigin("https://Dashboard.Example.org/")).toBe("https://dashboard.example.org");
    expect(parseAllowedOrigin("https://dashboard.example.org:443")).toBe("https://dashboard.example.org");
    expect(parseAllowedOrigin("http://127.0.0.1:3000")).toBe("http://127.0.0.1:3000");
    expect(parseAllowedOrigin("https://*.Example.org")).toBe("https://*.example.org");
    expect(parseAllowedOrigin("http://*.example.org:8080")).toBe("http://*.example.org:8080");
    for (const entry of [
      "example.org",
      "https://example.org/path",
      "https://user@example.org",
      "https://example.org?x",
      "ftp://example.org",
      "https://*.10.0.0.1",
      "*",
      "https://*",
    ]) {
      expect(parseAllowedOrigin(entry), entry).toBeUndefined();
    }
  });

  it("normalises the public URL and derives its default from the bind address", () => {
    expect(parsePublicUrl("https://Vigie.example.org:443/")).toBe("https://vigie.example.org");
    expect(parsePublicUrl("http://example.org:8080/vigie/")).toBe("http://example.org:8080/vigie");
    for (const text of [
      "vigie.example.org",
      "ftp://example.org",
      "https://u:p@example.org",
      "https://a.org/?q",
      "https://a.org/#x",
    ]) {
      expect(parsePublicUrl(text), text).toBeUndefined();
    }
    expect(defaultPublicUrl("127.0.0.1", 8080)).toBe("http://127.0.0.1:8080");
    expect(defaultPublicUrl("::1", 8080)).toBe("http://[::1]:8080");
    expect(defaultPublicUrl("0.0.0.0", 80)).toBe("http://0.0.0.0:80");
  });
});

describe("HostOriginPolicy", () => {
  const policy = new HostOriginPolicy({
    "public-url": "https://vigie.example.org",
    "allowed-hosts": ["vigie.internal", "*.example.net"],
    "allowed-origins": ["https://dashboard.example.org", "https://*.example.com", "http://*.local.test:3000"],
  });

  it("accepts IP literals, localhost, the public URL's host and allowed hosts, whatever the port or case", () => {
    for (const host of [
      "127.0.0.1:8080",
      "127.0.0.1",
      "10.1.2.3:80",
      "[::1]:8080",
      "[2001:db8::1]",
      "localhost",
      "LOCALHOST:8080",
      "localhost.",
      "vigie.example.org",
      "vigie.example.org:443",
      "vigie.internal",
      "a.example.net",
      "b.a.Example.NET:8080",
    ]) {
      expect(policy.allowsHost(host), host).toBe(true);
    }
    for (const host of [
      "evil.example",
      "example.net",
      "vigie.example.org.evil.com",
      "localhost.evil.com",
      "evil-example.net",
      "127.0.0.1.nip.io",
    ]) {
      expect(policy.allowsHost(host), host).toBe(false);
    }
  });

  it("trusts the request's own origin, the public URL's and the allowed ones, never an IP literal as such", () => {
    const own = "http://127.0.0.1:8080";
    expect(policy.allowsOrigin("http://127.0.0.1:8080", own)).toBe(true);
    expect(policy.allowsOrigin("https://vigie.example.org", own)).toBe(true);
    expect(policy.allowsOrigin("https://dashboard.example.org", own)).toBe(true);
    expect(policy.allowsOrigin("https://ops.example.com", own)).toBe(true);
    expect(policy.allowsOrigin("http://app.local.test:3000", own)).toBe(true);
    for (const origin of [
      "http://127.0.0.2:8080",
      "http://127.0.0.1:8081",
      "https://127.0.0.1:8080",
      "http://evil.example",
      "http://dashboard.example.org",
      "https://example.com",
      "https://ops.example.com:8443",
      "http://app.local.test",
      "null",
      "not a url",
    ]) {
      expect(policy.allowsOrigin(origin, own), origin).toBe(false);
    }
  });
});

describe("host and origin checks on every route of the real server", () => {
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({
      config: {
        http: {
          "public-url": "https://vigie.example.org",
          "allowed-hosts": ["*.example.net"],
          "allowed-origins": ["https://dashboard.example.org"],
        },
        healthchecks: { "allow-api-commands": true },
        comments: {
          "admin-token": "comments-admin-token",
          websites: [{ name: "blog", "allowed-origins": ["https://blog.example.org"] }],
        },
      },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const inject = async (options: {
    method: "GET" | "POST" | "PUT" | "DELETE" | "OPTIONS";
    url: string;
    headers?: Record<string, string>;
    payload?: unknown;
  }) => {
    const response = await server.app.inject({
      method: options.method,
      url: options.url,
      headers: { host: "127.0.0.1:8080", ...options.headers },
      ...(options.payload === undefined ? {} : { payload: options.payload as Record<string, unknown> }),
    });
    const body = (response.body === "" ? {} : response.json()) as Record<string, unknown>;
    return { status: response.statusCode, headers: response.headers, body };
  };

  it("answers 421 to a foreign Host on every route of every module, and on unknown routes", async () => {
    expect(server.routes.length).toBeGreaterThan(30);
    const seen = new Set<string>();
    for (const route of server.routes) {
      const url = route.url.replace(/:[a-z]+/g, "x").replace("*", "x");
      const answer = await inject({
        method: route.method as "GET",
        url,
        headers: { host: "evil.example" },
        ...(route.method === "GET" || route.method === "OPTIONS" ? {} : { payload: {} }),
      });
      expect(answer, `${route.method} ${route.url}`).toMatchObject({
        status: 421,
        body: { error: "host evil.example is not allowed" },
      });
      seen.add(route.url.split("/")[route.url.startsWith("/api/") ? 3 : 1] ?? "");
    }
    // Every module answered: registry, comments (challenge, comment), healthchecks, streams.
    for (const part of ["registry", "challenge", "comment", "healthcheck", "result", "stream", "healthz", "metrics"]) {
      expect(seen, part).toContain(part);
    }
    expect(await inject({ method: "GET", url: "/nowhere", headers: { host: "evil.example:8080" } })).toMatchObject({
      status: 421,
      body: { error: "host evil.example:8080 is not allowed" },
    });
  });

  it("accepts IP literals, localhost, the public URL's host and allowed hosts", async () => {
    for (const host of [
      "127.0.0.1:8080",
      "[::1]:8080",
      "192.168.1.7",
      "localhost",
      "localhost:8080",
      "vigie.example.org",
      "a.example.net",
    ]) {
      expect((await inject({ method: "GET", url: "/healthz", headers: { host } })).status, host).toBe(200);
    }
  });

  const commandCheck = (name: string) => ({
    name,
    command: "true",
    timeout: "1s",
    interval: "1h",
  });

  it("refuses a cross-origin POST of a command check and creates nothing", async () => {
    for (const origin of ["http://evil.example", "http://127.0.0.2:8080", "https://127.0.0.1:8080", "null"]) {
      const answer = await inject({
        method: "POST",
        url: "/healthcheck/command",
        headers: { origin },
        payload: commandCheck("from-a-web-page"),
      });
      expect(answer, origin).toEqual({
        status: 403,
        headers: expect.anything(),
        body: { error: `cross-origin request from ${origin} refused` },
      });
    }
    expect((await inject({ method: "GET", url: "/healthcheck/from-a-web-page" })).status).toBe(404);
  });

  it("lets the request's own origin, the public URL's, an allowed one and no origin at all through", async () => {
    const origins: Array<[string, string | undefined]> = [
      ["own", "http://127.0.0.1:8080"],
      ["public", "https://vigie.example.org"],
      ["listed", "https://dashboard.example.org"],
      ["none", undefined],
    ];
    for (const [name, origin] of origins) {
      const answer = await inject({
        method: "POST",
        url: "/healthcheck/command",
        headers: origin === undefined ? {} : { origin },
        payload: commandCheck(`check-${name}`),
      });
      expect(answer.status, name).toBe(201);
      await inject({ method: "DELETE", url: `/healthcheck/check-${name}` });
    }
  });

  it("lets cross-origin reads through (CORS keeps their answers from the page) but not WebSocket upgrades", async () => {
    expect(
      (await inject({ method: "GET", url: "/healthcheck", headers: { origin: "http://evil.example" } })).status,
    ).toBe(200);
    const upgrade = await inject({
      method: "GET",
      url: "/api/v1/stream",
      headers: { origin: "http://evil.example", connection: "Upgrade", upgrade: "websocket" },
    });
    expect(upgrade).toMatchObject({
      status: 403,
      body: { error: "cross-origin request from http://evil.example refused" },
    });
  });

  it("keeps CORS on the public comment routes for each website's allowed origins only", async () => {
    const allowed = await inject({
      method: "POST",
      url: "/api/v1/comment/blog/post",
      headers: { origin: "https://blog.example.org" },
      payload: {},
    });
    // Past the origin check: the body is refused for its fields, readable by the page.
    expect(allowed.status).toBe(400);
    expect(allowed.headers["access-control-allow-origin"]).toBe("https://blog.example.org");
    const preflight = await inject({
      method: "OPTIONS",
      url: "/api/v1/comment/blog/post",
      headers: { origin: "https://blog.example.org", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    const foreign = await inject({
      method: "POST",
      url: "/api/v1/comment/blog/post",
      headers: { origin: "https://other.example" },
      payload: {},
    });
    expect(foreign).toMatchObject({
      status: 403,
      body: { error: "cross-origin request from https://other.example refused" },
    });
    // The admin routes declare no CORS: a page of the blog cannot moderate.
    const admin = await inject({
      method: "DELETE",
      url: "/api/admin/comment/blog/post",
      headers: { origin: "https://blog.example.org", authorization: "comments-admin-token" },
    });
    expect(admin).toMatchObject({
      status: 403,
      body: { error: "cross-origin request from https://blog.example.org refused" },
    });
  });
});
