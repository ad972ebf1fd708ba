import { maxHeaderSize } from "node:http";
import { connect } from "node:net";
import { Counter } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { defineModule } from "../src/platform/module.js";
import { string, withDefault } from "../src/platform/validation.js";
import { modules, type VigieServer } from "../src/server.js";
import { streamsModule } from "../src/streams/index.js";
import { startTestServer } from "./support/server.js";

const hello = defineModule({
  name: "hello",
  configShape: { greeting: withDefault(string(), "hi") },
  migrations: {},
  plugin: async (app, { section, context }) => {
    const greetings = new Counter({ name: "hello_greetings_total", help: "Greetings.", registers: [context.metrics] });
    app.get("/hello/:name", async (request) => {
      greetings.inc();
      return { message: `${section.greeting} ${(request.params as { name: string }).name}` };
    });
  },
});

describe("server", () => {
  let server: VigieServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("registers enabled modules with their configuration section", async () => {
    server = await startTestServer({ modules: [hello], config: { hello: { greeting: "hello" } } });
    const response = await server.app.inject({ method: "GET", url: "/hello/ann" });
    expect(response.json()).toEqual({ message: "hello ann" });
  });

  it("leaves disabled modules out", async () => {
    server = await startTestServer({ modules: [hello], config: { hello: { enabled: false } } });
    const response = await server.app.inject({ method: "GET", url: "/hello/ann" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: "route GET /hello/ann not found" });
  });

  it("answers /healthz and /health while the database answers, 503 when it does not", async () => {
    server = await startTestServer({ modules: [] });
    for (const url of ["/healthz", "/health"]) {
      const response = await server.app.inject({ method: "GET", url });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ message: "ok" });
    }
    await server.context.database.close();
    const down = await server.app.inject({ method: "GET", url: "/healthz" });
    expect(down.statusCode).toBe(503);
    expect(down.json()).toEqual({ error: "database unavailable" });
    await server.app.close();
    server = undefined;
  });

  it("serves process, HTTP and module metrics labelled by route pattern", async () => {
    server = await startTestServer({ modules: [hello] });
    await server.app.inject({ method: "GET", url: "/hello/ann" });
    await server.app.inject({ method: "GET", url: "/hello/bob" });
    await server.app.inject({ method: "GET", url: "/no/such/thing" });
    const response = await server.app.inject({ method: "GET", url: "/metrics" });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = response.body;
    expect(text).toContain("process_cpu_user_seconds_total");
    expect(text).toContain("nodejs_eventloop_lag_seconds");
    expect(text).toContain('http_requests_total{method="GET",route="/hello/:name",status="200"} 2');
    expect(text).toContain('http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/hello\/:name"\} 2/);
    expect(text).not.toContain("/hello/ann");
    expect(text).toContain("hello_greetings_total 2");
  });

  it("closes a connection that asked for an upgrade once it is answered with plain HTTP", async () => {
    server = await startTestServer({ modules: [hello, streamsModule] });
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    const address = server.app.server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    for (const [path, host, status] of [
      ["/hello/ann", "127.0.0.1", 200],
      ["/nowhere", "127.0.0.1", 404],
      ["/hello/ann", "evil.example", 421],
    ] as const) {
      const socket = connect(port, "127.0.0.1");
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
      );
      let answer = "";
      socket.on("data", (chunk) => {
        answer += chunk;
      });
      // The server ends the connection itself, well before any idle timeout.
      const started = Date.now();
      await new Promise((resolve) => socket.once("close", resolve));
      expect(answer).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      expect(Date.now() - started).toBeLessThan(2_000);
    }
  });

  it("answers what the HTTP server cannot read in Vigie's error format, with a code, and closes", async () => {
    server = await startTestServer({ modules: [hello] });
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    const address = server.app.server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const cases = [
      [
        `GET /hello/ann HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(maxHeaderSize + 1_000)}\r\n\r\n`,
        431,
        "VIGIE_ERR_HEADERS_TOO_LARGE",
        `request header fields are larger than ${maxHeaderSize} bytes`,
      ],
      ["NOT HTTP AT ALL\r\n\r\n", 400, "VIGIE_ERR_INVALID", "the request is not valid HTTP"],
    ] as const;
    for (const [request, status, code, message] of cases) {
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => {});
      socket.write(request);
      let answer = "";
      socket.on("data", (chunk) => {
        answer += chunk;
      });
      await new Promise((resolve) => socket.once("close", resolve));
      const [head = "", body] = answer.split("\r\n\r\n");
      expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      expect(head.toLowerCase()).toContain(`vigie-error: ${code.toLowerCase()}`);
      expect(head.toLowerCase()).toContain("content-type: application/json; charset=utf-8");
      expect(JSON.parse(body ?? "")).toEqual({ error: message });
    }
  });

  it("registers the streams module before the modules that produce events", () => {
    const names = modules.map((module) => module.name);
    expect(names.indexOf("streams")).toBeLessThan(names.indexOf("healthchecks"));
    expect(names.indexOf("streams")).toBeLessThan(names.indexOf("comments"));
  });
});
