// The in-process pipeline of streams.mjs (a) — where → by [:host] → fixed-time-window 10 →
// coll-count, 1 000 hosts, batches of 500 through Stream.push — as a ratio to the hand-written
// closure pipeline measured in the same rounds: each round runs the hand-written pipeline, then
// this build's dist/, then (with VIGIE_BENCH_BASE=<another checkout, built>) that build's; after 2
// warm-up rounds, 7 rounds give the medians. On a shared machine the load moves single figures by
// a factor of two or more; a ratio taken within one round moves far less.
// Run: npm run bench -- streams-inprocess   (VIGIE_BENCH_BASE=/path/to/main npm run bench -- …)
import { join } from "node:path";
import { handWrittenPipeline } from "./lib/hand-written.mjs";
import { fmt, root } from "./lib/vigie.mjs";

const PIPELINE = `{:actions {:action :where :params [[:> :metric 0]]
  :children [{:action :by :params [{:fields [:host]}]
    :children [{:action :fixed-time-window :params [{:duration 10}]
      :children [{:action :coll-count}]}]}]}}`;
const HOSTS = 1_000;
const EVENTS = 2_000_000;
const BATCH = 500;
const ROUNDS = 7;

const events = new Array(EVENTS);
for (let i = 0; i < EVENTS; i++) {
  events[i] = { host: `host-${i % HOSTS}`, service: "cpu", metric: (i % 97) + 1, time: i / 100 };
}

let emitted = 0;
/** The hand-written pipeline of streams.mjs (a), the same shape as closures written for it. */
function handWritten() {
  emitted += handWrittenPipeline(events);
}

/** One run of the compiled pipeline of the build at `checkout` (a fresh engine, as streams.mjs). */
async function compiled(checkout) {
  const { parseEdn } = await import(join(checkout, "dist/streams/edn.js"));
  const { StreamEngine } = await import(join(checkout, "dist/streams/engine.js"));
  return () => {
    const stream = new StreamEngine().add("bench", parseEdn(PIPELINE), { kind: "api" });
    for (let i = 0; i < events.length; i += BATCH) stream.push(events.slice(i, i + BATCH));
  };
}

const runs = [{ label: "this build", run: await compiled(root) }];
const base = process.env.VIGIE_BENCH_BASE;
if (base) runs.push({ label: `VIGIE_BENCH_BASE (${base})`, run: await compiled(base) });

const rate = (run) => {
  const started = process.hrtime.bigint();
  run();
  return EVENTS / (Number(process.hrtime.bigint() - started) / 1e9);
};
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (let i = 0; i < 2; i++) for (const run of [handWritten, ...runs.map((entry) => entry.run)]) run();
const rounds = [];
for (let i = 0; i < ROUNDS; i++) rounds.push([rate(handWritten), ...runs.map((entry) => rate(entry.run))]);
if (emitted === 0) throw new Error("the hand-written pipeline emitted nothing");

console.log(`in-process, the pipeline of streams.mjs (a), ${ROUNDS} interleaved rounds (medians)`);
console.log(`    hand-written closure pipeline (baseline): ${fmt(median(rounds.map((r) => r[0])))} events/s`);
runs.forEach(({ label }, k) => {
  const ratios = rounds.map((r) => r[k + 1] / r[0]);
  console.log(
    `    ${label}: ${fmt(median(rounds.map((r) => r[k + 1])))} events/s, ${median(ratios).toFixed(2)} of the hand-written pipeline in the same round (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}); target ≥ 0.5`,
  );
});
