// Compares what storing alert transitions costs in several builds of Vigie, in interleaved rounds
// (A B A B …). Each build runs in a process of its own: its AlertStore (dist/healthchecks/alerts/
// store.js) on a new database writes TRANSITIONS transitions, each a stored state and an
// alert-history row, arriving PER_BATCH at a time (what 100 transitions a second, as in
// bench/alerts.mjs, gather in 100 ms), each group awaited before the next. It prints the process CPU
// (process.cpuUsage(), user + system) per transition and the ratio of each build to the first one
// per round. A build whose store gathers its writes is flushed after each group, not after its delay.
// Not run by bench/run.mjs (it needs builds to compare).
// Run: node bench/compare/alerts-writes.mjs base=/work/main new=/work/branch
//   env ROUNDS (default 3), TRANSITIONS (default 2000), PER_BATCH (default 10),
//   DATABASE: `postgres` for PostgreSQL (a new database per process on VIGIE_TEST_POSTGRES_URL's
//   server), default SQLite in a temporary directory.
import { randomUUID } from "node:crypto";
import { buildsOf, interleave, runScript } from "../lib/interleaved-builds.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const TRANSITIONS = Number(process.env.TRANSITIONS ?? 2_000);
const PER_BATCH = Number(process.env.PER_BATCH ?? 10);
const POSTGRES = process.env.DATABASE === "postgres";
const SERVER = process.env.VIGIE_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

const WRITE_LOOP = `
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const [build, transitions, perBatch, url] = process.argv.slice(1);
const { AlertStore } = await import(build + "/dist/healthchecks/alerts/store.js");
const { openDatabase } = await import(build + "/dist/platform/database.js");
const { allMigrations } = await import(build + "/dist/server.js");
const directory = mkdtempSync(join(tmpdir(), "vigie-alert-writes-"));
const database = await openDatabase(url === "" ? "sqlite:" + join(directory, "vigie.db") : url, allMigrations());
const store = new AlertStore(database);
async function group(first) {
  const writes = [];
  for (let index = first; index < first + Number(perBatch); index++) {
    const check = "check-" + index;
    const state = { check, output: "chat", triggered: true, sinceMs: 1, lastDueMs: 1, lastSentMs: 1, notified: true };
    writes.push(store.saveState(state, 1));
    writes.push(store.addHistory({ check, output: "chat", timeMs: 1, status: "triggered", outcome: "delivered" }));
  }
  if (store.flush !== undefined) writes.push(store.flush());
  await Promise.all(writes);
}
// Warm-up on other checks, so that statements are prepared and the code optimised.
for (let first = 1_000_000; first < 1_000_200; first += Number(perBatch)) await group(first);
const before = process.cpuUsage();
for (let first = 0; first < Number(transitions); first += Number(perBatch)) await group(first);
const used = process.cpuUsage(before);
await database.close();
rmSync(directory, { recursive: true, force: true });
console.log(JSON.stringify({ usPerTransition: (used.user + used.system) / Number(transitions) }));
`;

/** A new PostgreSQL database for one process, and how to drop it. */
async function postgresDatabase() {
  const { default: pg } = await import("pg");
  const name = `vigie_alert_writes_${randomUUID().replaceAll("-", "")}`;
  const admin = new pg.Client({ connectionString: SERVER });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(SERVER);
  url.pathname = `/${name}`;
  const drop = async () => {
    const client = new pg.Client({ connectionString: SERVER });
    await client.connect();
    await client.query(`drop database if exists ${name}`);
    await client.end();
  };
  return { url: url.toString(), drop };
}

/** Runs one build; its CPU per transition in microseconds. */
async function measure(build) {
  const database = POSTGRES ? await postgresDatabase() : { url: "", drop: async () => {} };
  try {
    const args = [build, String(TRANSITIONS), String(PER_BATCH), database.url];
    return await runScript(WRITE_LOOP, args, `the store process of ${build}`);
  } finally {
    await database.drop();
  }
}

async function main() {
  await interleave({
    builds: buildsOf(process.argv.slice(2), "node bench/compare/alerts-writes.mjs name=/build/root ..."),
    rounds: ROUNDS,
    measure,
    figure: ({ usPerTransition }) => usPerTransition,
    describe: ({ usPerTransition }) => `${usPerTransition.toFixed(1)} µs`,
    unit: "CPU per transition",
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
