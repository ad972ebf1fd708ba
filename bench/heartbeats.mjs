// Heartbeat checks benchmark (docs/benchmarks.md): what waiting for 10 000 jobs costs, and how fast
// pings are answered. The real Vigie process (dist/cli.js) with HEARTBEATS heartbeat checks at a
// 1-minute period from its configuration file, each pinged once so that each has a deadline (up, late
// in a minute):
//
//   1. at rest: the process CPU over WINDOW seconds (at most 35) while every deadline lies ahead,
//      beside the same server with no check at all over the same window (target: the heartbeats add <= 0.01 core,
//      which holds only with one timer for all of them, not one each);
//   2. pings: RATE pings/s for LOAD seconds spread over the keys (each key well under its 10/s limit),
//      sent open-loop every 10 ms on a pool of connections; the latency p50/p99 of `GET /ping/<key>`
//      beside `GET /healthz` sent the same way in the same run (target: ping p99 < 5 ms).
//
// Nothing here asserts a timing.
//
//   npm run bench -- heartbeats
//   BENCH_HEARTBEATS=2000 BENCH_SECONDS=10 npm run bench -- heartbeats   (a quicker look)
import { Pool } from "undici";
import { cpuSeconds, fmt, startVigie } from "./lib/vigie.mjs";

const HEARTBEATS = Number(process.env.BENCH_HEARTBEATS ?? 10_000);
const WINDOW_SECONDS = Math.min(35, Number(process.env.BENCH_SECONDS ?? 30));
const RATE = Number(process.env.BENCH_RATE ?? 1_000);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const TICK_MS = 10;
// Long enough for the start-up's JIT and garbage collection to settle, and past the history's first
// prune (30 s after the start, then hourly): an idle process measured sooner still pays for its start.
const SETTLE_MS = 35_000;
// After the first pings: their history and state writes, and the garbage they leave (the baseline
// answers as many requests to GET /healthz at the same point, so that both windows follow the same
// work). The window then ends before the first deadline, a minute after the first ping.
const AFTER_PINGS_MS = 20_000;

const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));

/** The ping key of heartbeat `index`: 22+ characters of [A-Za-z0-9_-]. */
const keyOf = (index) => `bench-heartbeat-${String(index).padStart(8, "0")}`;

/** The configuration: `count` heartbeat checks at a 1-minute period, their keys given. */
function configYaml(count) {
  const lines = ["healthchecks:", "  history:", "    retention: 1h"];
  if (count > 0) lines.push("  heartbeat-checks:");
  for (let index = 0; index < count; index++) {
    lines.push(`    - { name: job-${index}, period: 1m, grace: 5m, key: ${keyOf(index)} }`);
  }
  return lines.join("\n");
}

/** The process CPU, in cores, over `seconds` from now. */
async function coresOver(pid, seconds) {
  const before = cpuSeconds(pid);
  await sleep(seconds * 1000);
  return (cpuSeconds(pid) - before) / seconds;
}

/** The value at quantile `q` of sorted `values`. */
const quantile = (values, q) => values[Math.min(values.length - 1, Math.floor(q * values.length))] ?? Number.NaN;

/**
 * Sends `rate` requests/s for `seconds`, the due ones every 10 ms, to the paths `pathOf(i)`.
 * @returns the sorted latencies in milliseconds and the statuses seen, with their counts
 */
async function load(pool, rate, seconds, pathOf) {
  const latencies = [];
  const statuses = new Map();
  const pending = [];
  const start = performance.now();
  let sent = 0;
  const total = Math.round(rate * seconds);
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000));
    for (; sent < due; sent++) {
      const began = performance.now();
      pending.push(
        pool.request({ method: "GET", path: pathOf(sent) }).then(async (answer) => {
          await answer.body.dump();
          latencies.push(performance.now() - began);
          statuses.set(answer.statusCode, (statuses.get(answer.statusCode) ?? 0) + 1);
        }),
      );
    }
    await sleep(TICK_MS);
  }
  await Promise.all(pending);
  return { latencies: latencies.sort((a, b) => a - b), statuses };
}

/** Requests `pathOf(i)` for i in [0, count), 200 at a time. */
async function requestAll(pool, count, pathOf) {
  for (let first = 0; first < count; first += 200) {
    const batch = [];
    for (let index = first; index < Math.min(count, first + 200); index++) {
      batch.push(pool.request({ method: "GET", path: pathOf(index) }).then((answer) => answer.body.dump()));
    }
    await Promise.all(batch);
  }
}

const line = (label, { latencies, statuses }) =>
  `${label}: ${fmt(latencies.length)} answered (${[...statuses].map(([status, count]) => `${fmt(count)}× ${status}`).join(", ")}), p50 ${quantile(latencies, 0.5).toFixed(2)} ms, p99 ${quantile(latencies, 0.99).toFixed(2)} ms`;

async function main() {
  console.log(
    `${fmt(HEARTBEATS)} heartbeat checks, period 1m; rest window ${WINDOW_SECONDS} s; ${fmt(RATE)} requests/s for ${LOAD_SECONDS} s`,
  );
  const bare = await startVigie({ yaml: configYaml(0) });
  const barePool = new Pool(bare.base, { connections: 16 });
  await sleep(SETTLE_MS);
  await requestAll(barePool, HEARTBEATS, () => "/healthz");
  await barePool.close();
  await sleep(AFTER_PINGS_MS);
  const bareCores = await coresOver(bare.child.pid, WINDOW_SECONDS);
  await bare.stop();

  const vigie = await startVigie({ yaml: configYaml(HEARTBEATS) });
  const pool = new Pool(vigie.base, { connections: 16 });
  try {
    console.log(
      `start-up with ${fmt(HEARTBEATS)} heartbeats: GET /healthz answered ${fmt(vigie.readyMs)} ms after the process started`,
    );
    await sleep(SETTLE_MS);
    const pinged = performance.now();
    await requestAll(pool, HEARTBEATS, (index) => `/ping/${keyOf(index)}`);
    console.log(`first ping of every heartbeat: ${fmt(performance.now() - pinged)} ms`);
    // Every deadline lies a minute after its ping: the window ends before the first one.
    await sleep(AFTER_PINGS_MS);
    const restCores = await coresOver(vigie.child.pid, WINDOW_SECONDS);
    const added = restCores - bareCores;
    console.log(
      `at rest: ${restCores.toFixed(4)} core with ${fmt(HEARTBEATS)} heartbeats, ${bareCores.toFixed(4)} core without (baseline); added ${added.toFixed(4)} core   target <= 0.01   ${added <= 0.01 ? "ok" : "MISSED"}`,
    );
    const health = await load(pool, RATE, LOAD_SECONDS, () => "/healthz");
    const pings = await load(pool, RATE, LOAD_SECONDS, (index) => `/ping/${keyOf(index % HEARTBEATS)}`);
    console.log(line("GET /healthz (baseline)", health));
    const p99 = quantile(pings.latencies, 0.99);
    console.log(`${line("GET /ping/<key>", pings)}   target p99 < 5 ms   ${p99 < 5 ? "ok" : "MISSED"}`);
  } finally {
    await pool.close();
    await vigie.stop();
  }
}

await main();
