// Compares the alert evaluator's result path of several builds of Vigie, in interleaved rounds
// (A B A B …), so that a loaded machine weighs on every build alike. Each build runs in a process of
// its own: its AlertEvaluator (dist/healthchecks/alerts/evaluator.js) with CHECKS tcp checks of two
// alerts each (failure-threshold 3 and 5, as bench/alerts.mjs), fed successful results check after
// check, so that no alert transitions and the process does only what each result costs: reaching
// the check's alert entry, counting, and judging what is due. It prints each process's CPU
// (process.cpuUsage(), user + system) per result over PASSES passes of every check after WARM_UP
// passes, and the ratio of each build to the first one per round. A build whose `observe` takes the
// definition and its labels (before alert entries were kept by registrations) is fed that way.
// Not run by bench/run.mjs (it needs builds to compare).
// Run: node bench/compare/alerts-observe.mjs before=/work/old after=/work/new
//   env ROUNDS (default 5), CHECKS (default 10000), PASSES (default 300), WARM_UP (default 50).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { root } from "../lib/vigie.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const CHECKS = Number(process.env.CHECKS ?? 10_000);
const PASSES = Number(process.env.PASSES ?? 300);
const WARM_UP = Number(process.env.WARM_UP ?? 50);

const OBSERVE_LOOP = `
const [build, checks, passes, warmUp] = process.argv.slice(1);
const { AlertEvaluator } = await import(build + "/dist/healthchecks/alerts/evaluator.js");
const { validateDefinition } = await import(build + "/dist/healthchecks/definition.js");
const rules = { minInterval: { text: "1s", milliseconds: 1_000 } };
const alerts = [
  { output: "chat", "failure-threshold": 3 },
  { output: "on-call", "failure-threshold": 5 },
];
const registrations = [];
const byName = new Map();
for (let index = 0; index < Number(checks); index++) {
  const definition = validateDefinition(
    "tcp",
    { name: "check-" + index, target: "127.0.0.1", port: 9, interval: "10s", timeout: "1s", alerts },
    rules,
    { unknownKeys: "ignore" },
  );
  byName.set(definition.name, definition);
  registrations.push({ definition, labels: undefined, alerts: undefined });
}
const none = async () => {};
const evaluator = new AlertEvaluator({
  notifier: { has: () => true, notify: () => {} },
  store: { loadStates: async () => [], saveState: none, deleteState: none, downChecks: async () => [], addHistory: none, pruneHistory: none },
  defaultAlerts: [],
  definitionOf: (name) => byName.get(name),
  url: "http://127.0.0.1:8080/status",
  logger: { error: (details) => { throw new Error(JSON.stringify(details)); } },
  historyRetentionMs: 3_600_000,
});
await evaluator.load();
// Before registrations kept the entry, observe took (definition, labels, success, message, timeMs).
const byDefinition = evaluator.observe.length === 5;
let timeMs = Date.parse("2026-11-27T10:00:00Z");
function pass() {
  for (let index = 0; index < registrations.length; index++) {
    const registration = registrations[index];
    if (byDefinition) evaluator.observe(registration.definition, registration.labels, true, "ok", timeMs);
    else evaluator.observe(registration, true, "ok", timeMs);
    timeMs += 1;
  }
}
for (let count = 0; count < Number(warmUp); count++) pass();
const before = process.cpuUsage();
for (let count = 0; count < Number(passes); count++) pass();
const used = process.cpuUsage(before);
const results = Number(passes) * registrations.length;
console.log(JSON.stringify({ nsPerResult: ((used.user + used.system) * 1000) / results, results }));
`;

/** Runs one build; its CPU per result in nanoseconds. */
async function measure(build) {
  const args = ["--input-type=module", "-e", OBSERVE_LOOP, build, String(CHECKS), String(PASSES), String(WARM_UP)];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  const code = await new Promise((done) => child.once("exit", done));
  if (code !== 0) throw new Error(`the evaluator process of ${build} exited with ${code}`);
  return JSON.parse(output.trim().split("\n").at(-1));
}

async function main() {
  const builds = process.argv.slice(2).map((argument) => {
    const [name, path] = argument.split("=");
    return { name, build: join(path) };
  });
  if (builds.length === 0) throw new Error("usage: node bench/compare/alerts-observe.mjs name=/build/root ...");
  const costs = new Map(builds.map(({ name }) => [name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    const line = [];
    for (const { name, build } of builds) {
      const { nsPerResult, results } = await measure(build);
      costs.get(name).push(nsPerResult);
      line.push(`${name} ${nsPerResult.toFixed(1)} ns (${results} results)`);
    }
    console.log(`round ${round}: ${line.join(", ")} CPU per result`);
  }
  const first = costs.get(builds[0].name);
  for (const { name } of builds.slice(1)) {
    const ratios = costs.get(name).map((value, index) => value / first[index]);
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
