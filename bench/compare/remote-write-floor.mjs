// A lower bound of the remote write path in JavaScript (docs/benchmarks.md, Streams), beside Vigie's
// path and snappy decompression alone, in alternating rounds of one process, for the request of
// bench/remote-write.mjs (1 000 series × 1 sample, 20 labels), decompressed once: the least work that
// still turns each sample into an event object for the index, on a request laid out as the one
// before. One comparison of the request's bytes with a copy (what a layout seen before must cost at
// least), then per series: its sample's value and timestamp read where the setup found them (only
// whether a value is there checked), a copy of the series' ready-made compact event with `metric`
// and `time` set, stored in a Map under a key made beforehand. No `where`, no event bounds, no key
// to find: Vigie's decode + `where` + `index` does all of this and more; the events of both are
// checked equal. Prints the medians of CPU per request and the ratio to snappy alone each implies
// (snappy / (snappy + the path)). Not run by bench/run.mjs.
// Run: node bench/compare/remote-write-floor.mjs      env ROUNDS (default 21)
import { join } from "node:path";
import { uncompressSync } from "snappy";
import { request, STREAM } from "../lib/remote-write-request.mjs";
import { root } from "../lib/vigie.mjs";

const { RemoteWriteDecoder } = await import(join(root, "dist/streams/remote-write-decoder.js"));
const { parseEdn } = await import(join(root, "dist/streams/edn.js"));
const { StreamEngine } = await import(join(root, "dist/streams/engine.js"));

const ROUNDS = Number(process.env.ROUNDS ?? 21);
const body = request(20);
const raw = uncompressSync(body);

// Each series' event (from Vigie's decoder, then made compact as Vigie makes them) and key.
const templates = [];
const keys = [];
const decoded = [];
new RemoteWriteDecoder().decode(raw, (event) => {
  decoded.push(event);
  templates.push(JSON.parse(JSON.stringify({ ...event, metric: 0.5, time: 0.5 })));
  keys.push(`${event.service}\u0000${event.instance}`);
});
// Where each series' sample is: [start, end) of its fields (a value unless 0, a timestamp).
const samples = [];
const varint = (at) => {
  let value = 0;
  let shift = 0;
  let p = at;
  for (;;) {
    const byte = raw[p++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, p];
    shift += 7;
  }
};
for (let p = 0; p < raw.length; ) {
  const [length, body] = varint(p + 1); // the series' tag, then its length
  for (let q = body; q < body + length; ) {
    const [size, field] = varint(q + 1);
    if (raw[q] === 0x12) samples.push(field, field + size);
    q = field + size;
  }
  p = body + length;
}
if (samples.length !== 2 * templates.length) throw new Error("the request is not laid out as expected");

const copy = Buffer.from(raw);
const view = new DataView(raw.buffer, raw.byteOffset, raw.length);
const map = new Map();
function floor() {
  if (raw.compare(copy) !== 0) throw new Error("the request changed");
  for (let i = 0; i < templates.length; i++) {
    let p = samples[2 * i];
    const end = samples[2 * i + 1];
    let metric = 0;
    if (raw[p] === 0x09) {
      metric = view.getFloat64(p + 1, true);
      p += 9;
    }
    let timestamp = 0;
    let scale = 1;
    for (p++; p < end; p++) {
      timestamp += (raw[p] & 0x7f) * scale;
      scale *= 128;
    }
    const event = { ...templates[i] };
    event.metric = metric;
    event.time = timestamp / 1000;
    map.set(keys[i], event);
  }
}

// The lower bound reads what the decoder reads: the same event for every series.
floor();
for (let i = 0; i < decoded.length; i++) {
  if (JSON.stringify(map.get(keys[i])) !== JSON.stringify(decoded[i])) {
    throw new Error(`series ${i} read wrong: ${JSON.stringify(map.get(keys[i]))} ${JSON.stringify(decoded[i])}`);
  }
}

const stream = new StreamEngine().add("bench", parseEdn(STREAM), { kind: "api" });
const decoder = new RemoteWriteDecoder();
const paths = {
  "snappy alone": () => uncompressSync(body),
  "the lower bound": floor,
  "Vigie (decode + where + index)": () => {
    const events = [];
    decoder.decode(raw, (event) => events.push(event));
    stream.push(events);
  },
};
const cpu = (run, calls) => {
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
};
for (const run of Object.values(paths)) for (let i = 0; i < 300; i++) run();
const times = Object.fromEntries(Object.keys(paths).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(paths)) times[name].push(cpu(run, 50));
}
if (map.size !== templates.length || stream.index.size !== templates.length) throw new Error("events missing");
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
const snappy = median(times["snappy alone"]);
console.log(`remote write, 1 000 series × 20 labels, µs of CPU per request (medians of ${ROUNDS} rounds):`);
for (const name of Object.keys(paths)) {
  const spent = median(times[name]);
  const ratio =
    name === "snappy alone" ? "" : `   with snappy: ${(snappy / (snappy + spent)).toFixed(2)} of snappy alone`;
  console.log(`  ${name.padEnd(32)} ${spent.toFixed(1).padStart(7)}${ratio}`);
}
