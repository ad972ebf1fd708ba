/**
 * The module's metrics (healthchecks.md §8): `healthcheck_duration_seconds{name,status}` histogram,
 * `healthcheck_total{name,status}` counter (status `success` or `failure`), `healthcheck_scheduled`
 * gauge and `healthcheck_lateness_seconds` histogram.
 *
 * The per-check families also carry the check's own labels (healthchecks.md §1: labels are copied
 * into metrics). prom-client fixes the label names of a metric when it is created, and checks have
 * free-form labels, so these two families keep their series here and are served through
 * prom-client's registry by its metric interface (an async `get()` returning the values); the
 * other two are plain prom-client metrics.
 *
 * Scrape cost: 10 000 checks make about 150 000 histogram lines. Formatted one value at a time by
 * prom-client, a scrape blocked the event loop for about 400 ms, delaying every run due meanwhile
 * (healthchecks.md §8 wants p99 lateness under 100 ms). So `get()` renders the lines of each series
 * itself, in slices that yield to the event loop, and hands prom-client one value per series whose
 * `metricName` carries the series' other lines: the registry writes `<metricName> <value>`
 * verbatim (Prometheus text format 0.0.4, which is the registry's content type).
 */
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { Gauge, Histogram, type Metric, type Registry } from "prom-client";
import type { Exposition } from "../platform/metrics.js";

/** Upper bounds of `healthcheck_duration_seconds`, in seconds. */
export const DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Upper bounds of `healthcheck_lateness_seconds`, in seconds: fine below 100 ms so the p50 and p99
 * the benchmark reads from them are meaningful (healthchecks.md §8 targets p99 < 100 ms).
 */
export const LATENESS_BUCKETS: readonly number[] = [
  0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2, 5, 10,
];

/** Series rendered between two yields to the event loop during a scrape. */
const SERIES_PER_SLICE = 500;

/**
 * A label value escaped for the text exposition format: backslash, double quote and line feed.
 */
function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

/** `a="1",b="2"`: the inside of the braces of a series, labels in the given order. */
function labelText(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([name, value]) => `${name}="${escapeLabelValue(value)}"`)
    .join(",");
}

/** Counts of one (check, status) pair. */
interface StatusCounts {
  /** The labels of the series (`name`, the check's labels, `status`), rendered once. */
  readonly labels: string;
  count: number;
  /** Sum of the observed durations, in seconds. */
  sum: number;
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly buckets: number[];
}

const BUCKET_BOUNDS: readonly string[] = [...DURATION_BUCKETS.map(String), "+Inf"];

/** The series of one healthcheck: what each of its executions adds to the metrics. */
export class CheckSeries {
  success: StatusCounts | undefined;
  failure: StatusCounts | undefined;

  constructor(
    /** `name` plus the check's labels. */
    readonly labels: Readonly<Record<string, string>>,
  ) {}

  /** Counts one execution that took `seconds`. */
  observe(success: boolean, seconds: number): void {
    let counts = success ? this.success : this.failure;
    if (counts === undefined) {
      const status = success ? "success" : "failure";
      counts = {
        labels: labelText({ ...this.labels, status }),
        count: 0,
        sum: 0,
        buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0),
      };
      if (success) this.success = counts;
      else this.failure = counts;
    }
    counts.count++;
    counts.sum += seconds;
    let slot = 0;
    while (slot < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[slot] as number)) slot++;
    (counts.buckets[slot] as number)++;
  }
}

/** A value as prom-client's registry formats it: `<metricName><labels> <value>`. */
type Value = {
  value: number;
  labels: Readonly<Record<string, string>>;
  sharedLabels: Readonly<Record<string, string>>;
  metricName: string;
};

// One object for every value: prom-client formats them to nothing (and caches the shared one).
const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** A metric family whose values `values()` renders, served by prom-client's registry. */
function family(name: string, help: string, type: "counter" | "histogram", values: () => Promise<Value[]>): Metric {
  const metric = {
    name,
    help,
    type,
    aggregator: "sum",
    get: async () => ({ name, help, type, aggregator: "sum", values: await values() }),
    reset: () => {},
  };
  // The registry only reads name, help, type and get(); prom-client's types name its own classes.
  return metric as unknown as Metric;
}

const STATUSES = ["success", "failure"] as const;

/** The metrics of one server's healthchecks. */
export class HealthcheckMetrics {
  readonly #series = new Map<string, CheckSeries>();
  readonly #lateness: Histogram;

  /**
   * Registers the four metrics in `registry` (the per-check families through `exposition`).
   * @param scheduled the number of scheduled checks, read at each scrape
   */
  constructor(registry: Registry, _exposition: Exposition, scheduled: () => number) {
    registry.registerMetric(
      family(
        "healthcheck_total",
        "Healthcheck executions, by check name and status (success, failure).",
        "counter",
        () =>
          this.#render((counts) => ({
            value: counts.count,
            labels: NO_LABELS,
            sharedLabels: NO_LABELS,
            metricName: `healthcheck_total{${counts.labels}}`,
          })),
      ),
    );
    registry.registerMetric(
      family(
        "healthcheck_duration_seconds",
        "Execution time of healthchecks in seconds, by check name and status (success, failure).",
        "histogram",
        () => this.#render(histogramLines),
      ),
    );
    new Gauge({
      name: "healthcheck_scheduled",
      help: "Healthchecks currently scheduled.",
      registers: [registry],
      collect() {
        this.set(scheduled());
      },
    });
    this.#lateness = new Histogram({
      name: "healthcheck_lateness_seconds",
      help: "How late scheduled healthcheck runs started compared with their schedule, in seconds.",
      buckets: [...LATENESS_BUCKETS],
      registers: [registry],
    });
  }

  /**
   * The series of check `name` with `labels`: the existing one when its labels are the same,
   * otherwise a new one replacing it (a change of labels is a new series identity).
   */
  series(name: string, labels: Readonly<Record<string, string>> = {}): CheckSeries {
    const wanted = { name, ...labels };
    const existing = this.#series.get(name);
    if (existing !== undefined && sameLabels(existing.labels, wanted)) return existing;
    const created = new CheckSeries(wanted);
    this.#series.set(name, created);
    return created;
  }

  /** Removes the series of a deleted check. */
  remove(name: string): void {
    this.#series.delete(name);
  }

  /** Records how late a run started, in seconds. */
  observeLateness(seconds: number): void {
    this.#lateness.observe(seconds);
  }

  /** One value per (series, status) with counts, rendered in slices that yield to the event loop. */
  async #render(value: (counts: StatusCounts) => Value): Promise<Value[]> {
    const values: Value[] = [];
    let rendered = 0;
    for (const series of [...this.#series.values()]) {
      for (const status of STATUSES) {
        const counts = series[status];
        if (counts !== undefined) values.push(value(counts));
      }
      if (++rendered % SERIES_PER_SLICE === 0) await yieldToEventLoop();
    }
    return values;
  }
}

/**
 * The lines of one histogram series: the cumulative buckets and the sum as one `metricName`, and
 * the count as the value, so the registry writes `..._count{...} <count>` last.
 */
function histogramLines(counts: StatusCounts): Value {
  const lines: string[] = [];
  let cumulative = 0;
  for (let slot = 0; slot < BUCKET_BOUNDS.length; slot++) {
    cumulative += counts.buckets[slot] as number;
    lines.push(`healthcheck_duration_seconds_bucket{${counts.labels},le="${BUCKET_BOUNDS[slot]}"} ${cumulative}`);
  }
  lines.push(`healthcheck_duration_seconds_sum{${counts.labels}} ${counts.sum}`);
  lines.push(`healthcheck_duration_seconds_count{${counts.labels}}`);
  return { value: counts.count, labels: NO_LABELS, sharedLabels: NO_LABELS, metricName: lines.join("\n") };
}

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
