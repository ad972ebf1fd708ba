// Healthchecks benchmark (healthchecks.md §8): 10 000 http checks at a 10 s interval against a local
// HTTP server, run by the real Vigie process (dist/cli.js), scraped every 15 s as a Prometheus
// server would. Prints, beside the targets, the p50/p99 lateness of the runs of the window (from the
// healthcheck_lateness_seconds histogram, scraped at its start and end), the CPU the Vigie process used
// over the window, and the p50/p99 latency of GET /healthcheck/<name> sampled at about 20 requests
// per second during the window. Before that, in this process, the CPU time of rendering the
// per-check metric families of 10 000 checks for one scrape (dist/healthchecks/metrics.js), beside
// prom-client's own registry text as a baseline. Nothing here asserts a timing.
//
// History (healthchecks.md §9.2): the Vigie run happens twice, first with
// `healthchecks.history.retention: 0` (the scheduler alone, the baseline), then with the default
// retention (168h), every result written to SQLite once per second; the second prints its CPU
// beside the first's (target: less than double) and the growth of the history table in the
// window (bytes per row, bytes per second, and the size at the retention against the budget
// retention × rate × 100 bytes). Before both, in this process, the history's storage alone on
// SQLite (and PostgreSQL with BENCH_POSTGRES_URL): CPU per second of results, bytes per row, and
// the time of the status page's queries over a week of one check.
//
//   npm run bench -- healthchecks                  (builds dist first; 60 s windows)
//   BENCH_SECONDS=15 npm run bench -- healthchecks (a quicker look)
//   BENCH_CHECKS=2000 ...                          (fewer checks)
//   BENCH_SCRAPE_SECONDS=0 ...                     (no scrape of /metrics during the window; default 15 s)
//   BENCH_HISTORY=off ...                          (only the scheduler alone; `on`: only with history)
//   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres ...  (history storage on PostgreSQL
//                                                  too, in a temporary database; VIGIE_TEST_POSTGRES_URL works)
//   BENCH_VIGIE_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" ...  (NODE_OPTIONS of the Vigie process)
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { cpuSeconds, fmt, root, startVigie } from "./lib/vigie.mjs";

const { HealthcheckMetrics } = await import(join(root, "dist/healthchecks/metrics.js"));
const { createMetricsRegistry, Exposition, installHttpMetrics } = await import(join(root, "dist/platform/metrics.js"));
const { ResultHistory } = await import(join(root, "dist/healthchecks/history.js"));
const { healthcheckMigrations } = await import(join(root, "dist/healthchecks/storage.js"));
const { openDatabase, platformMigrations } = await import(join(root, "dist/platform/database.js"));
const requireFromRoot = createRequire(join(root, "package.json"));
const SQLite = requireFromRoot("better-sqlite3");
const pg = requireFromRoot("pg");
// Resolved from the repository as dist resolves it: the same module instance as the database's.
const { sql } = await import("kysely");

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
// Which Vigie runs: `off` (history retention 0: the scheduler alone), `on` (default retention), `both`.
const HISTORY_RUNS = process.env.BENCH_HISTORY ?? "both";
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL || process.env.VIGIE_TEST_POSTGRES_URL || undefined;
// healthchecks.history.retention by default (healthchecks.md §9.2), and the budget of a stored result.
const RETENTION_SECONDS = 168 * 3600;
const BUDGET_BYTES_PER_ROW = 100;
// Simulated seconds of 1 000 results each written by the in-process storage measurement.
const STORAGE_SECONDS = 120;

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

/**
 * In this process, the history's storage alone (dist/healthchecks/history.js) on a fresh SQLite
 * file, and on PostgreSQL when a URL is given: STORAGE_SECONDS seconds of 1 000 results of 10 000
 * checks, recorded and written as the server does (one write per second), then the bytes per row
 * and the time of the status page's queries over a check with a week of results every 10 s (its
 * rows written together, so on PostgreSQL they are closer in the heap than in production, where
 * 10 000 checks interleave).
 */
async function measureHistoryStorage() {
  console.log(
    `history storage, in process: ${STORAGE_SECONDS} s of 1 000 results/s (10 000 checks at 10 s), one write per second`,
  );
  const targets = [{ kind: "sqlite" }];
  if (POSTGRES_URL !== undefined) targets.push({ kind: "postgres" });
  for (const { kind } of targets) {
    const place = await temporaryDatabase(kind);
    const database = await openDatabase(place.url, { ...platformMigrations, ...healthcheckMigrations });
    const logger = { warn() {}, error() {}, info() {}, debug() {} };
    const history = new ResultHistory(database, { retentionMs: RETENTION_SECONDS * 1000, logger });
    try {
      const base = Date.now() - STORAGE_SECONDS * 1000;
      const result = (name, time, success, duration) => ({
        name,
        success,
        timestamp: new Date(time).toISOString(),
        message: success ? "success" : "HTTP request failed: connect ECONNREFUSED 127.0.0.1:9",
        duration,
      });
      const perSecond = [];
      for (let second = 0; second < STORAGE_SECONDS; second++) {
        const { ms } = await cpuOf(async () => {
          for (let index = 0; index < 1_000; index++) {
            const check = (second % 10) * 1_000 + index;
            history.record(
              `c${check}`,
              result(`c${check}`, base + second * 1_000 + index, check % 97 !== 0, 1.5 + (index % 40)),
            );
          }
          await history.flush();
        });
        // The first ten seconds create the ids of the 10 000 names.
        if (second >= 10) perSecond.push(ms);
      }
      const size = await historyBytes(database);
      const growth = size.bytes / size.rows;
      console.log(
        `  ${kind}: ${median(perSecond).toFixed(1)} ms CPU per second of results (record + write, median${kind === "postgres" ? "; PostgreSQL's own CPU not counted" : ""}); ${fmt(size.rows)} rows, ${growth.toFixed(1)} bytes per row   budget ${BUDGET_BYTES_PER_ROW}   ${growth < BUDGET_BYTES_PER_ROW ? "ok" : "MISSED"}`,
      );

      // A week of one check every 10 s, 1 % failures in runs of 3.
      const week = 7 * 86_400;
      const now = Date.now();
      for (let step = week / 10; step >= 1; step--) {
        const time = now - step * 10_000;
        history.record("week", result("week", time, step % 300 > 2, 20 + (step % 30)));
        if (step % 5_000 === 0) await history.flush();
      }
      await history.flush();
      // PostgreSQL plans from statistics, which autovacuum gathers within a minute of such writes;
      // without them it would scan and sort where the primary key's order serves.
      if (kind === "postgres") await sql`analyze healthcheck_history`.execute(database.kysely);
      const timings = [];
      for (const [label, query] of [
        ["uptime (4 periods, incidents)", () => history.uptime("week", now)],
        ["list (limit 100)", () => history.list("week", { limit: 100 })],
        ["daily (90 days)", () => history.daily(["week"], 90, now)],
        ["responseTimes (24 h, 96 slices)", () => history.responseTimes("week", now - 86_400_000, now)],
        ["stateSince", () => history.stateSince("week", now)],
      ]) {
        const times = [];
        for (let run = 0; run <= 5; run++) {
          const started = performance.now();
          await query();
          if (run > 0) times.push(performance.now() - started);
        }
        timings.push(`${label} ${median(times).toFixed(1)} ms`);
      }
      console.log(
        `  ${kind}, queries over ${fmt(week / 10)} results of one check (median of 5): ${timings.join(", ")}`,
      );
    } finally {
      await history.close();
      await database.close();
      await place.drop();
    }
  }
}

/** A fresh database of `kind`: a SQLite file in a temporary directory, or a PostgreSQL database. */
async function temporaryDatabase(kind) {
  if (kind === "sqlite") {
    const directory = join(tmpdir(), `vigie-bench-history-${randomBytes(4).toString("hex")}`);
    return {
      url: `sqlite:${join(directory, "vigie.db")}`,
      drop: async () => rmSync(directory, { recursive: true, force: true }),
    };
  }
  const name = `vigie_bench_${randomBytes(6).toString("hex")}`;
  const admin = async (statement) => {
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** Rows of healthcheck_history and the bytes of its table and index (SQLite: dbstat; PostgreSQL: all forks). */
async function historyBytes(database) {
  const rows = Number((await sql`select count(*) as n from healthcheck_history`.execute(database.kysely)).rows[0].n);
  const bytes =
    database.dialect === "sqlite"
      ? (await sql`select sum(pgsize) as b from dbstat where name = 'healthcheck_history'`.execute(database.kysely))
          .rows[0].b
      : (await sql`select pg_total_relation_size('healthcheck_history') as b`.execute(database.kysely)).rows[0].b;
  return { rows, bytes: Number(bytes) };
}

/**
 * The history table of a running Vigie's SQLite file, read through a read-only connection of this
 * process (WAL mode lets it read beside the writer): rows and bytes of its B-tree (dbstat).
 */
function sqliteHistorySize(file) {
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("select count(*) as n from healthcheck_history").get().n;
    const bytes = db.prepare("select sum(pgsize) as b from dbstat where name = 'healthcheck_history'").get().b ?? 0;
    return { rows, bytes };
  } finally {
    db.close();
  }
}

/**
 * Runs the real Vigie with CHECKS http checks against `target` for the window and prints its
 * figures. `history: false` sets `healthchecks.history.retention: 0` (the scheduler alone).
 * @returns `{ cores, historyGrowth }`, the latter (rows, bytes, seconds of the window) with history
 */
async function runVigie(target, { history }) {
  const vigie = await startVigie({
    yaml: `healthchecks:\n  min-interval: 1s\n${history ? "" : "  history:\n    retention: 0s\n"}`,
    // 10 000 definitions in one bulk body are over the default 1 MiB.
    http: { "body-limit": "16MiB" },
    env: process.env.BENCH_VIGIE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_VIGIE_NODE_OPTIONS } : {},
  });
  const databaseFile = join(vigie.directory, "vigie.db");
  const agent = new Agent({ connections: 1 });
  let scraper;
  console.log(
    history ? "-- with history (retention 168h, SQLite) --" : "-- the scheduler alone (history retention 0) --",
  );
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
    const historyBefore = history ? sqliteHistorySize(databaseFile) : undefined;
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
    const historyAfter = history ? sqliteHistorySize(databaseFile) : undefined;
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
    return {
      cores,
      historyGrowth:
        historyBefore === undefined || historyAfter === undefined
          ? undefined
          : {
              rows: historyAfter.rows - historyBefore.rows,
              bytes: historyAfter.bytes - historyBefore.bytes,
              totalRows: historyAfter.rows,
              totalBytes: historyAfter.bytes,
              seconds: elapsed,
            },
    };
  } finally {
    await scraper?.stop();
    await agent.close();
    await vigie.stop();
    rmSync(vigie.directory, { recursive: true, force: true });
  }
}

/** The history line: CPU with history against the scheduler alone, and the growth of the table. */
function printHistoryComparison(off, on) {
  const verdict = (ok) => (ok ? "ok" : "MISSED");
  console.log("-- history on versus off --");
  if (off !== undefined && on !== undefined) {
    const ratio = on.cores / off.cores;
    console.log(
      `CPU with history: ${on.cores.toFixed(3)} cores against ${off.cores.toFixed(3)} for the scheduler alone (x${ratio.toFixed(2)}, +${((on.cores - off.cores) * 1000).toFixed(0)} ms CPU per second)   target < x2   ${verdict(ratio < 2)}`,
    );
  }
  const growth = on?.historyGrowth;
  if (growth !== undefined && growth.rows > 0) {
    const rate = growth.rows / growth.seconds;
    const bytesPerSecond = growth.bytes / growth.seconds;
    const perRow = growth.totalBytes / growth.totalRows;
    const atRetention = perRow * rate * RETENTION_SECONDS;
    const budget = BUDGET_BYTES_PER_ROW * rate * RETENTION_SECONDS;
    console.log(
      `database growth: ${fmt(bytesPerSecond)} bytes/s for ${fmt(rate)} results/s (${fmt(growth.rows)} rows, ${fmt(growth.bytes)} bytes in the window); ${perRow.toFixed(1)} bytes per row over ${fmt(growth.totalRows)} rows`,
    );
    console.log(
      `at the retention (168h): ${(atRetention / 1e9).toFixed(1)} GB   budget retention x rate x 100 bytes = ${(budget / 1e9).toFixed(1)} GB   ${verdict(atRetention < budget)}`,
    );
  }
}

async function main() {
  await measureRendering();
  await measureScrapes();
  await measureHistoryStorage();
  const target = await startTarget();
  try {
    const off = HISTORY_RUNS === "on" ? undefined : await runVigie(target, { history: false });
    const on = HISTORY_RUNS === "off" ? undefined : await runVigie(target, { history: true });
    printHistoryComparison(off, on);
  } finally {
    target.child.kill("SIGTERM");
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
