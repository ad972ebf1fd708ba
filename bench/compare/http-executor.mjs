// Compares the http executor of several builds of Vigie with the bare undici loop of
// bench/healthchecks.mjs, in interleaved rounds (bare A B bare A B …), so that a loaded machine
// weighs on every variant alike. Each variant is a process of its own sending RATE requests per
// second (the due ones every 10 ms) to a local nginx (bench/lib/http-target.mjs): the bare loop with
// one undici Pool and `pool.request()`, reading each body and checking its status; a build's
// `HttpExecutor.run()` (dist/healthchecks/http.js) with CHECKS distinct definitions of the same
// origin (valid-status [200], timeout 5s), as the scheduler would call it, without the scheduler.
// It prints each process's CPU (utime + stime from /proc) over the window after a warm-up, and for
// each build its mean ratio to the bare loop of the same rounds. Not run by bench/run.mjs (it needs
// builds to compare).
// Run: node bench/compare/http-executor.mjs before=/work/old after=/work/new
//   env ROUNDS (default 3), BENCH_SECONDS window (default 20), WARM_UP_SECONDS (default 5),
//   RATE requests/s (default 1000), CHECKS definitions (default 10000),
//   NODE_ARGS extra node arguments of the executor processes (e.g. "--trace-gc"),
//   ENTRY "run" (default: `HttpExecutor.run()`) or "execute" (`Executor.execute()` of
//   dist/healthchecks/execute.js, as the catalog calls it: the run timed into an execution).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { BARE_LOOP } from "../lib/bare-loop.mjs";
import { startTarget } from "../lib/http-target.mjs";
import { cpuSeconds, root } from "../lib/vigie.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WINDOW_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARM_UP_SECONDS = Number(process.env.WARM_UP_SECONDS ?? 5);
const RATE = Number(process.env.RATE ?? 1000);
const CHECKS = Number(process.env.CHECKS ?? 10_000);
const TICK_MS = 10;
const NODE_ARGS = (process.env.NODE_ARGS ?? "").split(/\s+/).filter((arg) => arg !== "");
const ENTRY = process.env.ENTRY ?? "run";
if (ENTRY !== "run" && ENTRY !== "execute") throw new Error("ENTRY is run or execute");

const sleep = (milliseconds) => new Promise((done) => setTimeout(done, milliseconds));

// The same loop through a build's HttpExecutor (or its Executor, ENTRY=execute), one promise per
// run as the scheduler gets.
const EXECUTOR_LOOP = `
const [build, port, rate, tick, checks, entry] = process.argv.slice(1);
const { HttpExecutor } = await import(build + "/dist/healthchecks/http.js");
const { Executor } = await import(build + "/dist/healthchecks/execute.js");
const { validateDefinition } = await import(build + "/dist/healthchecks/definition.js");
const rules = { minInterval: { text: "1s", milliseconds: 1000 } };
const definitions = [];
for (let index = 0; index < Number(checks); index++) {
  const fields = { name: "c" + index, target: "127.0.0.1", port: Number(port), "valid-status": [200], interval: "10s", timeout: "5s" };
  definitions.push(validateDefinition("http", fields, rules, { unknownKeys: "ignore", tlsFiles: "paths" }));
}
const executor = entry === "execute" ? new Executor() : new HttpExecutor();
const options = { source: "configuration" };
const runOf = entry === "execute" ? (definition) => executor.execute(definition, options) : (definition) => executor.run(definition);
let sent = 0;
let failures = 0;
let message = "";
const begun = performance.now();
setInterval(() => {
  const due = Math.floor(((performance.now() - begun) / 1000) * Number(rate));
  while (sent < due) {
    const definition = definitions[sent % definitions.length];
    sent++;
    runOf(definition).then((outcome) => {
      if (!outcome.success) {
        failures++;
        message = outcome.message;
      }
    });
  }
}, Number(tick));
process.on("SIGTERM", () => {
  console.log(JSON.stringify({ sent, failures, message }));
  process.exit(0);
});
`;

/** Runs one variant for the warm-up and the window; its CPU in cores and what it printed. */
async function measure(variant, target) {
  const args =
    variant.build === undefined
      ? ["--input-type=module", "-e", BARE_LOOP, target.origin, String(RATE), String(TICK_MS)]
      : [
          ...NODE_ARGS,
          "--input-type=module",
          "-e",
          EXECUTOR_LOOP,
          variant.build,
          String(target.port),
          String(RATE),
          String(TICK_MS),
          String(CHECKS),
          ENTRY,
        ];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise((done) => child.once("exit", done));
  try {
    await sleep(WARM_UP_SECONDS * 1000);
    const before = cpuSeconds(child.pid);
    const started = performance.now();
    await sleep(WINDOW_SECONDS * 1000);
    const cpu = cpuSeconds(child.pid) - before;
    const elapsed = (performance.now() - started) / 1000;
    child.kill("SIGTERM");
    await exited;
    return { cores: cpu / elapsed, report: JSON.parse(output.trim().split("\n").at(-1)) };
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

async function main() {
  const builds = process.argv.slice(2).map((argument) => {
    const [name, path] = argument.split("=");
    return { name, build: join(path) };
  });
  if (builds.length === 0) throw new Error("usage: node bench/compare/http-executor.mjs name=/build/root ...");
  const variants = [{ name: "bare" }, ...builds];
  const target = await startTarget();
  const cores = new Map(variants.map((variant) => [variant.name, []]));
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const line = [];
      for (const variant of variants) {
        const { cores: used, report } = await measure(variant, target);
        cores.get(variant.name).push(used);
        const failed = report.failures > 0 ? ` (${report.failures} failures: ${report.message ?? ""})` : "";
        line.push(`${variant.name} ${used.toFixed(4)}${failed}`);
      }
      console.log(`round ${round}: ${line.join(", ")} cores`);
    }
  } finally {
    await target.stop();
  }
  const bare = cores.get("bare");
  for (const { name } of builds) {
    const ratios = cores.get(name).map((value, index) => value / bare[index]);
    const mean = ratios.reduce((sum, ratio) => sum + ratio, 0) / ratios.length;
    console.log(
      `${name}: ratios to the bare loop ${ratios.map((ratio) => ratio.toFixed(2)).join(", ")}; mean x${mean.toFixed(2)}`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
