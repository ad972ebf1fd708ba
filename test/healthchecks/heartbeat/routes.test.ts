/**
 * Heartbeat checks through `app.inject()` (docs/healthchecks.md, "Heartbeat checks"): create, get,
 * delete, validation 400s naming the field, 409 on a duplicate key, bulk, the ping routes, and the
 * state kept across a restart, on SQLite and on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import type { VigieServer } from "../../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";

const KEY = "abcdefghijklmnopqrstuv";
const OTHER_KEY = "ABCDEFGHIJKLMNOPQRSTUV_-";

function start(url: string, healthchecks: Record<string, unknown> = {}): Promise<VigieServer> {
  return startTestServer({
    modules: [healthchecksModule],
    config: { database: { url }, healthchecks: { "min-interval": "100ms", ...healthchecks } },
  });
}

async function call(server: VigieServer, method: "GET" | "POST" | "DELETE" | "HEAD", url: string, payload?: unknown) {
  const response = await server.app.inject({
    method,
    url,
    ...(payload === undefined
      ? {}
      : typeof payload === "string" || Buffer.isBuffer(payload)
        ? { payload, headers: { "content-type": "text/plain" } }
        : { payload: payload as Record<string, unknown> }),
  });
  const json = response.headers["content-type"]?.toString().startsWith("application/json")
    ? response.json()
    : undefined;
  return { status: response.statusCode, json, text: response.body, headers: response.headers };
}

describe.each(DATABASE_KINDS)("heartbeat checks on $kind", ({ kind, skip }) => {
  let database: TestDatabase;
  let server: VigieServer;

  beforeAll(async () => {
    if (skip) return;
    database = await createTestDatabase(kind);
    server = await start(database.url);
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
  });

  it.skipIf(skip)("creates a heartbeat, answers its key and shows it with its state", async () => {
    const created = await call(server, "POST", "/healthcheck/heartbeat", { name: "backup", period: "1h" });
    expect(created.status).toBe(201);
    expect(created.json.message).toBe("Healthcheck successfully added");
    expect(created.json.key).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const shown = await call(server, "GET", "/healthcheck/backup");
    expect(shown.json).toMatchObject({
      name: "backup",
      kind: "heartbeat",
      source: "api",
      period: "1h",
      grace: "1h",
      "max-duration": "1h",
      timezone: "UTC",
      key: created.json.key,
      state: "new",
    });
    // Never pinged: no result yet.
    expect((await call(server, "GET", "/result/backup")).status).toBe(404);
  });

  it.skipIf(skip)("keeps the key when the definition is posted again without one", async () => {
    const first = await call(server, "POST", "/healthcheck/heartbeat", { name: "nightly", schedule: "30 2 * * *" });
    const again = await call(server, "POST", "/healthcheck/heartbeat", {
      name: "nightly",
      schedule: "30 3 * * *",
      timezone: "Europe/Paris",
    });
    expect(again.json.key).toBe(first.json.key);
    expect((await call(server, "GET", "/healthcheck/nightly")).json).toMatchObject({
      schedule: "30 3 * * *",
      timezone: "Europe/Paris",
      key: first.json.key,
    });
  });

  it.skipIf(skip)("refuses invalid definitions with a 400 naming the field", async () => {
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ name: "h" }, "invalid healthcheck: period: is required unless schedule is given"],
      [
        { name: "h", period: "1h", schedule: "* * * * *" },
        "invalid healthcheck: schedule: must not be given with period",
      ],
      [{ name: "h", schedule: "61 * * * *" }, "invalid healthcheck: schedule: must be a cron expression of 5 fields"],
      [{ name: "h", schedule: "* * * *" }, "invalid healthcheck: schedule: must be a cron expression of 5 fields"],
      [
        { name: "h", schedule: "0 0 * * *", timezone: "Mars/Olympus" },
        "invalid healthcheck: timezone: must be a time zone",
      ],
      [{ name: "h", period: "10ms" }, "invalid healthcheck: period: must be at least 100ms"],
      [{ name: "h", period: "1h", grace: "1ms" }, "invalid healthcheck: grace: must be at least 100ms"],
      [{ name: "h", period: "1h", "max-duration": "0s" }, "invalid healthcheck: max-duration: must be greater than 0"],
      [{ name: "h", period: "1h", key: "short" }, "invalid healthcheck: key: must be 22 to 128 characters"],
      [{ name: "h", period: "1h", key: `${KEY}!` }, "invalid healthcheck: key: must be 22 to 128 characters"],
      [
        { name: "h", period: "1h", "one-off": true },
        "invalid healthcheck: one-off: must be false for heartbeat checks",
      ],
      [
        { name: "h", period: "1h", alerts: [{ output: "x", "failure-threshold": 0 }] },
        "invalid healthcheck: alerts[0].failure-threshold",
      ],
    ];
    for (const [body, error] of refusals) {
      const answer = await call(server, "POST", "/healthcheck/heartbeat", body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.json.error).toContain(error);
    }
  });

  it.skipIf(skip)("refuses a key another heartbeat has with a 409", async () => {
    expect((await call(server, "POST", "/healthcheck/heartbeat", { name: "a", period: "1h", key: KEY })).status).toBe(
      201,
    );
    const duplicate = await call(server, "POST", "/healthcheck/heartbeat", { name: "b", period: "1h", key: KEY });
    expect(duplicate.status).toBe(409);
    expect(duplicate.json.error).toBe("invalid healthcheck b: key: already used by heartbeat a");
    // The same heartbeat may post its own key again.
    expect((await call(server, "POST", "/healthcheck/heartbeat", { name: "a", period: "2h", key: KEY })).status).toBe(
      201,
    );
  });

  it.skipIf(skip)("answers pings in plain text and turns them into results with a state", async () => {
    const ping = await call(server, "GET", `/ping/${KEY}`);
    expect(ping).toMatchObject({ status: 200, text: "OK\n" });
    expect(ping.headers["content-type"]).toBe("text/plain; charset=utf-8");
    const result = await call(server, "GET", "/result/a");
    expect(result.json).toMatchObject({ name: "a", success: true, message: "success", state: "up" });
    expect((await call(server, "GET", "/healthcheck/a")).json.state).toBe("up");

    expect((await call(server, "POST", `/ping/${KEY}/start`)).status).toBe(200);
    expect((await call(server, "GET", "/result/a")).json.state).toBe("started");
    expect((await call(server, "POST", `/ping/${KEY}/1`, "disk full")).status).toBe(200);
    expect((await call(server, "GET", "/result/a")).json).toMatchObject({
      success: false,
      message: "disk full",
      state: "down",
    });
    expect((await call(server, "HEAD", `/ping/${KEY}/0`)).status).toBe(200);
    expect((await call(server, "GET", "/result/a")).json).toMatchObject({ success: true, state: "up" });
  });

  it.skipIf(skip)("answers 404 in plain text for unknown keys, paths and deleted heartbeats", async () => {
    for (const path of [
      `/ping/${OTHER_KEY}`,
      `/ping/${KEY}/256`,
      `/ping/${KEY}/007`,
      `/ping/${KEY}/-1`,
      `/ping/${KEY}/nope`,
    ]) {
      const answer = await call(server, "POST", path);
      expect(answer, path).toMatchObject({ status: 404, text: "not found\n" });
    }
    const created = await call(server, "POST", "/healthcheck/heartbeat", { name: "gone", period: "1h" });
    expect((await call(server, "DELETE", "/healthcheck/gone")).status).toBe(200);
    expect(await call(server, "GET", `/ping/${created.json.key}`)).toMatchObject({ status: 404, text: "not found\n" });
  });

  it.skipIf(skip)("keeps log pings in the history without changing the state", async () => {
    expect((await call(server, "POST", `/ping/${KEY}/log`, "step 2 of 3 done")).status).toBe(200);
    expect((await call(server, "GET", "/result/a")).json).toMatchObject({ success: true, state: "up" });
    const history = await until(async () => {
      const results = (await call(server, "GET", "/result/a/history")).json.results;
      return results.some((result: { log?: boolean }) => result.log === true) ? results : undefined;
    }, "the history written");
    expect(history[0]).toMatchObject({ success: true, message: "step 2 of 3 done", log: true });
    expect(history.filter((result: { log?: boolean }) => result.log === true)).toHaveLength(1);
    // The log is left out of uptime: only the results count, and one of them failed.
    const results = history.filter((result: { log?: boolean }) => result.log !== true);
    const successes = results.filter((result: { success: boolean }) => result.success).length;
    const uptime = (await call(server, "GET", "/result/a/uptime")).json;
    expect(uptime["1h"]).toBeCloseTo(successes / results.length);
    expect(successes).toBe(results.length - 1);
  });

  it.skipIf(skip)("keeps the state and the latest result of a heartbeat whose definition changes", async () => {
    const before = (await call(server, "GET", "/result/a")).json;
    expect((await call(server, "POST", "/healthcheck/heartbeat", { name: "a", period: "3h", key: KEY })).status).toBe(
      201,
    );
    const after = (await call(server, "GET", "/result/a")).json;
    expect(after).toMatchObject({ timestamp: before.timestamp, state: before.state, configuration: { period: "3h" } });
    expect((await call(server, "GET", "/healthcheck/a")).json.state).toBe(before.state);
  });

  it.skipIf(skip)("answers 429 with Retry-After past 10 pings a second per key", async () => {
    const created = await call(server, "POST", "/healthcheck/heartbeat", { name: "chatty", period: "1h" });
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => call(server, "GET", `/ping/${created.json.key}/log`)),
    );
    const limited = answers.filter((answer) => answer.status === 429);
    // 30 pings within at most a couple of seconds: some were over the limit.
    expect(limited.length).toBeGreaterThanOrEqual(10);
    expect(limited[0]?.headers["retry-after"]).toBe("1");
    expect(limited[0]?.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(10);
    // Another key is not affected.
    expect((await call(server, "GET", `/ping/${KEY}/log`)).status).toBe(200);
    await call(server, "DELETE", "/healthcheck/chatty");
  });

  it.skipIf(skip)("takes heartbeat-checks in bulk", async () => {
    const bulk = await call(server, "POST", "/healthcheck/bulk", {
      "heartbeat-checks": [
        { name: "a", period: "2h", key: KEY },
        { name: "c", schedule: "0 * * * *" },
      ],
    });
    expect(bulk.status).toBe(201);
    const c = (await call(server, "GET", "/healthcheck/c")).json;
    expect(c.key).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const duplicate = await call(server, "POST", "/healthcheck/bulk", {
      "heartbeat-checks": [
        { name: "a", period: "2h", key: KEY },
        { name: "d", period: "2h", key: KEY },
      ],
    });
    expect(duplicate.status).toBe(409);
    expect((await call(server, "GET", "/healthcheck/d")).status).toBe(404);
  });

  it.skipIf(skip)("keeps the state across a restart and judges what was missed meanwhile", async () => {
    await call(server, "POST", "/healthcheck/heartbeat", {
      name: "short",
      period: "200ms",
      grace: "200ms",
      key: OTHER_KEY,
    });
    expect((await call(server, "GET", `/ping/${OTHER_KEY}`)).status).toBe(200);
    await server.close();
    // Down while the server is away: the deadline (200 ms + 200 ms of grace) passes.
    await new Promise((resolve) => setTimeout(resolve, 600));
    server = await start(database.url);
    await until(
      async () => ((await call(server, "GET", "/healthcheck/short")).json.state === "down" ? true : undefined),
      "the missed deadline judged",
    );
    const result = (await call(server, "GET", "/result/short")).json;
    expect(result).toMatchObject({ success: false, state: "down" });
    expect(result.message).toMatch(/^no ping: one was expected at \d{4}-\d\d-\d\dT/);
    // Pinged again: up.
    expect((await call(server, "GET", `/ping/${OTHER_KEY}`)).status).toBe(200);
    expect((await call(server, "GET", "/healthcheck/short")).json.state).toBe("up");
  });
});

describe("the status page's data", () => {
  it("shows a heartbeat's state", async () => {
    const server = await start("sqlite::memory:", { "status-page": { enabled: true } });
    try {
      await call(server, "POST", "/healthcheck/heartbeat", { name: "shown", period: "1h", key: KEY });
      await call(server, "POST", `/ping/${KEY}/start`);
      const data = (await call(server, "GET", "/status/data")).json;
      const checks = data.groups.flatMap((group: { checks: unknown[] }) => group.checks);
      expect(checks).toMatchObject([{ name: "shown", state: "up", heartbeat: "started" }]);
    } finally {
      await server.close();
    }
  });
});

describe("configuration-file heartbeats", () => {
  it("keep a generated key across restarts", async () => {
    const database = await createTestDatabase("sqlite");
    const file = { "heartbeat-checks": [{ name: "file-job", period: "1h" }] };
    try {
      let server = await start(database.url, file);
      const key = (await call(server, "GET", "/healthcheck/file-job")).json.key;
      expect(key).toMatch(/^[A-Za-z0-9_-]{22}$/);
      await server.close();
      server = await start(database.url, file);
      expect((await call(server, "GET", "/healthcheck/file-job")).json).toMatchObject({ key, source: "configuration" });
      expect((await call(server, "GET", `/ping/${key}`)).status).toBe(200);
      await server.close();
    } finally {
      await database.drop();
    }
  });

  it("refuse a key given twice in the file", async () => {
    await expect(
      start("sqlite::memory:", {
        "heartbeat-checks": [
          { name: "x", period: "1h", key: KEY },
          { name: "y", period: "1h", key: KEY },
        ],
      }),
    ).rejects.toThrow(
      "healthchecks.heartbeat-checks[1].key: must be unique (healthchecks.heartbeat-checks[0] has the same key)",
    );
  });
});

describe("alerts on a heartbeat", () => {
  it("trigger on a failure ping, stay triggered through the next start, and resolve on a success", async () => {
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        database: { url: "sqlite::memory:" },
        outputs: { hook: { type: "webhook", url: "http://127.0.0.1:9/hook" } },
        healthchecks: { "min-interval": "100ms" },
      },
    });
    try {
      const definition = { name: "nightly", period: "1h", key: KEY, alerts: [{ output: "hook" }] };
      expect((await call(server, "POST", "/healthcheck/heartbeat", definition)).status).toBe(201);
      const triggered = async () => ((await call(server, "GET", "/alerts")).json as unknown[]).length;
      expect((await call(server, "POST", `/ping/${KEY}/fail`, "disk full")).status).toBe(200);
      await until(async () => ((await triggered()) === 1 ? true : undefined), "the alert to trigger");
      // A start is a result in the history, not a recovery: the alert stays triggered.
      expect((await call(server, "POST", `/ping/${KEY}/start`)).status).toBe(200);
      expect((await call(server, "GET", "/result/nightly")).json).toMatchObject({ state: "started" });
      expect(await triggered()).toBe(1);
      expect((await call(server, "POST", `/ping/${KEY}/0`)).status).toBe(200);
      await until(async () => ((await triggered()) === 0 ? true : undefined), "the alert to resolve");
    } finally {
      await server.close();
    }
  });
});
