/**
 * The module's metrics (docs/healthchecks.md): `healthcheck_duration_seconds{name,status}` histogram,
 * `healthcheck_total{name,status}` counter (status `success` or `failure`), `healthcheck_scheduled`
 * gauge and `healthcheck_lateness_seconds` histogram; and `healthcheck_history_dropped_total{reason}`
 * counter of results the history left out ({@link HistoryMetrics}).
 *
 * The per-check families also carry the check's own labels (a check's labels are copied into its
 * metrics). prom-client fixes the label names of a metric when it is created and checks have
 * free-form labels, so these two families keep their series here and render their own exposition
 * text (Prometheus text format 0.0.4), which `GET /metrics` appends to prom-client's through the
 * platform's {@link Exposition}. So does `healthcheck_lateness_seconds`, observed at every run's
 * start: prom-client's `observe` builds a label object, hashes it and turns the bucket's bound into
 * a string key at each call, about 2 % of the process's CPU in a native profile with 10 000 checks
 * at 10 s (docs/benchmarks.md), where counting into an array is a loop over the bounds.
 * `healthcheck_scheduled` is a plain prom-client gauge.
 *
 * Scrape cost: a (check, status) series is 16 lines, so 10 000 checks that also failed make 320 000
 * lines (about 24 MB with short names) per scrape. Each series renders its label text and line
 * prefixes once, when it is created, so a scrape only concatenates prefixes and numbers (about
 * 50 ms of CPU for those 10 000 checks, bench/healthchecks.mjs); and the text comes in chunks of
 * {@link SERIES_PER_CHUNK} series, between which `GET /metrics` yields to the event loop, so runs
 * and API calls due meanwhile wait for one chunk, not for the whole scrape (the targets of
 * docs/benchmarks.md: p99 lateness ≤ 20 ms, API p99 < 5 ms).
 */

import type { Counter, Registry } from "prom-client";
import type { Exposition } from "../platform/metrics.js";
import { counter, countersAtZero, gaugeOf } from "../platform/metrics.js";

/** Upper bounds of `healthcheck_duration_seconds`, in seconds. */
export const DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Upper bounds of `healthcheck_lateness_seconds`, in seconds: fine below 100 ms so the p50 and p99
 * the benchmark reads from them are meaningful (the target is p99 ≤ 20 ms, docs/benchmarks.md).
 */
export const LATENESS_BUCKETS: readonly number[] = [
  0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2, 5, 10,
];

/**
 * Series (one (check, status) pair) per chunk of exposition text. A histogram series is 15 lines,
 * so a chunk is at most 1 500 lines (about 120 KB), rendered and written in well under a
 * millisecond: a request that arrives during a scrape waits for one chunk per event loop turn it
 * needs. (Measured: 250 series made 3 ms chunks and API calls 2-3 ms slower during a scrape.)
 */
export const SERIES_PER_CHUNK = 100;

const TOTAL = "healthcheck_total";
const DURATION = "healthcheck_duration_seconds";
const LATENESS = "healthcheck_lateness_seconds";

/** `# HELP` and `# TYPE` of a family, once per scrape before its samples (text format 0.0.4). */
const TOTAL_HEADER = [
  `# HELP ${TOTAL} Healthcheck executions, by check name and status (success, failure).`,
  `# TYPE ${TOTAL} counter`,
  "",
].join("\n");
const DURATION_HEADER = [
  `# HELP ${DURATION} Execution time of healthchecks in seconds, by check name and status (success, failure).`,
  `# TYPE ${DURATION} histogram`,
  "",
].join("\n");

const LATENESS_HEADER = [
  `# HELP ${LATENESS} How late scheduled healthcheck runs started compared with their schedule, in seconds.`,
  `# TYPE ${LATENESS} histogram`,
  "",
].join("\n");

/** The start of each `_bucket` line of `healthcheck_lateness_seconds`, up to its value (`+Inf` last). */
const LATENESS_BUCKET_PREFIXES: readonly string[] = [...LATENESS_BUCKETS.map(String), "+Inf"].map(
  (le) => `${LATENESS}_bucket{le="${le}"} `,
);

/**
 * What follows the labels of a series before the value of each `_bucket` line: `le` and its bound
 * in seconds as JavaScript writes it (`0.005`, `30`; the last one `+Inf`), then the closing brace.
 */
const BUCKET_SUFFIXES: readonly string[] = [...DURATION_BUCKETS.map(String), "+Inf"].map((le) => `,le="${le}"} `);

/**
 * A label value escaped for the text exposition format 0.0.4: backslash, double quote and line
 * feed (https://prometheus.io/docs/instrumenting/exposition_formats/).
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

/**
 * A sample value as the text format spells it: integers as integers, other finite numbers as
 * JavaScript writes them (`0.203`, `1e-7`: Go's ParseFloat reads both), and `NaN`, `+Inf`, `-Inf`.
 */
function formatValue(value: number): string {
  if (Number.isFinite(value)) return String(value);
  if (Number.isNaN(value)) return "NaN";
  return value > 0 ? "+Inf" : "-Inf";
}

/** One (check, status) series: its counts, and the start of each of its lines, rendered once. */
class StatusSeries {
  /** `healthcheck_total{<labels>} `. */
  readonly totalPrefix: string;
  /** `healthcheck_duration_seconds_bucket{<labels>`, followed by one of {@link BUCKET_SUFFIXES}. */
  readonly bucketPrefix: string;
  /** `healthcheck_duration_seconds_sum{<labels>} `. */
  readonly sumPrefix: string;
  /** `healthcheck_duration_seconds_count{<labels>} `. */
  readonly countPrefix: string;
  count = 0;
  /** Sum of the observed durations, in seconds. */
  sum = 0;
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly buckets: number[] = new Array<number>(DURATION_BUCKETS.length + 1).fill(0);

  /** @param labels the inside of the braces: `name`, the check's labels, `status`, rendered */
  constructor(labels: string) {
    this.totalPrefix = `${TOTAL}{${labels}} `;
    this.bucketPrefix = `${DURATION}_bucket{${labels}`;
    this.sumPrefix = `${DURATION}_sum{${labels}} `;
    this.countPrefix = `${DURATION}_count{${labels}} `;
  }
}

/** The series of one healthcheck: what each of its executions adds to the metrics. */
export class CheckSeries {
  success: StatusSeries | undefined;
  failure: StatusSeries | undefined;

  constructor(
    /** `name` plus the check's labels. */
    readonly labels: Readonly<Record<string, string>>,
  ) {}

  /**
   * Counts one execution that took `seconds` (seconds). The (check, status) series is created at
   * the first execution with that status, so a status never seen has no series.
   */
  observe(success: boolean, seconds: number): void {
    let series = success ? this.success : this.failure;
    if (series === undefined) {
      series = new StatusSeries(labelText({ ...this.labels, status: success ? "success" : "failure" }));
      if (success) this.success = series;
      else this.failure = series;
    }
    series.count++;
    series.sum += seconds;
    let slot = 0;
    while (slot < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[slot] ?? Number.POSITIVE_INFINITY)) slot++;
    series.buckets[slot] = (series.buckets[slot] ?? 0) + 1;
  }
}

/**
 * `healthcheck_lateness_seconds`, one unlabelled histogram counted in place: its exposition text is
 * what prom-client wrote for it (the series exists, at zero, before the first run).
 */
class LatenessHistogram {
  #count = 0;
  /** Sum of the observed lateness, in seconds. */
  #sum = 0;
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly #buckets = new Float64Array(LATENESS_BUCKETS.length + 1);

  /** Counts one run that started `seconds` late (finite, not negative). */
  observe(seconds: number): void {
    let slot = 0;
    while (slot < LATENESS_BUCKETS.length && seconds > (LATENESS_BUCKETS[slot] ?? Number.POSITIVE_INFINITY)) slot++;
    this.#buckets[slot] = (this.#buckets[slot] ?? 0) + 1;
    this.#count++;
    this.#sum += seconds;
  }

  /** The family's text: header, cumulative `_bucket` lines, `_sum` and `_count` (text format 0.0.4). */
  text(): string {
    let text = LATENESS_HEADER;
    let cumulative = 0;
    for (let slot = 0; slot < LATENESS_BUCKET_PREFIXES.length; slot++) {
      cumulative += this.#buckets[slot] ?? 0;
      text += `${LATENESS_BUCKET_PREFIXES[slot]}${cumulative}\n`;
    }
    return `${text}${LATENESS}_sum ${formatValue(this.#sum)}\n${LATENESS}_count ${this.#count}\n`;
  }
}

/**
 * Why results were left out of the history (history.ts): its buffer was full, or the write of
 * their second failed.
 */
export type HistoryDropReason = "buffer_full" | "write_failed";

/**
 * `healthcheck_history_dropped_total{reason}`: results left out of the history (history.ts), by
 * {@link HistoryDropReason}. Apart from {@link HealthcheckMetrics} because only a server that keeps
 * history registers it.
 */
export class HistoryMetrics {
  readonly #dropped: Map<HistoryDropReason, Counter.Internal>;

  constructor(registry: Registry) {
    const dropped = counter(
      registry,
      "healthcheck_history_dropped_total",
      "Healthcheck results left out of the history, by reason (buffer_full, write_failed).",
      ["reason"],
    );
    this.#dropped = countersAtZero(dropped, ["buffer_full", "write_failed"]);
  }

  /** Counts `rows` results left out of the history. */
  historyDropped(reason: HistoryDropReason, rows: number): void {
    this.#dropped.get(reason)?.inc(rows);
  }
}

/** The metrics of one server's healthchecks. */
export class HealthcheckMetrics {
  readonly #series = new Map<string, CheckSeries>();
  readonly #lateness = new LatenessHistogram();

  /**
   * Registers `healthcheck_scheduled` in `registry`, and adds the text of
   * `healthcheck_lateness_seconds`, `healthcheck_total` and `healthcheck_duration_seconds` to
   * `exposition`.
   * @param scheduled the number of scheduled checks, read at each scrape
   */
  constructor(registry: Registry, exposition: Exposition, scheduled: () => number) {
    exposition.add(() => this.#chunks());
    gaugeOf(registry, "healthcheck_scheduled", "Healthchecks currently scheduled.", scheduled);
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

  /** Records how late a run started, in seconds (finite, not negative). */
  observeLateness(seconds: number): void {
    this.#lateness.observe(seconds);
  }

  /**
   * The text of both per-check families for one scrape, in chunks of at most
   * {@link SERIES_PER_CHUNK} series, each chunk rendered only when the scrape asks for it, then the
   * lateness.
   */
  *#chunks(): Generator<string> {
    // One set of checks for the whole scrape: a check deleted and added again between two chunks
    // would otherwise appear twice, and a duplicate series makes Prometheus reject the scrape.
    const checks = [...this.#series.values()];
    yield* familyChunks(TOTAL_HEADER, checks, totalLines);
    yield* familyChunks(DURATION_HEADER, checks, durationLines);
    yield this.#lateness.text();
  }
}

/** `header`, then the lines `render` makes of each series of `checks`, in chunks. */
function* familyChunks(
  header: string,
  checks: readonly CheckSeries[],
  render: (series: StatusSeries) => string,
): Generator<string> {
  let chunk = header;
  let inChunk = 0;
  for (const check of checks) {
    // Read once: an execution may create the failure series while the scrape waits between chunks.
    const { success, failure } = check;
    if (success !== undefined) {
      chunk += render(success);
      inChunk++;
    }
    if (failure !== undefined) {
      chunk += render(failure);
      inChunk++;
    }
    if (inChunk >= SERIES_PER_CHUNK) {
      yield chunk;
      chunk = "";
      inChunk = 0;
    }
  }
  if (chunk !== "") yield chunk;
}

/** The `healthcheck_total` line of a series. */
function totalLines(series: StatusSeries): string {
  return `${series.totalPrefix}${series.count}\n`;
}

/** The cumulative `_bucket` lines (`+Inf` last), `_sum` and `_count` of a series (text format 0.0.4). */
function durationLines(series: StatusSeries): string {
  const { bucketPrefix, buckets } = series;
  let text = "";
  let cumulative = 0;
  for (let slot = 0; slot < BUCKET_SUFFIXES.length; slot++) {
    cumulative += buckets[slot] ?? 0;
    text += `${bucketPrefix}${BUCKET_SUFFIXES[slot]}${cumulative}\n`;
  }
  return `${text}${series.sumPrefix}${formatValue(series.sum)}\n${series.countPrefix}${series.count}\n`;
}

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
