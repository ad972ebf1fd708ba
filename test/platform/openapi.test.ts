/**
 * GET /openapi.json: an OpenAPI 3.1 document, valid for a validator library, listing exactly the
 * routes the server registers, with the bodies described from the validators that check them.
 */
import { join } from "node:path";
import { validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commentsModule } from "../../src/comments/index.js";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { openApiPath } from "../../src/platform/openapi.js";
import { createRegistryModule } from "../../src/registry/index.js";
import { newUserBody } from "../../src/registry/users.js";
import type { VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";
import { describedPaths, expectDescribedAnswer, expectDescribedStatus } from "../support/openapi.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";

interface Response {
  readonly description: string;
  readonly headers?: Record<string, { required?: boolean; schema: Record<string, unknown> }>;
  readonly content?: Record<string, { schema: Record<string, unknown> }>;
}
interface Operation {
  readonly summary: string;
  readonly parameters: { name: string; in: string; required?: boolean; schema: Record<string, unknown> }[];
  readonly requestBody?: { content: Record<string, { schema: Record<string, unknown>; example?: unknown }> };
  readonly responses: Record<string, Response>;
  readonly security?: unknown[];
}
interface Document {
  readonly openapi: string;
  readonly paths: Record<string, Record<string, Operation>>;
}

let server: VigieServer;
let document: Document;

beforeAll(async () => {
  const directory = temporaryDirectory();
  server = await startTestServer({
    modules: [createRegistryModule(), commentsModule, healthchecksModule, streamsModule],
    config: {
      comments: { websites: [{ name: "blog" }] },
      healthchecks: { "status-page": { enabled: true } },
      streams: { directories: [directory] },
      registry: { cargo: { enabled: true, storage: join(directory, "crates") } },
    },
  });
  const response = await server.app.inject({ method: "GET", url: "/openapi.json" });
  expect(response.statusCode).toBe(200);
  document = response.json();
});
afterAll(() => server.close());

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    expect(document.openapi).toBe("3.1.0");
    const result = await validate(JSON.parse(JSON.stringify(document)));
    if (!result.valid) expect(result.errors).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("lists exactly the routes the server registers", () => {
    const described = Object.entries(document.paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    const registered = server.routes.map((route) => `${route.method} ${openApiPath(route.url)}`).sort();
    expect(described).toEqual([...new Set(registered)]);
    expect(described.length).toBeGreaterThan(50);
  });

  it("describes every route: a summary and a success answer of its own", () => {
    const undescribed = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(
          ([method, operation]) =>
            operation.summary === `${method.toUpperCase()} ${path}` || "2XX" in operation.responses,
        )
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(undescribed).toEqual([]);
  });

  it("describes a body from the validator that checks it, with an example it accepts", async () => {
    const create = document.paths["/api/v1/registry/user"]?.post;
    const content = create?.requestBody?.content["application/json"];
    expect(content?.schema).toMatchObject({
      type: "object",
      required: ["name", "description", "password", "role", "active"],
      properties: { role: { type: "string", enum: ["admin", "tech"] }, password: { minLength: 8, maxLength: 1024 } },
    });
    expect(newUserBody(content?.example, "")).toMatchObject({ name: "alice", role: "tech" });
    expect(create?.security).toEqual([{ registryToken: [] }]);
    // The success, then every error status it may answer (409: the name is taken), then `default`.
    expect(Object.keys(create?.responses ?? {})).toEqual([
      "201",
      "400",
      "401",
      "403",
      "408",
      "409",
      "413",
      "415",
      "421",
      "431",
      "default",
    ]);
  });

  it("a client reading the document creates a user with the operation's example", async () => {
    const paths = await describedPaths(server.app);
    const create = paths["/api/v1/registry/user"]?.post;
    expect(create).toBeDefined();
    if (create === undefined) return;
    const example = JSON.stringify(create.requestBody?.content["application/json"]?.example);
    const refused = await server.app.inject({
      method: "POST",
      url: "/api/v1/registry/user",
      headers: { "content-type": "application/json" },
      payload: example,
    });
    expect(refused.statusCode).toBe(401);
    expectDescribedAnswer(create, 401, "application/json", refused.json());
  });

  it("describes the platform's routes, and their answers match", async () => {
    const paths = await describedPaths(server.app);
    for (const [url, mediaType] of [
      ["/", "application/json"],
      ["/healthz", "application/json"],
      ["/health", "application/json"],
      ["/metrics", "text/plain"],
      ["/openapi.json", "application/json"],
    ] as const) {
      const operation = paths[url]?.get;
      expect(operation?.summary, url).not.toBe(`GET ${url}`);
      if (operation === undefined) continue;
      const response = await server.app.inject({ method: "GET", url });
      expect(response.statusCode, url).toBe(200);
      const body = mediaType === "text/plain" ? response.body : response.json();
      expectDescribedAnswer(operation, 200, mediaType, body);
    }
  });

  it("answers every route's errors with the error shape, Cargo's on Cargo's routes", () => {
    const ref = (path: string, method: string) =>
      JSON.stringify(document.paths[path]?.[method]?.responses.default).match(/#\/components\/schemas\/(\w+)/)?.[1];
    expect(ref("/api/v1/registry/user", "post")).toBe("Error");
    expect(ref("/api/v1/crates/new", "put")).toBe("CargoError");
  });

  it("describes each error status with its schema and its Vigie-Error codes", () => {
    const create = document.paths["/api/v1/registry/user"]?.post;
    const conflict = create?.responses["409"];
    expect(conflict?.content).toEqual({ "application/json": { schema: { $ref: "#/components/schemas/Error" } } });
    expect(conflict?.headers?.["Vigie-Error"]).toMatchObject({
      required: true,
      schema: { type: "string", enum: ["VIGIE_ERR_CONFLICT"] },
    });
    expect(create?.responses["421"]?.headers?.["Vigie-Error"]?.schema).toEqual({
      type: "string",
      enum: ["VIGIE_ERR_MISDIRECTED"],
    });
    // Answered before any route, with a code as every other error.
    expect(create?.responses["431"]?.headers?.["Vigie-Error"]?.schema).toEqual({
      type: "string",
      enum: ["VIGIE_ERR_HEADERS_TOO_LARGE"],
    });
    const token = document.paths["/api/v1/registry/token"]?.post;
    expect(token?.responses["429"]?.headers?.["Retry-After"]?.schema).toMatchObject({ type: "integer" });
    // A route without credentials and without a body: only the platform's refusals.
    expect(Object.keys(document.paths["/healthz"]?.get?.responses ?? {})).toEqual([
      "200",
      "400",
      "408",
      "421",
      "431",
      "503",
      "default",
    ]);
    // A Cargo route: its own errors in Cargo's format, the platform's in Vigie's, both when both.
    const publish = document.paths["/api/v1/crates/new"]?.put;
    expect(publish?.responses["409"]?.content?.["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/CargoError",
    });
    expect(publish?.responses["421"]?.content?.["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/Error",
    });
    expect(publish?.responses["400"]?.content?.["application/json"]?.schema).toEqual({
      anyOf: [{ $ref: "#/components/schemas/CargoError" }, { $ref: "#/components/schemas/Error" }],
    });
  });

  it("derives the errors from the route's shape: path parameters, writes, credentials", () => {
    const statuses = (path: string, method: string) => Object.keys(document.paths[path]?.[method]?.responses ?? {});
    // A path parameter: 404 and 414; credentials that depend on the configuration: 401 and 403.
    expect(statuses("/healthcheck/{name}", "get")).toEqual(expect.arrayContaining(["401", "403", "404", "414"]));
    // A write without a body of its own still has its body parsed: 400, 413, 415; 403 for an Origin.
    expect(statuses("/api/v1/stream/{name}", "delete")).toEqual(
      expect.arrayContaining(["400", "403", "404", "409", "413", "415"]),
    );
    // A public read: no credentials asked, no body read.
    const list = statuses("/api/v1/comment/{website}/{article}", "get");
    expect(list).not.toContain("401");
    expect(list).not.toContain("415");
  });

  it("describes several successes: a 304 on conditional GETs, a 101 on the WebSocket route, a failed one-off", () => {
    const responses = (path: string, method: string) => document.paths[path]?.[method]?.responses ?? {};
    expect(Object.keys(responses("/api/v1/comment/{website}/{article}", "get"))).toEqual(
      expect.arrayContaining(["200", "304"]),
    );
    expect(responses("/api/v1/comment/{website}/{article}", "get")["304"]?.content).toBeUndefined();
    expect(Object.keys(responses("/comments/widget.js", "get"))).toEqual(expect.arrayContaining(["200", "304", "404"]));
    expect(Object.keys(responses("/api/v1/cargo/index/{path}", "get"))).toEqual(expect.arrayContaining(["200", "304"]));
    const channel = responses("/api/v1/channel/{channel}", "get");
    expect(Object.keys(channel)).toEqual(expect.arrayContaining(["101", "403", "426", "503"]));
    expect(channel["426"]?.headers?.Upgrade?.schema).toEqual({ const: "websocket" });
    const oneOff = responses("/healthcheck/http", "post");
    expect(Object.keys(oneOff)).toEqual(expect.arrayContaining(["201", "500"]));
    expect(oneOff["500"]?.content?.["application/json"]?.schema).toMatchObject({ required: ["message"] });
  });

  it("describes several media types: OTLP's bodies and answers, the home page", () => {
    const traces = document.paths["/api/v1/opentelemetry/v1/traces/{name}"]?.post;
    expect(Object.keys(traces?.requestBody?.content ?? {})).toEqual(["application/json", "application/x-protobuf"]);
    expect(traces?.requestBody?.content["application/json"]?.example).toBeDefined();
    expect(Object.keys(traces?.responses["200"]?.content ?? {})).toEqual([
      "application/json",
      "application/x-protobuf",
    ]);
    // gzip is an encoding, not a media type: a header.
    expect(traces?.parameters).toContainEqual(
      expect.objectContaining({
        name: "Content-Encoding",
        in: "header",
        schema: expect.objectContaining({ enum: ["identity", "gzip"] }),
      }),
    );
    expect(Object.keys(document.paths["/"]?.get?.responses["200"]?.content ?? {})).toEqual([
      "application/json",
      "text/html",
    ]);
  });

  it("flags required query parameters, and leaves the others optional", () => {
    const parameter = (path: string, method: string, name: string) =>
      document.paths[path]?.[method]?.parameters.find((entry) => entry.in === "query" && entry.name === name);
    expect(parameter("/api/v1/count/{website}", "get", "article")).toMatchObject({
      required: true,
      schema: { type: "array", minItems: 1 },
    });
    expect(parameter("/api/v1/index/{name}/search", "get", "query")?.required).toBe(true);
    // The POST search takes the condition in its body or in ?query=.
    expect(parameter("/api/v1/index/{name}/search", "post", "query")?.required).toBeUndefined();
    expect(parameter("/api/v1/comment/{website}/{article}", "get", "limit")?.required).toBeUndefined();
  });

  it("the fuzz's check refuses a status an operation describes only through default", async () => {
    const paths = await describedPaths(server.app);
    const health = paths["/healthz"]?.get;
    expect(health).toBeDefined();
    if (health === undefined) return;
    expectDescribedStatus(health, 503);
    expect(() => expectDescribedStatus(health, 409)).toThrow(/status 409 is described/);
  });
});
