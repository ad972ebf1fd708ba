// Compares what an alert transition costs from the result to the message at the receiver in several
// builds of Vigie, in interleaved rounds (A B A B …): the part of bench/alerts.mjs that the process
// figure cannot isolate. Each build runs in a process of its own: its AlertEvaluator on its
// AlertStore (SQLite in a temporary directory) and the notifier on two `slack` outputs (the
// platform's Outputs and OutputNotifier, grouped: group-threshold 5, group-wait 2 s), pointing at a
// receiver in this process. CHECKS checks with two alerts each (failure-threshold 3 and 5, as
// bench/alerts.mjs) are fed failing results, PASSES passes of every check, each pass spread over
// PASS_MS milliseconds in 50 ms ticks, so that 2 × CHECKS alerts trigger and reach the receiver in
// grouped messages. It prints the process CPU (process.cpuUsage(), user + system) per transition,
// from the first result until every notification's delivery is recorded in the alert history, of
// two such cycles: "cold", the first in the process (the code of transitions, notifications,
// templates and delivery runs for the first time, so that compiling it weighs most), then "warm",
// the same on the checks renamed; the messages received; and the ratio of each build to the first
// one per round, of the warm figure (FIGURE=cold for the other).
// Not run by bench/run.mjs (it needs builds to compare).
// Run: node bench/compare/alerts-notify.mjs base=/work/main new=/work/branch
//   env ROUNDS (default 3), CHECKS (default 1000), PASSES (default 5), PASS_MS (default 2000),
//   FIGURE (warm or cold, default warm).
import { createServer } from "node:http";
import { buildsOf, interleave, runScript } from "../lib/interleaved-builds.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CHECKS = Number(process.env.CHECKS ?? 1_000);
const PASSES = Number(process.env.PASSES ?? 5);
const PASS_MS = Number(process.env.PASS_MS ?? 2_000);
const FIGURE = process.env.FIGURE ?? "warm";

const NOTIFY_LOOP = `
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const [build, checks, passes, passMs, receiverUrl] = process.argv.slice(1);
const { AlertEvaluator } = await import(build + "/dist/healthchecks/alerts/evaluator.js");
const { AlertStore } = await import(build + "/dist/healthchecks/alerts/store.js");
const { validateDefinition } = await import(build + "/dist/healthchecks/definition.js");
const { openDatabase } = await import(build + "/dist/platform/database.js");
const { allMigrations } = await import(build + "/dist/server.js");
const { outputsSection } = await import(build + "/dist/platform/outputs/config.js");
const { outputMetrics } = await import(build + "/dist/platform/outputs/metrics.js");
const { OutputNotifier } = await import(build + "/dist/platform/outputs/notifier.js");
const { Outputs } = await import(build + "/dist/platform/outputs/outputs.js");
const { Registry } = await import(build + "/node_modules/prom-client/index.js");
const { default: pino } = await import(build + "/node_modules/pino/pino.js");
const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));
const directory = mkdtempSync(join(tmpdir(), "vigie-alert-notify-"));
const database = await openDatabase("sqlite:" + join(directory, "vigie.db"), allMigrations());
const logger = pino({ level: "warn" });
const definitions = outputsSection(
  {
    chat: { type: "slack", "webhook-url": receiverUrl + "/chat" },
    "on-call": { type: "slack", "webhook-url": receiverUrl + "/on-call" },
  },
  "outputs",
);
let notifier;
const outputs = new Outputs(definitions, {
  metrics: outputMetrics(new Registry(), () => []),
  logger,
  publicUrl: "http://127.0.0.1:8080",
  settled: (batch, start, end, outcome, reason) => notifier.settled(batch, start, end, outcome, reason),
  beforeDrain: () => notifier.flush(),
});
notifier = new OutputNotifier(outputs, { threshold: 5, waitMs: 2_000 }, () => true);
const store = new AlertStore(database, { logger });
let recorded = 0;
const counted = {
  loadStates: (names) => store.loadStates(names),
  saveState: (state, nowMs) => store.saveState(state, nowMs),
  deleteState: (check, output) => store.deleteState(check, output),
  downChecks: () => store.downChecks(),
  addHistory: (entry) => {
    if (entry.outcome !== "delivered") throw new Error(JSON.stringify(entry));
    recorded++;
    return store.addHistory(entry);
  },
  pruneHistory: (beforeMs) => store.pruneHistory(beforeMs),
  flush: () => store.flush(),
};
const rules = { minInterval: { text: "1s", milliseconds: 1_000 } };
const alerts = [
  { output: "chat", "failure-threshold": 3 },
  { output: "on-call", "failure-threshold": 5 },
];
const registrations = [];
const byName = new Map();
for (let index = 0; index < Number(checks); index++) {
  const definition = validateDefinition(
    "http",
    { name: "c" + index, target: "127.0.0.1", port: 9, interval: "10s", timeout: "5s", "valid-status": [201], alerts, labels: { team: "web" } },
    rules,
    { unknownKeys: "ignore" },
  );
  byName.set(definition.name, definition);
  registrations.push({ definition, labels: definition.labels, alerts: undefined });
}
const evaluator = new AlertEvaluator({
  notifier,
  store: counted,
  defaultAlerts: [],
  definitionOf: (name) => byName.get(name),
  url: "http://127.0.0.1:8080/status",
  logger: { error: (details, message) => { throw new Error(message + " " + JSON.stringify(details)); } },
  historyRetentionMs: 3_600_000,
});
await evaluator.load();
const TICK_MS = 50;
const perTick = Math.max(1, Math.ceil(registrations.length / (Number(passMs) / TICK_MS)));
const expected = 2 * registrations.length;
/** One cycle: PASSES failing passes of every check, until each delivery is recorded; CPU µs per transition. */
async function cycle() {
  recorded = 0;
  const before = process.cpuUsage();
  for (let pass = 0; pass < Number(passes); pass++) {
    for (let first = 0; first < registrations.length; first += perTick) {
      const timeMs = Date.now();
      for (const registration of registrations.slice(first, first + perTick)) {
        evaluator.observe(registration, false, "HTTP 200, expected 201", timeMs);
      }
      await sleep(TICK_MS);
    }
  }
  while (recorded < expected) await sleep(20);
  await evaluator.settled();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / expected;
}
// The first cycle runs the transitions' code for the first time in the process (what a server
// pays at its first notifications); the second, on checks renamed, the same code warm.
const cold = await cycle();
for (const registration of registrations) {
  const definition = { ...registration.definition, name: registration.definition.name + "-again" };
  byName.set(definition.name, definition);
  registration.definition = definition;
}
const warm = await cycle();
await evaluator.close();
await outputs.drain(1_000);
notifier.close();
await database.close();
rmSync(directory, { recursive: true, force: true });
console.log(JSON.stringify({ cold, warm, transitions: expected }));
`;

/** A Slack-like webhook receiver: counts the messages and the alerts they carry. */
async function startReceiver() {
  const received = { messages: 0, bytes: 0 };
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      received.messages++;
      received.bytes += Buffer.concat(chunks).length;
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/hooks`, received, close: () => new Promise((done) => server.close(done)) };
}

async function main() {
  const receiver = await startReceiver();
  try {
    await interleave({
      builds: buildsOf(process.argv.slice(2), "node bench/compare/alerts-notify.mjs name=/build/root ..."),
      rounds: ROUNDS,
      measure: async (build) => {
        const { messages, bytes } = receiver.received;
        const args = [build, String(CHECKS), String(PASSES), String(PASS_MS), receiver.url];
        const result = await runScript(NOTIFY_LOOP, args, `the notifying process of ${build}`);
        return { ...result, messages: receiver.received.messages - messages, bytes: receiver.received.bytes - bytes };
      },
      figure: ({ cold, warm }) => (FIGURE === "cold" ? cold : warm),
      describe: ({ cold, warm, transitions, messages, bytes }) =>
        `cold ${cold.toFixed(1)} µs, warm ${warm.toFixed(1)} µs (2 × ${transitions} transitions, ${messages} messages, ${bytes} bytes)`,
      unit: "CPU per transition",
    });
  } finally {
    await receiver.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
