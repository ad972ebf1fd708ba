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
//   CHECKS keys (default 10000), INTERVAL_MS (default 1000), TASK_END "settled" (default: each task
//   an already settled promise, its end in the microtasks of the wake) or "later" (each task ends in
//   the event loop's next check phase, after the wake, as a request's end comes with a later read).
import { buildsOf, interleave, runScript } from "../lib/interleaved-builds.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARM_UP_SECONDS = Number(process.env.WARM_UP_SECONDS ?? 5);
const CHECKS = Number(process.env.CHECKS ?? 10_000);
const INTERVAL_MS = Number(process.env.INTERVAL_MS ?? 1_000);
const TASK_END = process.env.TASK_END ?? "settled";
if (TASK_END !== "settled" && TASK_END !== "later") throw new Error("TASK_END is settled or later");

const SCHEDULER_LOOP = `
const [build, checks, interval, warmUp, window, taskEnd] = process.argv.slice(1);
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
const later = () => new Promise((resolve) => setImmediate(resolve));
for (let index = 0; index < Number(checks); index++) {
  scheduler.add("c" + index, Number(interval), () => {
    runs++;
    return taskEnd === "later" ? later() : done;
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
function measure(build) {
  const args = [build, String(CHECKS), String(INTERVAL_MS), String(WARM_UP_SECONDS), String(WINDOW_SECONDS), TASK_END];
  return runScript(SCHEDULER_LOOP, args, `the scheduler process of ${build}`);
}

async function main() {
  await interleave({
    builds: buildsOf(process.argv.slice(2), "node bench/compare/scheduler.mjs name=/build/root ..."),
    rounds: ROUNDS,
    measure,
    figure: ({ cores }) => cores,
    describe: ({ cores, runs }) => `${cores.toFixed(4)} (${runs} runs)`,
    unit: "cores",
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
