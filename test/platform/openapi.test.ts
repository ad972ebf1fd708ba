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
import { describedPaths, expectDescribedAnswer } from "../support/openapi.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";

interface Operation {
  readonly summary: string;
  readonly requestBody?: { content: Record<string, { schema: Record<string, unknown>; example?: unknown }> };
  readonly responses: Record<string, unknown>;
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
});
