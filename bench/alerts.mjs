// Alerts benchmark (docs/benchmarks.md): what alert policies cost on the result path, and how soon
// a grouped notification reaches people. 10 000 http checks at a 10 s interval against a local
// target (nginx from Debian when installed, else a Node server), 1 000 of them failing (they expect
// a status the target never answers), run by the real Vigie process (dist/cli.js) twice:
//
//   1. the baseline: the same checks without alerts;
//   2. every check with two alerts (failure-threshold 3 and 5) to two Slack outputs pointing at a
//      local receiver, grouped (group-threshold 5, group-wait 2 s).
//
// Printed: the process CPU of both over the same two windows (from 12 s after the start, which covers
// the failing checks' triggers, then the next one, steady; target: alerts within 1.1x the baseline), the notifications the
// receiver got (expected: a few grouped messages, not 2 000), and the delay from the first alert
// that triggered (its `since` in GET /alerts) to the first message at the receiver (target: within
// group-wait + 1 s). Nothing here asserts a timing.
//
//   npm run bench -- alerts                  (builds dist first; 60 s windows)
//   BENCH_SECONDS=30 npm run bench -- alerts (a quicker look; at least 30 s so that thresholds are reached)
//   BENCH_CHECKS=2000 ...                    (fewer checks; a tenth of them fail)
//   BENCH_ALERTING=1 ...                     (alerts on the first check only, failing: what the first
//                                             notification costs, whatever the number of transitions)
import { createServer } from "node:http";
import { startTarget } from "./lib/http-target.mjs";
import { cpuSeconds, fmt, startVigie } from "./lib/vigie.mjs";

const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
const FAILING = Math.floor(CHECKS / 10);
/** Checks with alerts in the run with alerts (the first ones, failing first). */
const ALERTING = Math.min(CHECKS, Number(process.env.BENCH_ALERTING ?? CHECKS));
const WARM_UP_SECONDS = 12;
const GROUP_WAIT_SECONDS = 2;

const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));

/** A Slack-like webhook receiver in this process: keeps the arrival time and body of each message. */
async function startReceiver() {
  const messages = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      messages.push({ at: Date.now(), body: Buffer.concat(chunks).toString("utf8") });
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/hooks`, messages, close: () => new Promise((done) => server.close(done)) };
}

/** The configuration: outputs, grouping and CHECKS checks, FAILING of them failing; alerts on ALERTING of them, or none. */
function configYaml(target, receiver, alerts) {
  const lines = [
    "outputs:",
    `  chat: { type: slack, webhook-url: "${receiver.url}/chat" }`,
    `  on-call: { type: slack, webhook-url: "${receiver.url}/on-call" }`,
    "notifications:",
    "  group-threshold: 5",
    `  group-wait: ${GROUP_WAIT_SECONDS}s`,
    "healthchecks:",
    "  http-checks:",
  ];
  const policy = alerts
    ? ", alerts: [{ output: chat, failure-threshold: 3 }, { output: on-call, failure-threshold: 5 }]"
    : "";
  for (let index = 0; index < CHECKS; index++) {
    const status = index < FAILING ? 201 : 200;
    lines.push(
      `    - { name: c${index}, target: 127.0.0.1, port: ${target.port}, valid-status: [${status}], interval: 10s, timeout: 5s${index < ALERTING ? policy : ""} }`,
    );
  }
  return lines.join("\n");
}

/** The CPU of process `pid` over WINDOW_SECONDS, in cores. */
async function coresOver(pid) {
  const before = cpuSeconds(pid);
  const started = performance.now();
  await sleep(WINDOW_SECONDS * 1000);
  return (cpuSeconds(pid) - before) / ((performance.now() - started) / 1000);
}

/** One Vigie run: its CPU over the window, and (with alerts) what the receiver got and when. */
async function run(target, alerts) {
  const receiver = await startReceiver();
  const vigie = await startVigie({ yaml: configYaml(target, receiver, alerts), pollMs: 10 });
  try {
    await sleep(WARM_UP_SECONDS * 1000);
    const cores = await coresOver(vigie.child.pid);
    // Then the steady state: every failing check's alerts triggered, nothing more to send.
    const steady = await coresOver(vigie.child.pid);
    if (!alerts) return { cores, steady };
    const answer = await fetch(`${vigie.base}/alerts`);
    const triggered = await answer.json();
    const firstSince = Math.min(...triggered.map((alert) => Date.parse(alert.since)));
    const firstMessage = Math.min(...receiver.messages.map((message) => message.at));
    return {
      cores,
      steady,
      triggered: triggered.length,
      messages: receiver.messages.length,
      delayMs: firstMessage - firstSince,
    };
  } finally {
    await vigie.stop();
    await receiver.close();
  }
}

async function main() {
  const target = await startTarget();
  try {
    console.log(
      `${fmt(CHECKS)} http checks at 10 s, ${fmt(FAILING)} failing; CPU over ${WINDOW_SECONDS} s from ${WARM_UP_SECONDS} s after the start`,
    );
    const baseline = await run(target, false);
    const alerted = await run(target, true);
    const alerting = ALERTING === CHECKS ? "two alerts per check" : `two alerts on ${fmt(ALERTING)} check(s)`;
    for (const [what, key] of [
      ["while the failing checks' alerts trigger", "cores"],
      ["then, steady", "steady"],
    ]) {
      const ratio = alerted[key] / baseline[key];
      console.log(
        `${what}: no alerts ${baseline[key].toFixed(3)} core, ${alerting} ${alerted[key].toFixed(3)} core = ${ratio.toFixed(2)}x   target <= 1.1x   ${ratio <= 1.1 ? "ok" : "MISSED"}`,
      );
    }
    console.log(
      `triggered alerts: ${fmt(alerted.triggered)} (expected ${fmt(Math.min(FAILING, ALERTING) * 2)}); messages at the receiver: ${fmt(alerted.messages)} (grouped)`,
    );
    const limit = (GROUP_WAIT_SECONDS + 1) * 1000;
    console.log(
      `first message ${fmt(alerted.delayMs)} ms after the first alert triggered   target <= ${fmt(limit)} ms (group-wait + 1 s)   ${alerted.delayMs <= limit ? "ok" : "MISSED"}`,
    );
  } finally {
    await target.stop();
  }
}

await main();
