// registry: the Cargo registry (docs/benchmarks.md), each figure beside a baseline measured in the
// same run.
//
// Starts the real server (dist/cli.js serve, SQLite in a temporary directory, log-level warn,
// registry.cargo enabled) with an admin from VIGIE_ADMIN_NAME/VIGIE_ADMIN_PASSWORD and a token,
// then, on loopback with undici:
//   (a) publishes: 200 distinct versions of a small crate in a row (PUT /api/v1/crates/new, one at
//       a time, frames built beforehand with tar-stream and zlib: u32 LE length + JSON metadata +
//       u32 LE length + .crate), publishes/s (target ≥ 100) beside writing the same .crate bytes to
//       a file with fsync and rename, the least a durable publish does;
//   (b) the sparse index file of that crate once it has 1 000 versions (800 more published, their
//       rate shown too): p99 of GET with cargo's Accept-Encoding (target < 2 ms), and without it,
//       and of a revalidation with If-None-Match that
//       answers 304 (target < 0.5 ms), one request at a time on one keep-alive connection, beside
//       GET /healthz on the same connection; the three alternate in rounds so drift hits all alike;
//   (c) downloads of a 50 kB .crate (GET /api/v1/crates/<name>/<version>/download) with
//       BENCH_CONNECTIONS requests in flight: req/s (target ≥ 5 000) and server CPU per request,
//       beside fs.readFile of the stored file in the same loop shape, and GET /healthz.
// Percentiles come from hdr-histogram-js (microseconds). Nothing asserts a timing.
//
// Environment: BENCH_SECONDS (per throughput phase, default 5), BENCH_CONNECTIONS (default 10),
// BENCH_REQUESTS (latency samples per route, default 5 000).
// Run: npm run bench -- registry
import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as hdr from "hdr-histogram-js";
import { Client, Pool } from "undici";
import { crateBytes, publish, publishFrame } from "./lib/cargo.mjs";
import { cpuSeconds, fmt, startVigie } from "./lib/vigie.mjs";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const samples = Number(process.env.BENCH_REQUESTS ?? 5_000);
const TIMED_PUBLISHES = 200;
const INDEX_VERSIONS = 1_000;
const DOWNLOAD_BYTES = 50 * 1024;
const INDEX_CRATE = "bench-index";
const DOWNLOAD_CRATE = "bench-download";
const TARGETS = { publishes: 100, indexP99: 2, revalidateP99: 0.5, downloads: 5_000 };

/** A histogram of microseconds. */
const histogram = () =>
  hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });

/** Milliseconds of a percentile of a microsecond histogram. */
const ms = (h, percentile) => h.getValueAtPercentile(percentile) / 1000;

/** Microseconds elapsed since `started` (a process.hrtime.bigint()). */
const since = (started) => Number(process.hrtime.bigint() - started) / 1000;

/** Publishes every frame one after the other; returns publishes/s and the latency histogram. */
async function publishAll(client, token, frames) {
  const latency = histogram();
  const started = process.hrtime.bigint();
  for (const frame of frames) {
    const one = process.hrtime.bigint();
    await publish(client, token, frame);
    latency.recordValue(Math.max(1, Math.round(since(one))));
  }
  return { perSecond: frames.length / (since(started) / 1e6), latency };
}

/** The baseline of a publish: each .crate written to a temporary file, fsynced, renamed. */
function writeAll(directory, crates) {
  const latency = histogram();
  const started = process.hrtime.bigint();
  crates.forEach((bytes, index) => {
    const one = process.hrtime.bigint();
    const temporary = join(directory, `.${index}.tmp`);
    const descriptor = openSync(temporary, "w");
    try {
      writeSync(descriptor, bytes);
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
    renameSync(temporary, join(directory, `${index}.crate`));
    latency.recordValue(Math.max(1, Math.round(since(one))));
  });
  return { perSecond: crates.length / (since(started) / 1e6), latency };
}

/** One GET on `client`; returns its status, after reading the whole body. */
async function get(client, path, headers = {}) {
  const { statusCode, body } = await client.request({ path, method: "GET", headers });
  await body.dump({ limit: Number.POSITIVE_INFINITY });
  return statusCode;
}

/**
 * Latency of sequential requests of each route on one connection, `samples` each, in 10 rounds
 * that alternate the routes, with the server's CPU microseconds per request of each route; throws
 * when a route answers another status than its expected one.
 */
async function latencies(client, pid, routes) {
  const results = routes.map(() => ({ latency: histogram(), cpu: 0, count: 0 }));
  const rounds = 10;
  for (let round = 0; round < rounds; round += 1) {
    for (const [index, route] of routes.entries()) {
      const result = results[index];
      const cpuBefore = cpuSeconds(pid);
      for (let count = 0; count < samples / rounds; count += 1) {
        const started = process.hrtime.bigint();
        const status = await get(client, route.path, route.headers);
        result.latency.recordValue(Math.max(1, Math.round(since(started))));
        if (status !== route.status) throw new Error(`${route.label}: answered ${status}, expected ${route.status}`);
        result.count += 1;
      }
      result.cpu += cpuSeconds(pid) - cpuBefore;
    }
  }
  return results.map((result) => ({ ...result, cpuMicroseconds: (result.cpu / result.count) * 1e6 }));
}

/**
 * Runs `once` in BENCH_CONNECTIONS loops for `duration` seconds (and at most 10 million calls);
 * returns calls/s and the server's CPU microseconds per call meanwhile.
 */
async function throughput(pid, once, duration = seconds) {
  let count = 0;
  const cpuBefore = cpuSeconds(pid);
  const started = process.hrtime.bigint();
  const deadline = performance.now() + duration * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < deadline && count < 10_000_000) {
        await once();
        count += 1;
      }
    }),
  );
  const elapsed = since(started) / 1e6;
  return { perSecond: count / elapsed, count, cpuMicroseconds: ((cpuSeconds(pid) - cpuBefore) / count) * 1e6 };
}

/** The stored `.crate` file named `file` somewhere under `directory`. */
function findFile(directory, file) {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isFile() && entry.name === file) return path;
    if (entry.isDirectory()) {
      const found = findFile(path, file);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

const met = (ok) => (ok ? "met" : "NOT MET");

const vigie = await startVigie({
  yaml: "registry:\n  cargo:\n    enabled: true\n    max-crate-size: 10MiB",
  env: { VIGIE_ADMIN_NAME: "bench", VIGIE_ADMIN_PASSWORD: "bench-password" },
});
const { base, child } = vigie;
const client = new Client(base, { pipelining: 1 });
const pool = new Pool(base, { connections, pipelining: 1 });
let exitCode = 0;
try {
  const created = await fetch(`${base}/api/v1/registry/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "bench", user: "bench", password: "bench-password" }),
  });
  if (created.status !== 201) throw new Error(`token creation answered ${created.status}: ${await created.text()}`);
  const { token } = await created.json();

  // (a) Publishes, frames built beforehand: 1 000 versions of one crate, the first 200 timed.
  const versions = Array.from({ length: INDEX_VERSIONS }, (_, index) => `${Math.floor(index / 100)}.${index % 100}.0`);
  const crates = await Promise.all(versions.map((vers) => crateBytes(INDEX_CRATE, vers)));
  const frames = versions.map((vers, index) => publishFrame(INDEX_CRATE, vers, crates[index]));
  // Warm-up on another crate: JIT, the token cache, the prepared statements.
  for (let index = 0; index < 20; index += 1) {
    const vers = `0.0.${index}`;
    await publish(client, token, publishFrame("bench-warm-up", vers, await crateBytes("bench-warm-up", vers)));
  }
  const timed = await publishAll(client, token, frames.slice(0, TIMED_PUBLISHES));
  const baselineDirectory = join(vigie.directory, "baseline");
  rmSync(baselineDirectory, { recursive: true, force: true });
  mkdirSync(baselineDirectory);
  const written = writeAll(baselineDirectory, crates.slice(0, TIMED_PUBLISHES));
  const rest = await publishAll(client, token, frames.slice(TIMED_PUBLISHES));
  const crateSize = crates.reduce((sum, bytes) => sum + bytes.length, 0) / crates.length;

  // (b) The index file of 1 000 versions, its 304, and /healthz.
  const indexPath = `/api/v1/cargo/index/${INDEX_CRATE.slice(0, 2)}/${INDEX_CRATE.slice(2, 4)}/${INDEX_CRATE}`;
  const first = await client.request({ path: indexPath, method: "GET" });
  const indexText = await first.body.text();
  if (first.statusCode !== 200) throw new Error(`GET ${indexPath} answered ${first.statusCode}: ${indexText}`);
  const lines = indexText.trim().split("\n").length;
  if (lines !== INDEX_VERSIONS) throw new Error(`the index file has ${lines} lines, not ${INDEX_VERSIONS}`);
  const etag = first.headers.etag;
  if (typeof etag !== "string") throw new Error(`GET ${indexPath}: no ETag`);
  const routes = [
    // As cargo asks: `Accept-Encoding: deflate, gzip` (the server keeps the gzip form of the file).
    { label: "index", path: indexPath, headers: { "accept-encoding": "deflate, gzip" }, status: 200 },
    { label: "index, identity", path: indexPath, status: 200 },
    { label: "304", path: indexPath, headers: { "if-none-match": etag }, status: 304 },
    { label: "healthz", path: "/healthz", status: 200 },
  ];
  await latencies(client, child.pid, routes); // warm-up, discarded
  const [indexLatency, identityLatency, revalidateLatency, healthLatency] = await latencies(client, child.pid, routes);

  // (c) Downloads of a 50 kB crate (random bytes: gzip leaves them as they are).
  const big = await crateBytes(DOWNLOAD_CRATE, "1.0.0", { "data.bin": randomBytes(DOWNLOAD_BYTES - 400) });
  await publish(client, token, publishFrame(DOWNLOAD_CRATE, "1.0.0", big));
  const downloadPath = `/api/v1/crates/${DOWNLOAD_CRATE}/1.0.0/download`;
  const check = await client.request({ path: downloadPath, method: "GET" });
  const served = Buffer.from(await check.body.arrayBuffer());
  if (check.statusCode !== 200 || !served.equals(big)) {
    throw new Error(`GET ${downloadPath} answered ${check.statusCode} with ${served.length} bytes, not the .crate`);
  }
  const stored = findFile(vigie.directory, `${DOWNLOAD_CRATE}-1.0.0.crate`);
  if (stored === undefined || !existsSync(stored))
    throw new Error(`the stored ${DOWNLOAD_CRATE}-1.0.0.crate is missing`);

  const download = async () => {
    const { statusCode, body } = await pool.request({ path: downloadPath, method: "GET" });
    let bytes = 0;
    for await (const chunk of body) bytes += chunk.length;
    if (statusCode !== 200 || bytes !== big.length) throw new Error(`download answered ${statusCode}, ${bytes} bytes`);
  };
  const health = async () => {
    const { statusCode, body } = await pool.request({ path: "/healthz", method: "GET" });
    await body.dump();
    if (statusCode !== 200) throw new Error(`/healthz answered ${statusCode}`);
  };
  const readStored = async () => {
    const bytes = await readFile(stored);
    if (bytes.length !== big.length) throw new Error(`read ${bytes.length} bytes`);
  };
  // One-second warm-ups, then the measured phases.
  for (const once of [download, readStored, health]) await throughput(child.pid, once, 1);
  const downloads = await throughput(child.pid, download);
  const reads = await throughput(child.pid, readStored);
  const healths = await throughput(child.pid, health);

  console.log(`registry: SQLite, loopback, undici; server CPU from /proc/<pid>/stat`);
  console.log(
    `  (a) ${TIMED_PUBLISHES} publishes in a row (${fmt(crateSize)} B crates): ${fmt(timed.perSecond)} publishes/s, p50 ${ms(
      timed.latency,
      50,
    ).toFixed(2)} ms, p99 ${ms(timed.latency, 99).toFixed(2)} ms (target ≥ ${TARGETS.publishes}/s: ${met(
      timed.perSecond >= TARGETS.publishes,
    )})`,
  );
  console.log(
    `      baseline write + fsync + rename of the same bytes: ${fmt(written.perSecond)}/s, p50 ${ms(
      written.latency,
      50,
    ).toFixed(2)} ms, p99 ${ms(written.latency, 99).toFixed(2)} ms`,
  );
  console.log(
    `      publishes ${TIMED_PUBLISHES + 1}–${INDEX_VERSIONS} of the same crate: ${fmt(rest.perSecond)} publishes/s, p99 ${ms(
      rest.latency,
      99,
    ).toFixed(2)} ms`,
  );
  const row = (label, { latency, cpuMicroseconds }, target) =>
    `      ${label.padEnd(38)} p50 ${ms(latency, 50).toFixed(3)} ms  p99 ${ms(latency, 99).toFixed(3)} ms  max ${ms(
      latency,
      100,
    ).toFixed(1)} ms  ${cpuMicroseconds.toFixed(0).padStart(4)} µs server CPU/request${
      target === undefined ? "" : `  (target p99 < ${target} ms: ${met(ms(latency, 99) < target)})`
    }`;
  console.log(
    `  (b) index file of ${fmt(INDEX_VERSIONS)} versions (${fmt(indexText.length / 1024)} kB), ${fmt(samples)} sequential requests each:`,
  );
  console.log(row("GET index file, gzip (as cargo asks)", indexLatency, TARGETS.indexP99));
  console.log(row("GET index file, no Accept-Encoding", identityLatency));
  console.log(row("GET index file, If-None-Match → 304", revalidateLatency, TARGETS.revalidateP99));
  console.log(row("baseline GET /healthz", healthLatency));
  const rate = (label, result, target) =>
    `      ${label.padEnd(44)} ${fmt(result.perSecond).padStart(7)} /s${
      result.cpuMicroseconds === undefined
        ? ""
        : `  ${result.cpuMicroseconds.toFixed(1).padStart(6)} µs server CPU/request`
    }${target === undefined ? "" : `  (target ≥ ${fmt(target)}/s: ${met(result.perSecond >= target)})`}`;
  console.log(`  (c) downloads of a ${fmt(big.length)} B .crate, ${connections} in flight, ${seconds} s per phase:`);
  console.log(rate("GET .../download", downloads, TARGETS.downloads));
  console.log(rate("baseline fs.readFile of the stored file", { perSecond: reads.perSecond }));
  console.log(rate("baseline GET /healthz", healths));
} catch (error) {
  console.error(`registry failed: ${error.stack ?? error}`);
  exitCode = 1;
} finally {
  await client.close();
  await pool.close();
  await vigie.stop();
  rmSync(vigie.directory, { recursive: true, force: true });
}
process.exit(exitCode);
