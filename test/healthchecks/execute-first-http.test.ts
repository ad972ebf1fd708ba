/**
 * The process's first http checks wait for the HTTP client to load (src/platform/undici.ts), and
 * that wait is neither their duration nor part of their timeout. The client's loading is made slow
 * here (a module stand-in that resolves undici after 300 ms) to tell the two apart.
 */
import { createServer } from "node:http";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { validateDefinition } from "../../src/healthchecks/definition.js";
import { type Listening, listen } from "./local-servers.js";

const LOAD_MS = 300;

vi.mock("../../src/platform/undici.js", async () => {
  const undici = (await import("undici")).default;
  let loaded: typeof undici | undefined;
  return {
    loadedUndici: () => loaded,
    loadUndici: () =>
      new Promise((resolve) =>
        setTimeout(() => {
          loaded = undici;
          resolve(undici);
        }, LOAD_MS),
      ),
  };
});

let server: Listening;
beforeAll(async () => {
  server = await listen(createServer((_request, response) => response.end("ok")));
});
afterAll(() => server.close());

it("starts a first http check's duration and timeout once the HTTP client is loaded", async () => {
  const { Executor } = await import("../../src/healthchecks/execute.js");
  const executor = new Executor();
  // A timeout shorter than the client's loading: counted from the load, the check still succeeds.
  const definition = validateDefinition(
    "http",
    {
      name: "web",
      interval: "10s",
      timeout: "200ms",
      target: "127.0.0.1",
      port: server.port,
      path: "/",
      "valid-status": [200],
    },
    { minInterval: { text: "1s", milliseconds: 1_000 } },
    { unknownKeys: "ignore", tlsFiles: "paths" },
  );
  try {
    const started = performance.now();
    const execution = await executor.execute(definition, { source: "configuration" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(LOAD_MS - 5);
    expect(execution).toMatchObject({ success: true, message: "success" });
    // Milliseconds.
    expect(execution.duration).toBeLessThan(LOAD_MS);
  } finally {
    await executor.close();
  }
});
