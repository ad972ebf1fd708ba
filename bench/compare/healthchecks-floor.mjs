// Vigie's CPU with 10 000 http checks at 10 s beside two baselines against the same local nginx
// (docs/benchmarks.md, Healthchecks): the bare 10 ms loop of bench/healthchecks.mjs (requests
// only) and the hand-written floor of bench/lib/healthchecks-floor.mjs (the same requests and the
// bookkeeping every run of a check does: timeout, duration, latest result, metrics, lateness,
// history rows in SQLite). Rounds alternate loop, floor, Vigie, each a process of its own, its CPU
// read over the window after the warm-up; each ratio is that round's, the median printed last.
// BENCH_FLOOR_VARIANTS adds floors with parts of Vigie's design (bench/lib/healthchecks-floor.mjs:
// `agent`, `promises`, `user-agent`, several as `agent+promises`), each read against the plain floor.
// Run: node bench/compare/healthchecks-floor.mjs
//   env BENCH_ROUNDS (default 3), BENCH_SECONDS window (default 20), WARM_UP_SECONDS (default 15),
//   BENCH_CHECKS (default 10000), BENCH_FLOOR_VARIANTS (e.g. `agent,promises`), BENCH_VIGIE=off,
//   BENCH_VIGIE_BEFORE=<another checkout, built>: its Vigie too, the two in turns first
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BARE_LOOP } from "../lib/bare-loop.mjs";
import { startTarget } from "../lib/http-target.mjs";
import { cpuSeconds, fmt, root, startVigie } from "../lib/vigie.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARM_UP_SECONDS = Number(process.env.WARM_UP_SECONDS ?? 15);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
for (const [name, value] of Object.entries({ ROUNDS, WINDOW_SECONDS, WARM_UP_SECONDS, CHECKS })) {
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`${name} must be a positive integer`);
}
const VARIANTS = (process.env.BENCH_FLOOR_VARIANTS ?? "").split(",").filter(Boolean);
const WITH_VIGIE = process.env.BENCH_VIGIE !== "off";
const BEFORE = WITH_VIGIE ? process.env.BENCH_VIGIE_BEFORE : undefined;
const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));
/** The median; of an even count, the mean of the two middle values. */
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** The CPU (cores) of process `pid` over the window, after the warm-up, and what the target saw. */
async function window(pid, target) {
  await sleep(WARM_UP_SECONDS * 1000);
  const before = cpuSeconds(pid);
  const from = Date.now();
  const started = performance.now();
  await sleep(WINDOW_SECONDS * 1000);
  const cores = (cpuSeconds(pid) - before) / ((performance.now() - started) / 1000);
  const to = Date.now();
  return { cores, from, to, seen: target.stats(from, to) };
}

/** Runs `args` with node in a process of its own over a window; its SIGTERM output is JSON. */
async function measureProcess(args, target, env = {}) {
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise((done) => child.once("exit", done));
  try {
    const measured = await window(child.pid, target);
    child.kill("SIGTERM");
    await exited;
    return { ...measured, printed: JSON.parse(output) };
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

async function measureVigie(target, build = root) {
  const lines = ["healthchecks:", "  http-checks:"];
  for (let index = 0; index < CHECKS; index++) {
    lines.push(
      `    - { name: c${index}, target: 127.0.0.1, port: ${target.port}, valid-status: [200], interval: 10s, timeout: 5s }`,
    );
  }
  const vigie = await startVigie({ yaml: lines.join("\n"), pollMs: 10, build });
  try {
    return await window(vigie.child.pid, target);
  } finally {
    await vigie.stop();
  }
}

/** Runs the floor (`variant`: FLOOR_VARIANT, "" for the plain one) over a window. */
function measureFloor(target, variant, file) {
  const script = join(root, "bench/lib/healthchecks-floor.mjs");
  return measureProcess([script, target.origin, String(CHECKS), "10", file], target, {
    FLOOR_VARIANT: variant.replaceAll("+", ","),
  });
}

/**
 * The ratios of the rounds so far, each reduced by `pick` (the last round's, or the median):
 * floor / loop, each variant / floor, Vigie / floor and Vigie / loop.
 */
function ratios(pick) {
  const of = (a, b) => pick(rounds.map((round) => round[a] / round[b])).toFixed(2);
  const lines = [`floor / loop x${of("floor", "loop")}`];
  for (const variant of VARIANTS) lines.push(`floor (${variant}) / floor x${of(`floor${variant}`, "floor")}`);
  if (WITH_VIGIE) lines.push(`Vigie / floor x${of("vigie", "floor")}`, `Vigie / loop x${of("vigie", "loop")}`);
  if (BEFORE !== undefined)
    lines.push(`Vigie before / floor x${of("before", "floor")}`, `Vigie / Vigie before x${of("vigie", "before")}`);
  return lines;
}

const target = await startTarget();
const directory = mkdtempSync(join(tmpdir(), "vigie-floor-"));
const rounds = [];
try {
  console.log(
    `${CHECKS} http checks at 10 s against ${target.kind}; windows of ${WINDOW_SECONDS} s after ${WARM_UP_SECONDS} s; ${ROUNDS} rounds of loop, floor${VARIANTS.map((variant) => `, floor (${variant})`).join("")}${WITH_VIGIE ? ", Vigie" : ""}${BEFORE === undefined ? "" : `, Vigie of ${BEFORE}`}`,
  );
  for (let round = 1; round <= ROUNDS; round++) {
    const loop = await measureProcess(
      ["--input-type=module", "-e", BARE_LOOP, target.origin, String(CHECKS / 10), "10"],
      target,
    );
    const measured = { loop: loop.cores };
    const parts = [
      `loop ${loop.cores.toFixed(3)} cores (${fmt(loop.seen.requests)} requests, ${loop.printed.failures} failures)`,
    ];
    for (const variant of ["", ...VARIANTS]) {
      const floor = await measureFloor(target, variant, join(directory, `floor-${round}-${variant}.db`));
      measured[`floor${variant}`] = floor.cores;
      parts.push(
        `floor${variant === "" ? "" : ` (${variant})`} ${floor.cores.toFixed(3)} (${fmt(floor.seen.requests)} requests, ${floor.printed.failures} failures, ${fmt(floor.printed.rows)} history rows)`,
      );
    }
    // This checkout's Vigie and the one before, in turns first (a window may follow a busier one).
    const vigies = [
      ...(WITH_VIGIE ? [{ key: "vigie", label: "Vigie", build: root }] : []),
      ...(BEFORE === undefined ? [] : [{ key: "before", label: "Vigie before", build: BEFORE }]),
    ];
    if (round % 2 === 0) vigies.reverse();
    for (const { key, label, build } of vigies) {
      const vigie = await measureVigie(target, build);
      measured[key] = vigie.cores;
      parts.push(`${label} ${vigie.cores.toFixed(3)} (${fmt(vigie.seen.requests)} requests)`);
    }
    rounds.push(measured);
    console.log(`round ${round}: ${parts.join("; ")}`);
    console.log(`  ${ratios((values) => values.at(-1)).join("; ")}`);
  }
} finally {
  await target.stop();
  rmSync(directory, { recursive: true, force: true });
}
console.log(`medians of ${ROUNDS} rounds: ${ratios(median).join("; ")}`);
