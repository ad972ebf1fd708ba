/**
 * Alerts through the API and the configuration file (docs/alerts.md): the `alerts` and
 * `depends-on` fields validated (400s naming the field, configuration errors naming the key),
 * shown by GET /healthcheck/<name>, and the routes GET /alerts and GET /alerts/history.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { defineModule } from "../../../src/platform/module.js";
import type { VigieServer } from "../../../src/server.js";
import { declaredOutputs, FakeNotifier, withNotifier } from "../../support/notifier.js";
import { freePort } from "../../support/process.js";
import { startReceiver } from "../../support/receiver.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";

const quiet = (name: string, fields: Record<string, unknown> = {}) => ({
  name,
  target: "127.0.0.1",
  port: 9,
  timeout: "1s",
  interval: "1h",
  ...fields,
});

async function start(notifier: FakeNotifier, healthchecks: Record<string, unknown> = {}): Promise<VigieServer> {
  return startTestServer({
    modules: withNotifier([healthchecksModule], notifier),
    config: { outputs: declaredOutputs(notifier), healthchecks },
  });
}

async function call(server: VigieServer, method: "GET" | "POST" | "DELETE", url: string, payload?: object) {
  const response = await server.app.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
  return { status: response.statusCode, body: response.json() };
}

const invalid = (error: string) => ({ status: 400, body: { error } });

describe("alerts through the API", () => {
  let server: VigieServer;
  beforeAll(async () => {
    server = await start(new FakeNotifier(["team-chat", "on-call"]), { "min-interval": "10s" });
  });
  afterAll(() => server.close());

  it("refuses an undeclared output, a threshold under 1, a repeat under min-interval, naming the field", async () => {
    const post = (alerts: unknown) => call(server, "POST", "/healthcheck/tcp", quiet("web", { alerts }));
    expect(await post([{ output: "pager" }])).toEqual(
      invalid("invalid healthcheck: alerts[0].output: must name a declared output (pager is not one)"),
    );
    expect(await post([{ output: "team-chat", "failure-threshold": 0 }])).toEqual(
      invalid("invalid healthcheck: alerts[0].failure-threshold: must be an integer between 1 and 10000"),
    );
    expect(await post([{ output: "team-chat" }, { output: "on-call", "success-threshold": 0 }])).toEqual(
      invalid("invalid healthcheck: alerts[1].success-threshold: must be an integer between 1 and 10000"),
    );
    expect(await post([{ output: "team-chat", repeat: "5s" }])).toEqual(
      invalid("invalid healthcheck: alerts[0].repeat: must be at least 10s (healthchecks.min-interval)"),
    );
    expect(await post([{ output: "team-chat" }, { output: "team-chat" }])).toEqual(
      invalid("invalid healthcheck: alerts[1].output: must differ from the output of alerts[0]"),
    );
    expect(await post([{ output: "team-chat", "failure-treshold": 2 }])).toEqual(
      invalid(
        "invalid healthcheck: alerts[0].failure-treshold: unknown key (known keys: output, failure-threshold, success-threshold, send-on-resolved, repeat, description)",
      ),
    );
    expect(await post({ output: "team-chat" })).toEqual(invalid("invalid healthcheck: alerts: must be an array"));
    expect((await call(server, "GET", "/healthcheck")).body).toEqual([]);
  });

  it("refuses an unknown name or a cycle in depends-on, also in bulk", async () => {
    expect(await call(server, "POST", "/healthcheck/tcp", quiet("site", { "depends-on": ["router"] }))).toEqual(
      invalid("invalid healthcheck: depends-on[0]: must name an existing healthcheck (router is not one)"),
    );
    expect(await call(server, "POST", "/healthcheck/tcp", quiet("self", { "depends-on": ["self"] }))).toEqual(
      invalid("invalid healthcheck: depends-on[0]: must not form a cycle (self → self)"),
    );
    expect((await call(server, "POST", "/healthcheck/tcp", quiet("router"))).status).toBe(201);
    expect((await call(server, "POST", "/healthcheck/tcp", quiet("site", { "depends-on": ["router"] }))).status).toBe(
      201,
    );
    expect(await call(server, "POST", "/healthcheck/tcp", quiet("router", { "depends-on": ["site"] }))).toEqual(
      invalid("invalid healthcheck: depends-on[0]: must not form a cycle (router → site → router)"),
    );
    expect(
      await call(server, "POST", "/healthcheck/bulk", {
        "tcp-checks": [quiet("a", { "depends-on": ["b"] }), quiet("b", { "depends-on": ["a"] })],
      }),
    ).toEqual(invalid("invalid healthcheck a: depends-on[0]: must not form a cycle (a → b → a)"));
    // A bulk payload replaces every API check: its checks may depend only on each other (and the file's).
    expect(
      await call(server, "POST", "/healthcheck/bulk", { "tcp-checks": [quiet("c", { "depends-on": ["router"] })] }),
    ).toEqual(invalid("invalid healthcheck c: depends-on[0]: must name an existing healthcheck (router is not one)"));
    expect((await call(server, "GET", "/healthcheck")).body.map((check: { name: string }) => check.name)).toEqual([
      "router",
      "site",
    ]);
    await call(server, "DELETE", "/healthcheck/site");
    await call(server, "DELETE", "/healthcheck/router");
  });

  it("shows the alerts with their defaults and depends-on in GET /healthcheck/<name>", async () => {
    expect((await call(server, "POST", "/healthcheck/tcp", quiet("router"))).status).toBe(201);
    const alerts = [
      { output: "team-chat", repeat: "1h" },
      { output: "on-call", "failure-threshold": 5, description: "down" },
    ];
    expect(
      (await call(server, "POST", "/healthcheck/tcp", quiet("site", { alerts, "depends-on": ["router"] }))).status,
    ).toBe(201);
    const { body } = await call(server, "GET", "/healthcheck/site");
    expect(body).toMatchObject({
      alerts: [
        {
          output: "team-chat",
          "failure-threshold": 3,
          "success-threshold": 2,
          "send-on-resolved": true,
          repeat: "1h",
          description: "",
        },
        {
          output: "on-call",
          "failure-threshold": 5,
          "success-threshold": 2,
          "send-on-resolved": true,
          description: "down",
        },
      ],
      "depends-on": ["router"],
    });
    expect((await call(server, "GET", "/healthcheck/router")).body).not.toHaveProperty("alerts");
    await call(server, "DELETE", "/healthcheck/site");
    await call(server, "DELETE", "/healthcheck/router");
  });
});

describe("GET /alerts and GET /alerts/history", () => {
  let server: VigieServer;
  let notifier: FakeNotifier;
  beforeAll(async () => {
    notifier = new FakeNotifier(["team-chat", "on-call"]);
    server = await start(notifier, { "min-interval": "100ms" });
  });
  afterAll(() => server.close());

  it("list the triggered alerts and the notifications of a failing check", async () => {
    const port = await freePort();
    const failing = quiet("db", {
      port,
      interval: "100ms",
      timeout: "100ms",
      alerts: [
        { output: "team-chat", "failure-threshold": 1 },
        { output: "on-call", "failure-threshold": 2 },
      ],
    });
    expect((await call(server, "POST", "/healthcheck/tcp", failing)).status).toBe(201);
    const triggered = await until(async () => {
      const { body } = await call(server, "GET", "/alerts");
      return body.length === 2 ? body : undefined;
    }, "two triggered alerts");
    expect(triggered).toEqual([
      { check: "db", output: "on-call", since: expect.any(String), "last-sent": expect.any(String) },
      { check: "db", output: "team-chat", since: expect.any(String), "last-sent": expect.any(String) },
    ]);
    const history = await call(server, "GET", "/alerts/history");
    expect(history.status).toBe(200);
    expect(history.body.notifications).toEqual([
      expect.objectContaining({
        check: "db",
        output: "on-call",
        status: "triggered",
        state: "critical",
        outcome: "delivered",
      }),
      expect.objectContaining({
        check: "db",
        output: "team-chat",
        status: "triggered",
        state: "critical",
        outcome: "delivered",
      }),
    ]);
    expect((await call(server, "GET", "/alerts/history?limit=1")).body.notifications).toHaveLength(1);
    expect(
      (await call(server, "GET", "/alerts/history?since=2000-01-01T00:00:00Z&until=2000-01-02T00:00:00Z")).body,
    ).toEqual({
      notifications: [],
    });
    expect(notifier.statuses("db")).toEqual(["triggered", "triggered"]);
    // A deleted check's alerts are no longer listed.
    await call(server, "DELETE", "/healthcheck/db");
    expect((await call(server, "GET", "/alerts")).body).toEqual([]);
  });

  it("refuses a bad query naming the parameter", async () => {
    expect(await call(server, "GET", "/alerts/history?limit=0")).toEqual(
      invalid("query parameter limit: must be an integer between 1 and 10000"),
    );
    expect(await call(server, "GET", "/alerts/history?since=yesterday")).toEqual({
      status: 400,
      body: { error: expect.stringMatching(/^query parameter since: /) },
    });
    expect(await call(server, "GET", "/alerts/history?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z")).toEqual(
      invalid("query parameter since: must not be after until"),
    );
  });
});

describe("alerts in the configuration file", () => {
  const servers: VigieServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });
  const refusal = async (healthchecks: Record<string, unknown>) => {
    try {
      servers.push(await start(new FakeNotifier(["team-chat"]), healthchecks));
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  };

  it("refuses an undeclared output, an unknown parent or a cycle, naming the key", async () => {
    expect(await refusal({ "default-alerts": [{ output: "pager" }] })).toBe(
      "invalid configuration: healthchecks.default-alerts[0].output: must name a declared output (pager is not one)",
    );
    expect(
      await refusal({ "tcp-checks": [quiet("a", { alerts: [{ output: "team-chat" }, { output: "pager" }] })] }),
    ).toBe(
      "invalid configuration: healthchecks.tcp-checks[0].alerts[1].output: must name a declared output (pager is not one)",
    );
    expect(await refusal({ "tcp-checks": [quiet("a"), quiet("b", { "depends-on": ["a", "c"] })] })).toBe(
      "invalid configuration: healthchecks.tcp-checks[1].depends-on[1]: must name an existing healthcheck (c is not one)",
    );
    expect(
      await refusal({
        "tcp-checks": [quiet("a", { "depends-on": ["b"] })],
        "dns-checks": [{ name: "b", domain: "localhost", interval: "1h", "depends-on": ["a"] }],
      }),
    ).toBe("invalid configuration: healthchecks.tcp-checks[0].depends-on[0]: must not form a cycle (a → b → a)");
    expect(await refusal({ "tcp-checks": [quiet("a", { alerts: [{ output: "team-chat", repeat: "500ms" }] })] })).toBe(
      'invalid configuration: healthchecks.tcp-checks[0].alerts[0].repeat: must be at least 1s (healthchecks.min-interval) (got "500ms")',
    );
  });

  it("accepts declared outputs and known parents, across kinds", async () => {
    expect(
      await refusal({
        "default-alerts": [{ output: "team-chat", repeat: "1h" }],
        "tcp-checks": [quiet("site", { "depends-on": ["resolver"], alerts: [] })],
        "dns-checks": [{ name: "resolver", domain: "localhost", interval: "1h" }],
      }),
    ).toBeUndefined();
  });
});

describe("the alert routes with security.require-token", () => {
  const tokens = defineModule({
    name: "tokens",
    configShape: {},
    migrations: {},
    plugin: async (_app, { context }) => {
      context.auth.setVerifier(() => ({ outcome: "invalid" }));
    },
  });

  it("need a registry token, as the other healthcheck reads", async () => {
    const server = await startTestServer({
      modules: [tokens, healthchecksModule],
      config: { http: { host: "0.0.0.0" }, security: { "require-token": true } },
    });
    try {
      expect(await call(server, "GET", "/alerts")).toEqual({ status: 401, body: { error: "missing token" } });
      expect(await call(server, "GET", "/alerts/history")).toEqual({ status: 401, body: { error: "missing token" } });
    } finally {
      await server.close();
    }
  });
});

describe("alerts through the platform's outputs", () => {
  it("reach a declared http output once, and are recorded as delivered", async () => {
    const receiver = await startReceiver();
    const port = await freePort();
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        outputs: { chat: { type: "http", url: receiver.url } },
        healthchecks: {
          "min-interval": "100ms",
          "tcp-checks": [
            quiet("db", {
              port,
              interval: "100ms",
              timeout: "100ms",
              alerts: [{ output: "chat", "failure-threshold": 2 }],
            }),
          ],
        },
      },
    });
    try {
      await receiver.acceptedAtLeast(1);
      const history = await until(async () => {
        const { body } = await call(server, "GET", "/alerts/history");
        return body.notifications.length > 0 ? body.notifications : undefined;
      }, "the delivered notification");
      expect(history).toEqual([expect.objectContaining({ check: "db", output: "chat", outcome: "delivered" })]);
      // The http output posts a batch of events: the notification as one event.
      expect(JSON.parse(receiver.accepted[0]?.body.toString() ?? "[]")).toEqual([
        expect.objectContaining({ service: "db", state: "critical", status: "triggered", key: "db/chat" }),
      ]);
      expect(receiver.accepted).toHaveLength(1);
    } finally {
      await server.close();
      await receiver.close();
    }
  });
});
