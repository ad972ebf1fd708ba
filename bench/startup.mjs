// Start-up benchmark (docs/benchmarks.md): the time from spawning `node dist/cli.js serve` to the
// first 2xx of GET /healthz, with the default configuration and with 10 000 http checks listed in
// the configuration file, beside a baseline: a `node -e` server that imports Fastify and
// better-sqlite3, opens its SQLite file, parses the same YAML file and answers /healthz — the
// cheapest honest server doing the same. Median of BENCH_RUNS (5) runs, the variants interleaved.
//
//   npm run bench -- startup
//   BENCH_STARTUP_BEFORE=/tmp/old node bench/startup.mjs   (A/B: also runs /tmp/old/dist/cli.js,
//                                                          a copy of an earlier build, interleaved)
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmt, freePort, root, waitFor } from "./lib/vigie.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
const BEFORE = process.env.BENCH_STARTUP_BEFORE;

/** The baseline server: the libraries every Vigie start needs, nothing of Vigie. */
const BASELINE = `
const Fastify = require("fastify");
const Database = require("better-sqlite3");
const yaml = require("js-yaml");
const { readFileSync } = require("node:fs");
const config = yaml.load(readFileSync(process.argv[1], "utf8"));
const db = new Database(config.database.url.slice("sqlite:".length));
db.pragma("journal_mode = WAL");
const app = Fastify();
app.get("/healthz", async () => ({ status: "ok" }));
app.listen({ host: "127.0.0.1", port: config.http.port });
`;

/** A configuration file in a new directory: SQLite there, `checks` http checks. */
function configFile(port, checks) {
  const directory = mkdtempSync(join(tmpdir(), "vigie-bench-startup-"));
  const lines = [
    "http:",
    `  port: ${port}`,
    "log-level: warn",
    "database:",
    `  url: sqlite:${join(directory, "vigie.db")}`,
  ];
  if (checks > 0) {
    lines.push("healthchecks:", "  http-checks:");
    for (let index = 0; index < checks; index++) {
      lines.push(
        `    - { name: c${index}, target: 127.0.0.1, port: 9, valid-status: [200], interval: 10s, timeout: 5s }`,
      );
    }
  }
  const file = join(directory, "vigie.yaml");
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

/** Milliseconds from the spawn of `args` (node arguments) to the first 2xx of /healthz. */
async function timeToHealthz(args, port) {
  const spawned = performance.now();
  const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"] });
  const exited = new Promise((done) => child.once("exit", done));
  try {
    await waitFor(`http://127.0.0.1:${port}/healthz`, child, 5);
    return performance.now() - spawned;
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

const variants = [
  { name: "baseline (node -e: fastify + better-sqlite3 + js-yaml)", args: (file) => ["-e", BASELINE, file] },
  { name: "vigie", args: (file) => [join(root, "dist/cli.js"), "serve", "--config", file] },
];
if (BEFORE !== undefined) {
  variants.push({
    name: `vigie before (${BEFORE})`,
    args: (file) => [join(BEFORE, "dist/cli.js"), "serve", "--config", file],
  });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const checks of [0, CHECKS]) {
  const times = variants.map(() => []);
  for (let run = 0; run < RUNS; run++) {
    for (const [index, variant] of variants.entries()) {
      const port = await freePort();
      times[index].push(await timeToHealthz(variant.args(configFile(port, checks)), port));
    }
  }
  const label = checks === 0 ? "default configuration" : `${fmt(checks)} http checks in the configuration file`;
  for (const [index, variant] of variants.entries()) {
    const note =
      variant.name === "vigie" && checks > 0
        ? `   target <= 600 ms   ${median(times[index]) <= 600 ? "ok" : "MISSED"}`
        : "";
    console.log(
      `start-up, ${label}: ${variant.name}: GET /healthz answered ${fmt(median(times[index]))} ms after the spawn (median of ${RUNS}; ${times[index].map(fmt).join(", ")})${note}`,
    );
  }
}
