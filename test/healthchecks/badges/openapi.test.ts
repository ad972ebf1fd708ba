/**
 * The badge routes in GET /openapi.json: each described (public, its media type, 304 and 404), and
 * a client reading the document gets answers that agree with it, 304 included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { openApiPath } from "../../../src/platform/openapi.js";
import type { VigieServer } from "../../../src/server.js";
import { describedPaths, expectDescribedAnswer, expectDescribedStatus, type Paths } from "../../support/openapi.js";
import { startTestServer } from "../../support/server.js";

let server: VigieServer;
let paths: Paths;
beforeAll(async () => {
  server = await startTestServer({
    modules: [healthchecksModule],
    config: {
      healthchecks: {
        "tcp-checks": [
          { name: "db", target: "127.0.0.1", port: 9, timeout: "1s", interval: "1h", labels: { public: "true" } },
        ],
      },
    },
  });
  paths = await describedPaths(server.app);
});
afterAll(() => server?.close());

describe("the badge routes in GET /openapi.json", () => {
  it("describes the twelve routes: public, SVG or JSON, 304 and 404", () => {
    const routes = server.routes.filter((route) => route.url.startsWith("/badge/") && route.method === "GET");
    expect(routes).toHaveLength(12);
    for (const route of routes) {
      const path = openApiPath(route.url);
      const operation = paths[path]?.get;
      expect(operation?.summary, path).toMatch(/badge of a public healthcheck/);
      expect(operation?.security).toEqual([]);
      expect(Object.keys(operation?.responses ?? {})).toEqual(expect.arrayContaining(["200", "304", "404"]));
      expect(Object.keys(operation?.responses ?? {})).not.toContain("401");
      const media = path.endsWith(".svg") ? "image/svg+xml" : "application/json";
      expect(Object.keys(operation?.responses["200"]?.content ?? {})).toEqual([media]);
      expect(operation?.parameters).toContainEqual(expect.objectContaining({ name: "If-None-Match", in: "header" }));
    }
  });

  it("agrees with what the routes answer: 200, 304 and the 404 of a name without badges", async () => {
    for (const [path, operations] of Object.entries(paths).filter(([path]) => path.startsWith("/badge/"))) {
      const operation = operations.get;
      expect(operation).toBeDefined();
      if (operation === undefined) continue;
      for (const name of ["db", "nowhere"]) {
        const response = await server.app.inject({ method: "GET", url: path.replace("{name}", name) });
        const mediaType = String(response.headers["content-type"]).split(";")[0] ?? "";
        const body = mediaType === "application/json" ? response.json() : response.body;
        expect(response.statusCode).toBe(name === "db" ? 200 : 404);
        expectDescribedStatus(operation, response.statusCode);
        expectDescribedAnswer(operation, response.statusCode, mediaType, body);
        if (name !== "db") continue;
        const etag = String(response.headers.etag);
        const again = await server.app.inject({
          method: "GET",
          url: path.replace("{name}", name),
          headers: { "if-none-match": etag },
        });
        expect(again.statusCode).toBe(304);
        expectDescribedStatus(operation, 304);
      }
    }
  });
});
