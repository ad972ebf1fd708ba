/**
 * `GET /`: what the server serves and how to turn on the rest, as JSON for clients and as a page
 * without script for browsers; the same list the start-up log prints.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { linkLines } from "../../src/platform/home.js";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";

describe("GET /", () => {
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({
      config: {
        http: { "public-url": "https://vigie.example.org" },
        comments: { enabled: false },
        healthchecks: { "status-page": { enabled: true } },
      },
    });
  });
  afterAll(() => server.close());

  it("lists what is served with its address, and what is off with the key that turns it on", async () => {
    const answer = await server.app.inject({ method: "GET", url: "/" });
    expect(answer.statusCode).toBe(200);
    const body = answer.json() as {
      vigie: string;
      links: Array<{ title: string; url: string }>;
      off: Array<{ title: string; "enable-with": string }>;
    };
    expect(body.vigie).toMatch(/^\d+\.\d+\.\d+/);
    expect(body.links).toContainEqual({ title: "status page", url: "https://vigie.example.org/status" });
    expect(body.links).toContainEqual({ title: "health", url: "https://vigie.example.org/healthz" });
    expect(body.off).toContainEqual({ title: "comment moderation page", "enable-with": "comments.enabled: true" });
    expect(body.off).toContainEqual({
      title: "Riemann protocol input",
      "enable-with": "streams.riemann.enabled: true",
    });
    // Every listed path of this server answers something other than 404 (the pages exist).
    for (const { url } of body.links) {
      if (!url.startsWith("https://vigie.example.org/")) continue;
      const path = url.slice("https://vigie.example.org".length);
      expect((await server.app.inject({ method: "GET", url: path })).statusCode, path).not.toBe(404);
    }
  });

  it("answers a browser with a page of links and no script", async () => {
    const answer = await server.app.inject({ method: "GET", url: "/", headers: { accept: "text/html,*/*" } });
    expect(answer.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(answer.body).toContain('<a href="https://vigie.example.org/status">status page</a>');
    expect(answer.body).toContain("<code>comments.enabled: true</code>");
    expect(answer.body).not.toContain("<script");
  });

  it("gives the start-up log one line per link", () => {
    const lines = linkLines(server.links, "https://vigie.example.org");
    expect(lines).toContain("status page: https://vigie.example.org/status");
    expect(lines).toContain("comment widget (embed in your pages) is off (comments.enabled: true)");
  });
});
