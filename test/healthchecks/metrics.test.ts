import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { HealthcheckMetrics } from "../../src/healthchecks/metrics.js";
import { Exposition } from "../../src/platform/metrics.js";

describe("HealthcheckMetrics", () => {
  it("renders per-check series with the check's labels through prom-client's registry", async () => {
    const registry = new Registry();
    const metrics = new HealthcheckMetrics(registry, new Exposition(), () => 7);
    const series = metrics.series("web", { env: "prod" });
    series.observe(true, 0.003);
    series.observe(true, 0.2);
    series.observe(false, 40);
    metrics.series("other").observe(true, 0.01);
    metrics.observeLateness(0.0004);
    const text = await registry.metrics();
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
    const relabelled = await registry.metrics();
    expect(relabelled).not.toContain('env="prod"');
    metrics.remove("other");
    expect(await registry.metrics()).not.toContain('name="other"');
  });

  it("escapes label values as the text format requires", async () => {
    const registry = new Registry();
    const metrics = new HealthcheckMetrics(registry, new Exposition(), () => 0);
    metrics.series('a "quoted"\\name', { note: "two\nlines" }).observe(true, 1);
    expect(await registry.metrics()).toContain(
      'healthcheck_total{name="a \\"quoted\\"\\\\name",note="two\\nlines",status="success"} 1',
    );
  });

  it("renders thousands of checks without blocking the event loop for the whole scrape", async () => {
    const registry = new Registry();
    const metrics = new HealthcheckMetrics(registry, new Exposition(), () => 0);
    for (let index = 0; index < 5_000; index++) metrics.series(`check-${index}`).observe(true, 0.01);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    const text = await registry.metrics();
    clearInterval(ticker);
    expect(text.match(/^healthcheck_duration_seconds_count\{/gm)).toHaveLength(5_000);
    expect(text.match(/^healthcheck_total\{/gm)).toHaveLength(5_000);
    // The rendering yielded between slices: timers ran during the scrape.
    expect(ticks).toBeGreaterThan(0);
  });
});
