/**
 * Fuzzes every route of every module through `app.inject()` (docs/security.md): malformed
 * JSON, wrong types, invalid UTF-8, deep nesting, huge numbers, overlong names, wrong media types,
 * truncated bodies. Every answer must be a 2xx or a 4xx in the route's error format (`{"error":
 * "<sentence>"}`), never a 5xx (but the 500 of a failed one-off healthcheck), a hang or a crash;
 * `/healthz` still answers afterwards.
 *
 * `FUZZ_RUNS` sets the runs per route (default 200), `FUZZ_SEED` the seed (default fixed, so that
 * CI is reproducible); a failure prints both, and the request that failed.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commentsModule } from "../../src/comments/index.js";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { openApiPath } from "../../src/platform/openapi.js";
import { createRegistryModule } from "../../src/registry/index.js";
import type { VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";
import { FakeUpstream } from "../registry/cargo/mirror/upstream-fake.js";
import { describedPaths, expectDescribedAnswer, expectDescribedStatus, type Paths } from "../support/openapi.js";
import { freePort, temporaryDirectory } from "../support/process.js";
import { startTestServer } from "../support/server.js";
import { rawUpgrade } from "../support/websocket.js";
import { FUZZ_HEARTBEAT_KEY, type FuzzContext, type FuzzRequest, type FuzzRoute, fuzzRoutes } from "./routes.js";

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);
/** Longer than any answer may take: the fuzzed healthchecks time out within 2 s. */
const ANSWER_TIMEOUT_MS = 10_000;
const COMMENTS_TOKEN = "fuzz-comments-admin-token";

let server: VigieServer;
/** The server's own API description, which every answer must agree with. */
let described: Paths = {};
/** The listening port: WebSocket upgrades need a real connection (`inject()` cannot upgrade). */
let port = 0;
let adminToken = "";
const context: FuzzContext = {
  get adminToken() {
    return adminToken;
  },
  commentsToken: COMMENTS_TOKEN,
  closedPort: await freePort(),
};
const routes = fuzzRoutes(context);
/** The upstream of the Cargo mirror. */
const upstream = new FakeUpstream();
const directory = temporaryDirectory();
const tlsDirectory = temporaryDirectory();
// The file names the fuzzed checks use: some definitions with client certificates are then valid.
for (const name of ["client.key", "client.pem", "ca.pem"]) writeFileSync(join(tlsDirectory, name), "not a real PEM\n");

beforeAll(async () => {
  await upstream.start();
  upstream.add("fuzz-crate", "0.1.0");
  upstream.add("Fuzz_Crate", "1.0.0+b");
  server = await startTestServer({
    modules: [
      createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "fuzz-root-password" } }),
      commentsModule,
      healthchecksModule,
      streamsModule,
    ],
    config: {
      http: { "allowed-origins": ["https://dashboard.example.org"] },
      comments: {
        "admin-token": COMMENTS_TOKEN,
        websites: [{ name: "blog", "allowed-origins": ["http://evil.example"], articles: ["post"] }],
      },
      // No command checks from the fuzz: it must never run an executable.
      // The status pages show every check (no selector), so that the fuzzed ones reach them too.
      healthchecks: {
        "allow-api-commands": false,
        "tls-directory": tlsDirectory,
        "status-pages": [{ slug: "" }, { slug: "ops", title: "Operations" }],
      },
      streams: { directories: [directory] },
      // The mirror's upstream is a fake on loopback: fuzzed requests never leave the machine.
      registry: {
        cargo: {
          enabled: true,
          storage: join(directory, "crates"),
          mirror: {
            enabled: true,
            "upstream-index": upstream.indexUrl,
            cache: join(directory, "crates-mirror"),
          },
        },
      },
    },
  });
  const created = await server.app.inject({
    method: "POST",
    url: "/api/v1/registry/token",
    payload: { name: "fuzz", user: "root", password: "fuzz-root-password" },
  });
  expect(created.statusCode).toBe(201);
  const config = Buffer.from("{:actions {:action :index :params [[:host]]} :default true}").toString("base64");
  expect(
    (await server.app.inject({ method: "POST", url: "/api/v1/stream/fuzz", payload: { config } })).statusCode,
  ).toBe(201);
  adminToken = created.json().token;
  // A heartbeat whose key the ping routes are fuzzed with (docs/healthchecks.md).
  const heartbeat = await server.app.inject({
    method: "POST",
    url: "/healthcheck/heartbeat",
    payload: { name: "fuzz-heartbeat", period: "1h", key: FUZZ_HEARTBEAT_KEY },
  });
  expect(heartbeat.statusCode).toBe(201);
  described = await describedPaths(server.app);
  await server.app.listen({ host: "127.0.0.1", port: 0 });
  const address = server.app.server.address();
  port = typeof address === "object" && address !== null ? address.port : 0;
});

afterAll(async () => {
  await server?.close();
  await upstream.stop();
  for (const path of [directory, tlsDirectory]) rmSync(path, { recursive: true, force: true });
});

/** Sends one request; rejects when no answer comes within {@link ANSWER_TIMEOUT_MS}. */
async function send(route: FuzzRoute, request: FuzzRequest) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms`)), ANSWER_TIMEOUT_MS);
  });
  try {
    if (request.upgrade === true) {
      const answer = await Promise.race([rawUpgrade(port, request.path, request.headers), timeout]);
      return { statusCode: answer.status, body: answer.body, headers: {} };
    }
    return await Promise.race([
      server.app.inject({
        method: route.method,
        url: request.path,
        headers: { host: "127.0.0.1:8080", ...request.payload.headers, ...request.headers },
        ...(request.payload.body === undefined ? {} : { payload: request.payload.body }),
      }),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether an answer keeps the rules: a 2xx or 3xx, or a 4xx with `{"error": "<sentence>"}`. */
function checkAnswer(route: FuzzRoute, status: number, text: string): void {
  if (status < 400) return;
  if (route.htmlErrors === true && status < 500 && text.startsWith("<!doctype html>")) {
    if (!/<h1>[^<]+<\/h1>/.test(text)) throw new Error(`page ${status} without a heading: ${text.slice(0, 300)}`);
    return;
  }
  if (route.plainTextErrors === true && status < 500 && !text.startsWith("{")) {
    if (text.trim() === "") throw new Error(`answer ${status} without a sentence`);
    return;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`answer ${status} is not JSON: ${text.slice(0, 200)}`);
  }
  const failedOneOff =
    route.allowsFailedOneOff === true &&
    status === 500 &&
    typeof (body as { message?: unknown }).message === "string" &&
    (body as { message: string }).message.startsWith("Execution of one off healthcheck ");
  if (failedOneOff) return;
  if (status >= 500) throw new Error(`answer ${status}: ${text.slice(0, 300)}`);
  // Cargo's routes answer in Cargo's format; what the platform refuses before any route runs (a
  // URL the router cannot read, the Host/Origin check, a `..` that leaves the prefix) in its own.
  const platformError = typeof (body as { error?: unknown }).error === "string";
  if (route.cargoErrors === true && !platformError) {
    const detail = (body as { errors?: { detail?: unknown }[] }).errors?.[0]?.detail;
    if (typeof detail !== "string" || detail === "")
      throw new Error(`answer ${status} without Cargo's errors: ${text}`);
    return;
  }
  const error = (body as { error?: unknown }).error;
  if (typeof error !== "string" || error === "") throw new Error(`answer ${status} without an error sentence: ${text}`);
}

const DOT_SEGMENT = /\/(\.|%2e){1,2}(\/|\?|#|$)/i;

function contentTypeOf(headers: object): unknown {
  return "content-type" in headers ? headers["content-type"] : undefined;
}

/**
 * Whether an answer is what /openapi.json describes for its route: its status is one the operation
 * lists (a success among its successes, an error among its errors), and a JSON answer matches the
 * schema of that status. Cargo's errors are left to {@link checkAnswer}: what the platform refuses
 * before them (Host check) is in the platform's format, not Cargo's.
 */
function checkDescribed(route: FuzzRoute, path: string, status: number, contentType: unknown, text: string): void {
  // A dot segment (`/healthcheck/..`) is resolved before routing: another route answered.
  if (DOT_SEGMENT.test(path)) return;
  const operation = described[openApiPath(route.url)]?.[route.method.toLowerCase()];
  expect(operation, `${route.method} ${route.url} is described`).toBeDefined();
  if (operation === undefined) return;
  expectDescribedStatus(operation, status);
  if (typeof contentType !== "string" || !contentType.startsWith("application/json")) return;
  if ((status >= 300 && status < 400) || status >= 500 || (status >= 400 && route.cargoErrors === true)) return;
  expectDescribedAnswer(operation, status, "application/json", JSON.parse(text));
}

describe("fuzzing every route", () => {
  it("covers every route the server registers", () => {
    const fuzzed = routes.map((route) => `${route.method} ${route.url}`).sort();
    const registered = server.routes.map((route) => `${route.method} ${route.url}`).sort();
    expect(fuzzed).toEqual(registered);
  });

  it.each(routes.map((route, index) => [`${route.method} ${route.url}`, route, index] as const))(
    "%s",
    async (_name, route, index) => {
      const numRuns = Math.max(10, Math.round(RUNS * (route.runs ?? 1)));
      try {
        await fc.assert(
          fc.asyncProperty(route.requests, async (request) => {
            const response = await send(route, request);
            checkAnswer(route, response.statusCode, response.body);
            checkDescribed(route, request.path, response.statusCode, contentTypeOf(response.headers), response.body);
          }),
          { numRuns, seed: SEED + index, endOnFailure: false },
        );
      } catch (error) {
        throw new Error(
          `${route.method} ${route.url} (FUZZ_SEED=${SEED}, FUZZ_RUNS=${RUNS}): ${(error as Error).message}`,
        );
      }
      expect((await server.app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    },
  );
});
