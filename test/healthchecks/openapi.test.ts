/**
 * The healthchecks routes in GET /openapi.json: every route described, the kinds' bodies described
 * from their shapes (definition.ts), and a client that reads nothing but the document creating an
 * http check against a local web server, listing it, reading its result, history and uptime, the
 * status page, planning a maintenance window and listing it, and deleting the check. Only loopback
 * traffic.
 */
import { createServer } from "node:http";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiDefinitionBody } from "../../src/healthchecks/admission.js";
import {
  fileName,
  ipAddress,
  labels,
  name,
  positiveDuration,
  target,
} from "../../src/healthchecks/definition-fields.js";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import { openApiPath } from "../../src/platform/openapi.js";
import { schemaOf, type Validator } from "../../src/platform/validation.js";
import type { VigieServer } from "../../src/server.js";
import {
  describedPaths,
  expectDescribedAnswer,
  type Operation,
  type Paths,
  successStatuses,
} from "../support/openapi.js";
import { startTestServer } from "../support/server.js";
import { until } from "../support/until.js";
import { type Listening, listen } from "./local-servers.js";

const MODULE_PATHS = /^\/(healthcheck|result|status|maintenance|incident)(\/|$)/;

/** The id of the incident the document's example created, for the paths that name one. */
let incidentId = "";

let web: Listening;
let server: VigieServer;
let paths: Paths;

beforeAll(async () => {
  web = await listen(
    createServer((_request, response) => {
      response.writeHead(200);
      response.end("ok");
    }),
  );
  server = await startTestServer({
    modules: [healthchecksModule],
    config: { healthchecks: { "status-page": { enabled: true }, "allow-api-commands": true } },
  });
  paths = await describedPaths(server.app);
});
afterAll(async () => {
  await server.close();
  await web.close();
});

/** The operations of the module, as `[method, path, operation]`. */
function moduleOperations(): [string, string, Operation][] {
  return Object.entries(paths)
    .filter(([path]) => MODULE_PATHS.test(path))
    .flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]): [string, string, Operation] => [method, path, operation]),
    );
}

/** The success status an operation describes (its one 2xx). */
function successStatus(operation: Operation): number {
  const [status] = successStatuses(operation);
  return Number(status);
}

/** The example pointed at the local web server: every `port` of a check on 127.0.0.1 becomes its port. */
function local(example: unknown): unknown {
  return JSON.parse(JSON.stringify(example), function (this: Record<string, unknown>, key, value) {
    return key === "port" && this.target === "127.0.0.1" ? web.port : value;
  });
}

async function call(method: string, path: string, payload?: unknown) {
  const url = path.replace("{name}", encodeURIComponent(EXAMPLE_NAME())).replace("{id}", incidentId);
  const response = await server.app.inject({
    method: method.toUpperCase() as "GET" | "POST" | "DELETE",
    url,
    ...(payload === undefined
      ? {}
      : { payload: JSON.stringify(payload), headers: { "content-type": "application/json" } }),
  });
  const mediaType = String(response.headers["content-type"] ?? "").split(";")[0] ?? "";
  const body = mediaType === "application/json" ? response.json() : response.body;
  return { status: response.statusCode, mediaType, body };
}

/** The name of the http check the document's example creates. */
function EXAMPLE_NAME(): string {
  const example = paths["/healthcheck/http"]?.post?.requestBody?.content["application/json"]?.example;
  expect(example).toMatchObject({ name: expect.any(String) });
  return (example as { name: string }).name;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });

describe("the healthchecks routes in GET /openapi.json", () => {
  it("describes every route of the module", () => {
    const registered = server.routes.filter((route) => MODULE_PATHS.test(route.url));
    expect(registered.length).toBeGreaterThanOrEqual(15);
    for (const route of registered) {
      const path = openApiPath(route.url);
      const operation = paths[path]?.[route.method.toLowerCase()];
      expect(operation?.summary, `${route.method} ${path}`).toBeDefined();
      expect(operation?.summary).not.toBe(`${route.method} ${path}`);
    }
  });

  it("describes each kind's body from its shape, the example within it", () => {
    for (const [method, path, operation] of moduleOperations()) {
      const content = operation.requestBody?.content["application/json"];
      if (content === undefined) continue;
      const validate = ajv.compile(content.schema);
      expect(validate(content.example), `${method} ${path}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    const http = paths["/healthcheck/http"]?.post?.requestBody?.content["application/json"]?.schema;
    expect(http).toMatchObject({
      type: "object",
      required: expect.arrayContaining(["name", "target", "port", "valid-status", "timeout"]),
      properties: {
        port: { type: "integer", minimum: 1, maximum: 65535 },
        method: { enum: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], default: "GET" },
        interval: { pattern: expect.any(String) },
      },
    });
    expect(http).not.toHaveProperty(["properties", "kind"]);
    // One-off checks need no interval; key and cert come together.
    const check = ajv.compile(http ?? {});
    const base = { name: "a", target: "127.0.0.1", port: 80, "valid-status": [200], timeout: "1s" };
    expect(check(base)).toBe(false);
    expect(check({ ...base, "one-off": true })).toBe(true);
    expect(check({ ...base, interval: "1s", cert: "client.pem" })).toBe(false);
  });

  it("gives the hand-written field validators schemas that agree with them", () => {
    const samples: [Validator<unknown>, unknown[]][] = [
      [name, ["web", "a/b", "", "x".repeat(255), "x".repeat(256), "tab\there", "é".repeat(255), 3]],
      [target, ["example.org", "_srv.example.org.", "-bad", "127.0.0.1", "::1", "fe80::1%eth0", "1.2.3", "a..b", 1]],
      [ipAddress, ["10.0.0.1", "256.0.0.1", "01.0.0.1", "2001:db8::1", "::ffff:1.2.3.4", "gg::1", "x"]],
      [positiveDuration, ["10s", "1h30m", "0", "0s", "0.0m0ms", ".5s", "0.001ms", "10", 0, ""]],
      [labels, [{ team: "web" }, { name: "x" }, { __x: "y" }, { "1a": "b" }, { le_x: "c" }, { a: 1 }, []]],
      [fileName("/tls"), ["client.pem", "sub/client.pem", "../x", "a/../b", "/etc/x", "C:\\x", "C:x", "a\u0001"]],
      [fileName(undefined), ["client.pem"]],
    ];
    for (const [validator, values] of samples) {
      const validate = ajv.compile(schemaOf(validator));
      for (const value of values) {
        let accepted = true;
        try {
          validator(value, "");
        } catch {
          accepted = false;
        }
        expect(validate(value), `${JSON.stringify(value)} against ${JSON.stringify(schemaOf(validator))}`).toBe(
          accepted,
        );
      }
    }
    const rules = { minInterval: { text: "1s", milliseconds: 1000 } };
    expect(schemaOf(apiDefinitionBody("dns", rules, () => undefined))).toMatchObject({ required: ["name", "domain"] });
  });

  it("a client reading the document creates an http check, lists it, reads its result, history and uptime, deletes it", async () => {
    const posts = moduleOperations()
      .filter(([method, , operation]) => method === "post" && operation.requestBody !== undefined)
      // The bulk payload replaces every API check: it goes first.
      .sort(([, a], [, b]) => Number(b === "/healthcheck/bulk") - Number(a === "/healthcheck/bulk"))
      // An incident's update needs the incident.
      .sort(([, a], [, b]) => Number(a === "/incident/{id}/update") - Number(b === "/incident/{id}/update"));
    expect(posts.map(([, path]) => path)).toContain("/healthcheck/http");
    for (const [method, path, operation] of posts) {
      const example = operation.requestBody?.content["application/json"]?.example;
      expect(example, `${path} has an example`).toBeDefined();
      const answer = await call(method, path, local(example));
      expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(successStatus(operation));
      expectDescribedAnswer(operation, answer.status, answer.mediaType, answer.body);
      if (path === "/incident") incidentId = (answer.body as { id: string }).id;
    }

    const checkName = EXAMPLE_NAME();
    // The result is kept at once, the history when its buffer is written.
    await until(async () => {
      const response = await server.app.inject({
        method: "GET",
        url: `/result/${encodeURIComponent(checkName)}/history`,
      });
      return response.statusCode === 200 && response.json().results.length > 0 ? true : undefined;
    }, "the first stored result of the example's http check");

    const gets = moduleOperations().filter(([method]) => method === "get");
    expect(gets.map(([, path]) => path).sort()).toEqual(
      [
        "/healthcheck",
        "/healthcheck/{name}",
        "/incident",
        "/incident/{id}",
        "/maintenance",
        "/result",
        "/result/{name}",
        "/result/{name}/history",
        "/result/{name}/uptime",
        "/status",
        "/status/data",
        "/status/feed.atom",
        "/status/status.js",
      ].sort(),
    );
    for (const [method, path, operation] of gets) {
      const answer = await call(method, path);
      // The sources have no built script (npm run build makes it): that route answers its 404.
      if (path === "/status/status.js" && answer.status === 404) {
        expectDescribedAnswer(operation, answer.status, answer.mediaType, answer.body);
        continue;
      }
      expect(answer.status, `${path}: ${String(answer.body).slice(0, 200)}`).toBe(successStatus(operation));
      expect(Object.keys(operation.responses[String(answer.status)]?.content ?? {})).toEqual([answer.mediaType]);
      expectDescribedAnswer(operation, answer.status, answer.mediaType, answer.body);
      if (path === "/healthcheck") expect(answer.body).toContainEqual(expect.objectContaining({ name: checkName }));
      if (path === "/result/{name}") expect(answer.body).toMatchObject({ name: checkName, success: true });
      if (path === "/result/{name}/history") expect(answer.body).toMatchObject({ results: [{ success: true }] });
    }

    const remove = paths["/healthcheck/{name}"]?.delete;
    expect(remove).toBeDefined();
    if (remove === undefined) return;
    const deleted = await call("delete", "/healthcheck/{name}");
    expect(deleted.status).toBe(successStatus(remove));
    expectDescribedAnswer(remove, deleted.status, deleted.mediaType, deleted.body);
    const gone = await server.app.inject({ method: "GET", url: `/healthcheck/${encodeURIComponent(checkName)}` });
    expect(gone.statusCode).toBe(404);
  });
});
