/**
 * Notifier outputs for tests (docs/notifiers.md): definitions parsed by the real configuration
 * validator (so defaults, secret sources and templates are checked as in a file), their queues with
 * short timings, a logger whose lines are kept, and the events that notifications become.
 */
import pino from "pino";
import { Registry } from "prom-client";
import type { Notification } from "../../src/platform/notifications.js";
import { type OutputDefinition, outputsSection } from "../../src/platform/outputs/config.js";
import type { Event } from "../../src/platform/outputs/event.js";
import { outputMetrics } from "../../src/platform/outputs/metrics.js";
import { groupEvent, notificationEvent } from "../../src/platform/outputs/notifier.js";
import { Outputs } from "../../src/platform/outputs/outputs.js";
import type { VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";
import { startTestServer } from "./server.js";
import { until } from "./until.js";

/** Common keys with short timings, so that retries and flushes stay fast. */
export const FAST = { "flush-interval": "10ms", timeout: "2s", "max-retry-time": "5s" } as const;

/** A running set of outputs and what they logged. */
export interface NotifierHarness {
  readonly outputs: Outputs;
  /** The outputs' metrics registry. */
  readonly registry: Registry;
  /** Log lines as written (JSON text), to check that no secret reaches them. */
  readonly rawLogs: string[];
  readonly logs: Array<Record<string, unknown>>;
  /** The value of `stream_output_events_total{output,outcome}`, 0 when absent. */
  count(output: string, outcome: string): Promise<number>;
  /** Waits (5 s at most) until that count is `expected`, and returns the count then. */
  settled(output: string, outcome: string, expected: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Outputs from raw definitions (as read from YAML under `outputs:`), with {@link FAST} timings
 * unless a definition sets its own.
 * @throws ValidationError as the configuration would
 */
export function notifierHarness(raw: Record<string, Record<string, unknown>>, publicUrl = ""): NotifierHarness {
  const withTimings = Object.fromEntries(Object.entries(raw).map(([name, item]) => [name, { ...FAST, ...item }]));
  return harnessOf(outputsSection(withTimings, "outputs"), publicUrl);
}

/** Outputs from parsed definitions (defaults filled in), with their registry and kept logs. */
export function harnessOf(definitions: Readonly<Record<string, OutputDefinition>>, publicUrl = ""): NotifierHarness {
  const registry = new Registry();
  const rawLogs: string[] = [];
  const logs: Array<Record<string, unknown>> = [];
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
  const count = async (output: string, outcome: string): Promise<number> => {
    const series = `stream_output_events_total{output="${output}",outcome="${outcome}"}`;
    const line = (await registry.metrics()).split("\n").find((candidate) => candidate.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  };
  const settled = async (output: string, outcome: string, expected: number): Promise<number> => {
    let last = 0;
    await until(
      async () => {
        last = await count(output, outcome);
        return last === expected ? true : undefined;
      },
      `${outcome} of ${output}`,
      5000,
    ).catch(() => {});
    return last;
  };
  return { outputs, registry, rawLogs, logs, count, settled, close: () => outputs.drain(0) };
}

/** A notification with every field; `overrides` replace some. */
export function notification(overrides: Partial<Notification> = {}): Notification {
  return {
    name: "api <prod>",
    state: "critical",
    status: "triggered",
    message: 'HTTP 503 & "slow"',
    since: "2024-05-01T10:00:00.000Z",
    duration: 0,
    url: "https://status.example.org/status",
    labels: { team: "web" },
    key: "api/pager",
    ...overrides,
  };
}

/** The event a notification becomes on its output. */
export function notificationOf(overrides: Partial<Notification> = {}): Event {
  return notificationEvent(notification(overrides), Date.parse("2024-05-01T10:00:30Z"));
}

/** The event of a group of notifications. */
export function groupOf(notifications: readonly Partial<Notification>[]): Event {
  const now = Date.parse("2024-05-01T10:00:30Z");
  return groupEvent(
    notifications.map((overrides) => notificationEvent(notification(overrides), now)),
    now,
  );
}

/** A real server with top-level `outputs:` and a stream `alerts` whose only action is `output!` to `output`. */
export interface StreamingServer {
  readonly server: VigieServer;
  /** Pushes events to the stream `alerts` through the API; the answer's status. */
  push(events: readonly Event[]): Promise<number>;
}

/**
 * Starts a server (streams module, in-memory SQLite) with `outputs` under the top-level `outputs:`
 * and a stream `alerts` that sends every event to the output `output`. Close it with `server.close()`.
 */
export async function streamingServer(
  outputs: Record<string, Record<string, unknown>>,
  output: string,
): Promise<StreamingServer> {
  const withTimings = Object.fromEntries(Object.entries(outputs).map(([name, item]) => [name, { ...FAST, ...item }]));
  const server = await startTestServer({ modules: [streamsModule], config: { outputs: withTimings } });
  const edn = `{:actions {:action :output :params [:${output}]}}`;
  const added = await server.app.inject({
    method: "POST",
    url: "/api/v1/stream/alerts",
    payload: { config: Buffer.from(edn, "utf8").toString("base64") },
  });
  if (added.statusCode !== 201) throw new Error(`the stream was not added: ${added.body}`);
  return {
    server,
    async push(events) {
      const pushed = await server.app.inject({ method: "PUT", url: "/api/v1/stream/alerts", payload: { events } });
      return pushed.statusCode;
    },
  };
}
