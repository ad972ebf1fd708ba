/**
 * The security rules of docs/security.md through the API: no secrets in responses (every GET route,
 * one-off answers, bulk errors), `<redacted>` posted back keeps the stored value, and TLS files of
 * API checks are names under `healthchecks.tls-directory`.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer } from "node:tls";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { ConfigError } from "../../src/platform/config.js";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";
import { until } from "../support/until.js";
import { type Certificates, generateCertificates, OPENSSL_MISSING } from "./certificates.js";
import { type Listening, listen } from "./local-servers.js";

const TOKEN = "Bearer s3cr3t-t0ken";
const API_KEY = "k3y-0f-the-api";
const URL_PASSWORD = "hunter2-pw";
/** Every secret of the checks of these tests: none may appear in a response. */
const SECRETS = [TOKEN, "s3cr3t-t0ken", API_KEY, URL_PASSWORD, "c00kie-value"];

/** Requests the web server received: path, Authorization and X-Api-Key headers, body. */
const seen: Array<{ url: string; authorization: string | undefined; apiKey: string | undefined; body: string }> = [];
let web: Listening;
beforeAll(async () => {
  web = await listen(
    createServer(async (request: IncomingMessage, response) => {
      let body = "";
      for await (const chunk of request) body += chunk;
      seen.push({
        url: request.url ?? "",
        authorization: request.headers.authorization,
        apiKey: request.headers["x-api-key"] as string | undefined,
        body,
      });
      if (request.url?.startsWith("/mirror")) {
        // An error page that echoes the request line and body.
        response.writeHead(500);
        response.end(`you asked for ${request.url} with ${body}`);
        return;
      }
      if (request.url?.startsWith("/echo")) {
        // An error page that echoes the request, as debugging endpoints do.
        response.writeHead(500);
        response.end(`you sent ${request.headers.authorization} and ${request.headers["x-api-key"]}`);
        return;
      }
      response.end("ok");
    }),
  );
});
afterAll(() => web.close());

/** The request the web server received last on `path`, once one came. */
function lastRequestTo(path: string) {
  return until(async () => seen.filter((request) => request.url === path).at(-1), `a request to ${path}`);
}

function client(server: VigieServer) {
  const call = async (method: "GET" | "POST" | "DELETE", url: string, body?: unknown) => {
    const response = await server.app.inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    });
    return { status: response.statusCode, text: response.body, body: response.json() as unknown };
  };
  return {
    post: (url: string, body: unknown) => call("POST", url, body),
    get: (url: string) => call("GET", url),
    result: async (name: string) => {
      const response = await call("GET", `/result/${encodeURIComponent(name)}`);
      return response.status === 200 ? (response.body as Record<string, unknown>) : undefined;
    },
  };
}

function expectNoSecret(text: string): void {
  for (const secret of SECRETS) expect(text).not.toContain(secret);
}

/** An http check with a secret in every place that is redacted (docs/security.md). */
function secretCheck(name: string, fields: Record<string, unknown> = {}) {
  return {
    name,
    description: `mirror of https://ann:${URL_PASSWORD}@example.org/x`,
    target: "127.0.0.1",
    port: web.port,
    path: `/${name}`,
    "valid-status": [200],
    timeout: "1s",
    interval: "1s",
    headers: { Authorization: TOKEN, "X-Api-Key": API_KEY, Cookie: "c00kie-value", Accept: "text/plain" },
    query: { upstream: `https://bob:${URL_PASSWORD}@internal.example/` },
    body: `{"dsn":"postgres://app:${URL_PASSWORD}@db/x"}`,
    method: "POST",
    labels: { repo: `https://git:${URL_PASSWORD}@git.example/x` },
    ...fields,
  };
}

const REDACTED_FIELDS = {
  description: "mirror of https://ann:<redacted>@example.org/x",
  headers: { Authorization: "<redacted>", "X-Api-Key": "<redacted>", Cookie: "<redacted>", Accept: "text/plain" },
  query: { upstream: "https://bob:<redacted>@internal.example/" },
  body: '{"dsn":"postgres://app:<redacted>@db/x"}',
  labels: { repo: "https://git:<redacted>@git.example/x" },
};

const UNRESOLVED =
  "<redacted> does not match the stored value of an existing healthcheck of this name; send the value itself";

/** A view as GET returns it, made a definition to post again: without kind and source. */
function editable(view: unknown): Record<string, unknown> {
  const { kind: _kind, source: _source, ...definition } = view as Record<string, unknown>;
  return definition;
}

describe("no secrets in responses (docs/security.md)", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        healthchecks: {
          "min-interval": "100ms",
          "http-checks": [secretCheck("from-file", { path: "/from-file" })],
        },
      },
    });
    api = client(server);
  });
  afterAll(() => server.close());

  it("redacts on GET /healthcheck, GET /healthcheck/<name>, GET /result and GET /result/<name>", async () => {
    expect((await api.post("/healthcheck/http", secretCheck("api-check"))).status).toBe(201);
    const one = await api.get("/healthcheck/api-check");
    expect(one.body).toMatchObject({ ...REDACTED_FIELDS, source: "api" });
    expectNoSecret(one.text);
    const file = await api.get("/healthcheck/from-file");
    expect(file.body).toMatchObject({ ...REDACTED_FIELDS, source: "configuration" });
    expectNoSecret(file.text);
    const all = await api.get("/healthcheck");
    expect(all.body).toEqual([one.body, file.body]);
    expectNoSecret(all.text);

    // The checks run with the real values.
    expect(
      await lastRequestTo(`/api-check?upstream=${encodeURIComponent(`https://bob:${URL_PASSWORD}@internal.example/`)}`),
    ).toMatchObject({ authorization: TOKEN, apiKey: API_KEY });
    const result = await until(() => api.result("api-check"), "a result");
    expect(result).toMatchObject({
      configuration: one.body,
      success: true,
      labels: REDACTED_FIELDS.labels,
    });
    await until(() => api.result("from-file"), "a result of the file check");
    const results = await api.get("/result");
    expect((results.body as Array<{ name: string }>).map((entry) => entry.name)).toEqual(["api-check", "from-file"]);
    expectNoSecret(results.text);
    expectNoSecret((await api.get("/result/api-check")).text);
    expectNoSecret((await api.get("/result/from-file")).text);
    // The labels of the metric series too.
    const metrics = await server.app.inject({ method: "GET", url: "/metrics" });
    expect(metrics.body).not.toContain(URL_PASSWORD);
  });

  it("redacts the failure messages of results and one-off answers", async () => {
    const echo = secretCheck("echo", { path: "/echo", labels: undefined });
    expect((await api.post("/healthcheck/http", echo)).status).toBe(201);
    const result = await until(() => api.result("echo"), "a result");
    expect(result.message).toBe("HTTP request failed: status 500. Body: 'you sent <redacted> and <redacted>'");
    const once = await api.post("/healthcheck/http", { ...echo, name: "echo-once", "one-off": true });
    expect(once).toMatchObject({
      status: 500,
      body: {
        message:
          "Execution of one off healthcheck echo-once failed: HTTP request failed: status 500. Body: 'you sent <redacted> and <redacted>'",
      },
    });
  });

  it("never echoes a secret in the errors of a POST or a bulk", async () => {
    const invalid = await api.post(
      "/healthcheck/http",
      secretCheck("bad", { headers: { Authorization: `${TOKEN}\n` } }),
    );
    expect(invalid).toMatchObject({
      status: 400,
      body: { error: "invalid healthcheck: headers.Authorization: must not contain line breaks or NUL" },
    });
    const bulk = await api.post("/healthcheck/bulk", {
      "http-checks": [secretCheck("bulk-bad", { port: 0 })],
    });
    expect(bulk).toMatchObject({
      status: 400,
      body: { error: "invalid healthcheck bulk-bad: port: must be an integer between 1 and 65535" },
    });
    expectNoSecret(invalid.text + bulk.text);
    // A deeply nested value is refused, not redacted to the end of the stack.
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    for (const url of ["/healthcheck/http", "/healthcheck/bulk"]) {
      const response = await server.app.inject({
        method: "POST",
        url,
        headers: { "content-type": "application/json" },
        payload: url.endsWith("bulk") ? `{"http-checks":[{"name":"x","description":${deep}}]}` : deep,
      });
      expect(response.statusCode).toBe(400);
    }
  });
});

/** Secrets outside headers: a query parameter, a parameter of the path, a field of a JSON body. */
const QUERY_SECRET = "q-s3cret-value";
const PATH_SECRET = "p@th s3cret";
const BODY_SECRET = 'b0dy-"s3cret"';
const BODY = `{"user": "ann",\n "password": ${JSON.stringify(BODY_SECRET)}, "id": 12345678901234567890, "api_key": {"v": 1}}`;

/** An http check with secrets in its query, its path and its JSON body. */
function fieldSecretCheck(name: string, fields: Record<string, unknown> = {}) {
  return {
    name,
    target: "127.0.0.1",
    port: web.port,
    path: `/${name}?page=2&access_token=${encodeURIComponent(PATH_SECRET)}`,
    method: "POST",
    "valid-status": [200],
    timeout: "1s",
    interval: "1s",
    query: { api_key: QUERY_SECRET, lang: "en" },
    body: BODY,
    ...fields,
  };
}

function expectNoFieldSecret(text: string): void {
  for (const secret of [QUERY_SECRET, PATH_SECRET, encodeURIComponent(PATH_SECRET), "s3cret"]) {
    expect(text).not.toContain(secret);
  }
}

describe("query parameters and JSON body fields named like secrets (docs/security.md)", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: { healthchecks: { "min-interval": "100ms" } },
    });
    api = client(server);
  });
  afterAll(() => server.close());

  it("are redacted on GET, the check running with the real values", async () => {
    expect((await api.post("/healthcheck/http", fieldSecretCheck("fields"))).status).toBe(201);
    const view = await api.get("/healthcheck/fields");
    expect(view.body).toMatchObject({
      path: "/fields?page=2&access_token=<redacted>",
      query: { api_key: "<redacted>", lang: "en" },
      // The rest of the body byte for byte: spacing, and a number beyond double precision.
      body: '{"user": "ann",\n "password": "<redacted>", "id": 12345678901234567890, "api_key": "<redacted>"}',
    });
    expectNoFieldSecret(view.text);
    expectNoFieldSecret((await api.get("/healthcheck")).text);
    const received = await until(
      async () => seen.find((request) => request.url.startsWith("/fields?")),
      "a request of the check",
    );
    const url = new URL(received.url, "http://x");
    expect([url.searchParams.get("access_token"), url.searchParams.get("api_key")]).toEqual([
      PATH_SECRET,
      QUERY_SECRET,
    ]);
    expect(received.body).toBe(BODY);
    await until(() => api.result("fields"), "a result");
    expectNoFieldSecret((await api.get("/result/fields")).text);
  });

  it("are scrubbed from result messages and one-off answers, encoded or escaped as a target echoes them", async () => {
    const mirror = fieldSecretCheck("mirror");
    expect((await api.post("/healthcheck/http", mirror)).status).toBe(201);
    const result = await until(() => api.result("mirror"), "a result");
    expect(result.message).toMatch(/^HTTP request failed: status 500\. Body: 'you asked for \/mirror\?/);
    expect(result.message).toContain("<redacted>");
    expectNoFieldSecret(String(result.message));
    expectNoFieldSecret((await api.get("/result")).text);
    const once = await api.post("/healthcheck/http", { ...mirror, name: "mirror-once", "one-off": true });
    expect(once.status).toBe(500);
    expectNoFieldSecret(once.text);
  });

  it("round-trip GET → edit → POST: <redacted> keeps the stored value, other edits of the body are kept", async () => {
    await api.post("/healthcheck/http", fieldSecretCheck("edit", { interval: "1h" }));
    const view = editable((await api.get("/healthcheck/edit")).body);
    const edited = {
      ...view,
      interval: "1s",
      body: (view.body as string).replace('"ann"', '"bob"'),
      query: { ...(view.query as Record<string, string>), lang: "fr" },
    };
    expect(await api.post("/healthcheck/http", edited)).toMatchObject({ status: 201 });
    const received = await until(
      async () => seen.find((request) => request.url.startsWith("/edit?") && request.url.includes("lang=fr")),
      "a request of the edited check",
    );
    const url = new URL(received.url, "http://x");
    expect([url.searchParams.get("access_token"), url.searchParams.get("api_key")]).toEqual([
      PATH_SECRET,
      QUERY_SECRET,
    ]);
    expect(received.body).toBe(BODY.replace('"ann"', '"bob"'));
    // A <redacted> field the stored body does not have is refused, naming the field.
    expect(
      await api.post("/healthcheck/http", { ...edited, body: '{"user": "bob", "token": "<redacted>"}' }),
    ).toMatchObject({ status: 400, body: { error: `invalid healthcheck: body: ${UNRESOLVED}` } });
  });
});

describe("<redacted> posted back keeps the stored value (docs/security.md)", () => {
  let server: VigieServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [healthchecksModule],
      config: {
        healthchecks: {
          "min-interval": "100ms",
          "http-checks": [secretCheck("file-check", { interval: "1h" })],
        },
      },
    });
    api = client(server);
  });
  afterAll(() => server.close());
  afterEach(async () => {
    await api.post("/healthcheck/bulk", {});
  });

  it("round-trips GET → edit → POST for a single check", async () => {
    await api.post("/healthcheck/http", secretCheck("edited", { interval: "1h" }));
    const view = editable((await api.get("/healthcheck/edited")).body);
    expect(
      await api.post("/healthcheck/http", {
        ...view,
        path: "/edited-after",
        interval: "1s",
        description: view.description,
      }),
    ).toMatchObject({ status: 201 });
    expect(
      await lastRequestTo(
        `/edited-after?upstream=${encodeURIComponent(`https://bob:${URL_PASSWORD}@internal.example/`)}`,
      ),
    ).toMatchObject({
      authorization: TOKEN,
      apiKey: API_KEY,
    });
    // The stored definition is the original one with the edits: GET shows the same redacted view.
    expect((await api.get("/healthcheck/edited")).body).toMatchObject({
      ...REDACTED_FIELDS,
      path: "/edited-after",
      interval: "1s",
    });
  });

  it("resolves from a configuration-file check of the same name", async () => {
    const view = editable((await api.get("/healthcheck/file-check")).body);
    expect(await api.post("/healthcheck/http", { ...view, path: "/taken-over", interval: "1s" })).toMatchObject({
      status: 201,
    });
    expect((await api.get("/healthcheck/file-check")).body).toMatchObject({ source: "api", path: "/taken-over" });
    expect(
      await lastRequestTo(
        `/taken-over?upstream=${encodeURIComponent(`https://bob:${URL_PASSWORD}@internal.example/`)}`,
      ),
    ).toMatchObject({
      authorization: TOKEN,
    });
  });

  it("round-trips GET → edit → POST for a bulk payload", async () => {
    await api.post("/healthcheck/http", secretCheck("bulk-a", { interval: "1h" }));
    await api.post(
      "/healthcheck/http",
      secretCheck("bulk-b", { interval: "1h", headers: { "X-Auth-Token": "other-t0ken" } }),
    );
    const views = (await api.get("/healthcheck")).body as Array<Record<string, unknown>>;
    const payload = {
      "http-checks": views
        .filter((view) => view.source === "api")
        .map((view) => ({ ...editable(view), name: view.name, path: `/${view.name}-bulk`, interval: "1s" })),
    };
    expect(payload["http-checks"].map((check) => check.name)).toEqual(["bulk-a", "bulk-b"]);
    expect(await api.post("/healthcheck/bulk", payload)).toMatchObject({ status: 201 });
    expect(
      await lastRequestTo(
        `/bulk-a-bulk?upstream=${encodeURIComponent(`https://bob:${URL_PASSWORD}@internal.example/`)}`,
      ),
    ).toMatchObject({
      authorization: TOKEN,
    });
    const b = await until(
      async () => seen.find((request) => request.url.startsWith("/bulk-b-bulk")),
      "a request of bulk-b",
    );
    expect(b).toMatchObject({ authorization: undefined });
    expect((await api.get("/healthcheck/bulk-b")).body).toMatchObject({ headers: { "X-Auth-Token": "<redacted>" } });
  });

  it("refuses a <redacted> without an existing check, or that does not match its value, naming the field", async () => {
    expect(
      await api.post("/healthcheck/http", secretCheck("new-one", { headers: { Authorization: "<redacted>" } })),
    ).toMatchObject({
      status: 400,
      body: { error: `invalid healthcheck: headers.Authorization: ${UNRESOLVED}` },
    });
    await api.post("/healthcheck/http", secretCheck("stored", { interval: "1h" }));
    expect(
      await api.post("/healthcheck/http", secretCheck("stored", { interval: "1h", headers: { Accept: "<redacted>" } })),
    ).toMatchObject({ status: 400, body: { error: `invalid healthcheck: headers.Accept: ${UNRESOLVED}` } });
    expect(
      await api.post(
        "/healthcheck/http",
        secretCheck("stored", { interval: "1h", description: "mirror of https://eve:<redacted>@example.org/x" }),
      ),
    ).toMatchObject({ status: 400, body: { error: `invalid healthcheck: description: ${UNRESOLVED}` } });
    expect(
      await api.post("/healthcheck/bulk", {
        "http-checks": [secretCheck("stored", { interval: "1h" })],
        "tcp-checks": [
          { name: "tcp-new", target: "127.0.0.1", port: 9, timeout: "1s", interval: "1h", description: "<redacted>" },
        ],
      }),
    ).toMatchObject({ status: 400, body: { error: `invalid healthcheck tcp-new: description: ${UNRESOLVED}` } });
    // Nothing changed.
    expect((await api.get("/healthcheck/stored")).body).toMatchObject(REDACTED_FIELDS);
    expect((await api.get("/healthcheck/tcp-new")).status).toBe(404);
  });

  it("lets a one-off check resolve <redacted> from the existing check of its name, leaving it alone", async () => {
    await api.post("/healthcheck/http", secretCheck("probe", { interval: "1h" }));
    const before = (await api.get("/healthcheck/probe")).body;
    const view = editable(before);
    delete view.interval;
    expect(await api.post("/healthcheck/http", { ...view, path: "/probe-once", "one-off": true })).toMatchObject({
      status: 201,
      body: { message: "One-off healthcheck probe successfully executed" },
    });
    expect(seen.filter((request) => request.url.startsWith("/probe-once")).at(-1)).toMatchObject({
      authorization: TOKEN,
    });
    expect((await api.get("/healthcheck/probe")).body).toEqual(before);
    expect(
      await api.post("/healthcheck/http", { ...view, name: "no-such-check", path: "/probe-once", "one-off": true }),
    ).toMatchObject({ status: 400, body: { error: `invalid healthcheck: description: ${UNRESOLVED}` } });
  });
});

describe("TLS files through the API (no file paths from the network)", () => {
  const NO_DIRECTORY = "cannot be set through the API: healthchecks.tls-directory is not configured";
  const NAME_RULE =
    "must be a file name relative to healthchecks.tls-directory, not an absolute path and without .. segments";
  const FILE_RULE = "must name a regular file of at most 1 MiB in healthchecks.tls-directory";
  const servers: VigieServer[] = [];
  const targets: Listening[] = [];
  afterAll(async () => {
    for (const server of servers) await server.close();
    for (const target of targets) await target.close();
  });
  async function start(healthchecks: Record<string, unknown>) {
    const server = await startTestServer({
      modules: [healthchecksModule],
      config: { healthchecks: { "min-interval": "100ms", ...healthchecks } },
    });
    servers.push(server);
    return client(server);
  }
  const tlsCheck = (name: string, fields: Record<string, unknown> = {}) => ({
    name,
    target: "localhost",
    port: 443,
    timeout: "1s",
    interval: "1h",
    ...fields,
  });

  it("are refused without a tls-directory, in a single POST, a one-off and a bulk", async () => {
    const api = await start({});
    expect(await api.post("/healthcheck/tls", tlsCheck("t", { cacert: "ca.pem" }))).toMatchObject({
      status: 400,
      body: { error: `invalid healthcheck: cacert: ${NO_DIRECTORY}` },
    });
    expect(
      await api.post("/healthcheck/http", {
        ...tlsCheck("h", { key: "k.pem", cert: "c.pem" }),
        "valid-status": [200],
        "one-off": true,
      }),
    ).toMatchObject({ status: 400, body: { error: `invalid healthcheck: key: ${NO_DIRECTORY}` } });
    expect(await api.post("/healthcheck/bulk", { "tls-checks": [tlsCheck("t", { cacert: "ca.pem" })] })).toMatchObject({
      status: 400,
      body: { error: `invalid healthcheck t: cacert: ${NO_DIRECTORY}` },
    });
    expect((await api.get("/healthcheck")).body).toEqual([]);
  });

  it("with a tls-directory, refuse /dev/zero, /etc/passwd, ../x, a directory, a FIFO, a large and a missing file, naming the field", async () => {
    const directory = temporaryDirectory("vigie-tls-api-");
    try {
      writeFileSync(join(directory, "ca.pem"), "not even a certificate");
      writeFileSync(join(directory, "large.pem"), Buffer.alloc(1024 * 1024 + 1));
      mkdirSync(join(directory, "sub"));
      execFileSync("mkfifo", [join(directory, "ca.fifo")]);
      const api = await start({ "tls-directory": directory });
      const answer = async (field: "key" | "cert" | "cacert", value: string) => {
        const other = field === "key" ? { cert: "ca.pem" } : field === "cert" ? { key: "ca.pem" } : {};
        return api.post("/healthcheck/tls", tlsCheck("t", { ...other, [field]: value }));
      };
      for (const field of ["key", "cert", "cacert"] as const) {
        for (const value of ["/dev/zero", "/etc/passwd", "../x", `../${directory.split("/").at(-1)}/ca.pem`]) {
          expect(await answer(field, value)).toMatchObject({
            status: 400,
            body: { error: `invalid healthcheck: ${field}: ${NAME_RULE}` },
          });
        }
        const missing = await answer(field, "missing.pem");
        expect(missing).toMatchObject({ status: 400, body: { error: `invalid healthcheck: ${field}: ${FILE_RULE}` } });
        // The same answer whether the file is missing or is a directory, a FIFO or too large.
        for (const value of ["sub", "ca.fifo", "large.pem"]) {
          const other = await answer(field, value);
          expect({ status: other.status, text: other.text }).toEqual({ status: missing.status, text: missing.text });
        }
      }
      // In a one-off and in a bulk too.
      expect(
        await api.post("/healthcheck/tls", { ...tlsCheck("t", { cacert: "sub" }), "one-off": true }),
      ).toMatchObject({
        status: 400,
        body: { error: `invalid healthcheck: cacert: ${FILE_RULE}` },
      });
      expect(
        await api.post("/healthcheck/bulk", {
          "tcp-checks": [{ name: "fine", target: "127.0.0.1", port: 9, timeout: "1s", interval: "1h" }],
          "tls-checks": [tlsCheck("bulk-tls", { cacert: "missing.pem" })],
        }),
      ).toMatchObject({ status: 400, body: { error: `invalid healthcheck bulk-tls: cacert: ${FILE_RULE}` } });
      expect((await api.get("/healthcheck")).body).toEqual([]);
      // An existing regular file is accepted, and shown by its name.
      expect((await api.post("/healthcheck/tls", tlsCheck("t", { cacert: "ca.pem" }))).status).toBe(201);
      expect((await api.get("/healthcheck/t")).body).toMatchObject({ cacert: "ca.pem" });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("refuses to start when tls-directory is not a readable directory", async () => {
    const missing = join(tmpdir(), "vigie-no-such-tls-directory");
    const starting = startTestServer({
      modules: [healthchecksModule],
      config: { healthchecks: { "tls-directory": missing } },
    });
    await expect(starting).rejects.toThrow(ConfigError);
    await expect(starting).rejects.toThrow(
      `invalid configuration: healthchecks.tls-directory: must be a readable directory; it does not exist (got "${missing}")`,
    );
  });

  describe.skipIf(OPENSSL_MISSING !== undefined)("with a client certificate from the directory", () => {
    let certificates: Certificates;
    let https: Listening;
    let tls: Listening;
    beforeAll(async () => {
      certificates = generateCertificates();
      const options = {
        key: certificates.read(certificates.serverKey),
        cert: certificates.read(certificates.serverCert),
        ca: certificates.read(certificates.caCert),
        requestCert: true,
        rejectUnauthorized: true,
      };
      https = await listen(createHttpsServer(options, (_request, response) => response.end("ok")));
      // Greets the client it accepted: a close alone right after the handshake is how a Node.js
      // server refuses a client certificate, and the tls check reports it so.
      tls = await listen(createTlsServer(options, (socket) => socket.end("hello\n")));
      targets.push(https, tls);
    });

    it("runs http and tls checks that present it, scheduled and one-off", async () => {
      // generateCertificates names its files ca.pem, client.key, client.pem in its directory.
      const api = await start({ "tls-directory": certificates.directory });
      const files = { key: "client.key", cert: "client.pem", cacert: "ca.pem" };
      const httpCheck = {
        ...tlsCheck("mutual-http", files),
        protocol: "https",
        port: https.port,
        "valid-status": [200],
        interval: "1s",
      };
      expect((await api.post("/healthcheck/http", httpCheck)).status).toBe(201);
      expect(
        (await api.post("/healthcheck/tls", tlsCheck("mutual-tls", { ...files, port: tls.port, interval: "1s" })))
          .status,
      ).toBe(201);
      expect(await until(() => api.result("mutual-http"), "a result")).toMatchObject({
        success: true,
        message: "success",
      });
      expect(await until(() => api.result("mutual-tls"), "a result")).toMatchObject({
        success: true,
        message: "success",
      });
      expect((await api.get("/healthcheck/mutual-http")).body).toMatchObject(files);
      expect(
        await api.post("/healthcheck/tls", { ...tlsCheck("once", { ...files, port: tls.port }), "one-off": true }),
      ).toMatchObject({ status: 201 });
      // Without the client certificate the server refuses the request.
      const without = await api.post("/healthcheck/http", {
        ...httpCheck,
        key: undefined,
        cert: undefined,
        name: "once",
        "one-off": true,
      });
      expect(without.status).toBe(500);
    });
  });
});
