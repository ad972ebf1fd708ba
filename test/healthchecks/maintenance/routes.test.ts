/**
 * Maintenance windows through the API (`app.inject()` on a real server): creating, listing and
 * deleting windows, the 400s naming the field and the 409s; a check in a window keeps running, its
 * results are marked in the result, the history and the stream event, and uptime leaves them out;
 * the status page lists the window; the routes ask for a token like the other healthcheck routes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateDefinition } from "../../../src/healthchecks/definition.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { resultEvent } from "../../../src/healthchecks/result-events.js";
import type { HealthcheckResult } from "../../../src/healthchecks/results.js";
import { parseConfig } from "../../../src/platform/config.js";
import { defineModule } from "../../../src/platform/module.js";
import type { VigieServer } from "../../../src/server.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";

const HOUR = 3_600_000;
const iso = (milliseconds: number) => new Date(milliseconds).toISOString();

/** A tcp check of a closed port: it fails at once, every 200 ms. */
function failingCheck(name: string, labels?: Record<string, string>) {
  return {
    name,
    target: "127.0.0.1",
    port: 9,
    timeout: "200ms",
    interval: "200ms",
    ...(labels === undefined ? {} : { labels }),
  };
}

function client(server: VigieServer) {
  const call = async (method: "GET" | "POST" | "DELETE", url: string, body?: unknown, authorization?: string) => {
    const response = await server.app.inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
      headers: authorization === undefined ? {} : { authorization },
    });
    const json = response.headers["content-type"]?.toString().startsWith("application/json");
    return { status: response.statusCode, body: json ? (response.json() as unknown) : response.body };
  };
  return {
    call,
    post: (url: string, body: unknown) => call("POST", url, body),
    get: (url: string) => call("GET", url),
    delete: (url: string) => call("DELETE", url),
  };
}

const CONFIGURED = {
  name: "nightly",
  checks: ["team=data"],
  start: "sun 02:00",
  duration: "1h",
  timezone: "Europe/Paris",
};

describe("maintenance windows through the API", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        healthchecks: {
          "min-interval": "100ms",
          maintenance: [CONFIGURED],
          "status-page": { enabled: true },
          "tcp-checks": [failingCheck("down")],
        },
      },
    });
    api = client(server);
  });
  afterAll(() => server.close());

  const window = (fields: Record<string, unknown> = {}) => ({
    name: "upgrade",
    checks: ["db", "team=web"],
    start: iso(Date.now() - 60_000),
    end: iso(Date.now() + HOUR),
    ...fields,
  });

  it("refuses invalid windows with a 400 naming the field", async () => {
    const invalid = async (body: unknown) => {
      const answer = await api.post("/maintenance", body);
      expect(answer.status).toBe(400);
      return (answer.body as { error: string }).error;
    };
    expect(await invalid(window({ name: undefined }))).toBe("field name: is required");
    expect(await invalid(window({ name: "a/b" }))).toBe("field name: must be 1 to 64 characters of A-Z a-z 0-9 . _ -");
    expect(await invalid(window({ checks: [] }))).toBe("field checks: must not be empty");
    expect(await invalid(window({ start: "tomorrow" }))).toBe(
      "field start: must be an RFC 3339 date-time such as 2026-11-22T10:15:02Z",
    );
    expect(await invalid(window({ end: undefined }))).toBe("field end: is required");
    const start = Date.now() + HOUR;
    expect(await invalid(window({ start: iso(start), end: iso(start) }))).toBe("field end: must be after start");
    expect(await invalid(window({ start: iso(0), end: iso(1_000) }))).toBe("field end: must be in the future");
    expect(await invalid(window({ duration: "1h" }))).toMatch(/^field duration: unknown key/);
    expect(await invalid([])).toBe("request body must be an object");
  });

  it("creates, lists and deletes a window; 409 for a name taken or configured", async () => {
    const start = Date.now() + 2 * HOUR;
    const later = { name: "later", checks: ["web"], start: iso(start), end: iso(start + HOUR) };
    expect(await api.post("/maintenance", later)).toEqual({
      status: 201,
      body: { message: "Maintenance window later successfully added" },
    });
    expect(await api.post("/maintenance", later)).toEqual({
      status: 409,
      body: { error: "maintenance window later already exists" },
    });
    expect(await api.post("/maintenance", { ...later, name: "nightly" })).toEqual({
      status: 409,
      body: { error: "maintenance window nightly is in the configuration file" },
    });

    const listed = (await api.get("/maintenance")).body as Array<Record<string, unknown>>;
    expect(listed).toEqual([
      {
        name: "nightly",
        source: "configuration",
        checks: ["team=data"],
        selected: [],
        start: "sun 02:00",
        duration: "1h",
        timezone: "Europe/Paris",
        ongoing: expect.any(Boolean),
        current: listed[0]?.ongoing ? expect.any(Object) : null,
        next: { start: expect.any(String), end: expect.any(String) },
      },
      {
        name: "later",
        source: "api",
        checks: ["web"],
        selected: [],
        start: iso(start),
        end: iso(start + HOUR),
        ongoing: false,
        current: null,
        next: { start: iso(start), end: iso(start + HOUR) },
      },
    ]);
    // The next nightly window starts on a Sunday at 02:00 in Paris: 00:00Z or 01:00Z.
    const next = String((listed[0]?.next as { start?: string } | undefined)?.start);
    expect(new Date(next).getUTCDay()).toBe(0);
    expect(next).toMatch(/T0[01]:00:00\.000Z$/);

    expect(await api.delete("/maintenance/nightly")).toEqual({
      status: 409,
      body: {
        error: "maintenance window nightly is in the configuration file: remove it there and reload the configuration",
      },
    });
    expect(await api.delete("/maintenance/later")).toEqual({
      status: 200,
      body: { message: "Successfully deleted maintenance window later" },
    });
    expect(await api.delete("/maintenance/later")).toEqual({
      status: 404,
      body: { error: "maintenance window later not found" },
    });
    expect(((await api.get("/maintenance")).body as Array<{ name: string }>).map((w) => w.name)).toEqual(["nightly"]);
  });

  it("marks the results of a check in a window, which keeps running, and leaves them out of uptime", async () => {
    expect((await api.post("/maintenance", window())).status).toBe(201);
    expect((await api.post("/healthcheck/tcp", failingCheck("db"))).status).toBe(201);
    expect((await api.post("/healthcheck/tcp", failingCheck("db-replica", { team: "web" }))).status).toBe(201);

    const result = await until(async () => {
      const answer = await api.get("/result/db");
      return answer.status === 200 ? (answer.body as Record<string, unknown>) : undefined;
    }, "a result of db");
    expect(result).toMatchObject({ name: "db", success: false, maintenance: true });
    const history = await until(async () => {
      const answer = (await api.get("/result/db-replica/history")).body as { results: unknown[] };
      return answer.results.length >= 2 ? answer.results : undefined;
    }, "two stored results of db-replica");
    for (const row of history) expect(row).toMatchObject({ success: false, maintenance: true });

    // Failures in a window count neither in the ratios nor as incidents.
    expect((await api.get("/result/db/uptime")).body).toEqual({
      "1h": null,
      "24h": null,
      "7d": null,
      "30d": null,
      incidents: [],
    });
    // A failing check outside any window: its results are not marked, and count.
    const down = await until(async () => {
      const answer = (await api.get("/result/down/uptime")).body as { "1h": number | null; incidents: unknown[] };
      return answer["1h"] === null ? undefined : answer;
    }, "the uptime of down");
    expect(down).toMatchObject({ "1h": 0, incidents: [{ end: null }] });
    expect((await api.get("/result/down")).body).not.toHaveProperty("maintenance");

    const listed = (await api.get("/maintenance")).body as Array<Record<string, unknown>>;
    expect(listed.find((entry) => entry.name === "upgrade")).toMatchObject({
      ongoing: true,
      selected: ["db", "db-replica"],
      current: { start: expect.any(String), end: expect.any(String) },
      next: null,
    });
  });

  it("lists the window on the status page, as text and in its data", async () => {
    const page = await api.get("/status");
    expect(page.status).toBe(200);
    const html = String(page.body);
    expect(html).toContain("<h2>Maintenance</h2>");
    expect(html).toMatch(
      /<header>.*<li><strong>upgrade<\/strong>: ongoing until \d{4}-\d\d-\d\d \d\d:\d\d UTC, for db, db-replica\.<\/li>.*<\/header>/,
    );
    // The status data is computed at most once a second.
    const data = await until(async () => {
      const answer = (await api.get("/status/data")).body as { maintenance: Array<{ name: string }> };
      return answer.maintenance.some((entry) => entry.name === "upgrade") ? answer : undefined;
    }, "the window in the status data");
    expect(data.maintenance).toContainEqual({
      name: "upgrade",
      start: expect.any(String),
      end: expect.any(String),
      ongoing: true,
      checks: ["db", "db-replica"],
    });
  });

  it("keeps configured windows across a reload, and takes the new ones", async () => {
    const raw = {
      database: { url: "sqlite::memory:" },
      healthchecks: {
        "min-interval": "100ms",
        maintenance: [{ ...CONFIGURED, name: "renamed" }],
        "tcp-checks": [failingCheck("down")],
      },
    };
    await server.reload(parseConfig(raw, {}, [healthchecksModule]));
    const names = ((await api.get("/maintenance")).body as Array<{ name: string }>).map((entry) => entry.name);
    expect(names).toEqual(["renamed", "upgrade"]);
  });
});

describe("the stream event of a result in a window", () => {
  it("carries maintenance: true, and nothing outside one", () => {
    const rules = { minInterval: { text: "100ms", milliseconds: 100 } };
    const definition = validateDefinition("tcp", failingCheck("db"), rules, { unknownKeys: "reject" });
    const result: HealthcheckResult = {
      name: "db",
      configuration: { name: "db", kind: "tcp", source: "api" },
      success: false,
      timestamp: "2026-05-11T10:00:00.000Z",
      message: "connection refused",
      duration: 1,
    };
    expect(resultEvent(definition, { ...result, maintenance: true }, undefined)).toMatchObject({
      service: "db",
      state: "critical",
      maintenance: true,
    });
    expect(resultEvent(definition, result, undefined)).not.toHaveProperty("maintenance");
  });
});

describe("maintenance routes with security.require-token", () => {
  const tokens = defineModule({
    name: "tokens",
    configShape: {},
    migrations: {},
    plugin: async (_app, { context }) => {
      context.auth.setVerifier((token) =>
        token === "tech-token"
          ? { outcome: "ok", principal: { id: "1", name: "ops", role: "tech" } }
          : { outcome: "invalid" },
      );
    },
  });
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [tokens, healthchecksModule],
      config: { http: { host: "0.0.0.0" }, security: { "require-token": true } },
    });
  });
  afterAll(() => server.close());

  it("ask for a registry token, like the other healthcheck routes", async () => {
    const api = client(server);
    const missing = { status: 401, body: { error: "missing token" } };
    const body = { name: "w", checks: ["a"], start: iso(Date.now()), end: iso(Date.now() + HOUR) };
    expect(await api.get("/maintenance")).toEqual(missing);
    expect(await api.post("/maintenance", body)).toEqual(missing);
    expect(await api.delete("/maintenance/w")).toEqual(missing);
    expect((await api.call("POST", "/maintenance", body, "Bearer tech-token")).status).toBe(201);
    expect((await api.call("GET", "/maintenance", undefined, "Bearer tech-token")).body).toMatchObject([{ name: "w" }]);
    expect((await api.call("DELETE", "/maintenance/w", undefined, "Bearer tech-token")).status).toBe(200);
  });
});
