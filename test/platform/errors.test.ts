import { Duplex } from "node:stream";
import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerClientError, NotFoundError, RateLimitedError } from "../../src/platform/errors.js";
import { defineModule } from "../../src/platform/module.js";
import { integer, object, required, string } from "../../src/platform/validation.js";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";

const body = object(
  { name: required(string({ min: 1, max: 5 })), age: required(integer(0, 150)) },
  { unknownKeys: "ignore" },
);

const probe = defineModule({
  name: "probe",
  configShape: {},
  migrations: {},
  plugin: async (app) => {
    app.post("/probe/echo", async (request) => body(request.body, ""));
    app.get("/probe/items", async () => ({ items: [] }));
    app.get("/probe/items/:id", async (request) => {
      throw new NotFoundError(`item ${(request.params as { id: string }).id} not found`);
    });
    app.get("/probe/limited", async () => {
      throw new RateLimitedError("slow down", 7);
    });
    app.get("/probe/crash", async () => {
      throw new Error("secret detail at /srv/app.js:42");
    });
  },
});

describe("HTTP conventions", () => {
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({ modules: [probe], config: { http: { "body-limit": "1KiB" } } });
  });
  afterAll(() => server.close());

  const inject = (options: InjectOptions) => server.app.inject(options);

  it("accepts JSON with or without a charset", async () => {
    for (const type of ["application/json", "application/json; charset=utf-8"]) {
      const response = await inject({
        method: "POST",
        url: "/probe/echo",
        headers: { "content-type": type },
        payload: JSON.stringify({ name: "ann", age: 3 }),
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ name: "ann", age: 3 });
    }
  });

  it("answers 400 for a body that is not JSON, or an empty one", async () => {
    for (const payload of ["{nope", ""]) {
      const response = await inject({
        method: "POST",
        url: "/probe/echo",
        headers: { "content-type": "application/json" },
        payload,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: "request body is not valid JSON" });
    }
  });

  it("answers 400 naming the field and the rule", async () => {
    const response = await inject({ method: "POST", url: "/probe/echo", payload: { name: "toolong", age: 3 } });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "field name: must have at most 5 characters" });
    const missing = await inject({ method: "POST", url: "/probe/echo", payload: { name: "a" } });
    expect(missing.json()).toEqual({ error: "field age: is required" });
  });

  it("answers 415 for another media type", async () => {
    const response = await inject({
      method: "POST",
      url: "/probe/echo",
      headers: { "content-type": "text/plain" },
      payload: "hello",
    });
    expect(response.statusCode).toBe(415);
    expect(response.json()).toEqual({ error: "unsupported media type text/plain" });
  });

  it("answers 413 above the body limit", async () => {
    const response = await inject({
      method: "POST",
      url: "/probe/echo",
      payload: { name: "a", age: 1, padding: "x".repeat(2000) },
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({ error: "request body is larger than the limit of 1024 bytes" });
  });

  it("answers 404 naming method and path for an unknown route", async () => {
    const response = await inject({ method: "GET", url: "/nowhere/at/all?x=1" });
    expect(response.statusCode).toBe(404);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ error: "route GET /nowhere/at/all not found" });
  });

  it("answers 405 with Allow for a known path and a wrong method", async () => {
    const response = await inject({ method: "DELETE", url: "/probe/items/12" });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe("GET, HEAD");
    expect(response.json()).toEqual({ error: "method DELETE not allowed on /probe/items/12" });
  });

  it("keeps the status, message and headers of module errors", async () => {
    const missing = await inject({ method: "GET", url: "/probe/items/12" });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: "item 12 not found" });
    const limited = await inject({ method: "GET", url: "/probe/limited" });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["retry-after"]).toBe("7");
    expect(limited.json()).toEqual({ error: "slow down" });
  });

  it("names the code of every error in the Vigie-Error header", async () => {
    const cases: [InjectOptions, number, string][] = [
      [{ method: "GET", url: "/probe/items/12" }, 404, "VIGIE_ERR_NOT_FOUND"],
      [{ method: "GET", url: "/probe/limited" }, 429, "VIGIE_ERR_RATE_LIMITED"],
      [{ method: "GET", url: "/nowhere" }, 404, "VIGIE_ERR_NOT_FOUND"],
      [{ method: "DELETE", url: "/probe/items/12" }, 405, "VIGIE_ERR_METHOD_NOT_ALLOWED"],
      [{ method: "POST", url: "/probe/echo", payload: { name: "a" } }, 400, "VIGIE_ERR_INVALID"],
      [
        { method: "POST", url: "/probe/echo", headers: { "content-type": "text/plain" }, payload: "x" },
        415,
        "VIGIE_ERR_UNSUPPORTED_MEDIA_TYPE",
      ],
      [{ method: "GET", url: "/probe/crash" }, 500, "VIGIE_ERR_INTERNAL"],
    ];
    for (const [options, status, code] of cases) {
      const response = await inject(options);
      expect(response.statusCode).toBe(status);
      expect(response.headers["vigie-error"]).toBe(code);
    }
  });

  it("answers 500 with a request id and no detail or stack", async () => {
    const response = await inject({ method: "GET", url: "/probe/crash" });
    expect(response.statusCode).toBe(500);
    const { error } = response.json() as { error: string };
    expect(error).toMatch(/^internal error \(request id [0-9a-f-]{36}\)$/);
    expect(response.body).not.toContain("secret detail");
    expect(response.body).not.toContain("app.js");
  });

  it("accepts a trailing slash on collection paths", async () => {
    for (const url of ["/probe/items", "/probe/items/"]) {
      const response = await inject({ method: "GET", url });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ items: [] });
    }
  });
});

describe("router limits", () => {
  it("answers 414 in the platform's error format for a path segment over 1024 characters", async () => {
    const server = await startTestServer({ modules: [probe] });
    try {
      const long = await server.app.inject({ method: "GET", url: `/probe/items/${"x".repeat(1025)}` });
      expect(long.statusCode).toBe(414);
      expect(long.json()).toEqual({ error: "a path segment is longer than 1024 characters" });
      expect(long.headers["vigie-error"]).toBe("VIGIE_ERR_URI_TOO_LONG");
      const fine = await server.app.inject({ method: "GET", url: `/probe/items/${"x".repeat(300)}` });
      expect(fine.json()).toEqual({ error: `item ${"x".repeat(300)} not found` });
    } finally {
      await server.close();
    }
  });
});

describe("answerClientError", () => {
  /** What the answer to `code` writes on a connection, and whether the connection is then gone. */
  function answer(code: string): { written: string; destroyed: boolean } {
    let written = "";
    const socket = new Duplex({
      read() {},
      write(chunk, _encoding, done) {
        written += chunk;
        done();
      },
    });
    socket.on("error", () => {});
    answerClientError(Object.assign(new Error(code), { code }), socket);
    return { written, destroyed: socket.destroyed };
  }

  it("answers a request not received in time 408 with its code, and closes", () => {
    const { written, destroyed } = answer("ERR_HTTP_REQUEST_TIMEOUT");
    expect(written).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(written).toContain("vigie-error: VIGIE_ERR_REQUEST_TIMEOUT\r\n");
    expect(written).toContain("Connection: close\r\n");
    expect(written).toContain('\r\n\r\n{"error":"the request was not received in time"}');
    expect(destroyed).toBe(true);
  });

  it("writes nothing on a connection the client reset", () => {
    const { written, destroyed } = answer("ECONNRESET");
    expect(written).toBe("");
    expect(destroyed).toBe(false);
  });
});
