// Publish/subscribe benchmark (docs/benchmarks.md): the real server in one process, the WebSocket
// subscribers (`ws` clients) in a child process, everything on loopback, each phase bounded.
//   (a) 1 000 subscribers on one channel, 100 events/s published (100 000 frames/s delivered), the
//       subscribers spread over 127.0.0.2-127.0.0.21 (50 each) because one client address holds at
//       most 100 subscriptions;
//   (b) 100 subscribers, 1 000 events/s (100 000 frames/s).
// Each beside a baseline measured in the same run: the same publish rate to a channel nobody
// listens to. Per phase: whether every subscriber received every event exactly once and in the same
// order as the others (the order the server ran the concurrent PUTs), the frames
// delivered per second, the server's event-loop lag p99 and max, the server's CPU, the p99 of a
// PUT (publish) and of GET /healthz sampled every 100 ms, and the p99 delivery delay.
//
// Event-loop lag: the server's own `nodejs_eventloop_lag_p99_seconds` and `..._max_seconds` from
// GET /metrics (prom-client's perf_hooks.monitorEventLoopDelay histogram, 10 ms resolution, reset at
// every scrape): one scrape just before a phase resets it, the scrape just after reads the phase.
//
// Events are published with `PUT /api/v1/stream/<s>` every 10 ms (1 event per request for 100/s, 10
// for 1 000/s) into a stream `{:action :publish :params [:<channel>]}`.
// Run: npm run bench -- channels   (BENCH_SECONDS sets the length of each phase, default 10)
import { fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { cpuSeconds, fmt, root, startVigie } from "./lib/vigie.mjs";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const TICK_MS = 10;
/** How long the subscribers may take to receive the last frames once publishing stopped. */
const SETTLE_MS = 10_000;

/** The subscribers' process: opens sockets, counts frames per socket, checks their order. */
const CHILD = `
import { createRequire } from "node:module";
const require = createRequire(${JSON.stringify(join(root, "package.json"))});
const WebSocket = require("ws");
const sockets = [];
let states = [];
let delays = [];
let binary = 0;
let malformed = 0;
const fresh = () => ({ received: 0, duplicates: 0, order: 0, seen: new Uint8Array(1024) });

async function open({ url, count }) {
  for (const socket of sockets.splice(0)) socket.terminate();
  let opened = 0;
  // 50 handshakes at a time: the server's accept backlog stays small.
  // Spread over 127.0.0.2-127.0.0.21: one client address holds at most 100 subscriptions.
  let next = 0;
  const openOne = () => new Promise((resolve, reject) => {
    const localAddress = "127.0.0." + (2 + (next++ % 20));
    const socket = new WebSocket(url, { perMessageDeflate: false, localAddress });
    const state = fresh();
    socket.on("message", (data, isBinary) => {
      if (isBinary) binary++;
      // The server sends each event as published, keys in order: {"seq":N,"sent":T,...}. Reading
      // seq without JSON.parse keeps this process light; the first subscriber parses every frame.
      const text = data.toString();
      const seq = text.startsWith('{"seq":') ? Number(text.slice(7, text.indexOf(",", 7))) : JSON.parse(text).seq;
      if (!Number.isInteger(seq) || seq < 0) {
        malformed++;
        return;
      }
      if (seq >= state.seen.length) {
        const grown = new Uint8Array(Math.max(seq + 1, state.seen.length * 2));
        grown.set(state.seen);
        state.seen = grown;
      }
      if (state.seen[seq] === 1) state.duplicates++;
      state.seen[seq] = 1;
      // Order-sensitive: equal hashes mean every subscriber saw the events in the same order.
      state.order = (Math.imul(state.order, 31) + seq) | 0;
      state.received++;
      // One delay sample per event (the first subscriber's), in ms.
      if (state === states[0]) {
        const event = JSON.parse(text);
        if (event.seq !== seq) malformed++;
        delays.push(Date.now() - event.sent);
      }
    });
    socket.once("open", () => { sockets.push(socket); states.push(state); resolve(); });
    socket.once("error", reject);
    socket.once("unexpected-response", (_request, response) => reject(new Error("refused with " + response.statusCode)));
  });
  states = [];
  while (opened < count) {
    const batch = Math.min(50, count - opened);
    await Promise.all(Array.from({ length: batch }, openOne));
    opened += batch;
  }
}

function report() {
  let min = Infinity, max = 0, duplicates = 0, otherOrder = 0, total = 0;
  for (const state of states) {
    min = Math.min(min, state.received);
    max = Math.max(max, state.received);
    duplicates += state.duplicates;
    if (state.order !== states[0].order) otherOrder++;
    total += state.received;
  }
  const sorted = delays.slice().sort((a, b) => a - b);
  const p99 = sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))];
  return { subscribers: states.length, min, max, duplicates, otherOrder, total, binary, malformed, delayP99: p99 };
}

process.on("message", async (message) => {
  try {
    if (message.type === "open") { await open(message); process.send({ type: "opened" }); }
    else if (message.type === "reset") {
      for (const state of states) Object.assign(state, fresh());
      delays = [];
      binary = 0;
      malformed = 0;
      process.send({ type: "reset" });
    } else if (message.type === "report") process.send({ type: "report", ...report() });
    else if (message.type === "close") {
      for (const socket of sockets.splice(0)) socket.terminate();
      process.exit(0);
    }
  } catch (error) {
    process.send({ type: "error", message: String(error) });
  }
});
`;

/** The subscribers' process, driven over IPC: `ask({type, ...})` resolves with its answer. */
function startSubscribers(directory) {
  const script = join(directory, "subscribers.mjs");
  writeFileSync(script, CHILD);
  const child = fork(script, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return {
    child,
    ask(message, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`subscribers: no answer to ${message.type}`)), timeoutMs);
        child.once("message", (answer) => {
          clearTimeout(timer);
          if (answer.type === "error") reject(new Error(`subscribers: ${answer.message}`));
          else resolve(answer);
        });
        child.send(message);
      });
    },
    async stop() {
      if (child.exitCode === null) child.send({ type: "close" });
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Reads one sample of the exposition text, or undefined. */
function sample(text, name, labels = "") {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

function percentile(values, p) {
  if (values.length === 0) return 0;
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/**
 * Publishes `rate` events/s into `stream` for SECONDS, with a GET /healthz probe every 100 ms.
 * @returns the events sent, the server's lag p99/max (s) and CPU (s), PUT and healthz p99 (ms)
 */
async function publishPhase(vigie, stream, rate) {
  const perTick = Math.max(1, Math.round((rate * TICK_MS) / 1000));
  const ticks = Math.round((SECONDS * 1000) / TICK_MS);
  await fetch(`${vigie.base}/metrics`).then((response) => response.text()); // resets the lag histogram
  const cpuBefore = cpuSeconds(vigie.child.pid);
  const started = performance.now();
  const putTimes = [];
  const healthTimes = [];
  const inFlight = [];
  let seq = 0;
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const t0 = performance.now();
      await fetch(`${vigie.base}/healthz`).then((response) => response.arrayBuffer());
      healthTimes.push(performance.now() - t0);
      await new Promise((wait) => setTimeout(wait, 100));
    }
  })();
  for (let tick = 0; tick < ticks; tick++) {
    // Fixed schedule from the start: a late tick does not shift the following ones.
    const due = started + tick * TICK_MS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const events = [];
    const now = Date.now();
    for (let i = 0; i < perTick; i++) {
      events.push({ seq: seq++, sent: now, host: "bench", service: "pubsub", metric: i, time: now / 1000 });
    }
    const t0 = performance.now();
    inFlight.push(
      fetch(`${vigie.base}/api/v1/stream/${stream}`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ events }),
      }).then(async (response) => {
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`PUT answered ${response.status}`);
        putTimes.push(performance.now() - t0);
      }),
    );
  }
  await Promise.all(inFlight);
  const elapsed = (performance.now() - started) / 1000;
  probing = false;
  await probe;
  const cpu = cpuSeconds(vigie.child.pid) - cpuBefore;
  const metrics = await fetch(`${vigie.base}/metrics`).then((response) => response.text());
  return {
    events: seq,
    elapsed,
    lagP99: sample(metrics, "nodejs_eventloop_lag_p99_seconds"),
    lagMax: sample(metrics, "nodejs_eventloop_lag_max_seconds"),
    cpu,
    putP99: percentile(putTimes, 0.99),
    healthP99: percentile(healthTimes, 0.99),
    metrics,
  };
}

function describePhase(label, phase) {
  const lag = `event-loop lag p99 ${(phase.lagP99 * 1000).toFixed(1)} ms (max ${(phase.lagMax * 1000).toFixed(1)} ms)`;
  const cpu = `server CPU ${((100 * phase.cpu) / phase.elapsed).toFixed(0)}%`;
  const latency = `PUT p99 ${phase.putP99.toFixed(1)} ms, GET /healthz p99 ${phase.healthP99.toFixed(1)} ms`;
  console.log(`    ${label}: ${fmt(phase.events / phase.elapsed)} events/s published; ${lag}; ${cpu}; ${latency}`);
}

async function scenario(vigie, subscribers, { name, count, rate }) {
  const channel = `bench-${name}`;
  const baselineChannel = `nobody-${name}`;
  for (const [stream, target] of [
    [channel, channel],
    [baselineChannel, baselineChannel],
  ]) {
    const config = Buffer.from(`{:actions {:action :publish :params [:${target}]}}`).toString("base64");
    const response = await fetch(`${vigie.base}/api/v1/stream/${stream}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ config }),
    });
    if (response.status !== 201) throw new Error(`POST stream ${stream}: ${response.status}`);
  }
  const url = `${vigie.base.replace("http:", "ws:")}/api/v1/channel/${channel}`;
  console.log(`(${name}) ${fmt(count)} subscribers on one channel, ${fmt(rate)} events/s, ${SECONDS} s per phase`);

  const baseline = await publishPhase(vigie, baselineChannel, rate);
  describePhase("baseline, same rate, no subscriber", baseline);

  const openedAt = performance.now();
  await subscribers.ask({ type: "open", url, count });
  console.log(`    ${fmt(count)} subscriptions opened in ${((performance.now() - openedAt) / 1000).toFixed(2)} s`);
  await subscribers.ask({ type: "reset" });
  const childCpu = cpuSeconds(subscribers.child.pid);
  const ownCpu = process.cpuUsage();
  const phase = await publishPhase(vigie, channel, rate);
  const clientsCpu = (cpuSeconds(subscribers.child.pid) - childCpu) / phase.elapsed;
  const ownUsage = process.cpuUsage(ownCpu);
  const publisherCpu = (ownUsage.user + ownUsage.system) / 1e6 / phase.elapsed;
  const deadline = Date.now() + SETTLE_MS;
  let report = await subscribers.ask({ type: "report" });
  while (report.min < phase.events && Date.now() < deadline) {
    await new Promise((wait) => setTimeout(wait, 100));
    report = await subscribers.ask({ type: "report" });
  }
  describePhase(`with ${fmt(count)} subscribers`, phase);
  console.log(
    `    meanwhile on this ${availableParallelism()}-core machine: subscribers' process CPU ${(100 * clientsCpu).toFixed(0)}%, publisher (this process) CPU ${(100 * publisherCpu).toFixed(0)}%, load average ${loadavg()[0].toFixed(2)}`,
  );
  // Counts equal to the events sent and no duplicate: every event exactly once (seqs are 0..n-1).
  const complete =
    report.subscribers === count &&
    report.min === phase.events &&
    report.max === phase.events &&
    report.duplicates === 0 &&
    report.otherOrder === 0 &&
    report.binary === 0 &&
    report.malformed === 0;
  const dropped = sample(phase.metrics, "stream_publish_dropped_total", `{channel="${channel}"}`) ?? 0;
  console.log(
    `    delivered ${fmt(report.total)} frames = ${fmt(report.total / phase.elapsed)} frames/s; every subscriber got every event once, all in the same order: ${
      complete ? "yes" : "NO"
    } (per subscriber ${fmt(report.min)}–${fmt(report.max)} of ${fmt(phase.events)}, ${report.duplicates} duplicates, ${report.otherOrder} in another order, ${dropped} dropped, ${report.binary} binary and ${report.malformed} malformed frames)`,
  );
  console.log(
    `    delivery delay p99 (PUT sent → frame received, first subscriber): ${report.delayP99} ms; lag p99 target < 50 ms: ${
      phase.lagP99 < 0.05 ? "met" : "MISSED"
    }`,
  );
}

const vigie = await startVigie({ yaml: "streams:\n  max-subscribers: 2000\n" });
const subscribers = startSubscribers(vigie.directory);
try {
  await scenario(vigie, subscribers, { name: "a", count: 1_000, rate: 100 });
  await scenario(vigie, subscribers, { name: "b", count: 100, rate: 1_000 });
} finally {
  await subscribers.stop();
  await vigie.stop();
}
