/**
 * Metrics (docs/operations.md): one prom-client registry per server with the default process and
 * Node.js metrics, the HTTP metrics labelled by route pattern, and every module's own metrics,
 * either as prom-client metrics or as exposition text a module renders itself ({@link Exposition}).
 */
import { Readable } from "node:stream";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** The label of requests that matched no route, so unknown URLs cannot explode the series count. */
export const UNMATCHED_ROUTE = "unmatched";

/** Creates the registry of one server, with the default process and Node.js metrics. */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * Where a metric is registered, its name, its help text and its label names (none by default).
 * Names follow Prometheus' naming practice: a unit suffix, `_total` for counters.
 */
type Declaration<L extends string> = [registry: Registry, name: string, help: string, labels?: readonly L[]];

/** A counter; see {@link Declaration}. */
export function counter<L extends string = never>(...[registry, name, help, labels = []]: Declaration<L>): Counter<L> {
  return new Counter({ name, help, labelNames: labels, registers: [registry] });
}

/**
 * A labelled counter for paths that count once per event: each series is counted into a plain
 * number ({@link Tally}) and added to the prom-client counter when the registry is collected (at a
 * scrape). A prom-client child builds and looks up a string key from its label values on every
 * increment, about a microsecond with three labels: counted per event (a window dropping late
 * events), that was the largest cost of an HTTP push. A series appears at the first scrape after
 * its first increment, as with prom-client; tallies of the same label values are one tally.
 */
export class TalliedCounter<L extends string> {
  readonly #counter: Counter<L>;
  /** The tallies by their label values joined with NUL (no label value is expected to hold one). */
  readonly #tallies = new Map<string, Tally>();

  /** See {@link Declaration}; `labels` are the label names. */
  constructor(...[registry, name, help, labels = []]: Declaration<L>) {
    const tallies = this.#tallies;
    this.#counter = new Counter({
      name,
      help,
      labelNames: labels,
      registers: [registry],
      collect() {
        for (const tally of tallies.values()) tally.flush();
      },
    });
  }

  /** The tally of the series with these label values (in the order of the label names). */
  tally(...values: string[]): Tally {
    const key = values.join("\u0000");
    let tally = this.#tallies.get(key);
    if (tally === undefined) {
      tally = new Tally(this.#counter.labels(...values));
      this.#tallies.set(key, tally);
    }
    return tally;
  }

  /**
   * Removes the series with these label values; what its tally counts afterwards is never shown
   * (a later {@link tally} of the same values starts a new one).
   */
  remove(...values: string[]): void {
    this.#tallies.delete(values.join("\u0000"));
    this.#counter.remove(...values);
  }
}

/** The count of one series of a {@link TalliedCounter} since the last scrape. */
export class Tally {
  #pending = 0;
  /** Whether {@link add} was called since the last scrape (an add of 0 creates the series at 0). */
  #touched = false;

  constructor(readonly series: Counter.Internal) {}

  /** Counts `count` (a non-negative integer; 1 when omitted). */
  add(count = 1): void {
    this.#pending += count;
    this.#touched = true;
  }

  /** Adds what was counted since the last flush to the series. */
  flush(): void {
    if (!this.#touched) return;
    const pending = this.#pending;
    this.#pending = 0;
    this.#touched = false;
    this.series.inc(pending);
  }
}

/** A gauge set by its owner (see {@link gaugeOf} for one read at scrape); see {@link Declaration}. */
export function gauge<L extends string = never>(...[registry, name, help, labels = []]: Declaration<L>): Gauge<L> {
  return new Gauge({ name, help, labelNames: labels, registers: [registry] });
}

/**
 * The children of a counter with one label, one per value of `values`, each created at 0 so that
 * a rate() over it is defined before the first increment. Incrementing a child is a field update,
 * not a label lookup.
 */
export function countersAtZero<V extends string>(
  counter: Counter<string>,
  values: readonly V[],
): Map<V, Counter.Internal> {
  return new Map(
    values.map((value) => {
      const child = counter.labels(value);
      child.inc(0);
      return [value, child];
    }),
  );
}

/** A histogram registered in `registry`; `buckets` are upper bounds in the metric's unit. */
export function histogram<L extends string = never>(
  registry: Registry,
  name: string,
  help: string,
  buckets: readonly number[],
  labels: readonly L[] = [],
): Histogram<L> {
  return new Histogram({ name, help, labelNames: labels, buckets: [...buckets], registers: [registry] });
}

/**
 * A gauge registered in `registry` whose value `read` gives at each scrape (an unlabelled gauge),
 * or, with `label`, whose series are exactly the `[label value, value]` pairs `read` gives then
 * (series of names no longer given disappear).
 */
export function gaugeOf(registry: Registry, name: string, help: string, read: () => number | Promise<number>): Gauge;
export function gaugeOf(
  registry: Registry,
  name: string,
  help: string,
  read: () => Iterable<readonly [string, number]> | Promise<Iterable<readonly [string, number]>>,
  label: string,
): Gauge<string>;
export function gaugeOf(
  registry: Registry,
  name: string,
  help: string,
  read: () =>
    | number
    | Promise<number>
    | Iterable<readonly [string, number]>
    | Promise<Iterable<readonly [string, number]>>,
  label?: string,
): Gauge<string> {
  return new Gauge({
    name,
    help,
    labelNames: label === undefined ? [] : [label],
    registers: [registry],
    async collect() {
      const value = await read();
      if (typeof value === "number" || label === undefined) {
        if (typeof value === "number") this.set(value);
        return;
      }
      this.reset();
      for (const [labelValue, count] of value) this.set({ [label]: labelValue }, count);
    },
  });
}

/**
 * Produces lines of the Prometheus text exposition format 0.0.4 (HELP, TYPE and samples, each line
 * ending with `\n`), in chunks. `GET /metrics` yields to the event loop between two chunks, so a
 * module with many series keeps each chunk small and the scrape never blocks requests for long.
 */
export type ExpositionSource = () => Iterable<string> | AsyncIterable<string>;

/**
 * Exposition text that modules render themselves, appended to prom-client's on `GET /metrics`. For
 * metric families that prom-client cannot hold, such as healthcheck series whose label names come
 * from each check's free-form labels (prom-client fixes label names when a metric is created).
 */
export class Exposition {
  readonly #sources: ExpositionSource[] = [];

  /** Appends what `source` renders to every scrape, after the prom-client metrics. */
  add(source: ExpositionSource): void {
    this.#sources.push(source);
  }

  /** The chunks of the appended sources, in the order they were added. */
  async *chunks(): AsyncGenerator<string> {
    for (const source of this.#sources) {
      for await (const chunk of source()) {
        yield chunk;
        await yieldToEventLoop();
      }
    }
  }
}

/**
 * Counts every response in `http_requests_total{method,route,status}` and times it in
 * `http_request_duration_seconds{method,route}` (seconds), `route` being the route pattern
 * (`/api/v1/stream/:name`), never the raw URL. Serves the registry, then the exposition text of
 * `exposition`, on `GET /metrics`, as a stream.
 */
export function installHttpMetrics(app: FastifyInstance, registry: Registry, exposition: Exposition): void {
  const requests = counter(
    registry,
    "http_requests_total",
    "HTTP responses sent, by method, route pattern and status code.",
    ["method", "route", "status"],
  );
  const durations = histogram(
    registry,
    "http_request_duration_seconds",
    "Time from receiving a request to sending its response, in seconds, by method and route pattern.",
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ["method", "route"],
  );
  // Label children resolved once per (method, route[, status]) instead of hashing labels per request.
  const counterChildren = new Map<string, { inc(): void }>();
  const histogramChildren = new Map<string, { observe(value: number): void }>();

  app.addHook("onResponse", (request, reply, done) => {
    const method = request.method;
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const status = reply.statusCode;
    const routeKey = `${method} ${route}`;
    const countKey = `${routeKey} ${status}`;
    let counter = counterChildren.get(countKey);
    if (counter === undefined) {
      counter = requests.labels(method, route, String(status));
      counterChildren.set(countKey, counter);
    }
    counter.inc();
    let histogram = histogramChildren.get(routeKey);
    if (histogram === undefined) {
      histogram = durations.labels(method, route);
      histogramChildren.set(routeKey, histogram);
    }
    histogram.observe(reply.elapsedTime / 1000);
    done();
  });

  const openapi = {
    summary: "Prometheus metrics (text exposition format 0.0.4)",
    success: { mediaType: "text/plain", schema: { type: "string" } },
    security: "none",
  } as const;
  app.get("/metrics", { config: { openapi } }, async (_request, reply) => {
    const head = await registry.metrics();
    async function* text(): AsyncGenerator<string> {
      yield head;
      yield* exposition.chunks();
    }
    reply.type(registry.contentType);
    return reply.send(Readable.from(text(), { objectMode: false }));
  });
}
