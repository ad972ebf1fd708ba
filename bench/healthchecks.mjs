// Healthchecks benchmark (healthchecks.md §8): 10 000 http checks at a 10 s interval against a local
// HTTP server, run by the real Vigie process (dist/cli.js). Prints, beside the targets, the p50/p99
// lateness of every run since the registration (from the healthcheck_lateness_seconds histogram),
// the CPU the Vigie process used over the window, and the p50/p99 latency of GET
// /healthcheck/<name> sampled at about 20 requests per second during the window. Nothing here
// asserts a timing.
//
//   npm run bench -- healthchecks                  (builds dist first; 60 s window)
//   BENCH_SECONDS=15 npm run bench -- healthchecks (a quicker look)
//   BENCH_CHECKS=2000 ...                          (fewer checks)
//   BENCH_SCRAPE_SECONDS=15 ...                    (also scrape /metrics during the window)
//   BENCH_VIGIE_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" ...  (NODE_OPTIONS of the Vigie process)
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { Agent, request } from "undici";
import { cpuSeconds, startVigie } from "./lib/vigie.mjs";

const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
const INTERVAL = "10s";
// Every check has run once after the first-run jitter (at most 5 s) and a little more.
const WARM_UP_SECONDS = 12;
const API_SAMPLES_PER_SECOND = 20;
// 0: no scrape during the window (the figures of healthchecks.md §8); 15: as a Prometheus server would.
const SCRAPE_SECONDS = Number(process.env.BENCH_SCRAPE_SECONDS ?? 0);

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

async function main() {
  const target = await startTarget();
  const vigie = await startVigie({
    yaml: "healthchecks:\n  min-interval: 1s\n",
    // 10 000 definitions in one bulk body are over the default 1 MiB.
    http: { "body-limit": "16MiB" },
    env: process.env.BENCH_VIGIE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_VIGIE_NODE_OPTIONS } : {},
  });
  const agent = new Agent({ connections: 1 });
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

    // No scrape before the window: rendering the metrics of 10 000 checks takes a few hundred
    // milliseconds of the event loop, and the runs it delays would land in the window. Lateness is
    // therefore read once, at the end, over every run since the registration.
    const cpuBefore = cpuSeconds(vigie.child.pid);
    const started = performance.now();
    const latencies = [];
    const end = started + WINDOW_SECONDS * 1000;
    // Optionally scrape /metrics periodically, as Prometheus would, on another connection.
    const scrapes = [];
    const scraper =
      SCRAPE_SECONDS > 0
        ? setInterval(() => {
            const begun = performance.now();
            fetch(`${vigie.base}/metrics`)
              .then((response) => response.text())
              .then(() => scrapes.push(performance.now() - begun));
          }, SCRAPE_SECONDS * 1000)
        : undefined;
    while (performance.now() < end) {
      const name = `c${Math.floor(Math.random() * CHECKS)}`;
      const sent = performance.now();
      const response = await request(`${vigie.base}/healthcheck/${name}`, { dispatcher: agent });
      await response.body.text();
      latencies.push((performance.now() - sent) / 1000);
      if (response.statusCode !== 200) throw new Error(`GET /healthcheck/${name} answered ${response.statusCode}`);
      await sleep(Math.max(0, 1000 / API_SAMPLES_PER_SECOND - (performance.now() - sent)));
    }
    clearInterval(scraper);
    const elapsed = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(vigie.child.pid) - cpuBefore;
    const scraping = performance.now();
    const after = await scrape(vigie.base);
    const scrapeMs = performance.now() - scraping;
    // The scrape's text is made when it starts.
    const sinceRegistration = (scraping - registered) / 1000;

    const p50 = histogramQuantile(0.5, after);
    const p99 = histogramQuantile(0.99, after);
    latencies.sort((a, b) => a - b);
    const apiP99 = percentile(latencies, 0.99);
    const cores = cpu / elapsed;
    // Each check first runs after a jitter uniform in [0, 5 s), then every 10 s.
    let perCheck = 0;
    for (let step = 0; step < 1_000; step++) perCheck += Math.floor((sinceRegistration - (step + 0.5) / 200) / 10) + 1;
    const expectedRuns = Math.round((CHECKS * perCheck) / 1_000);
    const verdict = (ok) => (ok ? "ok" : "MISSED");
    console.log(
      `${CHECKS} http checks at ${INTERVAL}; window ${elapsed.toFixed(1)} s after ${WARM_UP_SECONDS} s of warm-up`,
    );
    console.log(
      `runs since registration: ${after.count} (about ${expectedRuns} expected), ${after.totals.failure} failures`,
    );
    console.log(`lateness p50:   ${milliseconds(p50)}`);
    console.log(`lateness p99:   ${milliseconds(p99)}   target < 100 ms   ${verdict(p99 < 0.1)}`);
    console.log(
      `CPU of vigie:   ${cores.toFixed(3)} cores (${cpu.toFixed(2)} s)   target < 1 core   ${verdict(cores < 1)}`,
    );
    console.log(
      `API p50 / p99:  ${milliseconds(percentile(latencies, 0.5))} / ${milliseconds(apiP99)} over ${latencies.length} GET /healthcheck/<name>   target p99 < 5 ms   ${verdict(apiP99 < 0.005)}`,
    );
    if (scrapes.length > 0) {
      console.log(
        `scrapes of /metrics every ${SCRAPE_SECONDS} s during the window: ${scrapes.map((ms) => ms.toFixed(0)).join(", ")} ms`,
      );
    }
    console.log(`(one scrape of /metrics, after the window: ${scrapeMs.toFixed(0)} ms)`);
  } finally {
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
