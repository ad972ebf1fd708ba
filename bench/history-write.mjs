// History write benchmark (docs/benchmarks.md, Healthchecks): the process CPU (utime + stime) of
// recording and writing BENCH_SECONDS seconds of about 1 000 results a second (10 000 checks at
// 10 s; the count moves by up to 20 a second, as the write timer is not aligned with the runs)
// into a fresh SQLite file through dist/healthchecks/history.js, one write per second of results,
// the writes back to back (the CPU, not the wall time, is measured). Before the window,
// BENCH_PRELOAD_SECONDS seconds of results are written the same way: the default 20 creates the
// ids of the 10 000 names; 1000 fills the table with a million rows, where each second's rows
// touch about one page each, as after a few hours in production. Each run is a child process.
//
//   node bench/history-write.mjs
//   BENCH_HISTORY_BEFORE=/work/base node bench/history-write.mjs  (A/B: also runs the build in that
//                         checkout, its dist/ and node_modules, alternating with this one)
//   BENCH_PAIRS=3 BENCH_SECONDS=30 BENCH_PRELOAD_SECONDS=1000 BENCH_KIND=postgres ...
//   (PostgreSQL: BENCH_POSTGRES_URL or VIGIE_TEST_POSTGRES_URL, a temporary database in it;
//   PostgreSQL's own CPU is not counted)
// Nothing here asserts a timing.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { temporaryDatabase } from "./lib/temporary-database.mjs";
import { root } from "./lib/vigie.mjs";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const PRELOAD_SECONDS = Number(process.env.BENCH_PRELOAD_SECONDS ?? 20);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const KIND = process.env.BENCH_KIND ?? "sqlite";
const BEFORE = process.env.BENCH_HISTORY_BEFORE;
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL || process.env.VIGIE_TEST_POSTGRES_URL || undefined;
const CHECKS = 10_000;

if (process.argv[2] === "--child") {
  console.log(JSON.stringify(await measure(process.argv[3])));
} else {
  await compare();
}

/** Runs this build (and the one before, alternating) in child processes; prints each run. */
async function compare() {
  console.log(
    `history write: ${SECONDS} s of about 1 000 results/s into ${KIND} after ${PRELOAD_SECONDS} s of them, ms of process CPU per second of results`,
  );
  const sides =
    BEFORE === undefined
      ? [["this build", root]]
      : [
          ["before", BEFORE],
          ["this build", root],
        ];
  const ratios = [];
  for (let pair = 1; pair <= PAIRS; pair++) {
    const figures = sides.map(([label, dir]) => {
      const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--child", dir], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      });
      if (child.status !== 0) throw new Error(`the run of ${label} failed`);
      return [label, JSON.parse(child.stdout).cpuMsPerSecond];
    });
    console.log(`  run ${pair}: ${figures.map(([label, ms]) => `${label} ${ms.toFixed(2)} ms`).join(", ")}`);
    if (figures.length === 2) ratios.push(figures[1][1] / figures[0][1]);
  }
  if (ratios.length > 0) {
    const mean = ratios.reduce((sum, ratio) => sum + ratio, 0) / ratios.length;
    console.log(
      `  this build / before: ${ratios.map((ratio) => `x${ratio.toFixed(2)}`).join(", ")}; mean x${mean.toFixed(2)}`,
    );
  }
}

/** In a child process: the write path of the build in `dir`, on a fresh database. */
async function measure(dir) {
  const { ResultHistory } = await import(join(dir, "dist/healthchecks/history.js"));
  const { healthcheckMigrations } = await import(join(dir, "dist/healthchecks/storage.js"));
  const { openDatabase, platformMigrations } = await import(join(dir, "dist/platform/database.js"));
  const place = await temporaryDatabase(KIND, POSTGRES_URL, dir);
  const database = await openDatabase(place.url, { ...platformMigrations, ...healthcheckMigrations });
  const logger = { warn() {}, error() {}, info() {}, debug() {} };
  const history = new ResultHistory(database, { retentionMs: 7 * 86_400_000, logger });
  try {
    const base = Date.now() - (PRELOAD_SECONDS + SECONDS) * 1000;
    // The results exist before they are recorded, as the scheduler's do.
    const results = Array.from({ length: CHECKS }, (_, check) => {
      const success = check % 97 !== 0;
      return {
        name: `check-${check}`,
        success,
        timestamp: "",
        duration: 1.5 + (check % 40),
        message: success ? "success" : "HTTP request failed: connect ECONNREFUSED 127.0.0.1:9",
      };
    });
    let next = 0;
    const second = async (index) => {
      const count = 1_000 + ((index * 37) % 41) - 20;
      for (let row = 0; row < count; row++) {
        const result = results[next];
        next = (next + 1) % CHECKS;
        history.record(result.name, result, base + index * 1_000 + row);
      }
      await history.flush();
    };
    for (let index = 0; index < PRELOAD_SECONDS; index++) await second(index);
    const before = process.cpuUsage();
    for (let index = PRELOAD_SECONDS; index < PRELOAD_SECONDS + SECONDS; index++) await second(index);
    const cpu = process.cpuUsage(before);
    return { cpuMsPerSecond: (cpu.user + cpu.system) / 1_000 / SECONDS, dropped: history.dropped };
  } finally {
    await history.close();
    await database.close();
    await place.drop();
  }
}
