// Streams benchmarks (streams.md §10), each beside a baseline measured in the same run:
//   (a) in-process events/s through where → by [:host] → fixed-time-window 10 → coll-count with
//       1 000 hosts, beside a loop that calls a no-op function per event and a hand-written
//       closure pipeline of the same shape; the same pipeline with the where-condition written
//       with `:=` and with `:regex` (RE2, linear time), both matching every event;
//   (b) HTTP push with batches of 500 events against the real server, beside GET /healthz;
//   (c) memory of 100 000 distinct `by` keys with their windows.
// Run: npm run bench -- streams
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import autocannon from "autocannon";
import { fmt, root, startVigie } from "./lib/vigie.mjs";

const { parseEdn } = await import(join(root, "dist/streams/edn.js"));
const { StreamEngine } = await import(join(root, "dist/streams/engine.js"));

/** The benchmark's pipeline, with `condition` as the where-condition. */
const pipeline = (condition) => `{:actions {:action :where :params [${condition}]
  :children [{:action :by :params [{:fields [:host]}]
    :children [{:action :fixed-time-window :params [{:duration 10}]
      :children [{:action :coll-count}]}]}]}}`;
const PIPELINE = pipeline("[:> :metric 0]");
const EQUALS_PIPELINE = pipeline('[:= :service "cpu"]');
const REGEX_PIPELINE = pipeline('[:regex :host "host-[0-9]+"]');

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
    let emitted = 0;
    const forks = new Map();
    const window = () => {
      let index = -Infinity;
      let buffer = [];
      return (event) => {
        const k = Math.floor(event.time / 10);
        if (k > index) {
          if (buffer.length > 0) emitted += buffer.length > 0 ? 1 : 0;
          buffer = [];
          index = k;
        }
        buffer.push(event);
      };
    };
    const by = (event) => {
      let fork = forks.get(event.host);
      if (fork === undefined) {
        fork = window();
        forks.set(event.host, fork);
      }
      fork(event);
    };
    const where = (event) => {
      if (typeof event.metric === "number" && event.metric > 0) by(event);
    };
    for (let i = 0; i < events.length; i++) where(events[i]);
    sink += emitted;
  });

  const engineRate = (config) =>
    rate(EVENTS, () => {
      const engine = new StreamEngine();
      const stream = engine.add("bench", parseEdn(config), { kind: "api" });
      for (let i = 0; i < events.length; i += BATCH) stream.push(events.slice(i, i + BATCH));
    });
  const compiled = engineRate(PIPELINE);
  const equals = engineRate(EQUALS_PIPELINE);
  const regex = engineRate(REGEX_PIPELINE);
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
  const health = await autocannon({ url: `${base}/healthz`, connections: 10, duration });
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
  await vigie.stop();
  const ok = push.non2xx === 0 && push.errors === 0;
  console.log(`(b) HTTP push, batches of ${BATCH} events, ${duration} s each phase`);
  console.log(`    GET /healthz (baseline): ${fmt(health.requests.average)} requests/s`);
  console.log(
    `    PUT /api/v1/stream/bench: ${fmt(push.requests.average)} requests/s = ${fmt(push.requests.average * BATCH)} events/s${ok ? "" : ` (${push.non2xx} non-2xx, ${push.errors} errors)`}; target ≥ 300 000 events/s`,
  );
  console.log(`    push requests / healthz requests: ${(push.requests.average / health.requests.average).toFixed(3)}`);
}

inProcess();
memory();
await http();
