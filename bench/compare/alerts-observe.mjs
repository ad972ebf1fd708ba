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
import { buildsOf, interleave, runScript } from "../lib/interleaved-builds.mjs";

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
function measure(build) {
  const args = [build, String(CHECKS), String(PASSES), String(WARM_UP)];
  return runScript(OBSERVE_LOOP, args, `the evaluator process of ${build}`);
}

async function main() {
  await interleave({
    builds: buildsOf(process.argv.slice(2), "node bench/compare/alerts-observe.mjs name=/build/root ..."),
    rounds: ROUNDS,
    measure,
    figure: ({ nsPerResult }) => nsPerResult,
    describe: ({ nsPerResult, results }) => `${nsPerResult.toFixed(1)} ns (${results} results)`,
    unit: "CPU per result",
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
