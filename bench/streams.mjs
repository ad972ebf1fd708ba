// Streams benchmarks (docs/benchmarks.md), each beside a baseline measured in the same run:
//   (a) in-process events/s through where → by [:host] → fixed-time-window 10 → coll-count with
//       1 000 hosts, beside a loop that calls a no-op function per event and a hand-written
//       closure pipeline of the same shape; the same pipeline with the where-condition written
//       with `:=` and with `:regex` (RE2, linear time), both matching every event;
//   (b) HTTP push with batches of 500 events against the real server, beside GET /healthz;
//   (c) memory of 100 000 distinct `by` keys with their windows;
//   (d) in-process events/s of the phase-2 stateful actions `by [:host] → percentiles` and
//       `coalesce`, on the events of (a), beside the no-op baseline of (a);
//   (e) memory per `by` fork of percentiles (an HdrHistogram each), 10 000 hosts, beside the
//       histogram's own estimatedFootprintInBytes;
//   (f) the tap hook (`vigie stream tap`): the pipeline of (a) pushed through `Stream.push` while
//       nobody taps, beside the same compiled pipeline called in the same loop without the hook
//       (the baseline), and while a tapper watches (a sink that counts).
// Run: npm run bench -- streams
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import autocannon from "autocannon";
import { handWrittenPipeline } from "./lib/hand-written.mjs";
import { cpuSeconds, fmt, root, startVigie } from "./lib/vigie.mjs";

const { parseEdn } = await import(join(root, "dist/streams/edn.js"));
const { StreamEngine } = await import(join(root, "dist/streams/engine.js"));
const { DEFAULT_STREAM_LIMITS } = await import(join(root, "dist/streams/action.js"));

/** The benchmark's pipeline, with `condition` as the where-condition. */
const pipeline = (condition) => `{:actions {:action :where :params [${condition}]
  :children [{:action :by :params [{:fields [:host]}]
    :children [{:action :fixed-time-window :params [{:duration 10}]
      :children [{:action :coll-count}]}]}]}}`;
const PIPELINE = pipeline("[:> :metric 0]");
const EQUALS_PIPELINE = pipeline('[:= :service "cpu"]');
const REGEX_PIPELINE = pipeline('[:regex :host "host-[0-9]+"]');

/**
 * Phase-2 pipelines (d): percentiles per host over windows of 60 s (about 6 events per host and
 * window with the events of (a)), with a fixed range or a growing one; coalesce of the latest event
 * per host every 10 s (a list of 1 000 events), counted.
 */
const percentilesPipeline = (range) => `{:actions {:action :by :params [{:fields [:host]}]
  :children [{:action :percentiles :params [{:duration 60 :percentiles [0.5 0.99 1]${range}}]}]}}`;
const PERCENTILES_FIXED = percentilesPipeline(" :highest-trackable-value 1000000");
const PERCENTILES_AUTO = percentilesPipeline("");
const COALESCE = `{:actions {:action :coalesce :params [{:duration 10 :fields [:host]}]
  :children [{:action :coll-count}]}}`;

const HOSTS = 1_000;
const EVENTS = 2_000_000;
const BATCH = 500;

function makeEvents(count) {
  const events = new Array(count);
  for (let i = 0; i < count; i++) {
    // 1 000 hosts, 100 events per second of event time: windows close every 10 s.
    events[i] = { host: `host-${i % HOSTS}`, service: "cpu", metric: (i % 97) + 1, time: i / 100 };
  }
  return events;
}

/** Events per second of `run` over `count` events: the median of 5 runs after 2 warm-up runs. */
function rate(count, run) {
  // Warm-up runs let the JIT settle; the median keeps one slow run (GC, recompilation) from
  // deciding the figure.
  run();
  run();
  const rates = [];
  for (let i = 0; i < 5; i++) {
    const started = process.hrtime.bigint();
    run();
    rates.push(count / (Number(process.hrtime.bigint() - started) / 1e9));
  }
  return rates.sort((a, b) => a - b)[2];
}

/** Events per second of a compiled stream fed `events` in batches of {@link BATCH}. */
function engineRate(events, config) {
  return rate(events.length, () => {
    const engine = new StreamEngine();
    const stream = engine.add("bench", parseEdn(config), { kind: "api" });
    for (let i = 0; i < events.length; i += BATCH) stream.push(events.slice(i, i + BATCH));
  });
}

function inProcess() {
  const events = makeEvents(EVENTS);
  let sink = 0;
  const noop = (event) => {
    sink += event.metric;
  };
  const baseline = rate(EVENTS, () => {
    for (let i = 0; i < events.length; i++) noop(events[i]);
  });

  const handWritten = rate(EVENTS, () => {
    sink += handWrittenPipeline(events);
  });

  const compiled = engineRate(events, PIPELINE);
  const equals = engineRate(events, EQUALS_PIPELINE);
  const regex = engineRate(events, REGEX_PIPELINE);
  if (sink === 42) console.log("");
  console.log("(a) in-process: where → by [:host] → fixed-time-window 10 → coll-count, 1 000 hosts");
  console.log(`    no-op function per event (baseline): ${fmt(baseline)} events/s`);
  console.log(`    hand-written closure pipeline:       ${fmt(handWritten)} events/s`);
  console.log(`    Vigie compiled stream:               ${fmt(compiled)} events/s`);
  console.log(
    `    ratio hand-written / Vigie: ${(handWritten / compiled).toFixed(2)}× (target ≤ 4×); target ≥ 3 000 000 events/s`,
  );
  console.log(`    where [:= :service "cpu"]:           ${fmt(equals)} events/s`);
  console.log(
    `    where [:regex :host "host-[0-9]+"]:  ${fmt(regex)} events/s (${((100 * regex) / equals).toFixed(0)}% of :=; target ≥ 3 000 000 events/s)`,
  );
}

function memory() {
  // A child with --expose-gc measures the heap without the events of (a).
  const script = `
    const { parseEdn } = await import(${JSON.stringify(join(root, "dist/streams/edn.js"))});
    const { StreamEngine } = await import(${JSON.stringify(join(root, "dist/streams/engine.js"))});
    const config = parseEdn(${JSON.stringify(PIPELINE)});
    globalThis.gc(); const before = process.memoryUsage().heapUsed;
    const engine = new StreamEngine();
    const stream = engine.add("bench", config, { kind: "api" });
    for (let i = 0; i < 100000; i++) stream.pushOne({ host: "host-" + i, metric: 1, time: 5 });
    globalThis.gc(); const after = process.memoryUsage().heapUsed;
    console.log(JSON.stringify({ bytes: after - before, rss: process.memoryUsage().rss, alive: stream.index.size >= 0 }));
  `;
  const result = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], {
    encoding: "utf8",
  });
  const { bytes, rss } = JSON.parse(result.stdout.trim());
  console.log("(c) memory: 100 000 distinct `by` keys, each with an open fixed-time-window holding one event");
  console.log(
    `    heap used by the forks: ${(bytes / 1e6).toFixed(1)} MB (process RSS ${(rss / 1e6).toFixed(1)} MB); target < 200 MB`,
  );
}

function stateful() {
  const events = makeEvents(EVENTS);
  let sink = 0;
  const baseline = rate(EVENTS, () => {
    for (let i = 0; i < events.length; i++) sink += events[i].metric;
  });
  const fixed = engineRate(events, PERCENTILES_FIXED);
  const auto = engineRate(events, PERCENTILES_AUTO);
  const coalesce = engineRate(events, COALESCE);
  if (sink === 42) console.log("");
  console.log("(d) in-process, phase-2 stateful actions, 1 000 hosts, events of (a)");
  console.log(`    no-op loop per event (baseline):                          ${fmt(baseline)} events/s`);
  console.log(`    by [:host] → percentiles 60 s [0.5 0.99 1], H = 10^6:     ${fmt(fixed)} events/s`);
  console.log(`    by [:host] → percentiles 60 s [0.5 0.99 1], auto-resize:  ${fmt(auto)} events/s`);
  console.log(`    coalesce 10 s [:host] → coll-count:                       ${fmt(coalesce)} events/s`);
}

/**
 * Heap (JavaScript objects plus the ArrayBuffers that hold the histograms' counts, which
 * `heapUsed` alone leaves out) per fork of `by [:host] → percentiles` for 10 000 hosts, each fork
 * having recorded `values`, measured in a child with --expose-gc.
 */
function percentilesMemory(range, values) {
  const hosts = 10_000;
  const script = `
    const { parseEdn } = await import(${JSON.stringify(join(root, "dist/streams/edn.js"))});
    const { StreamEngine } = await import(${JSON.stringify(join(root, "dist/streams/engine.js"))});
    const hdr = await import(${JSON.stringify(join(root, "node_modules/hdr-histogram-js/dist/index.js"))});
    const config = parseEdn(${JSON.stringify(percentilesPipeline(range.edn))});
    const values = ${JSON.stringify(values)};
    const used = () => { const m = process.memoryUsage(); return { heap: m.heapUsed, buffers: m.arrayBuffers }; };
    globalThis.gc(); const before = used();
    const engine = new StreamEngine();
    const stream = engine.add("bench", config, { kind: "api" });
    for (let i = 0; i < ${hosts}; i++)
      for (const metric of values) stream.pushOne({ host: "host-" + i, service: "latency", metric, time: 5 });
    globalThis.gc(); const after = used();
    const histogram = hdr.build(${JSON.stringify(range.request)});
    for (const metric of values) histogram.recordValue(metric);
    console.log(JSON.stringify({
      heap: (after.heap - before.heap) / ${hosts},
      buffers: (after.buffers - before.buffers) / ${hosts},
      footprint: histogram.estimatedFootprintInBytes,
      alive: stream.index.size >= 0,
    }));
  `;
  const result = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], {
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(result.stdout.trim());
}

function statefulMemory() {
  const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
  const ranges = [
    {
      label: "H = 10^6, 3 digits, values up to 10^6",
      range: {
        edn: " :highest-trackable-value 1000000 :nb-significant-digits 3",
        request: { highestTrackableValue: 1_000_000, numberOfSignificantValueDigits: 3, autoResize: false },
      },
      values: [1, 500, 20_000, 999_999],
    },
    {
      label: "auto-resize, 3 digits, values up to 10^9",
      range: { edn: " :nb-significant-digits 3", request: { numberOfSignificantValueDigits: 3, autoResize: true } },
      values: [1, 500, 1_000_000, 1_000_000_000],
    },
  ];
  console.log("(e) memory: by [:host] → percentiles, 10 000 hosts, per fork (heap + ArrayBuffers)");
  for (const { label, range, values } of ranges) {
    const { heap, buffers, footprint } = percentilesMemory(range, values);
    console.log(
      `    ${label}: ${kb(heap + buffers)} (${kb(heap)} heap + ${kb(buffers)} counts); estimatedFootprintInBytes ${kb(footprint)}; 10 000 forks ${((10_000 * (heap + buffers)) / 1e6).toFixed(0)} MB`,
    );
  }
}

async function http() {
  const vigie = await startVigie();
  const base = vigie.base;
  const b64 = Buffer.from(PIPELINE).toString("base64");
  await fetch(`${base}/api/v1/stream/bench`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ config: b64 }),
  });
  const events = makeEvents(BATCH * 200);
  const bodies = [];
  for (let i = 0; i < events.length; i += BATCH) bodies.push(JSON.stringify({ events: events.slice(i, i + BATCH) }));
  let next = 0;
  const duration = Number(process.env.BENCH_SECONDS ?? 10);
  // The server's CPU time per request (from /proc) varies far less with the machine's load than
  // the rates, which share two cores with autocannon and whatever else runs.
  const pid = vigie.child.pid;
  const cpu0 = cpuSeconds(pid);
  const health = await autocannon({ url: `${base}/healthz`, connections: 10, duration });
  const cpu1 = cpuSeconds(pid);
  const push = await autocannon({
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
  const cpu2 = cpuSeconds(pid);
  await vigie.stop();
  const ok = push.non2xx === 0 && push.errors === 0;
  const healthCpu = (cpu1 - cpu0) / health.requests.total;
  const pushCpu = (cpu2 - cpu1) / push.requests.total;
  console.log(`(b) HTTP push, batches of ${BATCH} events, ${duration} s each phase`);
  console.log(`    GET /healthz (baseline): ${fmt(health.requests.average)} requests/s`);
  console.log(
    `    PUT /api/v1/stream/bench: ${fmt(push.requests.average)} requests/s = ${fmt(push.requests.average * BATCH)} events/s${ok ? "" : ` (${push.non2xx} non-2xx, ${push.errors} errors)`}; target ≥ 1 000 000 events/s`,
  );
  console.log(`    push requests / healthz requests: ${(push.requests.average / health.requests.average).toFixed(3)}`);
  console.log(
    `    server CPU per request: /healthz ${(healthCpu * 1e6).toFixed(0)} µs, push ${(pushCpu * 1e6).toFixed(0)} µs (${((pushCpu * 1e6) / BATCH).toFixed(2)} µs per event); healthz CPU / push CPU: ${(healthCpu / pushCpu).toFixed(3)}`,
  );
}

/**
 * Events per second of the pipeline of (a) called without `Stream.push`: its compiled entry in the
 * loop `push` runs (a try per event), without the tap check, with the same counters.
 */
function entryRate(events, config) {
  const engine = new StreamEngine();
  const compiled = engine.compile(parseEdn(config));
  return rate(events.length, () => {
    const counters = Array.from({ length: compiled.slots }, () => ({ count: 0 }));
    const entry = compiled.build({
      limits: DEFAULT_STREAM_LIMITS,
      stream: "bench",
      index: engine.add("index-holder", parseEdn("{:actions {:action :sdo}}"), { kind: "api" }).index,
      reinject: () => {},
      log: () => {},
      tap: () => {},
      dropped: () => () => {},
      output: () => () => {},
      publish: () => () => {},
      asyncQueue: () => () => {},
      runsIo: true,
      counter: (slot) => counters[slot],
      tapPoint: () => undefined,
    });
    for (let i = 0; i < events.length; i += BATCH) {
      const batch = events.slice(i, i + BATCH);
      for (const event of batch) {
        try {
          entry(event);
        } catch {
          // As push: never abort.
        }
      }
    }
  });
}

function tapHook() {
  const events = makeEvents(EVENTS);
  let tapped = 0;
  const without = entryRate(events, PIPELINE);
  const idle = engineRate(events, PIPELINE);
  const watched = rate(events.length, () => {
    const engine = new StreamEngine();
    const stream = engine.add("bench", parseEdn(PIPELINE), { kind: "api" });
    stream.watch(undefined, () => {
      tapped++;
    });
    for (let i = 0; i < events.length; i += BATCH) stream.push(events.slice(i, i + BATCH));
  });
  if (tapped === 0) throw new Error("the tapper saw nothing");
  console.log("(f) tap hook, the pipeline of (a)");
  console.log(`    compiled entry, no hook (baseline):  ${fmt(without)} events/s`);
  console.log(
    `    Stream.push, nobody taps:            ${fmt(idle)} events/s (${((100 * idle) / without).toFixed(0)}% of the baseline)`,
  );
  console.log(`    Stream.push, a tapper watches:       ${fmt(watched)} events/s (a sink that counts; no socket)`);
}

inProcess();
tapHook();
memory();
stateful();
statefulMemory();
await http();
