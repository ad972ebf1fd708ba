/**
 * The badge routes through `app.inject()` on a real server (docs/healthchecks.md): every path in
 * SVG and JSON, which checks have badges (the status page's, those labelled public) and the one 404
 * of every other name, the answers of a bad window, the cache headers, ETag and 304, maintenance
 * left out of uptime, escaping of a hostile name, and no token asked when the API needs one.
 */
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BADGE_MAX_AGE_S } from "../../../src/healthchecks/badges/routes.js";
import { responseTimeColor } from "../../../src/healthchecks/badges/values.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import type { VigieServer } from "../../../src/server.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";
import { type Listening, listen } from "../local-servers.js";
import { expectSelfContainedBadge } from "./svg-document.js";

const HOSTILE = `<b>&"x'`;
const PATHS = ["status", "uptime/1h", "uptime/24h", "uptime/7d", "uptime/30d", "response-time"];

let web: Listening;
beforeAll(async () => {
  web = await listen(createServer((_request, response) => response.writeHead(200).end("ok")));
});
afterAll(() => web?.close());

/** A tcp check every 200 ms, of the local web server (up) or of a closed port (down). */
const tcp = (name: string, up: boolean, labels?: Record<string, string>) => ({
  name,
  target: "127.0.0.1",
  port: up ? web.port : 9,
  timeout: "200ms",
  interval: "200ms",
  ...(labels === undefined ? {} : { labels }),
});

async function get(server: VigieServer, url: string, headers: Record<string, string> = {}, method = "GET") {
  const response = await server.app.inject({ method: method === "HEAD" ? "HEAD" : "GET", url, headers });
  return { status: response.statusCode, headers: response.headers, body: response.body };
}

const badgeUrl = (name: string, path: string, format: "svg" | "json") =>
  `/badge/${encodeURIComponent(name)}/${path}.${format}`;

async function json(server: VigieServer, name: string, path: string) {
  const response = await get(server, badgeUrl(name, path, "json"));
  expect(response.status, `${name} ${path}: ${response.body}`).toBe(200);
  return JSON.parse(response.body);
}

/** Waits until the history holds a result of each named check (the uptime badges read it). */
async function stored(server: VigieServer, names: readonly string[]): Promise<void> {
  for (const name of names) {
    await until(async () => {
      const response = await get(server, `/result/${encodeURIComponent(name)}/history?limit=1`);
      return response.status === 200 && JSON.parse(response.body).results.length > 0 ? true : undefined;
    }, `a stored result of ${name}`);
  }
}

describe("the badges of a server whose status page shows some checks", () => {
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        healthchecks: {
          "min-interval": "100ms",
          history: { retention: "1h" },
          "status-page": { enabled: true, checks: ["website", "team=web"] },
          "tcp-checks": [
            tcp("website", true),
            tcp("api", false, { team: "web" }),
            tcp("db", true, { public: "true" }),
            tcp("private", true, { team: "data", public: "yes" }),
            tcp(HOSTILE, true, { public: "true" }),
          ],
        },
      },
    });
    await stored(server, ["website", "api", "db", "private", HOSTILE]);
  });
  afterAll(() => server?.close());

  it("answers every path of the shown and public checks, in SVG and in shields.io's JSON", async () => {
    for (const name of ["website", "api", "db"]) {
      for (const path of PATHS) {
        const svg = await get(server, badgeUrl(name, path, "svg"));
        expect(svg.status, `${name} ${path}.svg`).toBe(200);
        expect(svg.headers["content-type"]).toBe("image/svg+xml; charset=utf-8");
        const answer = await get(server, badgeUrl(name, path, "json"));
        expect(answer.status).toBe(200);
        expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
        const endpoint = JSON.parse(answer.body);
        expect(Object.keys(endpoint)).toEqual(["schemaVersion", "label", "message", "color"]);
        expect(endpoint.schemaVersion).toBe(1);
        // The SVG says what the JSON says, and its title says which check.
        const document = expectSelfContainedBadge(svg.body);
        const texts = document.texts.filter((text) => text.element === "text").map((text) => text.text);
        expect(texts).toEqual([endpoint.label, endpoint.label, endpoint.message, endpoint.message]);
        const title = document.texts.find((text) => text.element === "title")?.text;
        expect(title).toMatch(new RegExp(`^${name} .*: ${endpoint.message.replace(".", "\\.")}$`));
      }
    }
  });

  it("says the state, the uptime and the response time with their colours", async () => {
    expect(await json(server, "website", "status")).toEqual({
      schemaVersion: 1,
      label: "website",
      message: "up",
      color: "brightgreen",
    });
    expect(await json(server, "api", "status")).toEqual({
      schemaVersion: 1,
      label: "api",
      message: "down",
      color: "red",
    });
    expect(await json(server, "website", "uptime/24h")).toEqual({
      schemaVersion: 1,
      label: "uptime 24h",
      message: "100%",
      color: "brightgreen",
    });
    expect(await json(server, "api", "uptime/1h")).toMatchObject({ label: "uptime 1h", message: "0%", color: "red" });
    const response = await json(server, "website", "response-time");
    expect(response).toMatchObject({ label: "response time", message: expect.stringMatching(/^\d+ ms$/) });
    expect(response.color).toBe(responseTimeColor(Number.parseInt(response.message, 10)));
    // A failing check has no successful result: no response time.
    expect(await json(server, "api", "response-time")).toMatchObject({ message: "no data", color: "lightgrey" });
  });

  it("escapes a hostile name in the SVG, and keeps it as it is in the JSON", async () => {
    expect(await json(server, HOSTILE, "status")).toMatchObject({ label: HOSTILE, message: "up" });
    const svg = await get(server, badgeUrl(HOSTILE, "status", "svg"));
    expect(svg.body).not.toContain(HOSTILE);
    expectSelfContainedBadge(svg.body, `${HOSTILE} status: up`);
  });

  it("answers the same 404 for a check without badges as for an unknown name", async () => {
    const created = await server.app.inject({
      method: "POST",
      url: "/healthcheck/tcp",
      payload: tcp("secret", true, { team: "ops" }),
    });
    expect(created.statusCode).toBe(201);
    const hidden = [];
    for (const path of PATHS) {
      for (const format of ["svg", "json"] as const) {
        const answer = await get(server, badgeUrl("secret", path, format));
        expect(answer.status).toBe(404);
        expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
        expect(answer.headers["cache-control"]).toBeUndefined();
        expect(answer.headers.etag).toBeUndefined();
        hidden.push(answer.body);
      }
    }
    expect(JSON.parse(hidden[0] ?? "")).toEqual({ error: "no badge for healthcheck secret" });
    expect(new Set(hidden).size).toBe(1);
    const deleted = await server.app.inject({ method: "DELETE", url: "/healthcheck/secret" });
    expect(deleted.statusCode).toBe(200);
    const unknown = await get(server, badgeUrl("secret", "status", "svg"));
    expect({ status: unknown.status, body: unknown.body }).toEqual({ status: 404, body: hidden[0] });
    // A check the page does not show, and one whose public label is not "true".
    for (const name of ["private", "nowhere"]) {
      const answer = await get(server, badgeUrl(name, "uptime/24h", "json"));
      expect({ status: answer.status, body: JSON.parse(answer.body) }).toEqual({
        status: 404,
        body: { error: `no badge for healthcheck ${name}` },
      });
    }
  });

  it("answers 404 for a window or a format it does not have", async () => {
    for (const url of [
      "/badge/website/uptime/2h.svg",
      "/badge/website/uptime/24h.png",
      "/badge/website/uptime.svg",
      "/badge/website/status",
      "/badge/website/response-time.json/x",
      "/badge/website",
    ]) {
      const answer = await get(server, url);
      expect(answer.status, url).toBe(404);
      expect(JSON.parse(answer.body)).toEqual({ error: `route GET ${url} not found` });
    }
  });

  it("is cacheable for a minute with a strong ETag of its body; If-None-Match holding it answers 304", async () => {
    const url = badgeUrl("website", "status", "svg");
    const first = await get(server, url);
    expect(first.headers["cache-control"]).toBe(`public, max-age=${BADGE_MAX_AGE_S}`);
    expect(first.headers["x-content-type-options"]).toBe("nosniff");
    expect(first.headers["content-security-policy"]).toBe("default-src 'none'");
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    // The same body has the same tag; another body another.
    expect((await get(server, url)).headers.etag).toBe(etag);
    expect((await get(server, badgeUrl("website", "status", "json"))).headers.etag).not.toBe(etag);
    for (const header of [etag, `W/${etag}`, "*", `"other", ${etag}`]) {
      const revalidated = await get(server, url, { "if-none-match": header });
      expect(revalidated.status, header).toBe(304);
      expect(revalidated.body).toBe("");
      expect(revalidated.headers.etag).toBe(etag);
      expect(revalidated.headers["cache-control"]).toBe(`public, max-age=${BADGE_MAX_AGE_S}`);
    }
    const changed = await get(server, url, { "if-none-match": '"other"' });
    expect(changed.status).toBe(200);
    expect(changed.body).toBe(first.body);
  });

  it("answers HEAD with the headers and no body", async () => {
    const head = await get(server, badgeUrl("website", "status", "svg"), {}, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers["content-type"]).toBe("image/svg+xml; charset=utf-8");
    expect(head.headers.etag).toBeDefined();
    expect(head.body).toBe("");
  });
});

describe("badges in a maintenance window", () => {
  it("leave the window's results out of uptime: a check failing through it has no uptime", async () => {
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: { healthchecks: { "min-interval": "100ms", history: { retention: "1h" } } },
    });
    try {
      const now = Date.now();
      const window = {
        name: "upgrade",
        checks: ["held"],
        start: new Date(now - 60_000).toISOString(),
        end: new Date(now + 3_600_000).toISOString(),
      };
      expect((await server.app.inject({ method: "POST", url: "/maintenance", payload: window })).statusCode).toBe(201);
      const created = await server.app.inject({
        method: "POST",
        url: "/healthcheck/tcp",
        payload: tcp("held", false, { public: "true" }),
      });
      expect(created.statusCode).toBe(201);
      await stored(server, ["held"]);
      expect(JSON.parse((await get(server, "/result/held")).body)).toMatchObject({ success: false, maintenance: true });
      expect(await json(server, "held", "status")).toMatchObject({ message: "down", color: "red" });
      for (const window of ["1h", "24h", "7d", "30d"]) {
        expect(await json(server, "held", `uptime/${window}`)).toMatchObject({
          message: "no data",
          color: "lightgrey",
        });
      }
    } finally {
      await server.close();
    }
  });
});

describe("badges without a status page", () => {
  it("are those of the checks labelled public, without a token when the API needs one", async () => {
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        security: { "require-token": true },
        healthchecks: {
          "min-interval": "100ms",
          "tcp-checks": [tcp("website", true), tcp("db", true, { public: "true" })],
        },
      },
    });
    try {
      expect((await get(server, "/result/db")).status).toBe(401);
      expect((await get(server, badgeUrl("db", "status", "svg"))).status).toBe(200);
      expect((await get(server, badgeUrl("db", "uptime/24h", "json"))).status).toBe(200);
      // The page is disabled: it shows no check, so "website" has no badge.
      const hidden = await get(server, badgeUrl("website", "status", "svg"));
      expect({ status: hidden.status, body: JSON.parse(hidden.body) }).toEqual({
        status: 404,
        body: { error: "no badge for healthcheck website" },
      });
    } finally {
      await server.close();
    }
  });
});
