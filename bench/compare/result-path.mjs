// Compares a periodic result's path after the executor (catalog record, latest result, per-check
// metrics, history buffer and its per-second write on SQLite) of several builds of Vigie, in
// interleaved rounds (A B A B …), each build in a process of its own. Each process registers
// CHECKS http checks through its Catalog (dist/healthchecks/catalog.js) with a stand-in scheduler
// (it keeps the tasks) and a stand-in executor (an already settled execution per run, as the http
// executor answers: a fresh timestamp text, a duration of a few milliseconds), and the result
// callback of the module (the history's record; no stream configured). It then runs every check's
// task RATE at a time, one "second" per batch, with the history's write after each batch into a
// fresh SQLite file, and allocates GARBAGE bytes of short-lived objects per run beside it (about
// what undici and the sockets allocate per request, so that scavenges come as often as in the
// process and a result kept for a whole interval is promoted as it would be). It prints the CPU
// (process.cpuUsage(), user + system, so V8's worker threads count) per result, in microseconds, over SECONDS
// batches after WARM_UP batches.
// Not run by bench/run.mjs (it needs builds to compare).
// Run: node bench/compare/result-path.mjs before=/work/old after=/work/new
//   env ROUNDS (default 5), CHECKS (default 10000), RATE (default 1000), SECONDS (default 60),
//   WARM_UP (default 20), GARBAGE (default 6000).
import { buildsOf, interleave, runScript } from "../lib/interleaved-builds.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const CHECKS = Number(process.env.CHECKS ?? 10_000);
const RATE = Number(process.env.RATE ?? 1_000);
const SECONDS = Number(process.env.SECONDS ?? 60);
const WARM_UP = Number(process.env.WARM_UP ?? 20);
const GARBAGE = Number(process.env.GARBAGE ?? 6_000);

const RESULT_LOOP = `
const [build, checks, rate, seconds, warmUp, garbage] = process.argv.slice(1).map((value, index) => index === 0 ? value : Number(value));
const { mkdtempSync, rmSync } = await import("node:fs");
const { tmpdir } = await import("node:os");
const { join } = await import("node:path");
const { Catalog } = await import(build + "/dist/healthchecks/catalog.js");
const { ResultStore } = await import(build + "/dist/healthchecks/results.js");
const { HealthcheckMetrics } = await import(build + "/dist/healthchecks/metrics.js");
const { ResultHistory } = await import(build + "/dist/healthchecks/history.js");
const { healthcheckMigrations } = await import(build + "/dist/healthchecks/storage.js");
const { validateDefinition } = await import(build + "/dist/healthchecks/definition.js");
const { rfc3339 } = await import(build + "/dist/platform/time.js");
const { createMetricsRegistry, Exposition } = await import(build + "/dist/platform/metrics.js");
const { openDatabase, platformMigrations } = await import(build + "/dist/platform/database.js");
const directory = mkdtempSync(join(tmpdir(), "vigie-result-path-"));
const database = await openDatabase("sqlite:" + join(directory, "vigie.db"), { ...platformMigrations, ...healthcheckMigrations });
const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {}, child() { return silent; } };
const history = new ResultHistory(database, { retentionMs: 7 * 86_400_000, logger: silent });
const metrics = new HealthcheckMetrics(createMetricsRegistry(), new Exposition(), () => 0);
const results = new ResultStore();
const tasks = [];
const scheduler = { add(name, interval, task) { tasks.push(task); }, remove() {}, has() { return false; }, stop() {}, size: 0 };
let now = Date.parse("2026-11-27T10:00:00Z");
let run = 0;
const executor = {
  execute() {
    run++;
    const time = now + (run % 1000);
    const duration = 1 + (run % 7);
    return Promise.resolve({ success: true, message: "success", duration, timestamp: rfc3339(time), time });
  },
};
const catalog = new Catalog({
  storage: { list: async () => [] },
  scheduler,
  results,
  metrics,
  executor,
  logger: silent,
  rules: { minInterval: { text: "1s", milliseconds: 1_000 } },
  onResult: (registration, result, timeMs) => history.record(registration.definition.name, result, timeMs),
});
const rules = { minInterval: { text: "1s", milliseconds: 1_000 } };
const configured = [];
for (let index = 0; index < checks; index++) {
  const definition = validateDefinition("http", { name: "check-" + index, target: "127.0.0.1", port: 8080, "valid-status": [200], interval: "10s", timeout: "5s" }, rules, { unknownKeys: "ignore", tlsFiles: "paths" });
  configured.push({ definition, path: "healthchecks.http-checks[" + index + "]" });
}
await catalog.start(configured);
let sink;
let next = 0;
async function second() {
  const runs = [];
  for (let count = 0; count < rate; count++) {
    // What undici and the sockets leave per request, short-lived.
    sink = new Array(garbage >> 4);
    runs.push(tasks[next]());
    next = (next + 1) % tasks.length;
  }
  await Promise.all(runs);
  await history.flush();
  now += 1_000;
}
for (let count = 0; count < warmUp; count++) await second();
const before = process.cpuUsage();
for (let count = 0; count < seconds; count++) await second();
const used = process.cpuUsage(before);
const resultsRun = seconds * rate;
await history.close();
await database.close();
rmSync(directory, { recursive: true, force: true });
console.log(JSON.stringify({ nsPerResult: ((used.user + used.system) * 1000) / resultsRun, results: resultsRun, sink: sink.length }));
`;

/** Runs one build: its CPU per result, in microseconds. */
async function microsecondsPerResult(build) {
  const args = [build, CHECKS, RATE, SECONDS, WARM_UP, GARBAGE].map(String);
  const { nsPerResult, results } = await runScript(RESULT_LOOP, args, `the result process of ${build}`);
  return { us: nsPerResult / 1000, results };
}

interleave({
  builds: buildsOf(process.argv.slice(2), "node bench/compare/result-path.mjs name=/build/root ..."),
  rounds: ROUNDS,
  measure: microsecondsPerResult,
  figure: (run) => run.us,
  describe: (run) => `${run.us.toFixed(2)} µs (${run.results} results)`,
  unit: "of CPU per result",
}).catch((error) => {
  console.error(error);
  process.exit(1);
});
