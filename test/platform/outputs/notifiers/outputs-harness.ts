/**
 * Outputs of the notifier types for their tests: definitions read from raw configuration (so that
 * defaults and secret sources are those of a real file), a logger whose lines are kept, and the
 * outcome counters.
 */
import { afterEach, expect } from "vitest";
import { type OutputDefinition, outputsSection } from "../../../../src/platform/outputs/config.js";
import { FAST, notifierHarness } from "../../../support/notifiers.js";
import { startTestServer } from "../../../support/server.js";

export { FAST };

/** The definition of one raw output, defaults filled in, as `outputs.<name>` of a file. */
export function definitionOf(raw: Record<string, unknown>): OutputDefinition {
  const parsed = outputsSection({ probe: raw }, "outputs").probe;
  if (parsed === undefined) throw new Error("no definition");
  return parsed;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs `cleanup` after the current test. */
export function afterTest(cleanup: () => Promise<void>): void {
  cleanups.push(cleanup);
}

/**
 * The shared notifier harness (test/support/notifiers.ts), closed after the test, with `reaches`:
 * asserts that a counter reaches `expected` within 5 s.
 */
export function notifierOutputs(raw: Record<string, Record<string, unknown>>, publicUrl = "") {
  const harness = notifierHarness(raw, publicUrl);
  afterTest(() => harness.close());
  const reaches = async (output: string, outcome: string, expected: number): Promise<void> => {
    expect(await harness.settled(output, outcome, expected), `${outcome} of ${output}`).toBe(expected);
  };
  return { ...harness, reaches };
}

/** A triggered notification as the notifier makes it (notificationEvent), for `key`. */
export function notification(status: "triggered" | "reminder" | "resolved", overrides: Record<string, unknown> = {}) {
  return {
    service: "api <prod>",
    state: status === "resolved" ? "ok" : "critical",
    description: 'HTTP 503 & "slow"',
    time: 1_700_000_100,
    status,
    since: "2023-11-14T22:13:20.000Z",
    duration: status === "triggered" ? "0" : "100",
    url: "https://vigie.example.org/status",
    labels: { team: "web" },
    key: "api/pager",
    ...overrides,
  };
}

/** A grouped notification of two alerts (groupEvent). */
export function grouped() {
  const alerts = [notification("triggered"), notification("triggered", { service: "db", key: "db/pager" })];
  return {
    service: "2 alerts",
    state: "critical",
    description: "2 alerts",
    time: 1_700_000_100,
    status: "triggered",
    count: 2,
    alerts,
  };
}

/**
 * A real server (buildServer) declaring `outputs` at the top level, with a stream `alerts` that
 * sends every event to the output `name` (`output!`); `push` sends it one event through the API.
 */
export async function serverWithOutput(name: string, outputs: Record<string, Record<string, unknown>>) {
  const server = await startTestServer({ config: { outputs } });
  afterTest(() => server.close());
  const edn = `{:actions {:action :output! :params [:${name}]}}`;
  const added = await server.app.inject({
    method: "POST",
    url: "/api/v1/stream/alerts",
    payload: { config: Buffer.from(edn, "utf8").toString("base64") },
  });
  expect(added.statusCode, added.body).toBe(201);
  const push = async (event: Record<string, unknown>): Promise<void> => {
    const pushed = await server.app.inject({ method: "PUT", url: "/api/v1/stream/alerts", payload: { event } });
    expect(pushed.statusCode, pushed.body).toBeLessThan(300);
  };
  return { server, push };
}
