// Compares the in-process remote write path of several builds of Vigie, each in processes of its
// own, in interleaved rounds (A B A B …): the CPU time (user + system) per request of 1 000 series of
// decoding alone, of pushing the decoded events through `where` → `index` alone, and of both, for
// the request of bench/remote-write.mjs. Snappy is left out: its cost depends on the memory its
// output gets from the kernel, which varies from process to process. Not run by bench/run.mjs.
// Run: node bench/compare/remote-write.mjs before=/work/old after=/work/new
//   env ROUNDS (default 4), LABELS per series (default 20)
// SAME_PROCESS=1: the builds in this one process instead, decode + push, in rounds of 20 requests
// alternating between them (A B, B A, …), so that each pair of rounds sees the same load of a shared
// machine; prints the median of each build and of the per-round ratios to the first. The build
// loaded second ran up to 5 % faster than an identical first one here: run it again with the builds
// swapped and take both.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { uncompressSync } from "snappy";
import { request, STREAM } from "../lib/remote-write-request.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 4);
const LABELS = Number(process.env.LABELS ?? 20);
const PARTS = ["decode", "push", "decode + push"];
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** In a child: the medians of 20 rounds of 20 requests of each part, in ms of CPU per request. */
async function measure(buildRoot) {
  const { parseEdn } = await import(join(buildRoot, "dist/streams/edn.js"));
  const { StreamEngine } = await import(join(buildRoot, "dist/streams/engine.js"));
  const { RemoteWriteDecoder } = await import(join(buildRoot, "dist/streams/remote-write-decoder.js"));
  const raw = uncompressSync(request(LABELS));
  const stream = new StreamEngine().add("bench", parseEdn(STREAM), { kind: "api" });
  const decoder = new RemoteWriteDecoder();
  const decode = () => {
    const events = [];
    decoder.decode(raw, (event) => events.push(event));
    return events;
  };
  const decoded = decode();
  const runs = [decode, () => stream.push(decoded), () => stream.push(decode())];
  for (const run of runs) for (let i = 0; i < 50; i++) run();
  const times = runs.map(() => []);
  for (let round = 0; round < 20; round++) {
    runs.forEach((run, i) => {
      const before = process.cpuUsage();
      for (let k = 0; k < 20; k++) run();
      const used = process.cpuUsage(before);
      times[i].push((used.user + used.system) / 1000 / 20);
    });
  }
  return times.map(median);
}

/** SAME_PROCESS=1: every build in this process, rounds alternating; the medians, in µs of CPU per request. */
async function sameProcess(builds) {
  const raw = uncompressSync(request(LABELS));
  const runs = [];
  for (const build of builds) {
    const { parseEdn } = await import(join(build.root, "dist/streams/edn.js"));
    const { StreamEngine } = await import(join(build.root, "dist/streams/engine.js"));
    const { RemoteWriteDecoder } = await import(join(build.root, "dist/streams/remote-write-decoder.js"));
    const stream = new StreamEngine().add("bench", parseEdn(STREAM), { kind: "api" });
    const decoder = new RemoteWriteDecoder();
    runs.push(() => {
      const events = [];
      decoder.decode(raw, (event) => events.push(event));
      stream.push(events);
    });
  }
  for (let i = 0; i < 300; i++) for (const run of runs) run();
  const times = runs.map(() => []);
  const ratios = runs.map(() => []);
  for (let round = 0; round < ROUNDS * 15; round++) {
    const order = round % 2 === 0 ? runs.map((_, i) => i) : runs.map((_, i) => runs.length - 1 - i);
    const used = [];
    for (const i of order) {
      const before = process.cpuUsage();
      for (let k = 0; k < 20; k++) runs[i]?.();
      const cpu = process.cpuUsage(before);
      used[i] = (cpu.user + cpu.system) / 20;
    }
    used.forEach((us, i) => {
      times[i]?.push(us);
      ratios[i]?.push(us / (used[0] ?? us));
    });
  }
  console.log(`remote write in-process, ${LABELS} labels, decode + push, one process, µs of CPU per request:`);
  builds.forEach((build, i) => {
    const ratio = i === 0 ? "" : `, ${build.label} / ${builds[0]?.label}: ${median(ratios[i]).toFixed(3)}`;
    console.log(`  ${build.label}: ${median(times[i]).toFixed(0)}${ratio}`);
  });
}

if (process.argv[2] === "--child") {
  console.log(JSON.stringify(await measure(process.argv[3])));
} else {
  const builds = process.argv.slice(2).map((argument) => {
    const [label, buildRoot] = argument.split("=");
    if (label === undefined || buildRoot === undefined) throw new Error(`expected label=root, got ${argument}`);
    return { label, root: buildRoot, rounds: [] };
  });
  if (process.env.SAME_PROCESS === "1") {
    await sameProcess(builds);
    process.exit(0);
  }
  const self = fileURLToPath(import.meta.url);
  console.log(`remote write in-process, ${LABELS} labels per series, ms of CPU per request (${PARTS.join(" / ")}):`);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? builds : [...builds].reverse();
    for (const build of order) {
      const result = JSON.parse(execFileSync(process.execPath, [self, "--child", build.root], { encoding: "utf8" }));
      build.rounds.push(result);
      console.log(`  round ${round + 1} ${build.label}: ${result.map((ms) => ms.toFixed(3)).join(" / ")}`);
    }
  }
  const [first, ...others] = builds;
  for (const build of others) {
    // The geometric mean over rounds of each part's ratio to the first build.
    const ratios = PARTS.map((_, part) => {
      const logs = build.rounds.map((result, round) => Math.log(result[part] / first.rounds[round][part]));
      return Math.exp(logs.reduce((a, b) => a + b, 0) / logs.length);
    });
    console.log(`  ${build.label} / ${first.label}: ${ratios.map((ratio) => ratio.toFixed(2)).join(" / ")}`);
  }
}
