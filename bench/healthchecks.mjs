// Healthchecks benchmark (docs/benchmarks.md): 10 000 http checks at a 10 s interval, listed in
// the configuration file, against a target in another process (nginx from Debian when installed,
// else a Node server; bench/lib/http-target.mjs), run by the real Vigie process (dist/cli.js).
//
// First the baselines: a bare loop with one undici Pool sending the same 1 000 requests/s to the
// same target with `pool.request()`, reading each body and checking its status; its process CPU over
// the window: once firing the due requests every 1 ms (the previous baseline, shown beside: the gap
// is the cost of the extra wake-ups), then every 10 ms (the baseline of the CPU target, as a
// scheduler waking at most 100 times a second would). Then Vigie: the milliseconds from its start
// to the first answer of GET /healthz; after WARM_UP_SECONDS, its process CPU (utime + stime) over a
// window of the same length with the checks alone, the new connections the target saw in that
// window (target <= 64) and its busiest second against the mean (target <= 1.3x); then API_SECONDS
// of GET /healthcheck/<name> at about 20 requests per second while /metrics is scraped every 15 s
// (p99 < 5 ms); the lateness p50/p99 of the runs of both windows (from
// healthcheck_lateness_seconds, scraped at their start and end; p99 <= 20 ms: the scheduler's 10 ms
// tick and the event loop's delay); the peak RSS (VmHWM; target <= 250 MB); and GET /result of the
// 10 000 results against a bare Fastify route returning the same array, in another process (target:
// at least half its requests/s). Before that, in this process, the CPU time of rendering the
// per-check metric families of 10 000 checks for one scrape beside prom-client's own registry text.
//
// The CPU target (Vigie at most 1.0x the 10 ms loop): one window of either moves by +-30% between
// runs on a loaded machine, so the comparison is repeated: BENCH_ROUNDS rounds (default 3) of the
// windows alternating 10 ms loop, Vigie, 10 ms loop, Vigie, ..., 10 ms loop, a fresh Vigie process
// each round, started and warmed up alike (the other figures come from the first round alone). Each
// Vigie window is read against the mean of the loop windows just before and after it; every round's
// ratio is printed, and the target line reads their median. Nothing here asserts a timing.
//
// History (docs/benchmarks.md): Vigie runs with the default retention (168h, every result written
// to SQLite once per second), then with `healthchecks.history.retention: 0` (the scheduler alone),
// in every round; the CPU of both in the first round and the growth of the history table (bytes per
// row, bytes per second, and the size at the retention against the budget retention × rate × 100
// bytes). Before both, in this process, the history's storage alone on SQLite (and PostgreSQL with
// BENCH_POSTGRES_URL): CPU per second of results, bytes per row, the status page's queries.
//
//   npm run bench -- healthchecks                  (builds dist first; 60 s windows)
//   BENCH_SECONDS=15 npm run bench -- healthchecks (a quicker look)
//   BENCH_ROUNDS=5 ...                             (rounds of the CPU comparison; default 3)
//   BENCH_WARM_UP_SECONDS=45 ...                   (Vigie's warm-up before its CPU window; default 12)
//   BENCH_CHECKS=2000 ...                          (fewer checks)
//   BENCH_TARGET=node ...                          (the Node target even when nginx is installed)
//   BENCH_SCRAPE_SECONDS=0 ...                     (no scrape of /metrics in the API window; default 15 s)
//   BENCH_HISTORY=off ...                          (only the scheduler alone; `on`: only with history)
//   BENCH_PARTS=vigie ...                          (only the process runs; `in-process`: only the rest)
//   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres ...  (history storage on PostgreSQL
//                                                  too, in a temporary database; VIGIE_TEST_POSTGRES_URL works)
//   BENCH_VIGIE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" ...  (node arguments of the Vigie process)
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Agent, request } from "undici";
import { BARE_LOOP } from "./lib/bare-loop.mjs";
import { startTarget } from "./lib/http-target.mjs";
import { temporaryDatabase } from "./lib/temporary-database.mjs";
import { cpuSeconds, fmt, peakRssBytes, root, startVigie } from "./lib/vigie.mjs";

const { HealthcheckMetrics } = await import(join(root, "dist/healthchecks/metrics.js"));
const { createMetricsRegistry, Exposition, installHttpMetrics } = await import(join(root, "dist/platform/metrics.js"));
const { ResultHistory } = await import(join(root, "dist/healthchecks/history.js"));
const { healthcheckMigrations } = await import(join(root, "dist/healthchecks/storage.js"));
const { openDatabase, platformMigrations } = await import(join(root, "dist/platform/database.js"));
const requireFromRoot = createRequire(join(root, "package.json"));
const SQLite = requireFromRoot("better-sqlite3");
// Resolved from the repository as dist resolves it: the same module instance as the database's.
const { sql } = await import("kysely");

const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
const INTERVAL = "10s";
// Every check has run once (first runs are spread over the first interval, 10 s) and a little more.
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 12);
if (!Number.isFinite(WARM_UP_SECONDS) || WARM_UP_SECONDS < 0) {
  throw new Error(`BENCH_WARM_UP_SECONDS must be a number of seconds >= 0, not ${process.env.BENCH_WARM_UP_SECONDS}`);
}
const API_SAMPLES_PER_SECOND = 20;
// Seconds of API requests after the CPU window (the CPU window has the load of the bare loop alone).
const API_SECONDS = Number(process.env.BENCH_API_SECONDS ?? 20);
// Seconds between two scrapes of /metrics during the window, as a Prometheus server would; 0: none.
const SCRAPE_SECONDS = Number(process.env.BENCH_SCRAPE_SECONDS ?? 15);
// Renderings of the metrics measured in process; the median is printed.
const RENDER_RUNS = 9;
// Which Vigie runs: `off` (history retention 0: the scheduler alone), `on` (default retention), `both`.
const HISTORY_RUNS = process.env.BENCH_HISTORY ?? "both";
// Which parts run: `in-process` (metrics rendering, scrapes, history storage) and `vigie` (the
// baseline and the Vigie process runs), comma-separated.
const PARTS = new Set((process.env.BENCH_PARTS ?? "in-process,vigie").split(","));
// Rounds of the CPU comparison (loop, Vigie, loop, Vigie, ..., loop); the target line reads their median.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  throw new Error(`BENCH_ROUNDS must be a whole number >= 1, not ${process.env.BENCH_ROUNDS}`);
}
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL || process.env.VIGIE_TEST_POSTGRES_URL || undefined;
// healthchecks.history.retention's default (docs/configuration.md), and a stored result's budget.
const RETENTION_SECONDS = 168 * 3600;
const BUDGET_BYTES_PER_ROW = 100;
// Simulated seconds of 1 000 results each written by the in-process storage measurement.
const STORAGE_SECONDS = 120;

const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));

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

/** The median: the middle value, or the mean of the two middle values when their count is even. */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

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
    const place = await temporaryDatabase(kind, POSTGRES_URL, root);
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

/** Seconds the bare loop runs before its window, for its connections and JIT to settle. */
const BASELINE_WARM_UP_SECONDS = 5;

/** The tick of the bare loop the CPU target compares with: due requests fired at most 100 times a second. */
const TARGET_TICK_MS = 10;
/** The tick of the previous baseline, run once and shown beside: the gap is the cost of the extra wake-ups. */
const BESIDE_TICK_MS = 1;

/**
 * The CPU of process `pid` over a window of WINDOW_SECONDS starting now.
 * @returns `{ cpu, elapsed, from, to }`: CPU seconds (utime + stime) and wall seconds of the window,
 *   its start and end in epoch milliseconds (for the target's log)
 */
async function cpuWindow(pid) {
  const cpuBefore = cpuSeconds(pid);
  const from = Date.now();
  const started = performance.now();
  await sleep(WINDOW_SECONDS * 1000);
  const cpu = cpuSeconds(pid) - cpuBefore;
  const elapsed = (performance.now() - started) / 1000;
  return { cpu, elapsed, from, to: Date.now() };
}

/**
 * Runs the bare loop at CHECKS / 10 requests per second, firing the due ones every `tickMs`, for
 * the window and measures its CPU and what the target saw; `note` ends its heading (which window).
 * @returns `{ tickMs, cores, target: { requests, newConnections, perSecond } }`
 */
async function runBaseline(target, tickMs, note = "") {
  const rate = CHECKS / 10;
  const args = ["--input-type=module", "-e", BARE_LOOP, target.origin, String(rate), String(tickMs)];
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise((done) => child.once("exit", done));
  try {
    await sleep(BASELINE_WARM_UP_SECONDS * 1000);
    const { cpu, elapsed, from, to } = await cpuWindow(child.pid);
    child.kill("SIGTERM");
    await exited;
    const { failures } = JSON.parse(output);
    await sleep(500);
    const seen = target.stats(from, to);
    console.log(
      `-- baseline: a bare loop, one undici Pool, pool.request(), ${fmt(rate)} requests/s to the target fired every ${tickMs} ms, each body read and its status checked${note} --`,
    );
    console.log(
      `CPU of the ${tickMs} ms loop: ${(cpu / elapsed).toFixed(3)} cores over ${elapsed.toFixed(1)} s; the target saw ${fmt(seen.requests)} requests, ${seen.newConnections} new connections; ${failures} failures`,
    );
    return { tickMs, cores: cpu / elapsed, target: seen };
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

/** The configuration file's healthchecks section: CHECKS http checks of the target, at INTERVAL. */
function checksYaml(target, history) {
  const lines = ["healthchecks:"];
  if (!history) lines.push("  history:", "    retention: 0s");
  lines.push("  http-checks:");
  for (let index = 0; index < CHECKS; index++) {
    lines.push(
      `    - { name: c${index}, target: 127.0.0.1, port: ${target.port}, valid-status: [200], interval: ${INTERVAL}, timeout: 5s }`,
    );
  }
  return lines.join("\n");
}

/** Bare Fastify answering GET /result with the array it was given (a JSON file), in its own process. */
const BARE_FASTIFY = `
import Fastify from "fastify";
import { readFileSync } from "node:fs";
const results = JSON.parse(readFileSync(process.argv[1], "utf8"));
const app = Fastify();
app.get("/result", async () => results);
await app.listen({ host: "127.0.0.1", port: 0 });
console.log(app.server.address().port);
`;

/** Requests per second of `GET url` over `seconds`, CONCURRENCY clients each waiting for its answer. */
async function requestsPerSecond(url, seconds) {
  const agent = new Agent({ connections: RESULT_CLIENTS });
  let count = 0;
  let bytes = 0;
  const end = performance.now() + seconds * 1000;
  const client = async () => {
    while (performance.now() < end) {
      const response = await request(url, { dispatcher: agent });
      const body = await response.body.arrayBuffer();
      if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}`);
      bytes = body.byteLength;
      count++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: RESULT_CLIENTS }, client));
  const rate = count / ((performance.now() - started) / 1000);
  await agent.close();
  return { rate, bytes };
}

/** Clients of the /result comparison, and its seconds per server. */
const RESULT_CLIENTS = 2;
const RESULT_SECONDS = Number(process.env.BENCH_RESULT_SECONDS ?? 10);

/**
 * GET /result of the running Vigie against a bare Fastify route returning the same array (from
 * another process), RESULT_SECONDS each, in the same run.
 */
async function compareResultListing(vigie) {
  const file = join(vigie.directory, "results.json");
  const listing = await (await fetch(`${vigie.base}/result`)).text();
  writeFileSync(file, listing);
  const bare = spawn(process.execPath, ["--input-type=module", "-e", BARE_FASTIFY, file], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((done) => bare.once("exit", done));
  try {
    const port = await new Promise((done) => bare.stdout.once("data", (chunk) => done(Number(String(chunk).trim()))));
    const ours = await requestsPerSecond(`${vigie.base}/result`, RESULT_SECONDS);
    const theirs = await requestsPerSecond(`http://127.0.0.1:${port}/result`, RESULT_SECONDS);
    const ratio = ours.rate / theirs.rate;
    console.log(
      `GET /result (${fmt(JSON.parse(listing).length)} results, ${(ours.bytes / 1e6).toFixed(1)} MB): ${ours.rate.toFixed(1)} requests/s against ${theirs.rate.toFixed(1)} for a bare Fastify route returning the same array (x${ratio.toFixed(2)}; ${RESULT_CLIENTS} clients, ${RESULT_SECONDS} s each)   target >= x0.5   ${ratio >= 0.5 ? "ok" : "MISSED"}`,
    );
  } finally {
    bare.kill("SIGTERM");
    await exited;
  }
}

/** The heading of a Vigie run, by its history setting. */
const vigieHeading = (history) =>
  history ? "Vigie, default configuration (history on, SQLite)" : "Vigie, the scheduler alone (history retention 0)";

/**
 * Starts the real Vigie (dist/cli.js, BENCH_VIGIE_NODE_ARGS) with CHECKS http checks of `target` in
 * its configuration file; `history: false` sets `healthchecks.history.retention: 0`.
 * @returns what `startVigie` returns
 */
function launchVigie(target, history) {
  const nodeArgs = (process.env.BENCH_VIGIE_NODE_ARGS ?? "").split(/\s+/).filter((arg) => arg !== "");
  return startVigie({ yaml: checksYaml(target, history), nodeArgs, pollMs: 10 });
}

/**
 * A later round of the CPU comparison: a fresh Vigie, started and warmed up as in `runVigie`, its
 * CPU over the window with the checks alone, printed; nothing else is measured.
 * @returns `{ cores }`
 */
async function measureVigieCpu(target, history, round) {
  console.log(`-- ${vigieHeading(history)}, round ${round}: the CPU window only --`);
  const vigie = await launchVigie(target, history);
  try {
    await sleep(WARM_UP_SECONDS * 1000);
    const { cpu, elapsed } = await cpuWindow(vigie.child.pid);
    const cores = cpu / elapsed;
    console.log(`CPU of vigie:   ${cores.toFixed(3)} cores (${cpu.toFixed(2)} s) over ${elapsed.toFixed(1)} s`);
    return { cores };
  } finally {
    await vigie.stop();
    rmSync(vigie.directory, { recursive: true, force: true });
  }
}

/**
 * Runs the real Vigie with CHECKS http checks of its configuration file against `target` for the
 * window and prints its figures: start-up, CPU (beside `baseline`: the 10 ms loop just before it,
 * then the 1 ms loop), new connections and the busiest second at the target, lateness, API
 * latency, peak RSS, and (`listing`) the /result comparison.
 * `history: false` sets `healthchecks.history.retention: 0` (the scheduler alone).
 * @returns `{ cores, historyGrowth }`, the latter (rows, bytes, seconds of the window) with history
 */
async function runVigie(target, { history, baseline, listing }) {
  console.log(`-- ${vigieHeading(history)} --`);
  const vigie = await launchVigie(target, history);
  const databaseFile = join(vigie.directory, "vigie.db");
  const agent = new Agent({ connections: 1 });
  let scraper;
  try {
    const verdict = (ok) => (ok ? "ok" : "MISSED");
    console.log(
      `start-up with ${fmt(CHECKS)} checks in the configuration file: GET /healthz answered ${fmt(vigie.readyMs)} ms after the process started   target <= 2 000 ms   ${verdict(vigie.readyMs <= 2000)}`,
    );
    await sleep(WARM_UP_SECONDS * 1000);

    // Lateness over the window: the difference of two scrapes, at its start and at its end.
    const before = await scrape(vigie.base);
    const historyBefore = history ? sqliteHistorySize(databaseFile) : undefined;
    // The CPU window: the checks alone, the load of the bare loop.
    const { cpu, elapsed, from, to } = await cpuWindow(vigie.child.pid);
    // The growth over the CPU window alone, the seconds it is divided by.
    const historyAfter = history ? sqliteHistorySize(databaseFile) : undefined;
    // Then the API window: requests while the checks run.
    const latencies = [];
    const sentAt = [];
    const end = performance.now() + API_SECONDS * 1000;
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
    const after = await scrape(vigie.base);
    const peakRss = peakRssBytes(vigie.child.pid);

    const window = {
      buckets: after.buckets.map((bucket, index) => ({
        le: bucket.le,
        count: bucket.count - (before.buckets[index]?.count ?? 0),
      })),
      count: after.count - before.count,
    };
    const p50 = histogramQuantile(0.5, window);
    const p99 = histogramQuantile(0.99, window);
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
    await sleep(500);
    const seen = target.stats(from, to);
    const mean = seen.perSecond.reduce((sum, count) => sum + count, 0) / seen.perSecond.length;
    const busiest = Math.max(...seen.perSecond);
    const quietest = Math.min(...seen.perSecond);
    const failures = window.count === 0 ? 0 : after.totals.failure - before.totals.failure;
    console.log(
      `${fmt(CHECKS)} http checks at ${INTERVAL}; CPU window ${elapsed.toFixed(1)} s after ${WARM_UP_SECONDS} s of warm-up, then ${API_SECONDS} s of API requests; ${fmt(window.count)} runs in both, ${failures} failures`,
    );
    // The target compares with the 10 ms loops around each round's window (the median of the
    // rounds, printed last); here the loop just before and the 1 ms loop (the previous baseline).
    const beside = baseline
      .map((loop) => `, x${(cores / loop.cores).toFixed(2)} the ${loop.tickMs} ms loop's ${loop.cores.toFixed(3)}`)
      .join("");
    console.log(
      `CPU of vigie:   ${cores.toFixed(3)} cores (${cpu.toFixed(2)} s)${beside}   target: the median of the rounds, last`,
    );
    console.log(
      `at the target (${target.kind}): ${fmt(seen.requests)} requests, ${seen.newConnections} new connections in the window   target <= 64   ${verdict(seen.newConnections <= 64)}`,
    );
    console.log(
      `requests per second: busiest ${fmt(busiest)}, quietest ${fmt(quietest)}, mean ${mean.toFixed(0)} (busiest x${(busiest / mean).toFixed(2)} the mean)   target <= x1.3   ${verdict(busiest <= 1.3 * mean)}`,
    );
    console.log(
      `lateness p50 / p99: ${milliseconds(p50)} / ${milliseconds(p99)}   target p99 <= 20 ms   ${verdict(p99 <= 0.02)}`,
    );
    const scrapingNote =
      SCRAPE_SECONDS > 0 ? `while scraping /metrics every ${SCRAPE_SECONDS} s` : "without scraping /metrics";
    console.log(
      `API p50 / p99:  ${milliseconds(percentile(latencies, 0.5))} / ${milliseconds(apiP99)} over ${latencies.length} GET /healthcheck/<name> ${scrapingNote}   target p99 < 5 ms   ${verdict(apiP99 < 0.005)}`,
    );
    if (scrapes.length > 0) {
      console.log(
        `  of which ${during.length} during a scrape: p50 ${milliseconds(percentile(during, 0.5))}, max ${milliseconds(during.at(-1) ?? Number.NaN)}; the ${outside.length} others: p99 ${milliseconds(percentile(outside, 0.99))}`,
      );
      console.log(
        `scrapes of /metrics every ${SCRAPE_SECONDS} s during the window (wall time of the response): ${scrapes.map(({ begun, ended }) => (ended - begun).toFixed(0)).join(", ")} ms`,
      );
    }
    console.log(
      `peak RSS of vigie: ${(peakRss / 2 ** 20).toFixed(0)} MiB   target <= 250 MB   ${verdict(peakRss <= 250e6)}`,
    );
    if (listing) await compareResultListing(vigie);
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

/** The Vigie runs BENCH_HISTORY asks for, in the order they run: `{ history, label }`. */
function vigieVariants() {
  return [
    { history: true, label: "default configuration" },
    { history: false, label: "the scheduler alone" },
  ].filter(({ history }) => HISTORY_RUNS === "both" || (HISTORY_RUNS === "on") === history);
}

/**
 * The seconds the process runs should take, from the settings: the 1 ms loop, the 10 ms loops
 * around every Vigie window, the Vigie windows (about a second to start), the first round's API
 * window and /result comparison. The in-process part comes on top.
 */
function expectedSeconds(variants) {
  const loop = BASELINE_WARM_UP_SECONDS + WINDOW_SECONDS + 0.5;
  const vigie = 1 + WARM_UP_SECONDS + WINDOW_SECONDS;
  const vigieWindows = variants.length * ROUNDS;
  const firstRound =
    variants.length * (API_SECONDS + 0.5) + (variants.some(({ history }) => history) ? 2 * RESULT_SECONDS : 0);
  return (2 + vigieWindows) * loop + vigieWindows * vigie + firstRound;
}

/** Prints how long the bench should take, before it starts. */
function printExpectedDuration(variants) {
  if (!PARTS.has("vigie")) {
    console.log("expected duration: the in-process measurements only");
    return;
  }
  const inProcess = PARTS.has("in-process") ? ", after the in-process measurements" : "";
  const seconds = expectedSeconds(variants);
  console.log(
    `expected duration: about ${(seconds / 60).toFixed(1)} min for the process runs${inProcess} (${ROUNDS} rounds of ${variants.map(({ label }) => label).join(" and ")}, ${variants.length * ROUNDS + 2} loop windows, windows of ${WINDOW_SECONDS} s)`,
  );
}

/**
 * The target line of the CPU: each round's Vigie window against the mean of the 10 ms loop
 * windows just before and after it, and the median of those ratios against the target.
 * @param rounds `{ cores, before, after }` per round, in cores
 */
function printRounds(label, rounds) {
  console.log(
    `-- CPU of vigie (${label}) against the ${TARGET_TICK_MS} ms loop, round by round: each Vigie window against the mean of the loop windows just before and after it --`,
  );
  const ratios = rounds.map(({ cores, before, after }, index) => {
    const mean = (before + after) / 2;
    const ratio = cores / mean;
    console.log(
      `round ${index + 1}: vigie ${cores.toFixed(3)} cores; loop ${before.toFixed(3)} before, ${after.toFixed(3)} after (mean ${mean.toFixed(3)}): x${ratio.toFixed(2)}`,
    );
    return ratio;
  });
  const ratio = median(ratios);
  console.log(
    `CPU of vigie (${label}) against the ${TARGET_TICK_MS} ms loop, median of ${ratios.length} rounds: x${ratio.toFixed(2)} (rounds ${ratios.map((value) => `x${value.toFixed(2)}`).join(", ")})   target <= x1.0   ${ratio <= 1.0 ? "ok" : "MISSED"}`,
  );
}

/**
 * The process runs: the 1 ms loop once, then the 10 ms loop and Vigie alternating, ROUNDS times
 * per variant (every figure but the CPU from the first round only), and the CPU target line.
 */
async function runProcesses(variants) {
  const target = await startTarget();
  try {
    // The 1 ms loop first, so that nothing comes between a Vigie window and the loops around it.
    const oneMs = await runBaseline(target, BESIDE_TICK_MS);
    let loop = await runBaseline(target, TARGET_TICK_MS);
    console.log(
      `baselines side by side: ${[loop, oneMs].map((run) => `${run.tickMs} ms loop ${run.cores.toFixed(3)} cores`).join(", ")}`,
    );
    const firsts = new Map();
    const rounds = new Map(variants.map(({ label }) => [label, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const { history, label } of variants) {
        const before = loop;
        const run =
          round === 1
            ? await runVigie(target, { history, baseline: [before, oneMs], listing: history })
            : await measureVigieCpu(target, history, round);
        if (round === 1) firsts.set(history, run);
        loop = await runBaseline(target, TARGET_TICK_MS, ` (after round ${round} of vigie, ${label})`);
        rounds.get(label).push({ cores: run.cores, before: before.cores, after: loop.cores });
      }
    }
    printHistoryComparison(firsts.get(false), firsts.get(true));
    for (const [label, figures] of rounds) printRounds(label, figures);
  } finally {
    await target.stop();
  }
}

async function main() {
  const variants = vigieVariants();
  printExpectedDuration(variants);
  if (PARTS.has("in-process")) {
    await measureRendering();
    await measureScrapes();
    await measureHistoryStorage();
  }
  if (PARTS.has("vigie")) await runProcesses(variants);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
