/**
 * The registry's routes in GET /openapi.json (users, tokens, the Cargo registry): each describes
 * itself, and a client that knows only the document (the operations' examples, security, query
 * parameters and success answers) drives every route and gets the answers the document describes.
 */
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiPath } from "../../src/platform/openapi.js";
import { createRegistryModule } from "../../src/registry/index.js";
import type { VigieServer } from "../../src/server.js";
import {
  describedPaths,
  expectDescribedAnswer,
  expectDescribedStatus,
  type Operation,
  type Paths,
  successStatuses,
} from "../support/openapi.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";
import { publication } from "./cargo/frames.js";
import { FakeUpstream } from "./cargo/mirror/upstream-fake.js";

const ROOT_PASSWORD = "root-password-1";
const CRATE = "demo";
const VERSION = "0.1.0";
/** `demo`'s file in the sparse index (Cargo's layout: `de/mo/demo`). */
const INDEX_PATH = "de/mo/demo";
const PUBLISH = "PUT /api/v1/crates/new";

let server: VigieServer;
let paths: Paths;
/** `METHOD /path` of every route the registry module registers (the platform's left out). */
let moduleRoutes: string[];
let rootToken: string;
/** The upstream of the Cargo mirror, on loopback, holding the crate the client publishes here too. */
const upstream = new FakeUpstream();

beforeAll(async () => {
  const platformOnly = await startTestServer({ modules: [] });
  const platform = new Set(platformOnly.routes.map((route) => `${route.method} ${openApiPath(route.url)}`));
  await platformOnly.close();
  await upstream.start();
  upstream.add(CRATE, VERSION);
  const directory = temporaryDirectory();
  server = await startTestServer({
    modules: [createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: ROOT_PASSWORD } })],
    config: {
      http: { "public-url": "http://registry.test:8080" },
      registry: {
        enabled: true,
        cargo: {
          enabled: true,
          storage: join(directory, "crates"),
          mirror: { enabled: true, "upstream-index": upstream.indexUrl, cache: join(directory, "mirror") },
        },
      },
    },
  });
  moduleRoutes = [
    ...new Set(
      server.routes.map((route) => `${route.method} ${openApiPath(route.url)}`).filter((r) => !platform.has(r)),
    ),
  ];
  paths = await describedPaths(server.app);
  const created = await server.app.inject({
    method: "POST",
    url: "/api/v1/registry/token",
    payload: { name: "root-token", user: "root", password: ROOT_PASSWORD },
  });
  expect(created.statusCode).toBe(201);
  rootToken = created.json().token;
});
afterAll(async () => {
  await server?.close();
  await upstream.stop();
});

/** The operation of `METHOD /path`. */
function operationOf(route: string): Operation {
  const [method = "", path = ""] = route.split(" ");
  const operation = paths[path]?.[method.toLowerCase()];
  if (operation === undefined) throw new Error(`${route} is not in the document`);
  return operation;
}

/** The success status an operation describes (its one 1xx or 2xx response). */
function successStatus(operation: Operation): number {
  const statuses = successStatuses(operation);
  expect(statuses, operation.summary).toHaveLength(1);
  return Number(statuses[0]);
}

/** The JSON example of an operation's request body, if it has one. */
function exampleOf(operation: Operation): unknown {
  return operation.requestBody?.content["application/json"]?.example;
}

/** A field of the example of `route`, which the client reuses in paths and queries. */
function exampleField(route: string, field: string): string {
  const example = exampleOf(operationOf(route));
  const value = typeof example === "object" && example !== null ? Object.entries(example) : [];
  const found = value.find(([key]) => key === field)?.[1];
  if (typeof found !== "string") throw new Error(`the example of ${route} has no ${field}`);
  return found;
}

/** The URL of `path` with real values: the example's user and token, the published crate. */
function urlOf(operation: Operation, path: string): string {
  const user = exampleField("POST /api/v1/registry/user", "name");
  const names: Record<string, string> = {
    "/api/v1/registry/user/": user,
    "/api/v1/registry/token/": exampleField("POST /api/v1/registry/token", "name"),
  };
  const prefix = Object.keys(names).find((start) => path.startsWith(start));
  const filled = path
    .replace("{name}", encodeURIComponent(prefix === undefined ? CRATE : (names[prefix] ?? "")))
    .replace("{version}", VERSION)
    .replace("{path}", INDEX_PATH);
  // Query parameters from their schemas: the default, else what this run created.
  const values: Record<string, string> = { q: CRATE, user };
  const query = (operation.parameters ?? [])
    .filter((parameter) => parameter.in === "query")
    .map(({ name, schema }) => {
      const fallback = schema !== undefined && "default" in schema ? String(schema.default) : undefined;
      return `${name}=${encodeURIComponent(values[name] ?? fallback ?? "")}`;
    });
  return query.length === 0 ? filled : `${filled}?${query.join("&")}`;
}

/** The headers of the credentials an operation's `security` names (a registry token when it names none). */
function credentials(operation: Operation): Record<string, string> {
  return operation.security?.length === 0 ? {} : { authorization: `Bearer ${rootToken}` };
}

/**
 * Calls `route` as the document describes it, expects the described success status and media
 * type, and checks the answer against the described schema.
 */
async function callDescribed(route: string, payload?: unknown) {
  const [method = "", path = ""] = route.split(" ");
  const operation = operationOf(route);
  const response = await server.app.inject({
    method: method as "GET",
    url: urlOf(operation, path),
    headers: {
      ...credentials(operation),
      ...(payload === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
  const status = successStatus(operation);
  expect(response.statusCode, `${route}: ${response.body.slice(0, 300)}`).toBe(status);
  const mediaType = String(response.headers["content-type"]).split(";")[0]?.trim() ?? "";
  expect(Object.keys(operation.responses[String(status)]?.content ?? {}), route).toEqual([mediaType]);
  const body = mediaType === "application/json" ? response.json() : response.body;
  expectDescribedAnswer(operation, status, mediaType, body);
  return body;
}

describe("the registry in GET /openapi.json", () => {
  it("describes every route of the module: summary, success answer", () => {
    expect(moduleRoutes).toHaveLength(26);
    for (const route of moduleRoutes) {
      const operation = operationOf(route);
      expect(operation.summary, route).not.toBe(route);
      const success = operation.responses[String(successStatus(operation))];
      expect(Object.values(success?.content ?? {}), `${route} describes its answer`).toHaveLength(1);
    }
  });

  it("gives every JSON body an example that its own schema accepts", () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const withBody = moduleRoutes.filter((route) => operationOf(route).requestBody !== undefined);
    expect(withBody.sort()).toEqual([
      "DELETE /api/v1/crates/{name}/owners",
      "POST /api/v1/registry/token",
      "POST /api/v1/registry/user",
      "POST /api/v1/registry/user/{name}",
      PUBLISH,
      "PUT /api/v1/crates/{name}/owners",
    ]);
    for (const route of withBody.filter((route) => route !== PUBLISH)) {
      const content = operationOf(route).requestBody?.content["application/json"];
      const validate = ajv.compile(content?.schema ?? {});
      expect(validate(content?.example), `${route}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it("describes a publish as raw bytes, with no example (a .crate is binary)", () => {
    const body = operationOf(PUBLISH).requestBody?.content;
    expect(Object.keys(body ?? {})).toEqual(["application/octet-stream"]);
    expect(body?.["application/octet-stream"]).toEqual({ schema: expect.objectContaining({ type: "string" }) });
  });

  it("says which routes need a registry token, and they refuse a call without one", async () => {
    const securityOf = (route: string) => JSON.stringify(operationOf(route).security ?? "depends");
    const needsToken = moduleRoutes.filter((route) => securityOf(route) === '[{"registryToken":[]}]');
    expect(moduleRoutes.filter((route) => securityOf(route) === "[]").sort()).toEqual([
      "GET /me",
      "GET /registry/registry.js",
      "POST /api/v1/registry/token",
    ]);
    // Reading the Cargo registry, its pages and its mirror needs a token only with registry.cargo.auth-required.
    expect(moduleRoutes.filter((route) => securityOf(route) === '"depends"')).toHaveLength(12);
    expect(needsToken).toHaveLength(11);
    for (const route of needsToken) {
      const [method = "", path = ""] = route.split(" ");
      const response = await server.app.inject({ method: method as "GET", url: urlOf(operationOf(route), path) });
      expect(response.statusCode, route).toBe(401);
      expectDescribedAnswer(operationOf(route), 401, "application/json", response.json());
    }
  });

  it("a client reading the document drives every route and gets the described answers", async () => {
    // The publish body is binary: no example to send, so the client publishes a crate built here,
    // then checks the answer against the document like any other.
    const published = await publication(CRATE, VERSION, { description: "a crate to browse" });
    const publish = operationOf(PUBLISH);
    const answer = await server.app.inject({
      method: "PUT",
      url: "/api/v1/crates/new",
      headers: credentials(publish),
      payload: published.body,
    });
    expect(answer.statusCode, answer.body).toBe(successStatus(publish));
    expectDescribedAnswer(publish, answer.statusCode, "application/json", answer.json());

    // Every example, in the document's order, writes before it removes.
    const order = ["POST", "PUT", "DELETE"];
    const examples = moduleRoutes
      .filter((route) => exampleOf(operationOf(route)) !== undefined)
      .sort((a, b) => order.indexOf(a.split(" ")[0] ?? "") - order.indexOf(b.split(" ")[0] ?? ""));
    expect(examples).toHaveLength(5);
    for (const route of examples) await callDescribed(route, exampleOf(operationOf(route)));

    // Then every read, on what the examples created.
    // The pages' script is read from the build (dist/): the sources run here have none, and its
    // route answers the 404 it describes.
    const script = operationOf("GET /registry/registry.js");
    const missing = await server.app.inject({ method: "GET", url: "/registry/registry.js" });
    expectDescribedStatus(script, missing.statusCode);
    const reads = moduleRoutes.filter((route) => route.startsWith("GET ") && route !== "GET /registry/registry.js");
    expect(reads).toHaveLength(15);
    const answers = new Map<string, unknown>();
    for (const route of reads) answers.set(route, await callDescribed(route));
    expect(answers.get("GET /api/v1/registry/user")).toMatchObject({
      users: [{ name: "alice", description: "on call on weekends" }, { name: "root" }],
    });
    expect(answers.get("GET /api/v1/registry/token")).toMatchObject({ tokens: [{ name: "laptop ci" }] });
    expect(answers.get("GET /api/v1/registry/crates")).toMatchObject({ crates: [{ name: CRATE }], total: 1 });
    expect(answers.get("GET /api/v1/crates")).toMatchObject({ crates: [{ name: CRATE, max_version: VERSION }] });
    expect(answers.get("GET /api/v1/cargo/index/config.json")).toEqual({
      dl: "http://registry.test:8080/api/v1/crates",
      api: "http://registry.test:8080",
    });
    expect(answers.get("GET /api/v1/cargo/index/{path}")).toContain(`"cksum":"${published.cksum}"`);
    expect(answers.get("GET /api/v1/mirror/index/config.json")).toEqual({
      dl: "http://registry.test:8080/api/v1/mirror/download/{crate}/{version}",
    });
    expect(answers.get("GET /api/v1/mirror/index/{path}")).toBe(upstream.indexFile(CRATE));
    expect(answers.get("GET /api/v1/mirror/download/{name}/{version}")).toBe(`${CRATE}-${VERSION} crate bytes`);

    // Last, the changes without a body; the token before its user, which takes its tokens along.
    const rest = [
      "DELETE /api/v1/crates/{name}/{version}/yank",
      "PUT /api/v1/crates/{name}/{version}/unyank",
      "DELETE /api/v1/registry/token/{name}",
      "DELETE /api/v1/registry/user/{name}",
    ];
    const done = new Set([PUBLISH, ...examples, ...reads, "GET /registry/registry.js"]);
    expect(moduleRoutes.filter((route) => !done.has(route)).sort()).toEqual([...rest].sort());
    for (const route of rest) await callDescribed(route);
  });
});
