/**
 * The streams metrics of streams.md §10: `stream_events_total{stream}`,
 * `stream_dropped_events_total{stream,action}` and `stream_index_size{stream}`, which the engine
 * feeds, and `remote_write_samples_total{stream}` and `otlp_spans_total{stream}`, which the
 * ingestion routes feed. Label children are resolved once per stream or action, so counting costs
 * one call.
 */
import type { FastifyBaseLogger } from "fastify";
import { Counter, Gauge, type Registry } from "prom-client";
import type { EngineHooks, StreamEngine } from "./engine.js";

/**
 * Engine hooks that count into `registry` and log `info`/`debug`/`error` actions with `logger`.
 * `engine` is read at scrape time for the index sizes.
 */
export function metricHooks(registry: Registry, logger: FastifyBaseLogger, engine: () => StreamEngine): EngineHooks {
  const events = new Counter({
    name: "stream_events_total",
    help: "Events that entered a stream (pushed, ingested or reinjected).",
    labelNames: ["stream"] as const,
    registers: [registry],
  });
  const dropped = new Counter({
    name: "stream_dropped_events_total",
    help: "Events an action could not apply to and skipped.",
    labelNames: ["stream", "action"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "stream_index_size",
    help: "Events held in a stream's index.",
    labelNames: ["stream"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const stream of engine().all()) this.set({ stream: stream.name }, stream.index.size);
    },
  });
  const actionsByStream = new Map<string, Set<string>>();
  return {
    events(stream) {
      const child = events.labels(stream);
      return (count) => child.inc(count);
    },
    dropped(stream, action) {
      let actions = actionsByStream.get(stream);
      if (actions === undefined) {
        actions = new Set();
        actionsByStream.set(stream, actions);
      }
      actions.add(action);
      const child = dropped.labels(stream, action);
      return () => child.inc();
    },
    forget(stream) {
      events.remove(stream);
      for (const action of actionsByStream.get(stream) ?? []) dropped.remove(stream, action);
      actionsByStream.delete(stream);
    },
    log(level, stream, value) {
      logger[level]({ stream, event: value }, "stream event");
    },
  };
}

/** A counter child per name, resolved once per name. */
export type CounterByName = (name: string) => { inc(value: number): void };

function counterByName(counter: Counter<"stream">): CounterByName {
  const children = new Map<string, { inc(value: number): void }>();
  return (name) => {
    let child = children.get(name);
    if (child === undefined) {
      child = counter.labels(name);
      children.set(name, child);
    }
    return child;
  };
}

/** The counters of the ingestion routes, by the stream name of the URL (`default` included). */
export interface IngestionCounters {
  /** `remote_write_samples_total{stream}`. */
  readonly samples: CounterByName;
  /** `otlp_spans_total{stream}`. */
  readonly spans: CounterByName;
}

/** Registers the ingestion counters in `registry`. */
export function ingestionCounters(registry: Registry): IngestionCounters {
  return {
    samples: counterByName(
      new Counter({
        name: "remote_write_samples_total",
        help: "Samples received through Prometheus remote write and pushed into streams, by stream name of the URL.",
        labelNames: ["stream"] as const,
        registers: [registry],
      }),
    ),
    spans: counterByName(
      new Counter({
        name: "otlp_spans_total",
        help: "Spans received through OTLP/HTTP and pushed into streams, by stream name of the URL.",
        labelNames: ["stream"] as const,
        registers: [registry],
      }),
    ),
  };
}
