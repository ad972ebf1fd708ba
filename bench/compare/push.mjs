// Compares the HTTP push of several builds of Vigie on the same load, in interleaved rounds (A B A B
// …), so that a loaded machine weighs on every build alike: for each build, the server of its
// `dist/cli.js` is started, warmed up, then driven as in bench/streams.mjs (b): GET /healthz with 10
// connections, then PUT /api/v1/stream/bench with batches of 500 events on 4 connections. Besides
// the rates, it prints the server's CPU time per request (from /proc), which a loaded machine
// disturbs far less than the rates. Not run by bench/run.mjs (it needs builds to compare).
// Run: node bench/compare/push.mjs before=/work/old after=/work/new
//   env ROUNDS (default 3), BENCH_SECONDS per phase (default 5), CPU_PROF=<directory> to profile
//   each server (node --cpu-prof).
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { cpuSeconds, fmt, freePort, waitFor } from "../lib/vigie.mjs";

const PIPELINE = `{:actions {:action :where :params [[:> :metric 0]]
  :children [{:action :by :params [{:fields [:host]}]
    :children [{:action :fixed-time-window :params [{:duration 10}]
      :children [{:action :coll-count}]}]}]}}`;
const HOSTS = 1_000;
const BATCH = 500;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

const builds = process.argv.slice(2).map((argument) => {
  const [label, root] = argument.split("=");
  if (label === undefined || root === undefined) throw new Error(`expected label=root, got ${argument}`);
  return { label, root };
});
if (builds.length === 0) throw new Error("usage: node bench/compare/push.mjs label=root …");

/** The bodies of bench/streams.mjs (b): 200 batches of 500 events, 1 000 hosts. */
const bodies = [];
for (let batch = 0; batch < 200; batch++) {
  const events = [];
  for (let j = 0; j < BATCH; j++) {
    const i = batch * BATCH + j;
    events.push({ host: `host-${i % HOSTS}`, service: "cpu", metric: (i % 97) + 1, time: i / 100 });
  }
  bodies.push(JSON.stringify({ events }));
}

async function start(root) {
  const directory = mkdtempSync(join(tmpdir(), "vigie-push-compare-"));
  const port = await freePort();
  const config = join(directory, "vigie.yaml");
  writeFileSync(
    config,
    ["http:", `  port: ${port}`, "log-level: warn", `database:\n  url: sqlite:${join(directory, "vigie.db")}`].join(
      "\n",
    ),
  );
  const profile = process.env.CPU_PROF === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${process.env.CPU_PROF}`];
  const child = spawn(process.execPath, [...profile, join(root, "dist/cli.js"), "serve", "--config", config], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/healthz`, child);
  const exited = new Promise((done) => child.once("exit", done));
  return {
    base,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

function push(base, duration) {
  let next = 0;
  return autocannon({
    url: `${base}/api/v1/stream/bench`,
    connections: 4,
    duration,
    requests: [
      {
        method: "PUT",
        headers: { "content-type": "application/json" },
        setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length] }),
      },
    ],
  });
}

async function measure({ root }) {
  const vigie = await start(root);
  const created = await fetch(`${vigie.base}/api/v1/stream/bench`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ config: Buffer.from(PIPELINE).toString("base64") }),
  });
  if (!created.ok) throw new Error(`${root}: POST /api/v1/stream/bench answered ${created.status}`);
  await push(vigie.base, 2); // warm-up: the JIT settles
  // The server's CPU time per request (user + system) depends less on the machine's load than the
  // rates do: the ratio of the two costs is what a server with a core of its own would reach.
  const cpu0 = cpuSeconds(vigie.pid);
  const health = await autocannon({ url: `${vigie.base}/healthz`, connections: 10, duration: SECONDS });
  const cpu1 = cpuSeconds(vigie.pid);
  const pushed = await push(vigie.base, SECONDS);
  const cpu2 = cpuSeconds(vigie.pid);
  await vigie.stop();
  if (pushed.non2xx !== 0 || pushed.errors !== 0) {
    throw new Error(`${root}: ${pushed.non2xx} non-2xx, ${pushed.errors} errors`);
  }
  return {
    healthz: health.requests.average,
    push: pushed.requests.average,
    healthzCpu: (cpu1 - cpu0) / health.requests.total,
    pushCpu: (cpu2 - cpu1) / pushed.requests.total,
  };
}

const micros = (seconds) => `${(seconds * 1e6).toFixed(seconds < 1e-5 ? 2 : 0)} µs`;

const results = new Map(builds.map(({ label }) => [label, []]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const build of builds) {
    const figures = await measure(build);
    results.get(build.label).push(figures);
    console.log(
      `round ${round} ${build.label}: healthz ${fmt(figures.healthz)} req/s, push ${fmt(figures.push)} req/s = ${fmt(figures.push * BATCH)} events/s, ratio ${(figures.push / figures.healthz).toFixed(3)}; server CPU per request: healthz ${micros(figures.healthzCpu)}, push ${micros(figures.pushCpu)} (${micros(figures.pushCpu / BATCH)} per event), CPU ratio ${(figures.healthzCpu / figures.pushCpu).toFixed(3)}`,
    );
  }
}

const median = (values) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(`\nmedians over ${ROUNDS} rounds, ${SECONDS} s per phase:`);
for (const [label, runs] of results) {
  const events = median(runs.map((run) => run.push * BATCH));
  const healthz = median(runs.map((run) => run.healthz));
  const ratio = median(runs.map((run) => run.push / run.healthz));
  const pushCpu = median(runs.map((run) => run.pushCpu));
  const cpuRatio = median(runs.map((run) => run.healthzCpu / run.pushCpu));
  console.log(
    `  ${label}: push ${fmt(events)} events/s, healthz ${fmt(healthz)} req/s, ratio ${ratio.toFixed(3)}; push CPU ${micros(pushCpu)} per request, CPU ratio ${cpuRatio.toFixed(3)}`,
  );
}
if (builds.length >= 2) {
  const [first, ...others] = builds;
  for (const other of others) {
    const pairs = results.get(other.label).map((run, i) => run.push / results.get(first.label)[i].push);
    const ratios = results.get(other.label).map((run, i) => {
      const a = results.get(first.label)[i];
      return run.push / run.healthz / (a.push / a.healthz);
    });
    const cpu = results.get(other.label).map((run, i) => run.pushCpu / results.get(first.label)[i].pushCpu);
    console.log(
      `  ${other.label} / ${first.label} per round: push CPU per request ${cpu.map((r) => r.toFixed(2)).join(" ")}; push ${pairs.map((r) => r.toFixed(2)).join(" ")}; push/healthz ratio ${ratios.map((r) => r.toFixed(2)).join(" ")}`,
    );
  }
}
