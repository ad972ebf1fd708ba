/**
 * `GET /metrics` of a real server (every module) with healthchecks that ran: the per-check families
 * come through the platform's exposition hook, and the whole answer is valid Prometheus text
 * exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/).
 */
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { VigieServer } from "../../src/server.js";
import { startTestServer } from "../support/server.js";
import { until } from "../support/until.js";
import { type Listening, listen } from "./local-servers.js";

/** The line shape of a sample, as the task states it. */
const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? \S+$/;
/** A sample, strictly: name, optional `{label="value",...}` with escaped values, value. */
const LABEL = String.raw`[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"`;
const STRICT_SAMPLE = new RegExp(String.raw`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:${LABEL}(?:,${LABEL})*,?)?\})? (\S+)$`);
/** A float as Go's ParseFloat reads it, or `NaN` / `+Inf` / `-Inf` (NaN in any case). */
const VALUE = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|nan)$/i;

/**
 * Checks `text` against the text format 0.0.4 and returns the samples by series (`name{labels}`).
 * Asserts: the text ends with a line feed; every non-comment line is a sample (SAMPLE and the
 * stricter STRICT_SAMPLE); HELP and TYPE at most once per family, TYPE before its samples; the
 * samples of a family together after its TYPE; no series twice; a histogram's `+Inf` bucket equal
 * to its `_count`.
 */
function parseExposition(text: string): Map<string, number> {
  expect(text.endsWith("\n")).toBe(true);
  const helps = new Set<string>();
  const types = new Map<string, string>();
  const samples = new Map<string, number>();
  const series = new Set<string>();
  let family: string | undefined;
  for (const line of text.slice(0, -1).split("\n")) {
    if (line === "") continue;
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment !== null) {
      const [, keyword, name, rest] = comment as unknown as [string, string, string, string];
      if (keyword === "HELP") {
        expect(helps.has(name), `HELP ${name} once`).toBe(false);
        helps.add(name);
      } else {
        expect(types.has(name), `TYPE ${name} once`).toBe(false);
        expect(["counter", "gauge", "histogram", "summary", "untyped"]).toContain(rest);
        types.set(name, rest);
        family = name;
      }
      continue;
    }
    if (line.startsWith("#")) continue;
    expect(line).toMatch(SAMPLE);
    const sample = STRICT_SAMPLE.exec(line);
    expect(sample, line).not.toBeNull();
    const [, name, labels = "", value] = sample as unknown as [string, string, string | undefined, string];
    expect(value, line).toMatch(VALUE);
    // The samples of a family come right after its TYPE: a histogram's or summary's with suffixes.
    expect(family, line).toBeDefined();
    const type = types.get(family as string);
    const suffixes =
      type === "histogram" ? ["_bucket", "_sum", "_count"] : type === "summary" ? ["_sum", "_count"] : [];
    expect([family, ...suffixes.map((suffix) => `${family}${suffix}`)], line).toContain(name);
    const key = `${name}${labels}`;
    expect(series.has(canonicalKey(key)), `${key} once`).toBe(false);
    series.add(canonicalKey(key));
    samples.set(key, Number(value.replace(/^\+?Inf$/, "Infinity").replace(/^-Inf$/, "-Infinity")));
  }
  const byCanonical = new Map([...samples].map(([key, value]) => [canonicalKey(key), value]));
  for (const [name, type] of types) {
    if (type !== "histogram") continue;
    for (const [key, count] of samples) {
      if (!key.startsWith(`${name}_count`)) continue;
      const labels = key.slice(`${name}_count`.length);
      const infinity = labels === "" ? '{le="+Inf"}' : `${labels.slice(0, -1)},le="+Inf"}`;
      expect(byCanonical.get(canonicalKey(`${name}_bucket${infinity}`)), key).toBe(count);
    }
  }
  return samples;
}

/** `{b="2",a="1"}` as `{a="1",b="2"}`: the order of labels does not make another series. */
function canonical(labels: string): string {
  return `{${(labels.match(new RegExp(LABEL, "g")) ?? []).sort().join(",")}}`;
}

/** `name{labels}` with its labels in canonical order. */
function canonicalKey(key: string): string {
  const brace = key.indexOf("{");
  return brace < 0 ? `${key}{}` : `${key.slice(0, brace)}${canonical(key.slice(brace))}`;
}

/** A local web server the checks probe: 200 on `/`, 500 on `/fail`. */
let web: Listening;
let server: VigieServer;
beforeAll(async () => {
  web = await listen(
    createServer((request, response) => {
      response.writeHead(request.url === "/fail" ? 500 : 200);
      response.end(request.url === "/fail" ? "broken" : "ok");
    }),
  );
  server = await startTestServer({ config: { healthchecks: { "min-interval": "100ms" } } });
});
afterAll(async () => {
  await server?.close();
  await web?.close();
});

async function metrics(): Promise<{ status: number; type: string | undefined; body: string }> {
  const response = await server.app.inject({ method: "GET", url: "/metrics" });
  return {
    status: response.statusCode,
    type: response.headers["content-type"] as string | undefined,
    body: response.body,
  };
}

async function post(kind: string, body: Record<string, unknown>): Promise<void> {
  const response = await server.app.inject({ method: "POST", url: `/healthcheck/${kind}`, payload: body });
  expect(response.statusCode, response.body).toBe(201);
}

describe("GET /metrics with healthchecks", () => {
  it("serves the per-check families as valid exposition text, escaped, and drops a deleted check", async () => {
    const check = { target: "127.0.0.1", port: web.port, "valid-status": [200], interval: "200ms", timeout: "200ms" };
    await post("http", { ...check, name: "up", labels: { env: "prod", note: 'say "hi"\\\nbye' } });
    await post("http", { ...check, name: 'down "primary" \\ 1', path: "/fail", labels: { team: "ops" } });

    const up = 'name="up",env="prod",note="say \\"hi\\"\\\\\\nbye",status="success"';
    const down = 'name="down \\"primary\\" \\\\ 1",team="ops",status="failure"';
    const answer = await until(async () => {
      const current = await metrics();
      return current.body.includes(`healthcheck_total{${up}} `) && current.body.includes(`healthcheck_total{${down}} `)
        ? current
        : undefined;
    }, "both checks in the metrics");
    expect(answer.status).toBe(200);
    expect(answer.type).toBe("text/plain; version=0.0.4; charset=utf-8");

    const samples = parseExposition(answer.body);
    expect(samples.get(`healthcheck_total{${up}}`)).toBeGreaterThan(0);
    expect(samples.get(`healthcheck_total{${down}}`)).toBeGreaterThan(0);
    expect(samples.get(`healthcheck_duration_seconds_count{${up}}`)).toBeGreaterThan(0);
    expect(samples.get(`healthcheck_duration_seconds_bucket{${down},le="+Inf"}`)).toBeGreaterThan(0);
    expect(samples.get(`healthcheck_duration_seconds_sum{${down}}`)).toBeGreaterThan(0);
    expect(samples.has("healthcheck_scheduled")).toBe(true);
    expect(samples.has('http_requests_total{method="POST",route="/healthcheck/http",status="201"}')).toBe(true);
    // Each family's HELP and TYPE once (parseExposition fails on a second one); both are present.
    for (const family of ["healthcheck_total", "healthcheck_duration_seconds"]) {
      expect(answer.body.match(new RegExp(`^# HELP ${family} `, "gm"))).toHaveLength(1);
      expect(answer.body.match(new RegExp(`^# TYPE ${family} `, "gm"))).toHaveLength(1);
    }
    // They come through the exposition hook, not through prom-client's registry.
    const registryText = await server.context.metrics.metrics();
    expect(registryText).toContain("# TYPE healthcheck_scheduled gauge");
    expect(registryText).not.toContain("healthcheck_total");
    expect(registryText).not.toContain("healthcheck_duration_seconds");

    const deleted = await server.app.inject({
      method: "DELETE",
      url: `/healthcheck/${encodeURIComponent('down "primary" \\ 1')}`,
    });
    expect(deleted.statusCode, deleted.body).toBe(200);
    const after = (await metrics()).body;
    parseExposition(after);
    expect(after).not.toContain('name="down');
    expect(after).toContain(`healthcheck_total{${up}} `);
  });
});
