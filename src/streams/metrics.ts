/**
 * The streams metrics (docs/streams.md): `stream_events_total{stream}`,
 * `stream_dropped_events_total{stream,action,reason}` and `stream_index_size{stream}`, which the
 * engine feeds; `remote_write_samples_total{stream}`, `otlp_spans_total{stream}`, `otlp_data_points_total{stream}`
 * and `otlp_log_records_total{stream}`, which the ingestion
 * routes feed; and those of outputs, publish/subscribe, async queues and the Riemann input. Label
 * children are resolved once per stream, action, output or channel, so counting costs one call;
 * the two counters fed per event or per batch are tallied (a field update, added at each scrape).
 */

import type { FastifyBaseLogger } from "fastify";
import type { Counter, Registry } from "prom-client";
import { counter, gauge, gaugeOf, TalliedCounter } from "../platform/metrics.js";
import type { StreamClusterMetrics } from "./cluster.js";
import type { EngineHooks, StreamEngine } from "./engine.js";

/** The `reason` of events an action skipped (it could not apply to them, or its state was full). */
const SKIPPED = "skipped";

/**
 * Engine hooks that count into `registry` and log `info`/`debug`/`error` actions with `logger`.
 * `engine` is read at scrape time for the index sizes.
 */
export function metricHooks(registry: Registry, logger: FastifyBaseLogger, engine: () => StreamEngine): EngineHooks {
  // Both are counted per event (drops) or per batch on the push path: tallied, not prom-client
  // children (see TalliedCounter).
  const events = new TalliedCounter(
    registry,
    "stream_events_total",
    "Events that entered a stream (pushed, ingested or reinjected).",
    ["stream"],
  );
  // One counter for every drop: by an action (reason "skipped": it could not apply to the event, or
  // its state was full), or by a way in (action = the way in, reason = the event bound exceeded).
  const dropped = new TalliedCounter(
    registry,
    "stream_dropped_events_total",
    'Events dropped: skipped by an action (reason "skipped"), or refused by a way in (action: push, otlp, remote-write, riemann, graphite, influx, event-sink) for exceeding an event bound (reason: max-event-fields, max-event-tags, max-event-string, max-event-size).',
    ["stream", "action", "reason"],
  );
  const indexSizes = function* (): Generator<readonly [string, number]> {
    for (const stream of engine().all()) yield [stream.name, stream.indexSize];
  };
  gaugeOf(registry, "stream_index_size", "Events held in a stream's index.", indexSizes, "stream");
  /** The action and reason label pairs of each stream's series, to forget them with the stream. */
  const actionsByStream = new Map<string, Set<string>>();
  const remember = (stream: string, action: string, reason: string) => {
    let actions = actionsByStream.get(stream);
    if (actions === undefined) {
      actions = new Set();
      actionsByStream.set(stream, actions);
    }
    actions.add(`${action}\u0000${reason}`);
  };
  return {
    events(stream) {
      const tally = events.tally(stream);
      return (count) => tally.add(count);
    },
    dropped(stream, action) {
      remember(stream, action, SKIPPED);
      const tally = dropped.tally(stream, action, SKIPPED);
      return () => tally.add(1);
    },
    refused(stream, input, bound) {
      remember(stream, input, bound);
      const tally = dropped.tally(stream, input, bound);
      return (count) => tally.add(count);
    },
    forget(stream) {
      events.remove(stream);
      for (const pair of actionsByStream.get(stream) ?? []) {
        const [action = "", reason = ""] = pair.split("\u0000");
        dropped.remove(stream, action, reason);
      }
      actionsByStream.delete(stream);
    },
    log(level, stream, value) {
      logger[level]({ stream, event: value }, "stream event");
    },
  };
}

/** A counter child per name, resolved once per name. */
export type CounterByName = (name: string) => { inc(value: number): void };

function counterByLabel<L extends string>(counter: Counter<L>): CounterByName {
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
  /** `otlp_data_points_total{stream}`. */
  readonly dataPoints: CounterByName;
  /** `otlp_log_records_total{stream}`. */
  readonly logRecords: CounterByName;
}

/** Registers the ingestion counters in `registry`. */
export function ingestionCounters(registry: Registry): IngestionCounters {
  return {
    samples: counterByLabel(
      counter(
        registry,
        "remote_write_samples_total",
        "Samples received through Prometheus remote write and pushed into streams, by stream name of the URL.",
        ["stream"],
      ),
    ),
    spans: counterByLabel(
      counter(
        registry,
        "otlp_spans_total",
        "Spans received through OTLP/HTTP and pushed into streams, by stream name of the URL.",
        ["stream"],
      ),
    ),
    dataPoints: counterByLabel(
      counter(
        registry,
        "otlp_data_points_total",
        "Metric data points received through OTLP/HTTP and pushed into streams, by stream name of the URL.",
        ["stream"],
      ),
    ),
    logRecords: counterByLabel(
      counter(
        registry,
        "otlp_log_records_total",
        "Log records received through OTLP/HTTP and pushed into streams, by stream name of the URL.",
        ["stream"],
      ),
    ),
  };
}

/** The publish/subscribe metrics, resolved once per channel. */
export interface ChannelMetrics {
  /** `stream_published_events_total{channel}`: events sent to a channel's subscribers. */
  published(channel: string): () => void;
  /** `stream_publish_dropped_total{channel}`: events a slow subscriber missed. */
  dropped(channel: string): () => void;
  /**
   * `stream_subscriptions_refused_total{bound}` + 1: a subscription refused because the server
   * holds `max-subscribers` already, or its client `max-subscriptions-per-client`.
   */
  refused(bound: SubscriptionBound): void;
}

/** The bounds a subscription may be refused by (the `bound` label). */
export type SubscriptionBound = "max-subscribers" | "max-subscriptions-per-client";

/**
 * Registers the publish/subscribe metrics; `subscribers` is read at scrape time for
 * `stream_subscribers{channel}` (channels without subscribers are left out).
 */
export function channelMetrics(
  registry: Registry,
  subscribers: () => Iterable<readonly [string, number]>,
): ChannelMetrics {
  gaugeOf(registry, "stream_subscribers", "WebSocket subscribers of a channel.", subscribers, "channel");
  const published = counterByLabel(
    counter(
      registry,
      "stream_published_events_total",
      "Events published to a channel that had at least one subscriber.",
      ["channel"],
    ),
  );
  const dropped = counterByLabel(
    counter(
      registry,
      "stream_publish_dropped_total",
      "Events a subscriber missed because its socket buffer held more than 1 MiB.",
      ["channel"],
    ),
  );
  const refused = counter(
    registry,
    "stream_subscriptions_refused_total",
    "WebSocket subscriptions refused, by the bound they would have exceeded.",
    ["bound"],
  );
  return {
    published(channel) {
      const child = published(channel);
      return () => child.inc(1);
    },
    dropped(channel) {
      const child = dropped(channel);
      return () => child.inc(1);
    },
    refused(bound) {
      refused.inc({ bound }, 1);
    },
  };
}

/** The async queues' metrics. */
export interface AsyncQueueMetrics {
  /** `stream_async_queue_dropped_total{queue}`: one more event dropped by a full queue. */
  dropped(queue: string): () => void;
}

/**
 * Registers the async queues' metrics; `backlog` is read at scrape time for
 * `stream_async_queue_events{queue}`.
 */
export function asyncQueueMetrics(
  registry: Registry,
  backlog: () => Iterable<readonly [string, number]>,
): AsyncQueueMetrics {
  gaugeOf(
    registry,
    "stream_async_queue_events",
    "Entries (events or window lists) waiting in an async queue.",
    backlog,
    "queue",
  );
  const dropped = counter(
    registry,
    "stream_async_queue_dropped_total",
    "Entries an async queue dropped because it was full.",
    ["queue"],
  );
  return {
    dropped(queue) {
      const child = dropped.labels(queue);
      return () => child.inc();
    },
  };
}

/**
 * Why the Riemann input closed a connection before it could speak the protocol: over
 * `max-connections` or `max-connections-per-address`, or a TLS handshake that did not finish within
 * `handshake-timeout` or failed (a client that went away before its handshake is not counted).
 */
export type RiemannRefusal = "max-connections" | "max-connections-per-address" | "handshake-timeout" | "tls-handshake";

/**
 * Why the Riemann input closed a connection after an error reply: a frame over `max-frame-size`,
 * a frame not completed within `frame-timeout`, or its share of `max-buffered-bytes`.
 */
export type RiemannClosure = "max-frame-size" | "frame-timeout" | "max-buffered-bytes";

/** The Riemann protocol input's metrics (docs/streams.md, Riemann protocol), and those of its bounds. */
export interface RiemannMetrics {
  /** `riemann_connections`: one more (+1) or one fewer (-1) open connection. */
  connections(delta: 1 | -1): void;
  /** `riemann_messages_total{outcome}`: a message answered `ok: true` or `ok: false`. */
  message(outcome: "ok" | "error"): void;
  /** `riemann_events_total`: events received and pushed into streams. */
  events(count: number): void;
  /** `riemann_refused_connections_total{reason}`: a connection closed as it arrived or in its TLS handshake. */
  refused(reason: RiemannRefusal): void;
  /** `riemann_closed_connections_total{reason}`: a connection closed by a bound, after an error reply. */
  closed(reason: RiemannClosure): void;
  /** `riemann_buffered_bytes`: bytes held for clients (see `max-buffered-bytes`) grew or shrank by `delta`. */
  buffered(delta: number): void;
}

const REFUSALS: readonly RiemannRefusal[] = [
  "max-connections",
  "max-connections-per-address",
  "handshake-timeout",
  "tls-handshake",
];
const CLOSURES: readonly RiemannClosure[] = ["max-frame-size", "frame-timeout", "max-buffered-bytes"];

/** Registers the Riemann metrics; every reason's child exists from the start, at 0. */
export function riemannMetrics(registry: Registry): RiemannMetrics {
  const connections = gauge(registry, "riemann_connections", "Open connections of the Riemann protocol input.");
  const messages = counter(
    registry,
    "riemann_messages_total",
    "Riemann protocol messages answered, by outcome (ok: true or error).",
    ["outcome"],
  );
  const ok = messages.labels("ok");
  const error = messages.labels("error");
  const events = counter(
    registry,
    "riemann_events_total",
    "Events received through the Riemann protocol and pushed into streams.",
  );
  const refused = counter(
    registry,
    "riemann_refused_connections_total",
    "Riemann connections closed as they arrived or during their TLS handshake, by reason (the bound).",
    ["reason"],
  );
  const closed = counter(
    registry,
    "riemann_closed_connections_total",
    "Riemann connections closed after an error reply because of a bound, by reason (the bound).",
    ["reason"],
  );
  for (const reason of REFUSALS) refused.inc({ reason }, 0);
  for (const reason of CLOSURES) closed.inc({ reason }, 0);
  const buffered = gauge(
    registry,
    "riemann_buffered_bytes",
    "Bytes the Riemann input holds for its clients: partial frames, frames not handled yet, replies not read yet.",
  );
  return {
    connections: (delta) => connections.inc(delta),
    message: (outcome) => (outcome === "ok" ? ok : error).inc(),
    events: (count) => events.inc(count),
    refused: (reason) => refused.inc({ reason }),
    closed: (reason) => closed.inc({ reason }),
    buffered: (delta) => buffered.inc(delta),
  };
}

/**
 * Cluster mode (docs/cluster.md): `stream_forwarded_events_total{stream}` (handed to JetStream for
 * the stream's owner), `stream_forward_failed_events_total{stream}` (not handed over: NATS
 * unreachable, or the bound of unacknowledged sends reached) and
 * `stream_consumed_events_total{stream}` (received through JetStream and run here).
 */
export function clusterMetrics(registry: Registry): StreamClusterMetrics {
  const streamCounter = (name: string, help: string) => counterByLabel(counter(registry, name, help, ["stream"]));
  const forwarded = streamCounter(
    "stream_forwarded_events_total",
    "Events handed to JetStream for the instance that owns their stream, by stream.",
  );
  const failed = streamCounter(
    "stream_forward_failed_events_total",
    "Events for a stream owned by another instance that could not be handed to JetStream, by stream.",
  );
  const consumed = streamCounter(
    "stream_consumed_events_total",
    "Events received through JetStream from other instances and run here, by stream.",
  );
  return {
    forwarded: (stream, count) => forwarded(stream).inc(count),
    dropped: (stream, count) => failed(stream).inc(count),
    consumed: (stream, count) => consumed(stream).inc(count),
  };
}

/** What became of a datagram of the Riemann UDP input. */
export type DatagramOutcome = "ok" | "error" | "busy";

/** `riemann_udp_datagrams_total{outcome}`: counts one datagram of the Riemann UDP input. */
export type RiemannUdpMetrics = (outcome: DatagramOutcome) => void;

/** Registers the Riemann UDP input's counter; every outcome's child exists from the start, at 0. */
export function riemannUdpMetrics(registry: Registry): RiemannUdpMetrics {
  const datagrams = counter(
    registry,
    "riemann_udp_datagrams_total",
    "Datagrams received by the Riemann UDP input, by outcome: ok (events pushed), error (undecodable message or unknown stream: dropped), busy (dropped: too many large messages being handled).",
    ["outcome"],
  );
  const children = {
    ok: datagrams.labels("ok"),
    error: datagrams.labels("error"),
    busy: datagrams.labels("busy"),
  };
  return (outcome) => children[outcome].inc();
}

/** Why the Graphite input closed a connection: over `max-connections`, or a line over `max-line-length`. */
export type GraphiteClosure = "max-connections" | "max-line-length";

/** The Graphite plaintext input's metrics (docs/inputs.md). */
export interface GraphiteMetrics {
  /** `graphite_connections`: one more (+1) or one fewer (-1) open connection. */
  connections(delta: 1 | -1): void;
  /** `graphite_lines_total{outcome}`: lines taken (`ok`, events pushed) or skipped (`malformed`). */
  lines(outcome: "ok" | "malformed", count: number): void;
  /** `graphite_closed_connections_total{reason}`: a connection closed by a bound. */
  closed(reason: GraphiteClosure): void;
}

/** Registers the Graphite metrics; every label's child exists from the start, at 0. */
export function graphiteMetrics(registry: Registry): GraphiteMetrics {
  const connections = gauge(registry, "graphite_connections", "Open connections of the Graphite plaintext input.");
  const lines = counter(
    registry,
    "graphite_lines_total",
    "Lines received by the Graphite plaintext input, by outcome: ok (an event pushed) or malformed (skipped).",
    ["outcome"],
  );
  const ok = lines.labels("ok");
  const malformed = lines.labels("malformed");
  malformed.inc(0);
  const closed = counter(
    registry,
    "graphite_closed_connections_total",
    "Graphite connections closed by a bound, by reason: max-connections (as they arrived) or max-line-length.",
    ["reason"],
  );
  closed.inc({ reason: "max-connections" }, 0);
  closed.inc({ reason: "max-line-length" }, 0);
  return {
    connections: (delta) => connections.inc(delta),
    lines: (outcome, count) => (outcome === "ok" ? ok : malformed).inc(count),
    closed: (reason) => closed.inc({ reason }),
  };
}

/** `influx_lines_total{outcome}`: counts lines of InfluxDB line protocol, taken (`ok`) or refused (`malformed`). */
export type InfluxMetrics = (outcome: "ok" | "malformed", count: number) => void;

/** Registers the InfluxDB line protocol counter. */
export function influxMetrics(registry: Registry): InfluxMetrics {
  const lines = counter(
    registry,
    "influx_lines_total",
    "Lines received through the InfluxDB line protocol route, by outcome: ok (its events pushed) or malformed (refused).",
    ["outcome"],
  );
  const ok = lines.labels("ok");
  const malformed = lines.labels("malformed");
  malformed.inc(0);
  return (outcome, count) => (outcome === "ok" ? ok : malformed).inc(count);
}
