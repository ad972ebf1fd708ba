/**
 * The comments routes in `GET /openapi.json`: every one described, and a client that knows only the
 * document (paths, parameters, body example, credentials, success status, media type and schema)
 * gets a challenge, posts a comment, moderates it with the admin operations and reads it back,
 * every answer checked against the schema the document gives for it.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { commentBody } from "../../src/comments/comment-validation.js";
import { signLink } from "../../src/comments/mail-links.js";
import { MAIL_KEY_SETTING } from "../../src/comments/secrets.js";
import { openApiPath } from "../../src/platform/openapi.js";
import { readSetting } from "../../src/platform/settings.js";
import { schemaOf } from "../../src/platform/validation.js";
import type { VigieServer } from "../../src/server.js";
import {
  describedPaths,
  expectDescribedAnswer,
  type Operation,
  type Paths,
  successStatuses,
} from "../support/openapi.js";
import { temporaryDirectory } from "../support/temporary.js";
import { ADMIN_TOKEN, solve, startComments } from "./support.js";

/** Where the mocked loader reads the built widget and page files from (a fixture of this test). */
const fixture = vi.hoisted(() => ({ directory: undefined as URL | undefined }));

vi.mock("../../src/comments/assets.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/comments/assets.js")>();
  return { ...original, loadCommentAssets: () => original.loadCommentAssets(fixture.directory) };
});

/** The paths of the comments module: its public and admin APIs, the widget and the page. */
const MODULE_PATH = /^\/(api\/v1\/(challenge|comment|count)\/|api\/admin\/(website|comment\/|event\/)|comments\/)/;

let server: VigieServer;
let paths: Paths;

beforeAll(async () => {
  const built = temporaryDirectory("vigie-comments-openapi-");
  writeFileSync(join(built, "widget.js"), "(()=>{})();\n");
  writeFileSync(join(built, "admin.js"), "(()=>{})();\n");
  writeFileSync(join(built, "admin.css"), "main{margin:0}\n");
  fixture.directory = pathToFileURL(`${built}/`);
  server = await startComments("sqlite::memory:", { websites: [{ name: "blog" }] });
  paths = await describedPaths(server.app);
});
afterAll(() => server?.close());

/** The module's operations in the document, as `METHOD /path`. */
function moduleOperations(): string[] {
  return Object.entries(paths)
    .filter(([path]) => MODULE_PATH.test(path))
    .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
}

function operationOf(method: string, path: string): Operation {
  const operation = paths[path]?.[method.toLowerCase()];
  if (operation === undefined) throw new Error(`${method} ${path} is not in the document`);
  return operation;
}

/** The success answer an operation describes: its status and media type (none for an empty body). */
function successOf(operation: Operation): { status: number; mediaType: string | undefined } {
  const statuses = successStatuses(operation);
  expect(statuses, operation.summary).toHaveLength(1);
  const status = statuses[0] ?? "";
  return { status: Number(status), mediaType: Object.keys(operation.responses[status]?.content ?? {})[0] };
}

const called = new Set<string>();

/**
 * Calls `METHOD path` as the document describes it: the URL from the path with `params`, only the
 * query parameters it names, the credentials its `security` names (and checks they are needed);
 * expects the described success status and media type, and checks the body against the schema.
 */
async function call(
  method: "GET" | "POST" | "DELETE" | "OPTIONS",
  path: string,
  params: Record<string, string>,
  options: { query?: Record<string, string | string[]>; body?: unknown; form?: string } = {},
) {
  const operation = operationOf(method, path);
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${path}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(options.query ?? {})) {
    const described = operation.parameters?.some((parameter) => parameter.in === "query" && parameter.name === name);
    expect(described, `${method} ${path} describes query parameter ${name}`).toBe(true);
    for (const item of Array.isArray(value) ? value : [value]) search.append(name, item);
  }
  const target = search.size === 0 ? url : `${url}?${search}`;
  const headers: Record<string, string> = {};
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.form !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
  const payload = options.form ?? (options.body === undefined ? undefined : JSON.stringify(options.body));

  expect(operation.security, `${method} ${path} names its credentials`).toBeDefined();
  if (operation.security?.some((scheme) => "adminToken" in scheme)) {
    const refused = await server.app.inject({ method, url: target, headers, ...(payload ? { payload } : {}) });
    expect(refused.statusCode, `${method} ${path} without the admin token`).toBe(401);
    expectDescribedAnswer(operation, 401, "application/json", refused.json());
    headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  }

  const response = await server.app.inject({ method, url: target, headers, ...(payload ? { payload } : {}) });
  const { status, mediaType } = successOf(operation);
  expect(response.statusCode, `${method} ${target}: ${response.body}`).toBe(status);
  if (mediaType === undefined) {
    expect(response.body).toBe("");
  } else {
    expect(`${response.headers["content-type"]}`.split(";")[0]).toBe(mediaType);
    const body = mediaType === "application/json" ? response.json() : response.body;
    expectDescribedAnswer(operation, status, mediaType, body);
  }
  called.add(`${method} ${path}`);
  return response;
}

describe("the comments routes in GET /openapi.json", () => {
  it("describes every route of the module, with its credentials", () => {
    const registered = server.routes
      .map((route) => `${route.method} ${openApiPath(route.url)}`)
      .filter((route) => MODULE_PATH.test(route.split(" ")[1] ?? ""));
    expect(moduleOperations()).toEqual([...new Set(registered)].sort());
    expect(moduleOperations()).toHaveLength(24);
    for (const route of moduleOperations()) {
      const [method = "", path = ""] = route.split(" ");
      const operation = operationOf(method, path);
      expect(operation.summary, route).not.toBe(route);
      const admin = path.startsWith("/api/admin/");
      expect(operation.security, route).toEqual(admin ? [{ adminToken: [] }] : []);
    }
  });

  it("describes the posted comment from the validator that checks it, with an example it accepts", () => {
    const content = operationOf("POST", "/api/v1/comment/{website}/{article}").requestBody?.content["application/json"];
    expect(content?.schema).toEqual(schemaOf(commentBody));
    expect(content?.schema).toMatchObject({
      type: "object",
      required: ["author", "content", "answer", "signature", "timestamp"],
      properties: { author: { maxLength: 100 }, signature: { pattern: "^[0-9a-fA-F]{64}$" } },
    });
    expect(commentBody(content?.example, "")).toMatchObject({ author: "Ann", content: "Nice post" });
    const count = operationOf("GET", "/api/v1/count/{website}").parameters?.find((p) => p.name === "article");
    expect(count?.schema).toMatchObject({ type: "array", minItems: 1, maxItems: 100 });
  });

  it("a client driven by the document posts a comment, approves it and reads it back", async () => {
    const admin2 = (params: Record<string, string>) =>
      call("GET", "/api/admin/comment/{website}", params, { query: { approved: "false", limit: "10" } });
    const article = { website: "blog", article: "my-post" };

    const challenge = (await call("GET", "/api/v1/challenge/{website}/{article}", article)).json();
    const post = operationOf("POST", "/api/v1/comment/{website}/{article}");
    const example = post.requestBody?.content["application/json"]?.example as Record<string, unknown>;
    // The example's challenge fields are placeholders: a client answers a challenge of its own.
    const { signature, timestamp } = challenge;
    const body = { ...example, answer: solve(challenge.question), signature, timestamp };
    await call("POST", "/api/v1/comment/{website}/{article}", article, { body });

    const before = (await call("GET", "/api/v1/comment/{website}/{article}", article)).json();
    expect(before).toEqual([]);
    expect((await call("GET", "/api/admin/website", {})).json()).toEqual({ websites: ["blog"] });
    const pending = await call("GET", "/api/admin/comment/{website}", article, {
      query: { approved: "false", limit: "10" },
    });
    const [comment] = pending.json();
    expect(comment).toMatchObject({ author: example.author, article: "my-post", approved: false });
    const one = { ...article, id: comment.id };

    await call("POST", "/api/admin/comment/{website}/{article}/{id}", one);
    const listed = (await call("GET", "/api/v1/comment/{website}/{article}", article)).json();
    const { article: _, ...published } = comment;
    expect(listed).toEqual([{ ...published, approved: true }]);
    const page = await call("GET", "/api/v1/comment/{website}/{article}", article, {
      query: { limit: "5", before: String(Date.now() + 60_000) },
    });
    expect(page.json()).toEqual(listed);
    const counts = await call("GET", "/api/v1/count/{website}", article, { query: { article: ["my-post", "other"] } });
    expect(counts.json()).toEqual({ "my-post": 1, other: 0 });

    expect((await call("GET", "/api/admin/comment/{website}/{article}", article)).json()).toEqual(listed);
    expect((await call("GET", "/api/admin/comment/{website}/{article}/{id}", one)).json()).toEqual(listed[0]);
    const events = (await call("GET", "/api/admin/event/{website}", article)).json();
    expect(events).toMatchObject([{ "comment-id": comment.id, article: "my-post", type: "new-comment" }]);

    for (const path of ["/api/v1/challenge/{website}/{article}", "/api/v1/comment/{website}/{article}"]) {
      await call("OPTIONS", path, article);
    }
    await call("OPTIONS", "/api/v1/count/{website}", article);
    for (const path of ["/comments/widget.js", "/comments/admin.js", "/comments/admin.css", "/comments/admin"]) {
      await call("GET", path, {});
    }

    await call("DELETE", "/api/admin/comment/{website}/{article}/{id}", one);
    // The pages of e-mailed links, on a second comment: the key is the module's own, in the database.
    const second = (await call("GET", "/api/v1/challenge/{website}/{article}", article)).json();
    const secondBody = {
      ...body,
      answer: solve(second.question),
      signature: second.signature,
      timestamp: second.timestamp,
    };
    await call("POST", "/api/v1/comment/{website}/{article}", article, { body: secondBody });
    const [pendingSecond] = (await admin2(article)).json();
    const key = (await readSetting(server.context.database, MAIL_KEY_SETTING)) ?? "";
    const token = (action: "delete" | "unsubscribe") =>
      signLink(key, { action, commentId: pendingSecond.id, expiresAt: Date.now() + 60_000 });
    await call("GET", "/comments/mail/unsubscribe", {}, { query: { token: token("unsubscribe") } });
    await call(
      "POST",
      "/comments/mail/unsubscribe",
      {},
      { query: { token: token("unsubscribe") }, form: "List-Unsubscribe=One-Click" },
    );
    await call("GET", "/comments/mail/moderate", {}, { query: { token: token("delete") } });
    await call("POST", "/comments/mail/moderate", {}, { query: { token: token("delete") }, form: "" });

    await call("DELETE", "/api/admin/comment/{website}/{article}", article);
    const deleted = (await call("DELETE", "/api/admin/event/{website}", article)).json();
    expect(deleted.slice(0, 1)).toEqual(events);
    expect((await call("GET", "/api/v1/comment/{website}/{article}", article)).json()).toEqual([]);

    expect([...called].sort()).toEqual(moduleOperations());
  });
});
