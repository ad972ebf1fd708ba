// Remote write benchmark (docs/benchmarks.md): samples per second decompressed, decoded and pushed
// into a stream with a `where` and an `index`, for a realistic request (1 000 series × 1 sample, as
// Prometheus sends), with 20 and with 5 labels per series, beside the cost of snappy decompression
// alone (in alternating rounds, the ratio being the median of the rounds') and of protobufjs
// reflection decoding, measured in the same run; snappy's CPU split between user space and the
// kernel (which zeroes the fresh memory of its output, a cost that varies from process to process:
// the native module's allocator, mimalloc, gives freed pages back and faults them in again, up to
// ten times the decompression itself in some processes and not at all in others); then the same
// request through HTTP against the real server, with 20 labels (459 KB decoded: the route's path for
// large bodies, decompressed on a worker thread) and 10 (242 KB: its inline path).
// Run: npm run bench -- remote-write
import { join } from "node:path";
import autocannon from "autocannon";
import { uncompressSync } from "snappy";
import { request, SERIES, STREAM, WriteRequest } from "./lib/remote-write-request.mjs";
import { fmt, root, startVigie } from "./lib/vigie.mjs";

const { parseEdn } = await import(join(root, "dist/streams/edn.js"));
const { StreamEngine } = await import(join(root, "dist/streams/engine.js"));
const { RemoteWriteDecoder } = await import(join(root, "dist/streams/remote-write-decoder.js"));

function samplesPerSecond(run, seconds = 2) {
  for (let i = 0; i < 20; i++) run(); // warm-up
  let requests = 0;
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(seconds * 1e9);
  while (process.hrtime.bigint() < deadline) {
    for (let i = 0; i < 10; i++) run();
    requests += 10;
  }
  return (requests * SERIES) / (Number(process.hrtime.bigint() - started) / 1e9);
}

/**
 * The CPU of one call of `fn`, split between user space and the kernel, and the page faults it
 * causes: snappy's own work is the user part; the kernel part is the memory its output gets.
 */
function cpuSplit(fn, calls = 200) {
  const before = process.resourceUsage();
  for (let i = 0; i < calls; i++) fn();
  const after = process.resourceUsage();
  const per = (field) => (after[field] - before[field]) / calls;
  return { user: per("userCPUTime"), system: per("systemCPUTime"), faults: per("minorPageFault") };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * Samples per second of `run` and of `baseline`, measured in alternating rounds of `perRound`
 * requests (on a shared machine, one long run of each would compare different moments): the medians
 * of each, and the median of the per-round ratios run / baseline.
 */
function interleaved(run, baseline, { rounds = 21, perRound = 20 } = {}) {
  for (let i = 0; i < 20; i++) {
    run();
    baseline();
  }
  const timed = (fn) => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < perRound; i++) fn();
    return (perRound * SERIES) / (Number(process.hrtime.bigint() - started) / 1e9);
  };
  const runs = [];
  const baselines = [];
  const ratios = [];
  for (let round = 0; round < rounds; round++) {
    const first = round % 2 === 0;
    const a = first ? timed(run) : undefined;
    const b = timed(baseline);
    const r = a ?? timed(run);
    runs.push(r);
    baselines.push(b);
    ratios.push(r / b);
  }
  return { run: median(runs), baseline: median(baselines), ratio: median(ratios) };
}

function inProcess(labelCount) {
  const body = request(labelCount);
  const reflection = samplesPerSecond(() => {
    const decoded = WriteRequest.toObject(WriteRequest.decode(uncompressSync(body)), { longs: Number });
    const events = [];
    for (const series of decoded.timeseries) {
      for (const sample of series.samples) {
        const event = {};
        for (const label of series.labels) event[label.name === "__name__" ? "service" : label.name] = label.value;
        event.metric = sample.value;
        event.time = sample.timestamp / 1000;
        events.push(event);
      }
    }
  }, 1);
  const engine = new StreamEngine();
  const stream = engine.add("bench", parseEdn(STREAM), { kind: "api" });
  const decoder = new RemoteWriteDecoder();
  const measured = interleaved(
    () => {
      const events = [];
      decoder.decode(uncompressSync(body), (event) => events.push(event));
      stream.push(events);
    },
    () => uncompressSync(body),
  );
  const vigie = measured.run;
  const snappyOnly = measured.baseline;
  if (stream.index.size !== SERIES) throw new Error(`index holds ${stream.index.size} events, expected ${SERIES}`);
  const split = cpuSplit(() => uncompressSync(body));
  const target = labelCount >= 20 ? 250_000 : 500_000;
  console.log(`  ${labelCount} labels per series (${body.length} bytes compressed):`);
  console.log(`    snappy decompression alone (baseline):      ${fmt(snappyOnly)} samples/s`);
  console.log(
    `      its CPU per request: ${split.user.toFixed(0)} µs user, ${split.system.toFixed(0)} µs system (${split.faults.toFixed(1)} page faults)`,
  );
  console.log(`    protobufjs reflection + events (reference): ${fmt(reflection)} samples/s`);
  console.log(`    Vigie: decompress + decode + where + index: ${fmt(vigie)} samples/s (target ≥ ${fmt(target)})`);
  console.log(
    `    Vigie / snappy alone: ${measured.ratio.toFixed(2)} (median of rounds alternating both); Vigie / protobufjs: ${(vigie / reflection).toFixed(1)}×`,
  );
}

async function overHttp(labelCount) {
  const vigie = await startVigie();
  const base = vigie.base;
  await fetch(`${base}/api/v1/stream/bench`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ config: Buffer.from(STREAM).toString("base64") }),
  });
  const duration = Number(process.env.BENCH_SECONDS ?? 5);
  const result = await autocannon({
    url: `${base}/api/v1/tsdb/remote-write/bench`,
    method: "POST",
    connections: 4,
    duration,
    headers: { "content-type": "application/x-protobuf", "content-encoding": "snappy" },
    body: request(labelCount),
  });
  await vigie.stop();
  console.log(
    `  HTTP, ${labelCount} labels, 4 connections, ${duration} s: ${fmt(result.requests.average)} requests/s = ${fmt(result.requests.average * SERIES)} samples/s (${result.non2xx} non-2xx)`,
  );
}

console.log("remote write, 1 000 series × 1 sample per request, in-process:");
inProcess(20);
inProcess(5);
await overHttp(20);
await overHttp(10);
