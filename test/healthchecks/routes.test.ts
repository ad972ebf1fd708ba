import { createServer } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { parseConfig } from "../../src/platform/config.js";
import { defineModule } from "../../src/platform/module.js";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";
import { until } from "../support/until.js";
import { type Listening, listen } from "./local-servers.js";

const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A local web server the checks of these tests probe: 200 on `/`, 500 on `/fail`. */
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

const FAST = { "min-interval": "100ms" };

function httpCheck(name: string, fields: Record<string, unknown> = {}) {
  return {
    name,
    target: "127.0.0.1",
    port: web.port,
    "valid-status": [200],
    interval: "1s",
    timeout: "1s",
    ...fields,
  };
}

/** A check that never gets a result during a test: its first run comes after minutes. */
function quietCheck(name: string, fields: Record<string, unknown> = {}) {
  return { name, target: "127.0.0.1", port: 9, timeout: "1s", interval: "1h", ...fields };
}

function client(server: VigieServer) {
  const call = async (method: "GET" | "POST" | "DELETE", url: string, body?: unknown, authorization?: string) => {
    const response = await server.app.inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
      headers: authorization === undefined ? {} : { authorization },
    });
    return { status: response.statusCode, body: response.body === "" ? undefined : (response.json() as unknown) };
  };
  return {
    call,
    post: (url: string, body: unknown) => call("POST", url, body),
    get: (url: string) => call("GET", url),
    delete: (url: string) => call("DELETE", url),
    names: async () => ((await call("GET", "/healthcheck")).body as Array<{ name: string }>).map((check) => check.name),
    result: async (name: string) => {
      const response = await call("GET", `/result/${encodeURIComponent(name)}`);
      return response.status === 200 ? (response.body as Record<string, unknown>) : undefined;
    },
  };
}

describe("healthcheck definitions through the API", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({ modules: [healthchecksModule], config: { healthchecks: FAST } });
    api = client(server);
  });
  afterAll(() => server.close());
  afterEach(async () => {
    await api.post("/healthcheck/bulk", {});
  });

  it("adds a check of each kind and lists them sorted by name", async () => {
    const added = { status: 201, body: { message: "Healthcheck successfully added" } };
    expect(await api.post("/healthcheck/tcp", quietCheck("b-tcp"))).toEqual(added);
    expect(await api.post("/healthcheck/http", quietCheck("e-http", { "valid-status": [200] }))).toEqual(added);
    expect(await api.post("/healthcheck/dns", { name: "a-dns", domain: "localhost", interval: "1h" })).toEqual(added);
    expect(await api.post("/healthcheck/tls", quietCheck("d-tls"))).toEqual(added);
    expect(
      await api.post("/healthcheck/command", { name: "c-command", command: "true", timeout: "1s", interval: "1h" }),
    ).toEqual(added);
    expect(await api.names()).toEqual(["a-dns", "b-tcp", "c-command", "d-tls", "e-http"]);
    expect(await api.get("/healthcheck/")).toMatchObject({ status: 200 });
    expect(await api.get("/healthcheck/a-dns")).toEqual({
      status: 200,
      body: {
        name: "a-dns",
        kind: "dns",
        source: "api",
        description: "",
        domain: "localhost",
        interval: "1h",
        timeout: "5s",
        "one-off": false,
      },
    });
    expect((await api.get("/healthcheck/e-http")).body).toMatchObject({
      kind: "http",
      redirect: false,
      "one-off": false,
    });
  });

  it("answers 400 naming the field and the rule, and changes nothing", async () => {
    expect(await api.post("/healthcheck/tcp", quietCheck("bad", { port: 70_000 }))).toEqual({
      status: 400,
      body: { error: "invalid healthcheck: port: must be an integer between 1 and 65535" },
    });
    expect(await api.post("/healthcheck/http", quietCheck("bad"))).toEqual({
      status: 400,
      body: { error: "invalid healthcheck: valid-status: is required" },
    });
    expect(await api.post("/healthcheck/tcp", quietCheck("bad", { interval: "50ms", timeout: "10ms" }))).toEqual({
      status: 400,
      body: { error: "invalid healthcheck: interval: must be at least 100ms" },
    });
    expect(await api.post("/healthcheck/tcp", [1])).toEqual({
      status: 400,
      body: { error: "invalid healthcheck: must be an object" },
    });
    const invalidJson = await server.app.inject({
      method: "POST",
      url: "/healthcheck/tcp",
      headers: { "content-type": "application/json" },
      payload: "{",
    });
    expect(invalidJson.statusCode).toBe(400);
    expect(invalidJson.json()).toEqual({ error: "request body is not valid JSON" });
    expect(await api.names()).toEqual([]);
  });

  it("replaces a check of the same name whatever its kind (upsert)", async () => {
    await api.post("/healthcheck/tcp", quietCheck("same"));
    expect(await api.post("/healthcheck/dns", { name: "same", domain: "localhost", interval: "1h" })).toMatchObject({
      status: 201,
    });
    expect(await api.names()).toEqual(["same"]);
    expect((await api.get("/healthcheck/same")).body).toMatchObject({ kind: "dns", domain: "localhost" });
  });

  it("deletes a check with its result, and answers 404 for unknown names", async () => {
    await api.post("/healthcheck/http", httpCheck("short-lived"));
    await until(() => api.result("short-lived"), "a result");
    expect(await api.delete("/healthcheck/short-lived")).toEqual({
      status: 200,
      body: { message: "Successfully deleted healthcheck short-lived" },
    });
    expect(await api.get("/healthcheck/short-lived")).toEqual({
      status: 404,
      body: { error: "healthcheck short-lived not found" },
    });
    expect(await api.delete("/healthcheck/short-lived")).toEqual({
      status: 404,
      body: { error: "healthcheck short-lived not found" },
    });
    expect(await api.get("/result/short-lived")).toEqual({
      status: 404,
      body: { error: "result not found for healthcheck short-lived" },
    });
  });

  it("answers 404 for a check without a result yet", async () => {
    await api.post("/healthcheck/command", {
      name: "slow",
      command: "sleep",
      arguments: ["10"],
      timeout: "20s",
      interval: "1h",
    });
    expect(await api.get("/result/slow")).toEqual({
      status: 404,
      body: { error: "result not found for healthcheck slow" },
    });
  });

  it("decodes names with spaces and other characters in paths", async () => {
    await api.post("/healthcheck/tcp", quietCheck("web site #1 ?é"));
    expect((await api.get(`/healthcheck/${encodeURIComponent("web site #1 ?é")}`)).body).toMatchObject({
      name: "web site #1 ?é",
    });
    expect((await api.delete(`/healthcheck/${encodeURIComponent("web site #1 ?é")}`)).status).toBe(200);
    const longest = "n".repeat(255);
    expect((await api.post("/healthcheck/tcp", quietCheck(longest))).status).toBe(201);
    expect((await api.get(`/healthcheck/${longest}`)).body).toMatchObject({ name: longest });
    expect((await api.post("/healthcheck/tcp", quietCheck(`${longest}n`))).body).toEqual({
      error: "invalid healthcheck: name: must have 1 to 255 characters, without / or control characters",
    });
  });
});

describe("results", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({ modules: [healthchecksModule], config: { healthchecks: FAST } });
    api = client(server);
  });
  afterAll(() => server.close());

  it("keeps the latest result of each check, sorted by name, with labels", async () => {
    await api.post("/healthcheck/http", httpCheck("z-up", { labels: { env: "prod" } }));
    await api.post("/healthcheck/http", httpCheck("a-down", { path: "/fail" }));
    const up = await until(() => api.result("z-up"), "a result of z-up");
    expect(up).toEqual({
      name: "z-up",
      configuration: (await api.get("/healthcheck/z-up")).body,
      success: true,
      timestamp: expect.stringMatching(RFC3339_MS),
      message: "success",
      duration: expect.any(Number),
      labels: { env: "prod" },
    });
    expect(Date.now() - Date.parse(up.timestamp as string)).toBeLessThan(60_000);
    const down = await until(() => api.result("a-down"), "a result of a-down");
    expect(down).toMatchObject({ success: false, message: "HTTP request failed: status 500. Body: 'broken'" });
    expect(down).not.toHaveProperty("labels");
    const all = (await api.get("/result")).body as Array<{ name: string }>;
    expect(all.map((result) => result.name)).toEqual(["a-down", "z-up"]);
  });

  it("filters the listing by ?name= (repeatable) and ?success=, refusing bad values with 400", async () => {
    await api.post("/healthcheck/http", httpCheck("f-up"));
    await api.post("/healthcheck/http", httpCheck("f-down", { path: "/fail" }));
    await api.post("/healthcheck/http", httpCheck("f-other"));
    for (const name of ["f-up", "f-down", "f-other"]) await until(() => api.result(name), `a result of ${name}`);
    const names = async (url: string) => ((await api.get(url)).body as Array<{ name: string }>).map((r) => r.name);
    expect(await names("/result?name=f-up&name=f-down&name=nothing")).toEqual(["f-down", "f-up"]);
    expect(await names("/result?name=f-up")).toEqual(["f-up"]);
    expect(await names("/result?success=false&name=f-up&name=f-down")).toEqual(["f-down"]);
    expect(await names("/result?success=true&name=f-up&name=f-down&name=f-other")).toEqual(["f-other", "f-up"]);
    expect((await names("/result?success=false")).includes("f-up")).toBe(false);
    expect(await names("/result?_=123&name=f-up")).toEqual(["f-up"]);
    expect(await api.get("/result?success=maybe")).toEqual({
      status: 400,
      body: { error: "query parameter success: must be true or false" },
    });
    const many = Array.from({ length: 1_001 }, (_, index) => `name=n${index}`).join("&");
    expect((await api.get(`/result?${many}`)).status).toBe(400);
  });

  it("exports the metrics, with the check's labels, and removes a deleted check's series", async () => {
    await api.post("/healthcheck/http", httpCheck("measured", { labels: { team: "ops" } }));
    await until(() => api.result("measured"), "a result");
    const metrics = async () => (await server.app.inject({ method: "GET", url: "/metrics" })).body;
    const text = await until(async () => {
      const body = await metrics();
      return /healthcheck_total\{name="measured",team="ops",status="success"\} [1-9]/.test(body) ? body : undefined;
    }, "the success counter");
    expect(text).toMatch(
      /healthcheck_duration_seconds_bucket\{name="measured",team="ops",status="success",le="\+Inf"\} [1-9]/,
    );
    expect(text).toMatch(/healthcheck_duration_seconds_count\{name="measured",team="ops",status="success"\} [1-9]/);
    expect(text).toMatch(/healthcheck_scheduled \d+/);
    expect(text).toMatch(/healthcheck_lateness_seconds_bucket\{le="0.1"\} [1-9]/);
    expect(text).toContain("# TYPE healthcheck_total counter");
    expect(text).toContain("# TYPE healthcheck_duration_seconds histogram");
    await api.delete("/healthcheck/measured");
    expect(await metrics()).not.toContain('name="measured"');
  });
});

describe("one-off healthchecks", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({ modules: [healthchecksModule], config: { healthchecks: FAST } });
    api = client(server);
  });
  afterAll(() => server.close());

  it("runs at once and reports success (201) or failure (500), without storing anything", async () => {
    expect(await api.post("/healthcheck/http", httpCheck("once", { "one-off": true, interval: undefined }))).toEqual({
      status: 201,
      body: { message: "One-off healthcheck once successfully executed" },
    });
    expect(
      await api.post("/healthcheck/http", httpCheck("once", { "one-off": true, interval: undefined, path: "/fail" })),
    ).toEqual({
      status: 500,
      body: {
        message: "Execution of one off healthcheck once failed: HTTP request failed: status 500. Body: 'broken'",
      },
    });
    expect(
      await api.post("/healthcheck/command", { name: "cmd", command: "false", timeout: "5s", "one-off": true }),
    ).toEqual({
      status: 500,
      body: { message: "Execution of one off healthcheck cmd failed: command exited with code 1" },
    });
    expect(await api.names()).toEqual([]);
    expect((await api.get("/result")).body).toEqual([]);
  });

  it("leaves a registered check of the same name alone", async () => {
    await api.post("/healthcheck/tcp", quietCheck("kept"));
    const before = (await api.get("/healthcheck/kept")).body;
    expect(
      (await api.post("/healthcheck/http", httpCheck("kept", { "one-off": true, interval: undefined }))).status,
    ).toBe(201);
    expect((await api.get("/healthcheck/kept")).body).toEqual(before);
    expect(await api.get("/result/kept")).toMatchObject({ status: 404 });
  });
});

describe("bulk", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: { healthchecks: { ...FAST, "tcp-checks": [quietCheck("from-file")] } },
    });
    api = client(server);
  });
  afterAll(() => server.close());

  const payload = {
    "http-checks": [quietCheck("b-http", { "valid-status": [200] })],
    "tcp-checks": [quietCheck("a-tcp")],
    "dns-checks": [{ name: "c-dns", domain: "localhost", interval: "1h" }],
  };

  it("adds every check, then removes API checks absent from the next payload but never file checks", async () => {
    await api.post("/healthcheck/tcp", quietCheck("old"));
    expect(await api.post("/healthcheck/bulk", payload)).toEqual({
      status: 201,
      body: { message: "Healthchecks successfully added" },
    });
    expect(await api.names()).toEqual(["a-tcp", "b-http", "c-dns", "from-file"]);
    expect(await api.post("/healthcheck/bulk", { "tcp-checks": [quietCheck("a-tcp")], unknown: 1 })).toMatchObject({
      status: 201,
    });
    expect(await api.names()).toEqual(["a-tcp", "from-file"]);
    expect((await api.get("/healthcheck/from-file")).body).toMatchObject({ source: "configuration" });
    expect(await api.post("/healthcheck/bulk", {})).toMatchObject({ status: 201 });
    expect(await api.names()).toEqual(["from-file"]);
  });

  it("changes nothing when one definition is invalid", async () => {
    await api.post("/healthcheck/bulk", payload);
    const before = (await api.get("/healthcheck")).body;
    const broken = {
      "tcp-checks": [quietCheck("a-tcp", { timeout: "2s" }), quietCheck("new-one")],
      "tls-checks": [quietCheck("bad-tls", { port: 0 })],
    };
    expect(await api.post("/healthcheck/bulk", broken)).toEqual({
      status: 400,
      body: { error: "invalid healthcheck bad-tls: port: must be an integer between 1 and 65535" },
    });
    expect(await api.post("/healthcheck/bulk", { "dns-checks": [{ domain: "x" }] })).toEqual({
      status: 400,
      body: { error: "invalid healthcheck dns-checks[0]: name: is required" },
    });
    expect(await api.post("/healthcheck/bulk", { "tcp-checks": quietCheck("x") })).toEqual({
      status: 400,
      body: { error: "invalid bulk payload: tcp-checks: must be an array" },
    });
    expect(await api.post("/healthcheck/bulk", [])).toMatchObject({ status: 400 });
    expect((await api.get("/healthcheck")).body).toEqual(before);
  });

  it("refuses one-off checks and duplicate names", async () => {
    await api.post("/healthcheck/bulk", payload);
    const before = (await api.get("/healthcheck")).body;
    expect(await api.post("/healthcheck/bulk", { "tcp-checks": [quietCheck("x", { "one-off": true })] })).toEqual({
      status: 400,
      body: { error: "one-off healthchecks are not allowed in bulk" },
    });
    expect(
      await api.post("/healthcheck/bulk", {
        "tcp-checks": [quietCheck("twice")],
        "dns-checks": [{ name: "twice", domain: "localhost", interval: "1h" }],
      }),
    ).toEqual({ status: 400, body: { error: "duplicate healthcheck name twice in the bulk payload" } });
    expect((await api.get("/healthcheck")).body).toEqual(before);
  });

  it("turns a file check named in the payload into an API check", async () => {
    await api.post("/healthcheck/bulk", { "tcp-checks": [quietCheck("from-file")] });
    expect((await api.get("/healthcheck/from-file")).body).toMatchObject({ source: "api" });
  });

  it("brings a file check back when a later payload drops the API check that replaced it", async () => {
    await api.post("/healthcheck/bulk", { "tcp-checks": [quietCheck("from-file", { description: "from the API" })] });
    expect((await api.get("/healthcheck/from-file")).body).toMatchObject({
      source: "api",
      description: "from the API",
    });
    expect(await api.post("/healthcheck/bulk", {})).toMatchObject({ status: 201 });
    expect(await api.names()).toEqual(["from-file"]);
    expect((await api.get("/healthcheck/from-file")).body).toEqual({
      ...quietCheck("from-file"),
      kind: "tcp",
      source: "configuration",
      description: "",
      "one-off": false,
      "should-fail": false,
    });
  });
});

describe("command healthchecks through the API (allow-api-commands)", () => {
  const servers: VigieServer[] = [];
  afterAll(async () => {
    for (const server of servers) await server.close();
  });
  async function start(config: Record<string, unknown>) {
    const server = await startTestServer({ modules: [healthchecksModule], config });
    servers.push(server);
    return client(server);
  }
  const command = { name: "cmd", command: "true", timeout: "1s", interval: "1h" };
  const forbidden = { status: 403, body: { error: "command healthchecks are disabled for the API" } };

  it("are allowed by default on a loopback address", async () => {
    expect((await (await start({ http: { host: "127.0.0.2" } })).post("/healthcheck/command", command)).status).toBe(
      201,
    );
    expect((await (await start({ http: { host: "::1" } })).post("/healthcheck/command", command)).status).toBe(201);
  });

  it("are refused by default on a public address, in bulk too", async () => {
    const api = await start({ http: { host: "0.0.0.0" } });
    expect(await api.post("/healthcheck/command", command)).toEqual(forbidden);
    expect(await api.post("/healthcheck/command", { ...command, "one-off": true })).toEqual(forbidden);
    expect(await api.post("/healthcheck/bulk", { "command-checks": [command] })).toEqual(forbidden);
    expect((await api.post("/healthcheck/bulk", { "command-checks": [] })).status).toBe(201);
    expect((await api.post("/healthcheck/tcp", quietCheck("tcp"))).status).toBe(201);
  });

  it("follow an explicit setting", async () => {
    const allowed = await start({ http: { host: "0.0.0.0" }, healthchecks: { "allow-api-commands": true } });
    expect((await allowed.post("/healthcheck/command", command)).status).toBe(201);
    const refused = await start({ healthchecks: { "allow-api-commands": false } });
    expect(await refused.post("/healthcheck/command", command)).toEqual(forbidden);
  });
});

describe("with security.require-token", () => {
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
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [tokens, healthchecksModule],
      config: { http: { host: "0.0.0.0" }, security: { "require-token": true } },
    });
    api = client(server);
  });
  afterAll(() => server.close());

  it("requires a registry token on every route", async () => {
    const missing = { status: 401, body: { error: "missing token" } };
    expect(await api.get("/healthcheck")).toEqual(missing);
    expect(await api.get("/healthcheck/x")).toEqual(missing);
    expect(await api.delete("/healthcheck/x")).toEqual(missing);
    expect(await api.get("/result")).toEqual(missing);
    expect(await api.get("/result/x")).toEqual(missing);
    expect(await api.post("/healthcheck/tcp", quietCheck("x"))).toEqual(missing);
    expect(await api.post("/healthcheck/bulk", {})).toEqual(missing);
    expect(await api.call("GET", "/healthcheck", undefined, "Bearer wrong")).toEqual({
      status: 401,
      body: { error: "invalid token" },
    });
    expect(await api.call("GET", "/healthcheck", undefined, "Bearer tech-token")).toEqual({ status: 200, body: [] });
    // Commands are allowed by default when tokens are required, even on a public address.
    expect(
      (
        await api.call(
          "POST",
          "/healthcheck/command",
          { name: "cmd", command: "true", timeout: "1s", interval: "1h" },
          "tech-token",
        )
      ).status,
    ).toBe(201);
    expect((await server.app.inject({ method: "GET", url: "/metrics" })).statusCode).toBe(200);
  });
});

describe("configuration-file healthchecks", () => {
  const raw = (checks: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    database: { url: "sqlite::memory:" },
    healthchecks: { ...FAST, ...checks, ...extra },
  });
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: raw({ "tcp-checks": [quietCheck("file-a"), quietCheck("file-b")] }),
    });
    api = client(server);
  });
  afterAll(() => server.close());
  const reload = (tree: Record<string, unknown>) => server.reload(parseConfig(tree, {}, [healthchecksModule]));

  it("are listed with source configuration", async () => {
    expect((await api.get("/healthcheck/file-a")).body).toMatchObject({ source: "configuration", kind: "tcp" });
  });

  it("are re-read on reload: added, changed and removed ones applied, API checks untouched", async () => {
    await api.post("/healthcheck/tcp", quietCheck("api-check"));
    await api.post("/healthcheck/tcp", quietCheck("file-b", { description: "taken over by the API" }));
    const failures = await reload(
      raw({
        "tcp-checks": [quietCheck("file-a", { description: "changed" }), quietCheck("file-b")],
        "dns-checks": [{ name: "file-c", domain: "localhost", interval: "1h" }],
      }),
    );
    expect(failures).toEqual([]);
    expect(await api.names()).toEqual(["api-check", "file-a", "file-b", "file-c"]);
    expect((await api.get("/healthcheck/file-a")).body).toMatchObject({
      description: "changed",
      source: "configuration",
    });
    expect((await api.get("/healthcheck/file-b")).body).toMatchObject({
      description: "taken over by the API",
      source: "api",
    });
    expect((await api.get("/healthcheck/file-c")).body).toMatchObject({ source: "configuration" });

    expect(await reload(raw({}))).toEqual([]);
    expect(await api.names()).toEqual(["api-check", "file-b"]);
  });

  it("keeps the running checks when the reloaded definitions break a running rule", async () => {
    expect(await reload(raw({ "tcp-checks": [quietCheck("file-a")] }))).toEqual([]);
    const before = (await api.get("/healthcheck")).body;
    // Valid for the file's own min-interval, but min-interval itself is not reloadable.
    const failures = await reload(
      raw({ "tcp-checks": [quietCheck("file-d", { interval: "50ms", timeout: "10ms" })] }, { "min-interval": "10ms" }),
    );
    expect(failures).toHaveLength(1);
    expect(failures[0]?.error).toHaveProperty(
      "message",
      "invalid configuration: healthchecks.tcp-checks[0].interval: must be at least 100ms",
    );
    expect((await api.get("/healthcheck")).body).toEqual(before);
  });

  it("can be deleted through the API until the next reload", async () => {
    expect(await reload(raw({ "tcp-checks": [quietCheck("file-a")] }))).toEqual([]);
    expect((await api.delete("/healthcheck/file-a")).status).toBe(200);
    expect((await api.get("/healthcheck/file-a")).status).toBe(404);
    expect(await reload(raw({ "tcp-checks": [quietCheck("file-a")] }))).toEqual([]);
    expect((await api.get("/healthcheck/file-a")).status).toBe(200);
  });
});
