/**
 * Outputs of the notifier types for their tests: definitions read from raw configuration (so that
 * defaults and secret sources are those of a real file), a logger whose lines are kept, and the
 * outcome counters.
 */
import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, expect } from "vitest";
import { type OutputDefinition, outputsSection } from "../../../../src/platform/outputs/config.js";
import { outputMetrics } from "../../../../src/platform/outputs/metrics.js";
import { Outputs } from "../../../../src/platform/outputs/outputs.js";
import { startTestServer } from "../../../support/server.js";
import { until } from "../../../support/until.js";

/** Short timings, so that retries happen within a test. */
export const FAST = { "flush-interval": "10ms", timeout: "2s", "max-retry-time": "5s" } as const;

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

/** Outputs built from raw definitions, their log lines (parsed and raw) and their counters. */
export function notifierOutputs(raw: Record<string, Record<string, unknown>>, publicUrl = "") {
  const definitions: Record<string, OutputDefinition> = {};
  for (const [name, item] of Object.entries(raw)) definitions[name] = definitionOf(item);
  const registry = new Registry();
  const logs: Array<Record<string, unknown>> = [];
  const rawLogs: string[] = [];
  const logger = pino(
    { level: "debug" },
    {
      write(line: string) {
        rawLogs.push(line);
        logs.push(JSON.parse(line));
      },
    },
  );
  const outputs: Outputs = new Outputs(definitions, {
    metrics: outputMetrics(registry, () => outputs.queued()),
    logger,
    publicUrl,
  });
  afterTest(() => outputs.drain(0));
  const count = async (output: string, outcome: string): Promise<number> => {
    const series = `stream_output_events_total{output="${output}",outcome="${outcome}"}`;
    const line = (await registry.metrics()).split("\n").find((candidate) => candidate.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  };
  /** Asserts that a counter reaches `expected` within 5 s. */
  const reaches = async (output: string, outcome: string, expected: number): Promise<void> => {
    let last = 0;
    await until(
      async () => {
        last = await count(output, outcome);
        return last === expected ? true : undefined;
      },
      `${outcome} of ${output}`,
      5000,
    ).catch(() => {});
    expect(last, `${outcome} of ${output}`).toBe(expected);
  };
  return { outputs, logs, rawLogs, count, reaches, registry };
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
