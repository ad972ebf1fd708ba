// Compares the healthcheck scheduler of several builds of Vigie, in interleaved rounds (A B A B …),
// so that a loaded machine weighs on every build alike. Each build runs in a process of its own:
// its Scheduler (dist/healthchecks/scheduler.js) with CHECKS keys at INTERVAL_MS, as the module
// makes it (max-concurrency 100 000, each run's lateness observed by HealthcheckMetrics into a
// prom-client registry), each task an already settled promise, so the process does only what the
// scheduler does per run: its wakes, its heap, starting a run, the lateness histogram and the
// promise of the run's end. It prints each process's CPU (utime + stime from /proc) over the window
// after a warm-up (longer than the interval: every key past its first run), and the ratio of each
// build to the first one per round. Not run by bench/run.mjs (it needs builds to compare).
// Run: node bench/compare/scheduler.mjs before=/work/old after=/work/new
//   env ROUNDS (default 3), BENCH_SECONDS window (default 20), WARM_UP_SECONDS (default 12),
//   CHECKS keys (default 10000), INTERVAL_MS (default 1000).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { root } from "../lib/vigie.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARM_UP_SECONDS = Number(process.env.WARM_UP_SECONDS ?? 5);
const CHECKS = Number(process.env.CHECKS ?? 10_000);
const INTERVAL_MS = Number(process.env.INTERVAL_MS ?? 1_000);

const SCHEDULER_LOOP = `
const [build, checks, interval, warmUp, window] = process.argv.slice(1);
const { Scheduler } = await import(build + "/dist/healthchecks/scheduler.js");
const { HealthcheckMetrics } = await import(build + "/dist/healthchecks/metrics.js");
const { Exposition } = await import(build + "/dist/platform/metrics.js");
const { Registry } = await import(build + "/node_modules/prom-client/index.js");
let metrics;
const scheduler = new Scheduler({
  maxConcurrency: 100_000,
  onLateness: (milliseconds) => metrics.observeLateness(milliseconds / 1000),
});
metrics = new HealthcheckMetrics(new Registry(), new Exposition(), () => scheduler.size);
let runs = 0;
const done = Promise.resolve();
for (let index = 0; index < Number(checks); index++) {
  scheduler.add("c" + index, Number(interval), () => {
    runs++;
    return done;
  });
}
let before;
let runsBefore;
setTimeout(() => {
  before = process.cpuUsage();
  runsBefore = runs;
}, Number(warmUp) * 1000);
const started = performance.now();
// The scheduler's timer is unref'd: this one keeps the process alive.
setTimeout(() => {
  const used = process.cpuUsage(before);
  const seconds = (performance.now() - started) / 1000 - Number(warmUp);
  const cores = (used.user + used.system) / 1e6 / seconds;
  console.log(JSON.stringify({ cores, runs: runs - runsBefore }));
  process.exit(0);
}, (Number(warmUp) + Number(window)) * 1000);
`;

/** Runs one build for the warm-up and the window; its CPU in cores and its runs in the window. */
async function measure(build) {
  const args = [
    "--input-type=module",
    "-e",
    SCHEDULER_LOOP,
    build,
    String(CHECKS),
    String(INTERVAL_MS),
    String(WARM_UP_SECONDS),
    String(WINDOW_SECONDS),
  ];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  const code = await new Promise((done) => child.once("exit", done));
  if (code !== 0) throw new Error(`the scheduler process of ${build} exited with ${code}`);
  return JSON.parse(output.trim().split("\n").at(-1));
}

async function main() {
  const builds = process.argv.slice(2).map((argument) => {
    const [name, path] = argument.split("=");
    return { name, build: join(path) };
  });
  if (builds.length === 0) throw new Error("usage: node bench/compare/scheduler.mjs name=/build/root ...");
  const cores = new Map(builds.map(({ name }) => [name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    const line = [];
    for (const { name, build } of builds) {
      const { cores: used, runs } = await measure(build);
      cores.get(name).push(used);
      line.push(`${name} ${used.toFixed(4)} (${runs} runs)`);
    }
    console.log(`round ${round}: ${line.join(", ")} cores`);
  }
  const first = cores.get(builds[0].name);
  for (const { name } of builds.slice(1)) {
    const ratios = cores.get(name).map((value, index) => value / first[index]);
    const mean = ratios.reduce((sum, ratio) => sum + ratio, 0) / ratios.length;
    console.log(
      `${name} / ${builds[0].name}: ${ratios.map((ratio) => ratio.toFixed(2)).join(", ")}; mean x${mean.toFixed(2)}`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
