/**
 * The outputs' metrics (docs/outputs.md). Their names keep the `stream_output_` prefix they had
 * when outputs belonged to the streams module, so dashboards and alerts keep working.
 */
import type { Registry } from "prom-client";
import { counter, gaugeOf, histogram } from "../metrics.js";

/** How an event handed to an output ended. */
export type OutputOutcome = "sent" | "dropped-queue-full" | "dropped-rejected" | "dropped-retries-exhausted";

/** The outputs' metrics; every getter is resolved once per output. */
export interface OutputMetrics {
  /** `stream_output_events_total{output,outcome}`: adds a count of events. */
  events(output: string, outcome: OutputOutcome): (count: number) => void;
  /** `stream_output_retries_total{output}`: one more retried request. */
  retries(output: string): () => void;
  /** `stream_output_request_duration_seconds{output}`: observes one request, in seconds. */
  requestDuration(output: string): (seconds: number) => void;
}

/**
 * Registers the outputs' metrics; `queued` is read at scrape time for
 * `stream_output_queue_events{output}` (events waiting in each output's queue, batch in flight
 * included), `stored` for `stream_output_durable_events{output}` (events each durable output keeps
 * in the database).
 */
export function outputMetrics(
  registry: Registry,
  queued: () => Iterable<readonly [string, number]>,
  stored: () => Iterable<readonly [string, number]> = () => [],
): OutputMetrics {
  const events = counter(
    registry,
    "stream_output_events_total",
    "Events handed to an output, by how they ended: sent, dropped-queue-full, dropped-rejected, dropped-retries-exhausted.",
    ["output", "outcome"],
  );
  gaugeOf(
    registry,
    "stream_output_queue_events",
    "Events waiting in an output's queue (the batch being sent included).",
    queued,
    "output",
  );
  gaugeOf(
    registry,
    "stream_output_durable_events",
    "Events a durable output keeps in the database: written, not yet sent (or dropped).",
    stored,
    "output",
  );
  const durations = histogram(
    registry,
    "stream_output_request_duration_seconds",
    "Duration of an output's requests (or file writes), in seconds, whatever their outcome.",
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ["output"],
  );
  const retries = counter(
    registry,
    "stream_output_retries_total",
    "Requests of an output sent again after a network error, a timeout, a 5xx or a 429.",
    ["output"],
  );
  return {
    events(output, outcome) {
      const child = events.labels(output, outcome);
      return (count) => child.inc(count);
    },
    retries(output) {
      const child = retries.labels(output);
      return () => child.inc();
    },
    requestDuration(output) {
      const child = durations.labels(output);
      return (seconds) => child.observe(seconds);
    },
  };
}
