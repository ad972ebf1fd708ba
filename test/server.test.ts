import { Counter } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { defineModule } from "../src/platform/module.js";
import { string, withDefault } from "../src/platform/validation.js";
import type { VigieServer } from "../src/server.js";
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
});
