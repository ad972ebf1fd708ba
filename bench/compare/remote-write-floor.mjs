// A lower bound of the remote write path in JavaScript (docs/benchmarks.md, Streams), beside Vigie's
// path and snappy decompression alone, in alternating rounds of one process, for the request of
// bench/remote-write.mjs (1 000 series × 1 sample, 20 labels), decompressed once: the least work that
// still turns each sample into an event object for the index, on a request laid out as the one
// before. One comparison of the request's bytes with a copy (what a layout seen before must cost at
// least), then per series: its sample's value and timestamp read at a known offset, a copy of the
// series' ready-made compact event with `metric` and `time` set, stored in a Map under a key made
// beforehand. No `where`, no event bounds, no key to find: Vigie's decode + `where` + `index` does
// all of this and more. Prints the medians of CPU per request and the ratio to snappy alone each
// implies (snappy / (snappy + the path)). Not run by bench/run.mjs.
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
new RemoteWriteDecoder().decode(raw, (event) => {
  templates.push(JSON.parse(JSON.stringify({ ...event, metric: 0.5, time: 0.5 })));
  keys.push(`${event.service}\u0000${event.instance}`);
});
// Where each sample starts: the last 17 bytes of its series (a value and a 6-byte timestamp).
const samples = [];
for (let p = 0; p < raw.length; ) {
  p++; // the series' tag
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = raw[p++];
    length |= (byte & 0x7f) << shift;
    if (byte < 0x80) break;
  }
  p += length;
  samples.push(p - 17);
}
if (samples.length !== templates.length) throw new Error("the request is not laid out as expected");

const copy = Buffer.from(raw);
const view = new DataView(raw.buffer, raw.byteOffset, raw.length);
const map = new Map();
function floor() {
  if (raw.compare(copy) !== 0) throw new Error("the request changed");
  for (let i = 0; i < templates.length; i++) {
    const start = samples[i];
    let timestamp = 0;
    let scale = 1;
    for (let p = start + 10; p < start + 15; p++) {
      timestamp += (raw[p] & 0x7f) * scale;
      scale *= 128;
    }
    const event = { ...templates[i] };
    event.metric = view.getFloat64(start + 1, true);
    event.time = (timestamp + raw[start + 15] * scale) / 1000;
    map.set(keys[i], event);
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
