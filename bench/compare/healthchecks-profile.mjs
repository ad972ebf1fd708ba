// Where the CPU of 10 000 http checks goes, in Vigie, in the bare 10 ms loop of
// bench/healthchecks.mjs and in the hand-written floor of bench/lib/healthchecks-floor.mjs, by area
// (docs/benchmarks.md, Healthchecks). Each process runs in turn against the same local nginx
// (bench/lib/http-target.mjs) with `--perf-basic-prof --interpreted-frames-native-stack`, so that
// Linux perf names JIT code; after a warm-up, `perf record -e cpu-clock -F 999 -g` samples it over
// the window. Each sample counts once, in the area of its leaf-most JavaScript frame, mapped through
// the bundle's source map ("own code": Vigie's src/, or the floor's own file; undici and its
// WebAssembly parser; the other libraries such as Kysely and prom-client; Node's own JavaScript),
// or as SQLite or garbage collection when a native frame says so, or as "no JavaScript" (the
// kernel, libuv and V8 with no JavaScript above); the samples of the other threads
// apart, V8's optimizing compiler and its garbage collector's helpers. Needs `perf` (Debian's
// linux-perf) and nginx; not run by bench/run.mjs.
// Run: node bench/compare/healthchecks-profile.mjs
//   env BENCH_SECONDS window (default 20), WARM_UP_SECONDS (default 15), BENCH_CHECKS (default 10000)
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { SourceMap } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BARE_LOOP } from "../lib/bare-loop.mjs";
import { startTarget } from "../lib/http-target.mjs";
import { cpuSeconds, root, startVigie } from "../lib/vigie.mjs";

const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARM_UP_SECONDS = Number(process.env.WARM_UP_SECONDS ?? 15);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
const PROFILED = ["--perf-basic-prof", "--interpreted-frames-native-stack"];
const AREAS = [
  "own code",
  "other libraries",
  "SQLite",
  "undici",
  "Node's JavaScript",
  "garbage collection",
  "no JavaScript",
  "other threads: compiler",
  "other threads: GC",
  "other threads: rest",
];
const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));

const bundleMap = new SourceMap(JSON.parse(readFileSync(join(root, "dist/bundle/cli.cjs.map"), "utf8")));

/** The area of a JavaScript frame of the bundle at 1-based `line`:`column`, by its source file. */
function bundleArea(line, column) {
  const source = bundleMap.findEntry(line - 1, column - 1)?.originalSource ?? "";
  if (source.includes("node_modules/undici")) return "undici";
  if (source.includes("node_modules/")) return "other libraries";
  return "own code";
}

/** The area of one sample of `perf script`: its frames, leaf first. */
function areaOf(frames) {
  for (const frame of frames) {
    if (/Scavenge|MarkCompact|Heap::CollectGarbage|ConcurrentMarking/.test(frame)) return "garbage collection";
    if (frame.includes("better_sqlite3") || frame.includes("sqlite3")) return "SQLite";
    const bundled = /JS:\S* \S*dist\/bundle\/cli\.cjs:(\d+):(\d+)/.exec(frame);
    if (bundled !== null) return bundleArea(Number(bundled[1]), Number(bundled[2]));
    if (frame.includes("node_modules/undici") || frame.includes("wasm")) return "undici";
    if (/JS:\S* \S*node_modules\//.test(frame)) return "other libraries";
    if (/JS:\S* \S*healthchecks-floor\.mjs/.test(frame)) return "own code";
    if (/JS:\S* node:/.test(frame)) return "Node's JavaScript";
  }
  return "no JavaScript";
}

/** The area of a sample of a thread other than the main one. */
function threadArea(frames) {
  if (frames.some((frame) => frame.includes("compiler::"))) return "other threads: compiler";
  if (frames.some((frame) => /Scaveng|Marking|Sweep|Heap::/.test(frame))) return "other threads: GC";
  return "other threads: rest";
}

/** Samples per area of a `perf record` file of process `pid`. */
function areas(file, pid) {
  const text = execFileSync("perf", ["script", "-i", file], {
    maxBuffer: 1 << 30,
    stdio: ["ignore", "pipe", "ignore"],
  });
  const counts = new Map(AREAS.map((area) => [area, 0]));
  for (const block of text.toString().split("\n\n")) {
    const [head, ...frames] = block.trim().split("\n");
    if (head === undefined || frames.length === 0) continue;
    const thread = Number(head.trim().split(/\s+/)[1]);
    const area = thread === pid ? areaOf(frames) : threadArea(frames);
    counts.set(area, (counts.get(area) ?? 0) + 1);
  }
  return counts;
}

/** CPU (cores) and samples per area of process `pid` over the window, after the warm-up. */
async function profile(pid, directory, name) {
  await sleep(WARM_UP_SECONDS * 1000);
  const file = join(directory, `${name}.data`);
  const before = cpuSeconds(pid);
  execFileSync(
    "perf",
    [
      "record",
      "-q",
      "-e",
      "cpu-clock",
      "-F",
      "999",
      "-g",
      "-o",
      file,
      "-p",
      String(pid),
      "--",
      "sleep",
      String(WINDOW_SECONDS),
    ],
    { stdio: "ignore" },
  );
  const cores = (cpuSeconds(pid) - before) / WINDOW_SECONDS;
  return { cores, counts: areas(file, pid) };
}

// Before anything starts: without perf, the processes would be left running when it fails.
try {
  execFileSync("perf", ["--version"], { stdio: "ignore" });
} catch {
  throw new Error("perf is not installed (Debian's linux-perf)");
}
const directory = mkdtempSync(join(tmpdir(), "vigie-profile-"));
const target = await startTarget();
const checks = ["healthchecks:", "  http-checks:"];
for (let index = 0; index < CHECKS; index++) {
  checks.push(
    `    - { name: c${index}, target: 127.0.0.1, port: ${target.port}, valid-status: [200], interval: 10s, timeout: 5s }`,
  );
}
const vigie = await startVigie({ yaml: checks.join("\n"), nodeArgs: PROFILED, pollMs: 10 });
const ofVigie = await profile(vigie.child.pid, directory, "vigie");
await vigie.stop();
const loop = spawn(
  process.execPath,
  [...PROFILED, "--input-type=module", "-e", BARE_LOOP, target.origin, String(CHECKS / 10), "10"],
  {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  },
);
const ofLoop = await profile(loop.pid, directory, "loop");
loop.kill("SIGTERM");
const floor = spawn(
  process.execPath,
  [
    ...PROFILED,
    join(root, "bench/lib/healthchecks-floor.mjs"),
    target.origin,
    String(CHECKS),
    "10",
    join(directory, "floor.db"),
  ],
  { cwd: root, stdio: ["ignore", "ignore", "inherit"] },
);
const ofFloor = await profile(floor.pid, directory, "floor");
floor.kill("SIGTERM");
await target.stop();
rmSync(directory, { recursive: true, force: true });

const total = (counts) => [...counts.values()].reduce((sum, count) => sum + count, 0);
const row = (label, values) => `  ${label.padEnd(24)} ${values.map((value) => String(value).padStart(6)).join(" / ")}`;
const profiles = [ofVigie, ofLoop, ofFloor];
console.log(
  `${CHECKS} http checks at 10 s: samples at 999 Hz over ${WINDOW_SECONDS} s (Vigie / the bare 10 ms loop / the floor)`,
);
console.log(`  process CPU: ${profiles.map(({ cores }) => cores.toFixed(3)).join(" / ")} cores`);
const countsOf = (area) => profiles.map(({ counts }) => counts.get(area) ?? 0);
for (const area of AREAS) console.log(row(area, countsOf(area)));
console.log(
  row(
    "all",
    profiles.map(({ counts }) => total(counts)),
  ),
);
