import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { HealthcheckMetrics, SERIES_PER_CHUNK } from "../../src/healthchecks/metrics.js";
import { Exposition } from "../../src/platform/metrics.js";

/** The chunks the per-check families add to a scrape. */
async function chunks(exposition: Exposition): Promise<string[]> {
  const all: string[] = [];
  for await (const chunk of exposition.chunks()) all.push(chunk);
  return all;
}

/** The whole text of a scrape, as `GET /metrics` serves it: the registry's, then the exposition's. */
async function scrape(registry: Registry, exposition: Exposition): Promise<string> {
  return (await registry.metrics()) + (await chunks(exposition)).join("");
}

const LATENESS_LE = [
  "0.0005",
  "0.001",
  "0.002",
  "0.003",
  "0.005",
  "0.0075",
  "0.01",
  "0.015",
  "0.02",
  "0.03",
  "0.05",
  "0.075",
  "0.1",
  "0.2",
  "0.5",
  "1",
  "2",
  "5",
  "10",
  "+Inf",
];

/** The text of `healthcheck_lateness_seconds` before any run. */
const LATENESS_AT_ZERO = [
  "# HELP healthcheck_lateness_seconds How late scheduled healthcheck runs started compared with their schedule, in seconds.",
  "# TYPE healthcheck_lateness_seconds histogram",
  ...LATENESS_LE.map((le) => `healthcheck_lateness_seconds_bucket{le="${le}"} 0`),
  "healthcheck_lateness_seconds_sum 0",
  "healthcheck_lateness_seconds_count 0",
  "",
].join("\n");

const LE = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "+Inf"];

/** The 13 `_bucket` lines of a series, given its cumulative counts in the order of `LE`. */
function bucketLines(labels: string, cumulative: readonly number[]): string[] {
  expect(cumulative).toHaveLength(LE.length);
  return LE.map((le, slot) => `healthcheck_duration_seconds_bucket{${labels},le="${le}"} ${cumulative[slot]}`);
}

describe("HealthcheckMetrics", () => {
  it("renders per-check series with the check's labels in a scrape", async () => {
    const registry = new Registry();
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(registry, exposition, () => 7);
    const series = metrics.series("web", { env: "prod" });
    series.observe(true, 0.003);
    series.observe(true, 0.2);
    series.observe(false, 40);
    metrics.series("other").observe(true, 0.01);
    metrics.observeLateness(0.0004);
    const text = await scrape(registry, exposition);
    expect(text).toContain('healthcheck_total{name="web",env="prod",status="success"} 2');
    expect(text).toContain('healthcheck_total{name="web",env="prod",status="failure"} 1');
    expect(text).toContain('healthcheck_total{name="other",status="success"} 1');
    const web = (status: string) => `name="web",env="prod",status="${status}"`;
    expect(text).toContain(
      [
        "# HELP healthcheck_duration_seconds Execution time of healthchecks in seconds, by check name and status (success, failure).",
        "# TYPE healthcheck_duration_seconds histogram",
        `healthcheck_duration_seconds_bucket{${web("success")},le="0.005"} 1`,
        ...[0.01, 0.025, 0.05, 0.1].map((le) => `healthcheck_duration_seconds_bucket{${web("success")},le="${le}"} 1`),
        ...[0.25, 0.5, 1, 2.5, 5, 10, 30, "+Inf"].map(
          (le) => `healthcheck_duration_seconds_bucket{${web("success")},le="${le}"} 2`,
        ),
        `healthcheck_duration_seconds_sum{${web("success")}} 0.203`,
        `healthcheck_duration_seconds_count{${web("success")}} 2`,
        `healthcheck_duration_seconds_bucket{${web("failure")},le="0.005"} 0`,
      ].join("\n"),
    );
    expect(text).toContain(`healthcheck_duration_seconds_bucket{${web("failure")},le="30"} 0`);
    expect(text).toContain(`healthcheck_duration_seconds_bucket{${web("failure")},le="+Inf"} 1`);
    expect(text).toContain(`healthcheck_duration_seconds_count{${web("failure")}} 1\n`);
    expect(text).toContain("healthcheck_scheduled 7");
    expect(text).toContain('healthcheck_lateness_seconds_bucket{le="0.0005"} 1');
    expect(text).toContain("# TYPE healthcheck_total counter");
    // No series for a status never seen.
    expect(text).not.toContain('name="other",status="failure"');

    // Same labels: same series; new labels: a new series replacing the old one.
    expect(metrics.series("web", { env: "prod" })).toBe(series);
    metrics.series("web", { env: "staging" });
    const relabelled = await scrape(registry, exposition);
    expect(relabelled).not.toContain('env="prod"');
    metrics.remove("other");
    expect(await scrape(registry, exposition)).not.toContain('name="other"');
  });

  it("renders the exact exposition text of the per-check families, outside prom-client's registry", async () => {
    const registry = new Registry();
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(registry, exposition, () => 2);
    const web = metrics.series("web", { env: "prod", note: 'say "hi"\\\nbye' });
    web.observe(true, 0.003);
    web.observe(true, 0.2);
    web.observe(false, 40);
    metrics.series("db", { team: "ops" }).observe(false, 0.05);

    const webSuccess = 'name="web",env="prod",note="say \\"hi\\"\\\\\\nbye",status="success"';
    const webFailure = 'name="web",env="prod",note="say \\"hi\\"\\\\\\nbye",status="failure"';
    const dbFailure = 'name="db",team="ops",status="failure"';
    expect((await chunks(exposition)).join("")).toBe(
      [
        "# HELP healthcheck_total Healthcheck executions, by check name and status (success, failure).",
        "# TYPE healthcheck_total counter",
        `healthcheck_total{${webSuccess}} 2`,
        `healthcheck_total{${webFailure}} 1`,
        `healthcheck_total{${dbFailure}} 1`,
        "# HELP healthcheck_duration_seconds Execution time of healthchecks in seconds, by check name and status (success, failure).",
        "# TYPE healthcheck_duration_seconds histogram",
        ...bucketLines(webSuccess, [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2]),
        `healthcheck_duration_seconds_sum{${webSuccess}} 0.203`,
        `healthcheck_duration_seconds_count{${webSuccess}} 2`,
        ...bucketLines(webFailure, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
        `healthcheck_duration_seconds_sum{${webFailure}} 40`,
        `healthcheck_duration_seconds_count{${webFailure}} 1`,
        // 0.05 is not above the bound 0.05: `le` is "less than or equal".
        ...bucketLines(dbFailure, [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
        `healthcheck_duration_seconds_sum{${dbFailure}} 0.05`,
        `healthcheck_duration_seconds_count{${dbFailure}} 1`,
        "",
      ].join("\n") + LATENESS_AT_ZERO,
    );
    // prom-client's registry holds only its own metric: nothing smuggled through it.
    const registryText = await registry.metrics();
    expect(registryText).not.toContain("healthcheck_total");
    expect(registryText).not.toContain("healthcheck_duration_seconds");
    expect(registryText).not.toContain("healthcheck_lateness_seconds");
    expect(registryText).toContain("healthcheck_scheduled 2");
    expect(registry.getMetricsAsArray().map((metric) => metric.name)).toEqual(["healthcheck_scheduled"]);
  });

  it("renders the family headers without series, and removes a deleted or relabelled check's series", async () => {
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(new Registry(), exposition, () => 0);
    const headers =
      [
        "# HELP healthcheck_total Healthcheck executions, by check name and status (success, failure).",
        "# TYPE healthcheck_total counter",
        "# HELP healthcheck_duration_seconds Execution time of healthchecks in seconds, by check name and status (success, failure).",
        "# TYPE healthcheck_duration_seconds histogram",
        "",
      ].join("\n") + LATENESS_AT_ZERO;
    expect((await chunks(exposition)).join("")).toBe(headers);

    metrics.series("gone", { team: "ops" }).observe(true, 1);
    metrics.series("kept").observe(true, 1);
    metrics.remove("gone");
    metrics.remove("never-existed");
    let text = (await chunks(exposition)).join("");
    expect(text).not.toContain('name="gone"');
    expect(text).toContain('healthcheck_total{name="kept",status="success"} 1\n');
    expect(text.match(/^healthcheck_\w+\{name="kept",/gm)).toHaveLength(16);

    // A label change is a new series: it starts from zero, the old one is gone.
    metrics.series("kept", { team: "dev" }).observe(false, 2);
    text = (await chunks(exposition)).join("");
    expect(text).not.toContain('name="kept",status=');
    expect(text).toContain('healthcheck_total{name="kept",team="dev",status="failure"} 1\n');
    expect(text).not.toContain('name="kept",team="dev",status="success"');

    // A check deleted and added again comes back once, without its old counts.
    metrics.remove("kept");
    metrics.series("kept").observe(true, 0.5);
    text = (await chunks(exposition)).join("");
    expect(text).toContain('healthcheck_total{name="kept",status="success"} 1\n');
    expect(text.match(/^healthcheck_total\{/gm)).toHaveLength(1);
    metrics.remove("kept");
    expect((await chunks(exposition)).join("")).toBe(headers);
  });

  it("renders the lateness exactly as prom-client's histogram of the same name and bounds", async () => {
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(new Registry(), exposition, () => 0);
    const oracle = new Registry();
    const histogram = new Histogram({
      name: "healthcheck_lateness_seconds",
      help: "How late scheduled healthcheck runs started compared with their schedule, in seconds.",
      buckets: LATENESS_LE.slice(0, -1).map(Number),
      registers: [oracle],
    });
    // On a bound (`le` is "less than or equal"), between bounds, above every bound, and zero.
    for (const seconds of [0, 0.0005, 0.0004, 0.00051, 0.0075, 0.012, 0.1, 0.3, 10, 12.5, 0.0021, 0.0021]) {
      metrics.observeLateness(seconds);
      histogram.observe(seconds);
    }
    const text = (await chunks(exposition)).join("");
    const lateness = text.slice(text.indexOf("# HELP healthcheck_lateness_seconds"));
    expect(lateness).toBe(await oracle.metrics());
    expect(lateness).toContain('healthcheck_lateness_seconds_bucket{le="0.0005"} 3\n');
    expect(lateness).toContain('healthcheck_lateness_seconds_bucket{le="10"} 11\n');
    expect(lateness).toContain('healthcheck_lateness_seconds_bucket{le="+Inf"} 12\n');
  });

  it("spells non-finite sums as the text format does", async () => {
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(new Registry(), exposition, () => 0);
    metrics.series("up").observe(true, Number.POSITIVE_INFINITY);
    metrics.series("down").observe(false, Number.NEGATIVE_INFINITY);
    const text = (await chunks(exposition)).join("");
    expect(text).toContain('healthcheck_duration_seconds_sum{name="up",status="success"} +Inf\n');
    expect(text).toContain('healthcheck_duration_seconds_bucket{name="up",status="success",le="+Inf"} 1\n');
    expect(text).toContain('healthcheck_duration_seconds_sum{name="down",status="failure"} -Inf\n');
    metrics.series("up").observe(true, Number.NEGATIVE_INFINITY);
    expect((await chunks(exposition)).join("")).toContain(
      'healthcheck_duration_seconds_sum{name="up",status="success"} NaN\n',
    );
  });

  it("escapes label values as the text format requires", async () => {
    const registry = new Registry();
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(registry, exposition, () => 0);
    metrics.series('a "quoted"\\name', { note: "two\nlines" }).observe(true, 1);
    expect(await scrape(registry, exposition)).toContain(
      'healthcheck_total{name="a \\"quoted\\"\\\\name",note="two\\nlines",status="success"} 1',
    );
  });

  it("renders thousands of checks without blocking the event loop for the whole scrape", async () => {
    const registry = new Registry();
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(registry, exposition, () => 0);
    for (let index = 0; index < 5_000; index++) metrics.series(`check-${index}`).observe(true, 0.01);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    const text = await scrape(registry, exposition);
    clearInterval(ticker);
    expect(text.match(/^healthcheck_duration_seconds_count\{/gm)).toHaveLength(5_000);
    expect(text.match(/^healthcheck_total\{/gm)).toHaveLength(5_000);
    // The rendering yielded between slices: timers ran during the scrape.
    expect(ticks).toBeGreaterThan(0);
  });

  it("renders many series in chunks of whole lines and at most SERIES_PER_CHUNK series each", async () => {
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(new Registry(), exposition, () => 0);
    const checks = 1_000;
    for (let index = 0; index < checks; index++) {
      const series = metrics.series(`check-${index}`, { team: `team-${index % 7}` });
      series.observe(true, 0.01);
      series.observe(false, 3);
    }
    const all = await chunks(exposition);
    // 2 000 series per family, at most SERIES_PER_CHUNK in each chunk.
    expect(SERIES_PER_CHUNK).toBeGreaterThan(0);
    expect(SERIES_PER_CHUNK).toBeLessThanOrEqual(500);
    expect(all.length).toBeGreaterThan(2);
    expect(all.length).toBeGreaterThanOrEqual(2 * Math.ceil((2 * checks) / SERIES_PER_CHUNK));
    for (const chunk of all) {
      expect(chunk.endsWith("\n")).toBe(true);
      expect((chunk.match(/^healthcheck_total\{/gm) ?? []).length).toBeLessThanOrEqual(SERIES_PER_CHUNK);
      expect((chunk.match(/^healthcheck_duration_seconds_count\{/gm) ?? []).length).toBeLessThanOrEqual(
        SERIES_PER_CHUNK,
      );
    }
    const text = all.join("");
    expect(text.match(/^healthcheck_total\{/gm)).toHaveLength(2 * checks);
    expect(text.match(/^healthcheck_duration_seconds_bucket\{/gm)).toHaveLength(2 * checks * LE.length);
    expect(text.match(/^# (HELP|TYPE) /gm)).toHaveLength(6);
  });

  it("renders one scrape from the checks present when it starts", async () => {
    const exposition = new Exposition();
    const metrics = new HealthcheckMetrics(new Registry(), exposition, () => 0);
    for (let index = 0; index < 2 * SERIES_PER_CHUNK; index++) metrics.series(`check-${index}`).observe(true, 0.01);
    const all: string[] = [];
    for await (const chunk of exposition.chunks()) {
      // Between two chunks, check-0 (already rendered) is deleted and added again.
      if (all.length === 0) {
        metrics.remove("check-0");
        metrics.series("check-0").observe(true, 0.02);
      }
      all.push(chunk);
    }
    const text = all.join("");
    expect(text.match(/^healthcheck_total\{name="check-0",/gm)).toHaveLength(1);
    expect(text.match(/^healthcheck_duration_seconds_count\{name="check-0",/gm)).toHaveLength(1);
  });
});
