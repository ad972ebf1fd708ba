/**
 * The alert routes in GET /openapi.json (docs/api.md): both described, their query parameters
 * listed, and their answers (empty, then with a triggered alert and its notification) within the
 * described schemas; the `alerts` and `depends-on` fields in every kind's body.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KINDS } from "../../../src/healthchecks/definition.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import type { VigieServer } from "../../../src/server.js";
import { FakeNotifier, withNotifier } from "../../support/notifier.js";
import { describedPaths, expectDescribedAnswer, type Paths } from "../../support/openapi.js";
import { freePort } from "../../support/process.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";

let server: VigieServer;
let paths: Paths;

beforeAll(async () => {
  server = await startTestServer({
    modules: withNotifier([healthchecksModule], new FakeNotifier(["team-chat"])),
    config: { healthchecks: { "min-interval": "100ms" } },
  });
  paths = await describedPaths(server.app);
});
afterAll(() => server.close());

async function answer(path: string, url = path) {
  const operation = paths[path]?.get;
  expect(operation?.summary, path).toBeDefined();
  if (operation === undefined) return;
  const response = await server.app.inject({ method: "GET", url });
  const mediaType = String(response.headers["content-type"] ?? "").split(";")[0] ?? "";
  expectDescribedAnswer(operation, response.statusCode, mediaType, response.json());
  return response.json();
}

describe("the alert routes in GET /openapi.json", () => {
  it("describe both routes and the query of the history", () => {
    expect(paths["/alerts"]?.get?.summary).toMatch(/triggered alerts/);
    expect(paths["/alerts/history"]?.get?.parameters?.map((parameter) => parameter.name).sort()).toEqual([
      "limit",
      "since",
      "until",
    ]);
  });

  it("describe alerts and depends-on in the body of every kind", () => {
    for (const kind of KINDS) {
      const schema = paths[`/healthcheck/${kind}`]?.post?.requestBody?.content["application/json"]?.schema;
      expect(schema, kind).toMatchObject({
        properties: {
          alerts: {
            type: "array",
            maxItems: 20,
            // Heartbeats alert at the first missed run (docs/alerts.md).
            items: {
              properties: {
                output: { type: "string" },
                "failure-threshold": { minimum: 1, default: kind === "heartbeat" ? 1 : 3 },
              },
            },
          },
          "depends-on": { type: "array", items: { type: "string" } },
        },
      });
    }
  });

  it("answer within the described schemas, empty and with a triggered alert", async () => {
    expect(await answer("/alerts")).toEqual([]);
    expect(await answer("/alerts/history")).toEqual({ notifications: [] });
    const port = await freePort();
    const check = {
      name: "db",
      target: "127.0.0.1",
      port,
      interval: "100ms",
      timeout: "100ms",
      alerts: [{ output: "team-chat", "failure-threshold": 1 }],
    };
    expect((await server.app.inject({ method: "POST", url: "/healthcheck/tcp", payload: check })).statusCode).toBe(201);
    await until(async () => ((await answer("/alerts"))?.length === 1 ? true : undefined), "a triggered alert");
    expect((await answer("/alerts/history", "/alerts/history?limit=5"))?.notifications).toHaveLength(1);
  });
});
