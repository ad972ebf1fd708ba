/**
 * `GET /result/<name>/history` and `GET /result/<name>/uptime` (docs/healthchecks.md) through
 * `app.inject()`: the answers over seeded history, the 404 of an unknown check, every 400 of the
 * query, the results of running checks arriving in the history, and retention 0 answering from the
 * latest result.
 */
import { createServer } from "node:http";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ResultHistory } from "../../src/healthchecks/history.js";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import type { HealthcheckResult } from "../../src/healthchecks/results.js";
import { spreadOf } from "../../src/healthchecks/scheduler.js";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";
import { until } from "../support/until.js";
import { type Listening, listen } from "./local-servers.js";

const HOUR = 3_600_000;
const iso = (milliseconds: number) => new Date(milliseconds).toISOString();

let web: Listening;
beforeAll(async () => {
  web = await listen(
    createServer((request, response) => {
      response.writeHead(request.url === "/fail" ? 500 : 200);
      response.end(request.url === "/fail" ? "broken" : "ok");
    }),
  );
});
afterAll(() => web.close());

/**
 * A name whose first run comes at least 57 s after it is added with a 1 h interval (the scheduler
 * spreads first runs over min(interval, 60 s) by a hash of the name): its history holds only what a
 * test seeds.
 */
function quietName(prefix: string): string {
  for (let index = 0; ; index++) {
    const name = `${prefix}-${index}`;
    if (spreadOf(name) >= 0.95) return name;
  }
}

function result(name: string, time: number, success: boolean, message = "connect ECONNREFUSED"): HealthcheckResult {
  return {
    name,
    configuration: { name, kind: "tcp", source: "api" },
    success,
    timestamp: iso(time),
    message: success ? "success" : message,
    duration: 3.2,
  };
}

async function get(server: VigieServer, url: string) {
  const response = await server.app.inject({ method: "GET", url });
  return { status: response.statusCode, body: response.json() as unknown };
}

describe("history and uptime routes", () => {
  let server: VigieServer;
  let seeder: ResultHistory;
  const quiet = quietName("quiet");
  const empty = quietName("empty");
  /** When the seeded results end: the newest is one second before. */
  const now = Date.now();

  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: { healthchecks: { "min-interval": "100ms" } },
    });
    for (const name of [quiet, empty]) {
      const added = await server.app.inject({
        method: "POST",
        url: "/healthcheck/tcp",
        payload: { name, target: "127.0.0.1", port: 9, timeout: "1s", interval: "1h" },
      });
      expect(added.statusCode).toBe(201);
    }
    // The results of `quiet`, written into the server's database as its own history would:
    // 120 results 10 s apart, every 10th a failure.
    seeder = new ResultHistory(server.context.database, {
      retentionMs: 7 * 24 * HOUR,
      logger: pino({ level: "silent" }),
    });
    for (let index = 120; index >= 1; index--) {
      seeder.record(quiet, result(quiet, now - index * 10_000, index % 10 !== 0, `failure ${index}`));
    }
    await seeder.flush();
  });
  afterAll(async () => {
    await seeder.close();
    await server.close();
  });

  it("answers the history newest first, 100 results by default", async () => {
    const { status, body } = await get(server, `/result/${quiet}/history`);
    expect(status).toBe(200);
    const { results } = body as { results: Array<Record<string, unknown>> };
    expect(results).toHaveLength(100);
    expect(results[0]).toEqual({ timestamp: iso(now - 10_000), success: true, duration: 3, message: "success" });
    expect(results[9]).toEqual({ timestamp: iso(now - 100_000), success: false, duration: 3, message: "failure 10" });
    expect(results.at(-1)?.timestamp).toBe(iso(now - 100 * 10_000));
  });

  it("filters by since and until (inclusive, any offset) and limits", async () => {
    const since = encodeURIComponent(iso(now - 30_000));
    expect(await get(server, `/result/${quiet}/history?since=${since}`)).toEqual({
      status: 200,
      body: {
        results: [-10_000, -20_000, -30_000].map((offset) => ({
          timestamp: iso(now + offset),
          success: true,
          duration: 3,
          message: "success",
        })),
      },
    });
    // The same instant written with a +01:00 offset and lower-case separators.
    const local = new Date(now - 30_000 + HOUR).toISOString().replace("T", "t").replace("Z", "+01:00");
    const until = await get(server, `/result/${quiet}/history?until=${encodeURIComponent(local)}&limit=2`);
    expect((until.body as { results: Array<{ timestamp: string }> }).results.map((view) => view.timestamp)).toEqual([
      iso(now - 30_000),
      iso(now - 40_000),
    ]);
    const all = await get(server, `/result/${quiet}/history?limit=10000&unknown=ignored`);
    expect((all.body as { results: unknown[] }).results).toHaveLength(120);
  });

  it("answers the uptime of each period and the incidents, newest first", async () => {
    const { status, body } = await get(server, `/result/${quiet}/uptime`);
    expect(status).toBe(200);
    // The last hour holds 120 results 10 s apart, one failure in 10 (a run of one each).
    expect(body).toMatchObject({ "1h": 0.9, "24h": 0.9, "7d": 0.9, "30d": 0.9 });
    const { incidents } = body as { incidents: Array<Record<string, unknown>> };
    expect(incidents).toHaveLength(12);
    expect(incidents[0]).toEqual({ start: iso(now - 100_000), end: iso(now - 90_000), message: "failure 10" });
    expect(incidents.at(-1)).toEqual({
      start: iso(now - 1_200_000),
      end: iso(now - 1_190_000),
      message: "failure 120",
    });
  });

  it("answers empty history and null ratios for a check without results", async () => {
    expect(await get(server, `/result/${empty}/history`)).toEqual({ status: 200, body: { results: [] } });
    expect(await get(server, `/result/${empty}/uptime`)).toEqual({
      status: 200,
      body: { "1h": null, "24h": null, "7d": null, "30d": null, incidents: [] },
    });
  });

  it("answers 404 for an unknown check", async () => {
    const notFound = { status: 404, body: { error: "healthcheck nope not found" } };
    expect(await get(server, "/result/nope/history")).toEqual(notFound);
    expect(await get(server, "/result/nope/uptime")).toEqual(notFound);
  });

  it.each([
    ["since=yesterday", "query parameter since: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z"],
    ["since=2026-11-22", "query parameter since: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z"],
    ["since=2026-11-22T10:15:02", "query parameter since: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z"],
    ["since=", "query parameter since: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z"],
    ["until=2026-02-30T00:00:00Z", "query parameter until: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z"],
    ["until=2026-01-01T24:00:00Z", "query parameter until: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z"],
    ["until=1767225600000", "query parameter until: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z"],
    ["since=2026-01-02T00:00:00Z&until=2026-01-01T23:59:59Z", "query parameter since: must not be after until"],
    ["since=2026-01-01T00:00:00Z&since=2026-01-02T00:00:00Z", "query parameter since: must be given once"],
    ["limit=0", "query parameter limit: must be an integer between 1 and 10000"],
    ["limit=10001", "query parameter limit: must be an integer between 1 and 10000"],
    ["limit=-1", "query parameter limit: must be an integer between 1 and 10000"],
    ["limit=1.5", "query parameter limit: must be an integer between 1 and 10000"],
    ["limit=ten", "query parameter limit: must be an integer between 1 and 10000"],
    ["limit=", "query parameter limit: must be an integer between 1 and 10000"],
    ["limit=99999999999999999999", "query parameter limit: must be an integer between 1 and 10000"],
    ["limit=1&limit=2", "query parameter limit: must be given once"],
  ])("answers 400 to ?%s", async (query, error) => {
    expect(await get(server, `/result/${quiet}/history?${query}`)).toEqual({ status: 400, body: { error } });
    // The query is checked before the check's existence.
    expect((await get(server, `/result/nope/history?${query}`)).status).toBe(400);
  });

  it("keeps the results of running checks", async () => {
    const added = await server.app.inject({
      method: "POST",
      url: "/healthcheck/http",
      payload: {
        name: "live",
        target: "127.0.0.1",
        port: web.port,
        path: "/fail",
        "valid-status": [200],
        timeout: "250ms",
        interval: "250ms",
      },
    });
    expect(added.statusCode).toBe(201);
    const results = await until(async () => {
      const { body } = await get(server, "/result/live/history");
      const { results: views } = body as { results: Array<Record<string, unknown>> };
      return views.length >= 3 ? views : undefined;
    }, "three results of the live check in its history");
    expect(results[0]).toMatchObject({ success: false, message: "HTTP request failed: status 500. Body: 'broken'" });
    const uptime = await get(server, "/result/live/uptime");
    expect(uptime.body).toMatchObject({ "1h": 0, incidents: [{ end: null }] });
  });
});

describe("history and uptime routes with a retention of 0", () => {
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      // A number, as YAML reads `retention: 0`.
      config: { healthchecks: { "min-interval": "100ms", history: { retention: 0 } } },
    });
  });
  afterAll(() => server.close());

  it("answers from the latest result only", async () => {
    const added = await server.app.inject({
      method: "POST",
      url: "/healthcheck/http",
      payload: {
        name: "latest",
        target: "127.0.0.1",
        port: web.port,
        "valid-status": [200],
        timeout: "250ms",
        interval: "250ms",
      },
    });
    expect(added.statusCode).toBe(201);
    expect(await get(server, "/result/latest/history")).toEqual({ status: 200, body: { results: [] } });
    // Several runs, yet one result: the latest.
    await until(async () => {
      const metrics = await server.app.inject({ method: "GET", url: "/metrics" });
      const runs = /^healthcheck_total\{name="latest",status="success"\} (\d+)$/m.exec(metrics.body);
      return Number(runs?.[1]) >= 3 ? true : undefined;
    }, "three successful runs of the check");
    const latest = (await get(server, "/result/latest")).body as HealthcheckResult;
    const { body } = await get(server, "/result/latest/history");
    expect(body).toEqual({
      results: [
        { timestamp: latest.timestamp, success: true, duration: Math.round(latest.duration), message: "success" },
      ],
    });
    const since = encodeURIComponent(iso(Date.parse(latest.timestamp) + 1));
    expect(await get(server, `/result/latest/history?since=${since}`)).toEqual({ status: 200, body: { results: [] } });
    expect(await get(server, "/result/latest/uptime")).toEqual({
      status: 200,
      body: { "1h": 1, "24h": 1, "7d": 1, "30d": 1, incidents: [] },
    });
    expect((await get(server, "/result/latest/history?limit=0")).status).toBe(400);
    expect((await get(server, "/result/nope/uptime")).status).toBe(404);
  });
});
