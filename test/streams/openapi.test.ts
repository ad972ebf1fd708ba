/**
 * The streams routes in GET /openapi.json: every one described, and a client driven by the
 * document alone (its examples, its paths, its success statuses) creates a stream, pushes an
 * event, finds it in the index and through a channel, sends traces and remote write, and deletes
 * the stream; every answer checked against the schema the document gives for it.
 */
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { compressSync } from "snappy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { openApiPath } from "../../src/platform/openapi.js";
import type { VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";
import {
  describedPaths,
  expectDescribedAnswer,
  type Operation,
  type Paths,
  successStatuses,
} from "../support/openapi.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";

/** The real values of the path parameters. */
const PARAMETERS: Record<string, string> = { name: "cpu", channel: "cpu-index" };

let server: VigieServer;
let platformRoutes: Set<string>;
let paths: Paths;
let port: number;

beforeAll(async () => {
  const bare = await startTestServer({ modules: [] });
  platformRoutes = new Set(bare.routes.map((route) => `${route.method} ${openApiPath(route.url)}`));
  await bare.close();
  server = await startTestServer({
    modules: [streamsModule],
    config: { streams: { directories: [temporaryDirectory()] } },
  });
  await server.app.listen({ host: "127.0.0.1", port: 0 });
  const address = server.app.server.address();
  port = typeof address === "object" && address !== null ? address.port : 0;
  paths = await describedPaths(server.app);
});
afterAll(() => server.close());

/** The streams module's routes: those a server without modules does not register. */
const moduleRoutes = () =>
  [...new Set(server.routes.map((route) => `${route.method} ${openApiPath(route.url)}`))].filter(
    (route) => !platformRoutes.has(route),
  );

function operationOf(method: string, path: string): Operation {
  const operation = paths[path]?.[method.toLowerCase()];
  if (operation === undefined) throw new Error(`${method} ${path} is not in the document`);
  return operation;
}

const urlOf = (path: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => PARAMETERS[name] ?? name);

/** The described success status of an operation (its first 1xx or 2xx). */
const successOf = (operation: Operation) => Number(successStatuses(operation)[0]);

/** The operation's only request media type and its example. */
function exampleOf(operation: Operation): { mediaType: string; example: unknown } {
  const [entry] = Object.entries(operation.requestBody?.content ?? {});
  if (entry === undefined) throw new Error(`${operation.summary}: no request body`);
  const [mediaType, { example }] = entry;
  return { mediaType, example };
}

/** Sends a request, expects `status`, checks the answer against the described schema. */
async function call(
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  options: { status?: number; query?: string; payload?: string | Buffer; mediaType?: string } = {},
) {
  const operation = operationOf(method, path);
  const status = options.status ?? successOf(operation);
  const response = await server.app.inject({
    method,
    url: `${urlOf(path)}${options.query === undefined ? "" : `?${options.query}`}`,
    ...(options.payload === undefined
      ? {}
      : { payload: options.payload, headers: { "content-type": options.mediaType ?? "application/json" } }),
  });
  expect(response.statusCode, `${method} ${path}: ${response.body}`).toBe(status);
  const mediaType = String(response.headers["content-type"] ?? "").split(";")[0] ?? "";
  const body = response.body === "" ? undefined : response.json();
  if (body !== undefined) expectDescribedAnswer(operation, status, mediaType, body);
  return body;
}

/** Sends the operation's example, as its media type, and expects its described success. */
function sendExample(method: "POST" | "PUT", path: string) {
  const { mediaType, example } = exampleOf(operationOf(method, path));
  return call(method, path, { payload: JSON.stringify(example), mediaType });
}

/** A snappy-compressed remote write request of one sample. */
function writeRequest(): Buffer {
  const file = fileURLToPath(new URL("../../proto/remote-write.proto", import.meta.url));
  const WriteRequest = protobuf.loadSync(file).lookupType("prometheus.WriteRequest");
  const sample = { labels: [{ name: "__name__", value: "up" }], samples: [{ value: 1, timestamp: 1_700_000_000_500 }] };
  return compressSync(Buffer.from(WriteRequest.encode(WriteRequest.fromObject({ timeseries: [sample] })).finish()));
}

describe("the streams routes in GET /openapi.json", () => {
  it("describes every route of the module", () => {
    const routes = moduleRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(12);
    for (const route of routes) {
      const [method = "", path = ""] = route.split(" ");
      const operation = operationOf(method, path);
      expect(operation.summary, route).not.toBe(route);
      expect(Object.keys(operation.responses), route).toContain("default");
      expect(successOf(operation), route).toBeGreaterThan(0);
    }
  });

  it("drives a client: create, subscribe, push, search, traces, metrics, logs, remote write, delete", async () => {
    const withExamples = moduleRoutes().filter((route) => {
      const [method = "", path = ""] = route.split(" ");
      return operationOf(method, path).requestBody !== undefined && exampleOf(operationOf(method, path)).example;
    });
    expect(withExamples.sort()).toEqual([
      "POST /api/v1/index/{name}/search",
      "POST /api/v1/influx/api/v2/write",
      "POST /api/v1/influx/write",
      "POST /api/v1/opentelemetry/v1/logs/{name}",
      "POST /api/v1/opentelemetry/v1/metrics/{name}",
      "POST /api/v1/opentelemetry/v1/traces/{name}",
      "POST /api/v1/stream/{name}",
      "PUT /api/v1/stream/{name}",
    ]);

    expect(await sendExample("POST", "/api/v1/stream/{name}")).toEqual({ message: "stream added" });
    expect(await call("GET", "/api/v1/stream")).toEqual({ streams: ["cpu"] });
    expect(await call("GET", "/api/v1/stream/{name}")).toMatchObject({ "current-time": 0 });

    // The channel: a GET without upgrade is refused 426 (the described error), an upgrade is 101.
    await call("GET", "/api/v1/channel/{channel}", { status: 426 });
    expect(successOf(operationOf("GET", "/api/v1/channel/{channel}"))).toBe(101);
    const socket = new WebSocket(`ws://127.0.0.1:${port}${urlOf("/api/v1/channel/{channel}")}`);
    let upgradeStatus: number | undefined;
    socket.once("upgrade", (response) => {
      upgradeStatus = response.statusCode;
    });
    await new Promise((resolve, reject) => {
      socket.once("open", resolve);
      socket.once("error", reject);
    });
    expect(upgradeStatus).toBe(101);
    const published = new Promise<unknown>((resolve) =>
      socket.once("message", (data) => resolve(JSON.parse(String(data)))),
    );

    const push = exampleOf(operationOf("PUT", "/api/v1/stream/{name}")).example;
    expect(await sendExample("PUT", "/api/v1/stream/{name}")).toEqual({ message: "ok" });
    const pushed = expect.objectContaining({ ...(push as { event: object }).event, time: expect.any(Number) });
    expect(await published).toEqual(pushed);
    socket.close();

    const found = await sendExample("POST", "/api/v1/index/{name}/search");
    expect(found).toEqual({ events: [pushed] });
    const { example } = exampleOf(operationOf("POST", "/api/v1/index/{name}/search"));
    const query = new URLSearchParams({ query: (example as { query: string }).query }).toString();
    expect(await call("GET", "/api/v1/index/{name}/search", { query })).toEqual({ events: [pushed] });
    const time = await call("GET", "/api/v1/index/{name}/current-time");
    expect(time["current-time"]).toBeGreaterThan(0);

    expect(await sendExample("POST", "/api/v1/opentelemetry/v1/traces/{name}")).toEqual({});
    const spans = await call("POST", "/api/v1/index/{name}/search", {
      payload: JSON.stringify({ query: Buffer.from('[:= :service "shop"]').toString("base64") }),
    });
    expect(spans.events).toEqual([expect.objectContaining({ service: "shop", name: "GET /users", kind: "server" })]);

    // Line protocol: the example as text, on both paths, into the stream by db / bucket.
    for (const [path, parameter] of [
      ["/api/v1/influx/write", "db"],
      ["/api/v1/influx/api/v2/write", "bucket"],
    ] as const) {
      const { mediaType, example } = exampleOf(operationOf("POST", path));
      expect(mediaType).toBe("text/plain");
      await call("POST", path, { payload: String(example), mediaType, query: `${parameter}=cpu` });
    }
    const lines = await call("POST", "/api/v1/index/{name}/search", {
      payload: JSON.stringify({ query: Buffer.from('[:= :service "cpu.usage_user"]').toString("base64") }),
    });
    expect(lines.events).toEqual([expect.objectContaining({ host: "web-1", metric: 12.5, time: 1_700_000_000 })]);
    expect(await sendExample("POST", "/api/v1/opentelemetry/v1/metrics/{name}")).toEqual({});
    expect(await sendExample("POST", "/api/v1/opentelemetry/v1/logs/{name}")).toEqual({});
    const signals = await call("POST", "/api/v1/index/{name}/search", {
      payload: JSON.stringify({
        query: Buffer.from('[:or [:= :type "gauge"] [:= :state "critical"]]').toString("base64"),
      }),
    });
    expect(signals.events).toEqual([
      expect.objectContaining({ service: "queue.length", host: "web-1", metric: 12, queue: "mail" }),
      expect.objectContaining({ service: "shop", description: "payment failed", "order.id": "A-42" }),
    ]);

    // Remote write has no example (a binary body): a real one, of the described media type.
    for (const path of ["/api/v1/tsdb/remote-write/{name}", "/api/v1/prometheus/remote-write/{name}"]) {
      const [mediaType = ""] = Object.keys(operationOf("POST", path).requestBody?.content ?? {});
      expect(mediaType).toBe("application/x-protobuf");
      await call("POST", path, { payload: writeRequest(), mediaType });
    }

    expect(await call("DELETE", "/api/v1/stream/{name}")).toEqual({ message: "stream removed" });
    expect(await call("GET", "/api/v1/stream/{name}", { status: 404 })).toEqual({ error: "stream cpu not found" });
  });
});
