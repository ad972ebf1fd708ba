// A prune of the history, A/B (docs/benchmarks.md, Healthchecks): the process CPU (utime + stime) of
// one `ResultHistory.prune()` over 10 000 checks on a fresh SQLite file holding BENCH_PRELOAD_SECONDS
// seconds of about 1 000 results a second (default 20: two recent rows per check, nothing past the
// retention, as at the first prune 30 s after a start; BENCH_RETENTION_SECONDS=10: the older half of
// them past it, every check with rows to delete), for each build given, each run in a child
// process of its own, in alternating rounds. Nothing here asserts a timing.
//
//   node bench/compare/history-prune.mjs before=/work/base after=/work/hc-next
//   BENCH_ROUNDS=5 BENCH_PRELOAD_SECONDS=100 BENCH_RETENTION_SECONDS=50 node bench/compare/history-prune.mjs before=<root> after=<root>
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PRELOAD_SECONDS = Number(process.env.BENCH_PRELOAD_SECONDS ?? 20);
const RETENTION_SECONDS = Number(process.env.BENCH_RETENTION_SECONDS ?? 7 * 86_400);
const CHECKS = 10_000;

if (process.argv[2] === "--child") {
  console.log(JSON.stringify(await measure(process.argv[3])));
} else {
  compare(process.argv.slice(2).map((argument) => argument.split("=")));
}

/** Runs each `label=<root>` build once per round, in that order, and prints the CPU of each prune. */
function compare(builds) {
  if (builds.length === 0) throw new Error("usage: history-prune.mjs <label>=<root> ...");
  console.log(`history prune of ${CHECKS} checks after ${PRELOAD_SECONDS} s of results, ms of process CPU`);
  const totals = new Map(builds.map(([label]) => [label, 0]));
  for (let round = 1; round <= ROUNDS; round++) {
    const figures = builds.map(([label, dir]) => {
      const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--child", dir], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      });
      if (child.status !== 0) throw new Error(`the run of ${label} failed`);
      const { cpuMs, deleted } = JSON.parse(child.stdout);
      totals.set(label, (totals.get(label) ?? 0) + cpuMs);
      return `${label} ${cpuMs.toFixed(0)} ms (${deleted} rows deleted)`;
    });
    console.log(`  round ${round}: ${figures.join(", ")}`);
  }
  console.log(`  mean: ${[...totals].map(([label, sum]) => `${label} ${(sum / ROUNDS).toFixed(0)} ms`).join(", ")}`);
}

/** In a child process: one prune by the build in `dir`, its CPU in milliseconds. */
async function measure(dir) {
  const { ResultHistory } = await import(join(dir, "dist/healthchecks/history.js"));
  const { healthcheckMigrations } = await import(join(dir, "dist/healthchecks/storage.js"));
  const { openDatabase, platformMigrations } = await import(join(dir, "dist/platform/database.js"));
  const directory = mkdtempSync(join(tmpdir(), "vigie-bench-history-prune-"));
  const database = await openDatabase(`sqlite:${join(directory, "vigie.db")}`, {
    ...platformMigrations,
    ...healthcheckMigrations,
  });
  const logger = { warn() {}, error() {}, info() {}, debug() {} };
  const history = new ResultHistory(database, { retentionMs: RETENTION_SECONDS * 1000, logger });
  try {
    const base = Date.now() - PRELOAD_SECONDS * 1000;
    for (let second = 0; second < PRELOAD_SECONDS; second++) {
      for (let row = 0; row < 1_000; row++) {
        const check = (second * 1_000 + row) % CHECKS;
        const result = { name: `check-${check}`, success: true, timestamp: "", duration: 2, message: "success" };
        history.record(result.name, result, base + second * 1_000 + row);
      }
      await history.flush();
    }
    const before = process.cpuUsage();
    const deleted = await history.prune();
    const cpu = process.cpuUsage(before);
    return { cpuMs: (cpu.user + cpu.system) / 1_000, deleted };
  } finally {
    await history.close();
    await database.close();
    rmSync(directory, { recursive: true, force: true });
  }
}
