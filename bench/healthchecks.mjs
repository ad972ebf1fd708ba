// Healthchecks benchmark (healthchecks.md §8): 10 000 http checks at a 10 s interval against a local
// HTTP server, run by the real Vigie process (dist/cli.js), scraped every 15 s as a Prometheus
// server would. Prints, beside the targets, the p50/p99 lateness of the runs of the window (from the
// healthcheck_lateness_seconds histogram, scraped at its start and end), the CPU the Vigie process used
// over the window, and the p50/p99 latency of GET /healthcheck/<name> sampled at about 20 requests
// per second during the window. Before that, in this process, the CPU time of rendering the
// per-check metric families of 10 000 checks for one scrape (dist/healthchecks/metrics.js), beside
// prom-client's own registry text as a baseline. Nothing here asserts a timing.
//
//   npm run bench -- healthchecks                  (builds dist first; 60 s window)
//   BENCH_SECONDS=15 npm run bench -- healthchecks (a quicker look)
//   BENCH_CHECKS=2000 ...                          (fewer checks)
//   BENCH_SCRAPE_SECONDS=0 ...                     (no scrape of /metrics during the window; default 15 s)
//   BENCH_VIGIE_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" ...  (NODE_OPTIONS of the Vigie process)
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Agent, request } from "undici";
import { cpuSeconds, root, startVigie } from "./lib/vigie.mjs";

const { HealthcheckMetrics } = await import(join(root, "dist/healthchecks/metrics.js"));
const { createMetricsRegistry, Exposition, installHttpMetrics } = await import(join(root, "dist/platform/metrics.js"));

const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
const INTERVAL = "10s";
// Every check has run once (first runs are spread over the first interval, 10 s) and a little more.
const WARM_UP_SECONDS = 12;
const API_SAMPLES_PER_SECOND = 20;
// Seconds between two scrapes of /metrics during the window, as a Prometheus server would; 0: none.
const SCRAPE_SECONDS = Number(process.env.BENCH_SCRAPE_SECONDS ?? 15);
// Renderings of the metrics measured in process; the median is printed.
const RENDER_RUNS = 9;

const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));

// The target runs in its own process so that its CPU does not count as Vigie's.
const TARGET = `
import { createServer } from "node:http";
const server = createServer((request, response) => response.end("ok"));
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

function startTarget() {
  const child = spawn(process.execPath, ["--input-type=module", "-e", TARGET], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((done, fail) => {
    child.once("exit", (code) => fail(new Error(`target server exited with ${code}`)));
    child.stdout.once("data", (chunk) => done({ child, port: Number(String(chunk).trim()) }));
  });
}

// The scraper runs in its own process too, so that reading megabytes of metrics does not delay this
// process's API requests: it fetches <url> every <seconds> s, reads and drops the body, and prints
// one JSON line per scrape, its start and end in milliseconds since the epoch.
const SCRAPER = `
const [url, seconds] = process.argv.slice(1);
const now = () => performance.timeOrigin + performance.now();
setInterval(async () => {
  const begun = now();
  try {
    const response = await fetch(url);
    for await (const _ of response.body);
    console.log(JSON.stringify({ begun, ended: now(), status: response.status }));
  } catch (error) {
    console.error("scrape of /metrics failed: " + error.message);
  }
}, Number(seconds) * 1000);
`;

/**
 * Scrapes `${base}/metrics` every `seconds` s from another process until `stop()`.
 * @returns `{ scrapes, stop() }`: `scrapes` fills with `{ begun, ended, status }` (epoch milliseconds)
 */
function startScraper(base, seconds) {
  const child = spawn(process.execPath, ["--input-type=module", "-e", SCRAPER, `${base}/metrics`, String(seconds)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const scrapes = [];
  let pending = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (text) => {
    pending += text;
    const lines = pending.split("\n");
    pending = lines.pop();
    for (const line of lines) if (line !== "") scrapes.push(JSON.parse(line));
  });
  const exited = new Promise((done) => child.once("exit", done));
  return {
    scrapes,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The cumulative buckets and count of healthcheck_lateness_seconds, and healthcheck_total by status. */
async function scrape(base) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const buckets = [];
  let count = 0;
  const totals = { success: 0, failure: 0 };
  for (const line of text.split("\n")) {
    let match = /^healthcheck_lateness_seconds_bucket\{le="([^"]+)"\} (\S+)$/.exec(line);
    if (match) {
      buckets.push({ le: match[1] === "+Inf" ? Number.POSITIVE_INFINITY : Number(match[1]), count: Number(match[2]) });
      continue;
    }
    match = /^healthcheck_lateness_seconds_count (\S+)$/.exec(line);
    if (match) {
      count = Number(match[1]);
      continue;
    }
    match = /^healthcheck_total\{.*status="(success|failure)".*\} (\S+)$/.exec(line);
    if (match) totals[match[1]] += Number(match[2]);
  }
  return { buckets, count, totals };
}

/** A quantile of a histogram, interpolated linearly inside its bucket (as PromQL's histogram_quantile). */
function histogramQuantile(quantile, histogram) {
  const { buckets } = histogram;
  const total = buckets[buckets.length - 1]?.count ?? 0;
  if (total === 0) return Number.NaN;
  const rank = quantile * total;
  let lower = 0;
  let below = 0;
  for (const bucket of buckets) {
    if (bucket.count >= rank) {
      if (bucket.le === Number.POSITIVE_INFINITY) return lower;
      const inside = bucket.count - below;
      return lower + (bucket.le - lower) * (inside === 0 ? 0 : (rank - below) / inside);
    }
    lower = bucket.le;
    below = bucket.count;
  }
  return lower;
}

function percentile(sorted, quantile) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(quantile * sorted.length) - 1)];
}

const milliseconds = (seconds) => `${(seconds * 1000).toFixed(2)} ms`;

/** CPU milliseconds (user + system) this process spends in `work()`, and what it returns. */
async function cpuOf(work) {
  const before = process.cpuUsage();
  const result = await work();
  const used = process.cpuUsage(before);
  return { ms: (used.user + used.system) / 1000, result };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * In this process: `HealthcheckMetrics` with `CHECKS` checks that each had successes and a failure
 * (two series per family and check), and the CPU time of one scrape's text of the per-check
 * families (rendered and measured in UTF-8 bytes, as the response would encode it), beside the CPU
 * time of prom-client's `registry.metrics()` for the other metrics. Medians of RENDER_RUNS runs
 * after one warm-up run; the longest time between two chunks shows how long the event loop waits.
 */
async function measureRendering() {
  const registry = createMetricsRegistry();
  const exposition = new Exposition();
  const metrics = new HealthcheckMetrics(registry, exposition, () => CHECKS);
  for (let index = 0; index < CHECKS; index++) {
    const series = metrics.series(`c${index}`);
    for (let run = 0; run < 8; run++) series.observe(true, 0.0005 + ((index + run) % 50) / 1000);
    series.observe(false, 5);
    metrics.observeLateness(((index % 20) + 1) / 10_000);
  }
  const exposed = [];
  const chunkCounts = [];
  const longestChunks = [];
  const registryTimes = [];
  let bytes = 0;
  for (let run = 0; run <= RENDER_RUNS; run++) {
    let chunks = 0;
    let longest = 0;
    const rendering = await cpuOf(async () => {
      let total = 0;
      let asked = performance.now();
      for await (const chunk of exposition.chunks()) {
        total += Buffer.byteLength(chunk);
        chunks++;
        longest = Math.max(longest, performance.now() - asked);
        asked = performance.now();
      }
      return total;
    });
    const head = await cpuOf(() => registry.metrics());
    if (run === 0) continue;
    exposed.push(rendering.ms);
    chunkCounts.push(chunks);
    longestChunks.push(longest);
    registryTimes.push(head.ms);
    bytes = rendering.result;
  }
  const verdict = median(exposed) < 100 ? "ok" : "MISSED";
  console.log(`scrape CPU, in process, ${CHECKS} checks with successes and failures (median of ${RENDER_RUNS}):`);
  console.log(
    `  healthcheck_total + healthcheck_duration_seconds: ${median(exposed).toFixed(1)} ms CPU for ${(bytes / 1e6).toFixed(1)} MB in ${median(chunkCounts)} chunks (longest chunk ${median(longestChunks).toFixed(2)} ms)   target < 100 ms for 10 000 checks   ${verdict}   (before this change: 316 ms)`,
  );
  console.log(`  prom-client registry.metrics() (every other metric): ${median(registryTimes).toFixed(1)} ms CPU`);
}

/**
 * In this process, over a real socket: a Fastify app with the platform's `/metrics` and
 * `HealthcheckMetrics` of `CHECKS` checks (one series each, as when every check succeeds, then two
 * each), scraped by a client in another process; prints this process's CPU per whole scrape
 * (render, encoding, socket), median of RENDER_RUNS scrapes.
 */
async function measureScrapes() {
  const { default: Fastify } = await import("fastify");
  for (const statuses of [1, 2]) {
    const app = Fastify();
    const registry = createMetricsRegistry();
    const exposition = new Exposition();
    installHttpMetrics(app, registry, exposition);
    const metrics = new HealthcheckMetrics(registry, exposition, () => CHECKS);
    for (let index = 0; index < CHECKS; index++) {
      const series = metrics.series(`c${index}`);
      series.observe(true, 0.003);
      if (statuses === 2) series.observe(false, 5);
    }
    await app.listen({ host: "127.0.0.1", port: 0 });
    const url = `http://127.0.0.1:${app.server.address().port}/metrics`;
    const client = `fetch(${JSON.stringify(url)}).then((r) => r.arrayBuffer()).then((b) => console.log(b.byteLength))`;
    const times = [];
    let bytes = 0;
    for (let run = 0; run <= RENDER_RUNS; run++) {
      const scrape = await cpuOf(
        () =>
          new Promise((done) => {
            const child = spawn(process.execPath, ["-e", client], { stdio: ["ignore", "pipe", "inherit"] });
            let output = "";
            child.stdout.on("data", (chunk) => {
              output += chunk;
            });
            child.on("exit", () => done(Number(output)));
          }),
      );
      if (run === 0) continue;
      times.push(scrape.ms);
      bytes = scrape.result;
    }
    await app.close();
    const verdict = median(times) < 100 ? "ok" : "MISSED";
    console.log(
      `  whole scrape over HTTP, ${CHECKS * statuses} series (${(bytes / 1e6).toFixed(1)} MB): ${median(times).toFixed(0)} ms of server CPU (render, encoding, socket)   target < 100 ms   ${verdict}`,
    );
  }
}

async function main() {
  await measureRendering();
  await measureScrapes();
  const target = await startTarget();
  const vigie = await startVigie({
    yaml: "healthchecks:\n  min-interval: 1s\n",
    // 10 000 definitions in one bulk body are over the default 1 MiB.
    http: { "body-limit": "16MiB" },
    env: process.env.BENCH_VIGIE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_VIGIE_NODE_OPTIONS } : {},
  });
  const agent = new Agent({ connections: 1 });
  let scraper;
  try {
    const payload = {
      "http-checks": Array.from({ length: CHECKS }, (_, index) => ({
        name: `c${index}`,
        target: "127.0.0.1",
        port: target.port,
        "valid-status": [200],
        interval: INTERVAL,
        timeout: "5s",
      })),
    };
    const body = JSON.stringify(payload);
    const registering = performance.now();
    const bulk = await fetch(`${vigie.base}/healthcheck/bulk`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    if (bulk.status !== 201) throw new Error(`bulk failed: ${bulk.status} ${await bulk.text()}`);
    const registered = performance.now();
    const registrationMs = registered - registering;
    console.log(
      `registered ${CHECKS} http checks at ${INTERVAL} in ${registrationMs.toFixed(0)} ms; warming up ${WARM_UP_SECONDS} s`,
    );
    await sleep(WARM_UP_SECONDS * 1000);

    // Lateness over the window: the difference of two scrapes, at its start and at its end. (The runs
    // since the registration include the burst of the bulk registration and of the first runs.)
    const before = await scrape(vigie.base);
    const cpuBefore = cpuSeconds(vigie.child.pid);
    const started = performance.now();
    const latencies = [];
    const sentAt = [];
    const end = started + WINDOW_SECONDS * 1000;
    // Scrape /metrics periodically, as Prometheus would, from another process.
    scraper = SCRAPE_SECONDS > 0 ? startScraper(vigie.base, SCRAPE_SECONDS) : undefined;
    while (performance.now() < end) {
      const name = `c${Math.floor(Math.random() * CHECKS)}`;
      const sent = performance.now();
      const response = await request(`${vigie.base}/healthcheck/${name}`, { dispatcher: agent });
      await response.body.text();
      latencies.push((performance.now() - sent) / 1000);
      sentAt.push(performance.timeOrigin + sent);
      if (response.statusCode !== 200) throw new Error(`GET /healthcheck/${name} answered ${response.statusCode}`);
      await sleep(Math.max(0, 1000 / API_SAMPLES_PER_SECOND - (performance.now() - sent)));
    }
    await scraper?.stop();
    const scrapes = scraper?.scrapes ?? [];
    const elapsed = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(vigie.child.pid) - cpuBefore;
    const scraping = performance.now();
    const after = await scrape(vigie.base);
    const scrapeMs = performance.now() - scraping;
    // The scrape's text is made when it starts.
    const sinceRegistration = (scraping - registered) / 1000;

    const window = {
      buckets: after.buckets.map((bucket, index) => ({
        le: bucket.le,
        count: bucket.count - (before.buckets[index]?.count ?? 0),
      })),
      count: after.count - before.count,
    };
    const p50 = histogramQuantile(0.5, window);
    const p99 = histogramQuantile(0.99, window);
    const p99Since = histogramQuantile(0.99, after);
    // Requests that overlapped a scrape of /metrics, to tell its effect from the machine's noise.
    const during = [];
    const outside = [];
    latencies.forEach((latency, index) => {
      const sent = sentAt[index];
      const overlaps = scrapes.some(({ begun, ended }) => sent < ended && sent + latency * 1000 > begun);
      (overlaps ? during : outside).push(latency);
    });
    for (const list of [latencies, during, outside]) list.sort((a, b) => a - b);
    const apiP99 = percentile(latencies, 0.99);
    const cores = cpu / elapsed;
    // First runs are spread evenly over [0, 10 s) (a hash of the name), then every 10 s.
    let perCheck = 0;
    for (let step = 0; step < 1_000; step++) perCheck += Math.floor((sinceRegistration - (step + 0.5) / 100) / 10) + 1;
    const expectedRuns = Math.round((CHECKS * perCheck) / 1_000);
    const verdict = (ok) => (ok ? "ok" : "MISSED");
    console.log(
      `${CHECKS} http checks at ${INTERVAL}; window ${elapsed.toFixed(1)} s after ${WARM_UP_SECONDS} s of warm-up`,
    );
    console.log(
      `runs since registration: ${after.count} (about ${expectedRuns} expected), ${after.totals.failure} failures`,
    );
    console.log(`lateness p50:   ${milliseconds(p50)} over the ${window.count} runs of the window`);
    console.log(`lateness p99:   ${milliseconds(p99)}   target < 100 ms   ${verdict(p99 < 0.1)}`);
    console.log(`(lateness p99 since the registration, its burst included: ${milliseconds(p99Since)})`);
    console.log(
      `CPU of vigie:   ${cores.toFixed(3)} cores (${cpu.toFixed(2)} s)   target < 1 core   ${verdict(cores < 1)}`,
    );
    const scrapingNote =
      SCRAPE_SECONDS > 0 ? `while scraping /metrics every ${SCRAPE_SECONDS} s` : "without scraping /metrics";
    console.log(
      `API p50 / p99:  ${milliseconds(percentile(latencies, 0.5))} / ${milliseconds(apiP99)} over ${latencies.length} GET /healthcheck/<name> ${scrapingNote}   target p99 < 5 ms   ${verdict(apiP99 < 0.005)}${SCRAPE_SECONDS === 15 ? "   (before this change: 10 ms)" : ""}`,
    );
    if (scrapes.length > 0) {
      console.log(
        `  of which ${during.length} during a scrape: p50 ${milliseconds(percentile(during, 0.5))}, max ${milliseconds(during.at(-1) ?? Number.NaN)}; the ${outside.length} others: p99 ${milliseconds(percentile(outside, 0.99))}`,
      );
      console.log(
        `scrapes of /metrics every ${SCRAPE_SECONDS} s during the window (wall time of the response): ${scrapes.map(({ begun, ended }) => (ended - begun).toFixed(0)).join(", ")} ms`,
      );
    }
    console.log(`(one scrape of /metrics, after the window: ${scrapeMs.toFixed(0)} ms)`);
  } finally {
    await scraper?.stop();
    await agent.close();
    target.child.kill("SIGTERM");
    await vigie.stop();
    rmSync(vigie.directory, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
