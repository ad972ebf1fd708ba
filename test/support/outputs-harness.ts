/**
 * Outputs built as the server builds them, with their own metrics registry and a logger whose
 * lines are kept, for the output types' tests; short timings keep the suites fast.
 */
import pino from "pino";
import { Registry } from "prom-client";
import { expect } from "vitest";
import { type OutputDefinition, outputsSection } from "../../src/platform/outputs/config.js";
import { outputMetrics } from "../../src/platform/outputs/metrics.js";
import { Outputs } from "../../src/platform/outputs/outputs.js";
import { until } from "./until.js";

/** Common keys with short timings, as written in a file. */
export const FAST_RAW = { "flush-interval": "30ms", timeout: "2s", "max-retry-time": "5s" };

/** The definition of one output written as in a file (`FAST_RAW` timings unless given), defaults filled in. */
export function definitionOf(raw: Record<string, unknown>): OutputDefinition {
  const parsed = outputsSection({ probe: { ...FAST_RAW, ...raw } }, "outputs").probe;
  if (parsed === undefined) throw new Error("no definition");
  return parsed;
}

/** Outputs, their registry, the log lines (parsed and raw), and readers of the output metrics. */
export function outputsHarness(definitions: Record<string, OutputDefinition>, cleanups: Array<() => Promise<void>>) {
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
  });
  cleanups.push(() => outputs.drain(0));
  const metric = async (series: string): Promise<number> => {
    const text = await registry.metrics();
    const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  };
  const count = (output: string, outcome: string) =>
    metric(`stream_output_events_total{output="${output}",outcome="${outcome}"}`);
  /** Asserts that a count reaches `expected` within 5 s. */
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
    expect(last, `stream_output_events_total{output="${output}",outcome="${outcome}"}`).toBe(expected);
  };
  return { outputs, registry, logs, rawLogs, metric, count, reaches };
}
