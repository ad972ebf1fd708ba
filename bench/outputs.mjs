// Outputs benchmarks (docs/benchmarks.md), each beside a baseline measured in the same run:
//   (1) a stream with an `output` to an `http` receiver on loopback (json, batches of 100): events/s
//       delivered, and the push path's cost beside the same stream without the output; then the
//       same comparison over HTTP pushes against the real server, paced at 100 000 events/s (push
//       latency, server CPU, events delivered) and saturated (events/s pushed);
//   (2) a `prometheus-remote-write` output: samples/s encoded and delivered to a local receiver that
//       decodes them, beside snappy compression alone and encoding alone;
//   (3) a receiver down for BENCH_DOWN_SECONDS (default 60) at 10 000 events/s with
//       `queue-size: 1000000`: events received vs sent once it is back, and the peak heap (in a
//       child process started with --expose-gc, so that the heap is that of this part alone).
// Receivers run in a child process on 127.0.0.1, so that they do not share the sender's CPU.
// Run: npm run bench -- outputs   (BENCH_DOWN_SECONDS=10 BENCH_SECONDS=3 for a quick run;
// OUTPUTS_BENCH_PART=http-delivery for part (1) alone, with its process CPU)
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pino from "pino";
import { Registry } from "prom-client";
import { compressSync } from "snappy";
import { cpuSeconds, fmt, freePort, root, startVigie } from "./lib/vigie.mjs";

const { parseEdn } = await import(join(root, "dist/streams/edn.js"));
const { StreamEngine } = await import(join(root, "dist/streams/engine.js"));
const { outputMetrics } = await import(join(root, "dist/platform/outputs/metrics.js"));
const { Outputs } = await import(join(root, "dist/platform/outputs/outputs.js"));
const { samplesOf, encodeWriteRequest, encodeRemoteWriteBatch } = await import(
  join(root, "dist/platform/outputs/remote-write-output.js")
);

const ms = (milliseconds) => ({ text: `${milliseconds}ms`, milliseconds });
const sleep = (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds));
const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A receiver in a child process on 127.0.0.1: `json` counts the events of JSON arrays (and those
 * that arrive out of order by their `n`), `remote-write` decodes snappy WriteRequests with Vigie's
 * decoder and counts samples. GET /count answers the counts.
 */
const RECEIVER = `
  import { createServer } from "node:http";
  import { uncompressSync } from "snappy";
  const { RemoteWriteDecoder } = await import(${JSON.stringify(join(root, "dist/streams/remote-write-decoder.js"))});
  const decoder = new RemoteWriteDecoder();
  const mode = process.env.RECEIVER_MODE;
  let events = 0, requests = 0, outOfOrder = 0, last = -1;
  const server = createServer((request, response) => {
    if (request.method === "GET") {
      response.end(JSON.stringify({ events, requests, outOfOrder }));
      return;
    }
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      requests += 1;
      if (mode === "json") {
        for (const event of JSON.parse(body.toString("utf8"))) {
          // n restarts at 0 with each run of a benchmark.
          if (event.n !== last + 1 && event.n !== 0) outOfOrder += 1;
          last = event.n;
          events += 1;
        }
      } else {
        events += decoder.decode(uncompressSync(body), () => {});
      }
      response.writeHead(204);
      response.end();
    });
  });
  server.listen(Number(process.env.RECEIVER_PORT ?? 0), "127.0.0.1", () => console.log("listening " + server.address().port));
`;

/** Starts a receiver child; resolves with its URL, a count() and stop(). */
async function startReceiver(mode, port = 0) {
  const child = spawn(process.execPath, ["--input-type=module", "-e", RECEIVER], {
    cwd: root,
    env: { ...process.env, RECEIVER_MODE: mode, RECEIVER_PORT: String(port) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const listening = await new Promise((resolve, reject) => {
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
      const match = /listening (\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`the receiver exited with ${code}`)));
  });
  const url = `http://127.0.0.1:${listening}`;
  return {
    url,
    count: async () => await (await fetch(`${url}/count`)).json(),
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Polls `count` every 50 ms until it reports `events` (or the deadline passes); returns the last count. */
async function waitForCount(receiver, events, timeoutMs) {
  const deadline = performance.now() + timeoutMs;
  let count;
  do {
    count = await receiver.count();
    if (count.events >= events) return count;
    await sleep(50);
  } while (performance.now() < deadline);
  return count;
}

/** Outputs with their metrics in a registry of their own, and an engine wired to them. */
function outputsEngine(definitions) {
  const registry = new Registry();
  const logger = pino({ level: "error" });
  const outputs = new Outputs(definitions, {
    metrics: outputMetrics(registry, () => outputs.queued()),
    logger,
  });
  const names = new Set(Object.keys(definitions));
  const engine = new StreamEngine({}, undefined, {
    declarations: { outputs: names, asyncQueues: new Set() },
    output: (name) => outputs.sink(name),
    publish: () => () => {},
    asyncQueue: () => (next, value) => next(value),
    runsIo: true,
  });
  const outcome = async (output, name) => {
    const text = await registry.metrics();
    const prefix = `stream_output_events_total{output="${output}",outcome="${name}"} `;
    const line = text.split("\n").find((candidate) => candidate.startsWith(prefix));
    return line === undefined ? 0 : Number(line.slice(prefix.length));
  };
  return { outputs, engine, outcome };
}

const common = {
  "queue-size": 10_000,
  "flush-interval": ms(1000),
  timeout: ms(10_000),
  "max-retry-time": ms(300_000),
};

const httpOutput = (url, overrides = {}) => ({
  type: "http",
  url,
  headers: {},
  format: "json",
  ...common,
  "batch-size": 100,
  ...overrides,
});

const HOSTS = 1_000;
function makeEvents(count) {
  const events = new Array(count);
  for (let i = 0; i < count; i++) {
    events[i] = {
      host: `host-${i % HOSTS}`,
      service: "cpu",
      metric: (i % 97) + 1,
      time: 1_700_000_000 + i / 1000,
      n: i,
    };
  }
  return events;
}

const BASE = `{:action :where :params [[:> :metric 0]] :children [{:action :index :params [[:host :service]]}`;
const WITHOUT_OUTPUT = `{:actions ${BASE}]}}`;
const WITH_OUTPUT = `{:actions ${BASE} {:action :output :params [:hook]}]}}`;
const CHUNK = 500;

/**
 * Pushes `events` into `stream` in chunks of 500, one chunk per turn of the event loop (so that
 * delivery runs in between, as with a server), and returns the nanoseconds spent inside push().
 */
async function pushInTurns(stream, events) {
  let inside = 0n;
  for (let i = 0; i < events.length; i += CHUNK) {
    const chunk = events.slice(i, i + CHUNK);
    const started = process.hrtime.bigint();
    stream.push(chunk);
    inside += process.hrtime.bigint() - started;
    await turn();
  }
  return Number(inside);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function httpDelivery() {
  const COUNT = 1_000_000;
  const ROUNDS = 5;
  const events = makeEvents(COUNT);
  const receiver = await startReceiver("json");
  try {
    // Warm-up of both paths, so that the JIT has settled before anything is measured.
    await pushInTurns(
      new StreamEngine().add("bench", parseEdn(WITHOUT_OUTPUT), { kind: "api" }),
      events.slice(0, 100_000),
    );
    const warmReceiver = await startReceiver("json");
    const warm = outputsEngine({ hook: httpOutput(warmReceiver.url, { "queue-size": 2_000_000 }) });
    await pushInTurns(warm.engine.add("bench", parseEdn(WITH_OUTPUT), { kind: "api" }), events.slice(0, 100_000));
    await waitForCount(warmReceiver, 100_000, 30_000);
    await warm.outputs.drain(1000);
    await warmReceiver.stop();

    // Rounds alternate the baseline (the same stream without the output, same schedule) and the
    // stream with the output; the medians are printed.
    const baselineNs = [];
    const withOutputNs = [];
    const rates = [];
    let delivered = 0;
    let requests = 0;
    let outOfOrder = 0;
    let dropped = 0;
    for (let round = 0; round < ROUNDS; round++) {
      baselineNs.push(
        await pushInTurns(new StreamEngine().add("bench", parseEdn(WITHOUT_OUTPUT), { kind: "api" }), events),
      );
      // The queue holds every event, so that the figure is the delivery rate, not a drop rate.
      const { outputs, engine, outcome } = outputsEngine({
        hook: httpOutput(receiver.url, { "queue-size": 2_000_000 }),
      });
      const stream = engine.add("bench", parseEdn(WITH_OUTPUT), { kind: "api" });
      const started = performance.now();
      withOutputNs.push(await pushInTurns(stream, events));
      const count = await waitForCount(receiver, delivered + COUNT, 120_000);
      rates.push((count.events - delivered) / ((performance.now() - started) / 1000));
      delivered = count.events;
      requests = count.requests;
      outOfOrder = count.outOfOrder;
      dropped += (await outcome("hook", "dropped-queue-full")) + (await outcome("hook", "dropped-retries-exhausted"));
      await outputs.drain(1000);
    }

    const perEvent = median(baselineNs) / COUNT;
    const perEventWith = median(withOutputNs) / COUNT;
    const slower = (100 * (perEventWith - perEvent)) / perEvent;
    console.log(
      `(1) output → http receiver on loopback (json, batches of 100), ${fmt(COUNT)} events × ${ROUNDS} rounds`,
    );
    console.log(
      `    delivered: ${fmt(median(rates))} events/s (median; ${fmt(delivered)} events in ${fmt(requests)} requests, ${outOfOrder} out of order, ${dropped} dropped); target ≥ 100 000 events/s`,
    );
    console.log(
      `    push path, where → index (baseline):         ${perEvent.toFixed(0)} ns/event = ${fmt(1e9 / perEvent)} events/s`,
    );
    console.log(
      `    push path, where → index + output (sending): ${perEventWith.toFixed(0)} ns/event = ${fmt(1e9 / perEventWith)} events/s`,
    );
    console.log(`    push path slower by ${slower.toFixed(1)} % with the output (medians); target < 10 %`);
  } finally {
    await receiver.stop();
  }
}

/**
 * PUTs one body every 1000 / `requestsPerSecond` ms, on time (autocannon's overallRate sends each
 * second's requests in a burst), for `seconds`; returns the latencies (ms) and the failures.
 */
async function pacedPushes(url, bodies, requestsPerSecond, seconds) {
  const interval = 1000 / requestsPerSecond;
  const latencies = [];
  const inFlight = new Set();
  let failed = 0;
  let sent = 0;
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor((performance.now() - started) / interval);
    for (; sent < due; sent++) {
      const at = performance.now();
      const request = fetch(url, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: bodies[sent % bodies.length],
      }).then(
        async (response) => {
          await response.arrayBuffer();
          latencies.push(performance.now() - at);
          if (!response.ok) failed += 1;
        },
        () => {
          failed += 1;
        },
      );
      inFlight.add(request);
      void request.finally(() => inFlight.delete(request));
    }
    await sleep(1);
  }
  await Promise.all(inFlight);
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { requests: sent, failed, p50: at(0.5), p99: at(0.99) };
}

async function httpPushes() {
  const duration = Number(process.env.BENCH_SECONDS ?? 5);
  const receiver = await startReceiver("json");
  const events = makeEvents(100_000);
  const bodies = [];
  for (let i = 0; i < events.length; i += CHUNK) bodies.push(JSON.stringify({ events: events.slice(i, i + CHUNK) }));
  /**
   * PUTs for `duration` s into a server with `config` as stream: paced at `requestsPerSecond`, or
   * as fast as 4 autocannon connections go when it is undefined.
   */
  const run = async (config, yaml, requestsPerSecond) => {
    const vigie = await startVigie({ yaml });
    try {
      const url = `${vigie.base}/api/v1/stream/bench`;
      await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ config: Buffer.from(config).toString("base64") }),
      });
      const cpuBefore = cpuSeconds(vigie.child.pid);
      let load;
      if (requestsPerSecond === undefined) {
        let next = 0;
        const result = await autocannon({
          url,
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
        load = {
          rate: result.requests.average * CHUNK,
          requests: result.requests.total,
          failed: result.non2xx + result.errors,
        };
      } else {
        load = await pacedPushes(url, bodies, requestsPerSecond, duration);
      }
      const cpu = cpuSeconds(vigie.child.pid) - cpuBefore;
      await sleep(1500); // the last batches leave (flush-interval 1 s)
      const metrics = await (await fetch(`${vigie.base}/metrics`)).text();
      const outcome = (name) =>
        Number(
          new RegExp(`stream_output_events_total\\{output="hook",outcome="${name}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0,
        );
      return {
        ...load,
        pushed: load.requests * CHUNK,
        cpu,
        sent: outcome("sent"),
        dropped: outcome("dropped-queue-full"),
      };
    } finally {
      await vigie.stop();
    }
  };
  try {
    const yaml = ["streams:", "  outputs:", "    hook:", "      type: http", `      url: ${receiver.url}`].join("\n");
    const failures = (...runs) => {
      const failed = runs.reduce((sum, run) => sum + run.failed, 0);
      return failed > 0 ? `; ${failed} failed pushes` : "";
    };
    console.log(`    over HTTP against the real server: PUT batches of ${CHUNK} events, ${duration} s per run`);
    // Paced at 100 000 events/s: the output keeps up, so the question is what the push pays.
    const pacedRate = 100_000 / CHUNK;
    const pacedWithout = await run(WITHOUT_OUTPUT, yaml, pacedRate);
    const pacedWith = await run(WITH_OUTPUT, yaml, pacedRate);
    const perEvent = (run) => (1e6 * run.cpu) / run.pushed;
    const ms2 = (value) => value.toFixed(2);
    console.log(`      paced at ${fmt(pacedRate * CHUNK)} events/s (one PUT every ${1000 / pacedRate} ms):`);
    console.log(
      `        without the output (baseline): push latency p50 ${ms2(pacedWithout.p50)} ms, p99 ${ms2(pacedWithout.p99)} ms; server CPU ${perEvent(pacedWithout).toFixed(2)} µs/event`,
    );
    console.log(
      `        with the output:               push latency p50 ${ms2(pacedWith.p50)} ms, p99 ${ms2(pacedWith.p99)} ms; server CPU ${perEvent(pacedWith).toFixed(2)} µs/event (pushing and sending); ${fmt(pacedWith.sent)} of ${fmt(pacedWith.pushed)} events delivered, ${fmt(pacedWith.dropped)} dropped${failures(pacedWithout, pacedWith)}`,
    );
    // Saturated: pushes take the whole event loop; the output sends what it can and drops the rest.
    const without = await run(WITHOUT_OUTPUT, yaml);
    const withOutput = await run(WITH_OUTPUT, yaml);
    console.log("      saturated (4 autocannon connections, as fast as the server takes them):");
    console.log(`        without the output (baseline): ${fmt(without.rate)} events/s pushed`);
    console.log(
      `        with the output:               ${fmt(withOutput.rate)} events/s pushed (${(100 * (1 - withOutput.rate / without.rate)).toFixed(1)} % fewer); ${fmt(withOutput.sent)} sent, ${fmt(withOutput.dropped)} dropped as queue-full (queue-size 10 000)${failures(without, withOutput)}`,
    );
  } finally {
    await receiver.stop();
  }
}

async function remoteWrite() {
  const SAMPLES = 1_000_000;
  const BATCH = 1000;
  const events = new Array(SAMPLES);
  for (let i = 0; i < SAMPLES; i++) {
    events[i] = {
      service: `node_metric_${i % 50}_total`,
      instance: `10.0.0.${(i >> 6) % 20}:9100`,
      job: "node",
      host: `host-${Math.floor(i / 50) % 20}`,
      metric: i * 1.5,
      time: 1_700_000_000 + Math.floor(i / BATCH),
    };
  }
  // Baselines on one batch: snappy alone, and the whole encoding without the network.
  const batch = events.slice(0, BATCH);
  const raw = encodeWriteRequest(samplesOf(batch).timeseries);
  const rate = (run) => {
    for (let i = 0; i < 50; i++) run();
    let runs = 0;
    const started = performance.now();
    while (performance.now() - started < 2000) {
      for (let i = 0; i < 10; i++) run();
      runs += 10;
    }
    return (runs * BATCH) / ((performance.now() - started) / 1000);
  };
  const snappyOnly = rate(() => compressSync(raw));
  const encodeOnly = rate(() => encodeRemoteWriteBatch(batch));

  const receiver = await startReceiver("remote-write");
  try {
    const { outputs, engine, outcome } = outputsEngine({
      tsdb: {
        type: "prometheus-remote-write",
        url: `${receiver.url}/api/v1/write`,
        headers: {},
        ...common,
        "batch-size": BATCH,
        "queue-size": 2_000_000,
      },
    });
    const stream = engine.add("bench", parseEdn("{:actions {:action :output :params [:tsdb]}}"), { kind: "api" });
    const started = performance.now();
    await pushInTurns(stream, events);
    const count = await waitForCount(receiver, SAMPLES, 120_000);
    const elapsed = (performance.now() - started) / 1000;
    const rejected = await outcome("tsdb", "dropped-rejected");
    await outputs.drain(1000);
    console.log(
      `(2) prometheus-remote-write output, batches of ${BATCH} samples (1 000 series, 5 labels), ${fmt(SAMPLES)} samples`,
    );
    console.log(`    snappy compression alone (baseline):  ${fmt(snappyOnly)} samples/s`);
    console.log(`    encoding alone (series + protobufjs + snappy): ${fmt(encodeOnly)} samples/s`);
    console.log(
      `    encoded and delivered (decoded by the receiver): ${fmt(count.events)} samples in ${elapsed.toFixed(2)} s = ${fmt(count.events / elapsed)} samples/s (${rejected} rejected); target ≥ 200 000 samples/s`,
    );
  } finally {
    await receiver.stop();
  }
}

async function receiverDown() {
  const DOWN = Number(process.env.BENCH_DOWN_SECONDS ?? 60);
  const RATE = 10_000;
  const port = await freePort();
  const { outputs, engine, outcome } = outputsEngine({
    hook: httpOutput(`http://127.0.0.1:${port}`, { "queue-size": 1_000_000 }),
  });
  const stream = engine.add("bench", parseEdn("{:actions {:action :output :params [:hook]}}"), { kind: "api" });
  // This part runs in a process of its own (--expose-gc): the heap holds nothing of the others.
  globalThis.gc?.();
  let peakHeap = process.memoryUsage().heapUsed;
  const heapBefore = peakHeap;
  const sampler = setInterval(() => {
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  }, 100);
  let sent = 0;
  const started = performance.now();
  /** Pushes at RATE events/s (10 ms ticks) until `untilMs` after the start. */
  const produce = async (untilMs) => {
    while (performance.now() - started < untilMs) {
      const due = Math.floor(((performance.now() - started) / 1000) * RATE);
      const batch = [];
      for (; sent < due; sent++) {
        batch.push({
          host: `host-${sent % HOSTS}`,
          service: "cpu",
          metric: sent,
          time: 1_700_000_000 + sent / RATE,
          n: sent,
        });
      }
      if (batch.length > 0) stream.push(batch);
      await sleep(10);
    }
  };
  let receiver;
  try {
    await produce(DOWN * 1000);
    const queuedWhenBack = [...outputs.queued()][0]?.[1] ?? 0;
    receiver = await startReceiver("json", port);
    const back = performance.now();
    // Events keep coming for 5 more seconds while the backlog empties.
    await produce(DOWN * 1000 + 5000);
    // The batch in flight may be in a backoff of up to 30 s when the receiver comes back.
    const count = await waitForCount(receiver, sent, 120_000);
    const caughtUp = (performance.now() - back) / 1000;
    clearInterval(sampler);
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    const dropped =
      (await outcome("hook", "dropped-queue-full")) + (await outcome("hook", "dropped-retries-exhausted"));
    console.log(`(3) receiver down for ${DOWN} s at ${fmt(RATE)} events/s, queue-size 1 000 000, then back`);
    console.log(`    queued when it came back: ${fmt(queuedWhenBack)} events`);
    console.log(
      `    sent ${fmt(sent)}, received ${fmt(count.events)} (${count.outOfOrder} out of order), dropped ${dropped}; caught up ${caughtUp.toFixed(1)} s after it came back${count.events === sent && dropped === 0 ? ": nothing lost" : ": EVENTS LOST"}`,
    );
    console.log(
      `    heap: ${(heapBefore / 1e6).toFixed(0)} MB before, peak ${(peakHeap / 1e6).toFixed(0)} MB (queue and events included); target < 500 MB`,
    );
  } finally {
    clearInterval(sampler);
    await outputs.drain(1000);
    await receiver?.stop();
  }
}

if (process.env.OUTPUTS_BENCH_PART === "receiver-down") {
  await receiverDown();
} else if (process.env.OUTPUTS_BENCH_PART === "http-delivery") {
  // Part (1) alone, with the process CPU it took (for A/B runs of the push path's cost).
  const before = process.cpuUsage();
  await httpDelivery();
  const cpu = process.cpuUsage(before);
  console.log(`    process CPU of part (1): ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s`);
} else {
  await httpDelivery();
  await httpPushes();
  await remoteWrite();
  // (3) in a child process with --expose-gc, so that its heap figures are its own.
  const child = spawn(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url)], {
    env: { ...process.env, OUTPUTS_BENCH_PART: "receiver-down" },
    stdio: "inherit",
  });
  const code = await new Promise((resolve) => child.once("exit", resolve));
  if (code !== 0) process.exitCode = 1;
}
