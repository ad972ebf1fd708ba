/**
 * Outputs built as the server builds them, with their own metrics registry and a logger whose
 * lines are kept, for the output types' tests; short timings keep the suites fast.
 */
import { afterEach, expect } from "vitest";
import { type OutputDefinition, outputsSection } from "../../src/platform/outputs/config.js";
import { harnessOf } from "./notifiers.js";
import { type Receiver, type Responder, startReceiver } from "./receiver.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs `cleanup` after the current test (in reverse order of registration). */
export function afterTest(cleanup: () => Promise<void>): void {
  cleanups.push(cleanup);
}

/** A receiver (test/support/receiver.ts) closed after the current test. */
export async function receiver(responder?: Responder): Promise<Receiver> {
  const started = await startReceiver(responder);
  afterTest(() => started.close());
  return started;
}

/** Common keys with short timings, as written in a file. */
export const FAST_RAW = { "flush-interval": "30ms", timeout: "2s", "max-retry-time": "5s" };

/** The definition of one output written as in a file (`FAST_RAW` timings unless given), defaults filled in. */
export function definitionOf(raw: Record<string, unknown>): OutputDefinition {
  const parsed = outputsSection({ probe: { ...FAST_RAW, ...raw } }, "outputs").probe;
  if (parsed === undefined) throw new Error("no definition");
  return parsed;
}

/**
 * Outputs, their registry, the log lines (parsed and raw), and readers of the output metrics; the
 * outputs are stopped after the current test.
 */
export function outputsHarness(definitions: Record<string, OutputDefinition>) {
  const { outputs, registry, logs, rawLogs, count, settled, close } = harnessOf(definitions);
  afterTest(close);
  const metric = async (series: string): Promise<number> => {
    const text = await registry.metrics();
    const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  };
  /** Asserts that a count reaches `expected` within 5 s. */
  const reaches = async (output: string, outcome: string, expected: number): Promise<void> => {
    const last = await settled(output, outcome, expected);
    expect(last, `stream_output_events_total{output="${output}",outcome="${outcome}"}`).toBe(expected);
  };
  return { outputs, registry, logs, rawLogs, metric, count, reaches };
}
