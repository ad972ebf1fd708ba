/**
 * The registry's dummy password hash at start-up: computed on the thread pool while the modules
 * after the registry start (it used to hold them back), and ready before the server is (so that
 * the first sign-in with an unknown user takes as long as the others); a failure to compute it
 * fails the start.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { defineModule } from "../../src/platform/module.js";
import { createRegistryModule } from "../../src/registry/index.js";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";

/** The dummy hash the module gets: settled by the test. */
const gate = vi.hoisted(() => {
  const state: { settle?: (error?: Error) => void; calls: number; failure?: Error } = { calls: 0 };
  return state;
});

vi.mock("../../src/registry/passwords.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/registry/passwords.js")>();
  return {
    ...original,
    dummyPasswordHash: () => {
      gate.calls++;
      if (gate.failure !== undefined) return Promise.reject(gate.failure);
      return new Promise<string>((resolve, reject) => {
        gate.settle = (error) => (error === undefined ? resolve("$argon2id$dummy") : reject(error));
      });
    },
  };
});

/** Whether the module registered after the registry has started. */
let laterStarted = false;

/** A module registered after the registry, that waits for I/O as it starts (20 ms). */
const later = defineModule({
  name: "later",
  configShape: {},
  migrations: {},
  plugin: async () => {
    laterStarted = true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  },
});

const modules = () => [createRegistryModule({ environment: {} }), later];

let server: VigieServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  gate.settle = undefined;
  gate.calls = 0;
  gate.failure = undefined;
  laterStarted = false;
});

describe("the registry's dummy password hash at start-up", () => {
  it("is computed while the next modules start, and the server is ready only once it is", async () => {
    const starting = startTestServer({ modules: modules() });
    let settled = false;
    starting.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    // A registry plugin that waited for the hash would never let the next module start.
    await vi.waitFor(() => expect(laterStarted).toBe(true), { timeout: 10_000 });
    // Past the later module's own 20 ms: only the hash keeps the server from being ready.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(settled).toBe(false);
    expect(gate.calls).toBe(1);
    gate.settle?.();
    server = await starting;
    expect(gate.calls).toBe(1);
  });

  it("fails the start when it cannot be computed, without an unhandled rejection meanwhile", async () => {
    // Rejected at once, while the next module starts: vitest fails on an unhandled rejection.
    gate.failure = new Error("argon2 is not available");
    await expect(startTestServer({ modules: modules() })).rejects.toThrow("argon2 is not available");
    expect(gate.calls).toBe(1);
  });
});
