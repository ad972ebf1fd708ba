// cargo-mirror: the caching crates.io mirror of the Cargo registry (docs/benchmarks.md,
// docs/cargo.md), beside the registry's own downloads measured in the same run.
//
// Starts two real servers (dist/cli.js serve, SQLite, log-level warn): an upstream with the Cargo
// registry, and a mirror with the Cargo registry too and `registry.cargo.mirror` pointing at the
// upstream through a counting proxy in this process. A 50 kB crate is published to each. Then, on
// loopback with undici:
//   (a) the first download of the upstream's crate through the mirror, BENCH_CONNECTIONS requests
//       at once: its time, and the requests the proxy saw (target: one download upstream);
//   (b) downloads with BENCH_CONNECTIONS requests in flight, alternating in rounds: the mirror's
//       cached file (GET /api/v1/mirror/download/<name>/<version>) and the crate published to the
//       mirror itself (GET /api/v1/crates/<name>/<version>/download): req/s, server CPU per
//       request, and their ratio (target ≥ 0.8).
// Nothing asserts a timing.
//
// Environment: BENCH_SECONDS (per throughput phase, default 5), BENCH_CONNECTIONS (default 10).
// Run: npm run bench -- cargo-mirror
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createServer } from "node:http";
import { Pool } from "undici";
import { crateBytes, publish, publishFrame } from "./lib/cargo.mjs";
import { cpuSeconds, fmt, freePort, startVigie } from "./lib/vigie.mjs";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const DOWNLOAD_BYTES = 50 * 1024;
const ROUNDS = 4;
const TARGET_RATIO = 0.8;
const ADMIN = { VIGIE_ADMIN_NAME: "bench", VIGIE_ADMIN_PASSWORD: "bench-password" };

/** A token of the bench admin on `base`. */
async function tokenOf(base) {
  const created = await fetch(`${base}/api/v1/registry/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "bench", user: "bench", password: "bench-password" }),
  });
  if (created.status !== 201) throw new Error(`token creation answered ${created.status}: ${await created.text()}`);
  return (await created.json()).token;
}

/** A proxy to `target` counting requests by path. */
async function countingProxy(target, port) {
  const counts = new Map();
  const upstream = new Pool(target, { connections: 4 });
  const server = createServer((request, response) => {
    const path = new URL(request.url, "http://x").pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const headers = {};
    for (const name of ["if-none-match", "if-modified-since"]) {
      if (request.headers[name] !== undefined) headers[name] = request.headers[name];
    }
    upstream
      .request({ path: request.url, method: "GET", headers })
      .then(async ({ statusCode, headers: answered, body }) => {
        const bytes = Buffer.from(await body.arrayBuffer());
        const forwarded = {};
        for (const name of ["etag", "last-modified", "content-type"]) {
          if (answered[name] !== undefined) forwarded[name] = answered[name];
        }
        response.writeHead(statusCode, forwarded).end(bytes);
      })
      .catch(() => response.writeHead(502).end());
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    counts,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await upstream.close();
    },
  };
}

/**
 * Runs `once` in BENCH_CONNECTIONS loops for `duration` seconds; returns calls/s and the server's
 * CPU microseconds per call meanwhile.
 */
async function throughput(pid, once, duration) {
  let count = 0;
  const cpuBefore = cpuSeconds(pid);
  const started = performance.now();
  const deadline = started + duration * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        await once();
        count += 1;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { count, elapsed, cpu: cpuSeconds(pid) - cpuBefore };
}

/** A loop body downloading `path` from `pool` and checking it is `expected` bytes long. */
const downloader = (pool, path, expected) => async () => {
  const { statusCode, body } = await pool.request({ path, method: "GET" });
  let bytes = 0;
  for await (const chunk of body) bytes += chunk.length;
  if (statusCode !== 200 || bytes !== expected) throw new Error(`GET ${path}: ${statusCode}, ${bytes} bytes`);
};

const proxyPort = await freePort();
const upstream = await startVigie({ yaml: "registry:\n  cargo:\n    enabled: true", env: ADMIN });
const proxy = await countingProxy(upstream.base, proxyPort);
const proxyBase = `http://127.0.0.1:${proxyPort}`;
const mirror = await startVigie({
  yaml: [
    "registry:",
    "  cargo:",
    "    enabled: true",
    "    mirror:",
    "      enabled: true",
    `      upstream-index: ${proxyBase}/api/v1/cargo/index/`,
    `      upstream-download: ${proxyBase}/api/v1/crates`,
  ].join("\n"),
  env: ADMIN,
});
const pool = new Pool(mirror.base, { connections, pipelining: 1 });
let exitCode = 0;
try {
  const filler = { "data.bin": randomBytes(DOWNLOAD_BYTES - 400) };
  const remote = await crateBytes("bench-remote", "1.0.0", filler);
  const local = await crateBytes("bench-local", "1.0.0", filler);
  await publish(pool, await tokenOf(mirror.base), publishFrame("bench-local", "1.0.0", local));
  const upstreamPool = new Pool(upstream.base, { connections: 1 });
  await publish(upstreamPool, await tokenOf(upstream.base), publishFrame("bench-remote", "1.0.0", remote));
  await upstreamPool.close();

  // (a) The first download through the mirror, BENCH_CONNECTIONS at once.
  const mirrorPath = "/api/v1/mirror/download/bench-remote/1.0.0";
  const publishedPath = "/api/v1/crates/bench-local/1.0.0/download";
  const mirrored = downloader(pool, mirrorPath, remote.length);
  const published = downloader(pool, publishedPath, local.length);
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, mirrored));
  const firstMs = performance.now() - started;
  const seen = (path) => proxy.counts.get(path) ?? 0;
  const upstreamDownloads = seen("/api/v1/crates/bench-remote/1.0.0/download");
  const upstreamIndex = seen("/api/v1/cargo/index/be/nc/bench-remote");

  // (b) Cached mirror downloads beside published ones, alternating so that drift hits both alike.
  for (const once of [mirrored, published]) await throughput(mirror.child.pid, once, 1);
  const totals = { mirror: { count: 0, elapsed: 0, cpu: 0 }, published: { count: 0, elapsed: 0, cpu: 0 } };
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [key, once] of [
      ["published", published],
      ["mirror", mirrored],
    ]) {
      const result = await throughput(mirror.child.pid, once, seconds / ROUNDS);
      totals[key].count += result.count;
      totals[key].elapsed += result.elapsed;
      totals[key].cpu += result.cpu;
    }
  }
  const rate = (total) => total.count / total.elapsed;
  const cpu = (total) => ((total.cpu / total.count) * 1e6).toFixed(1);
  const ratio = rate(totals.mirror) / rate(totals.published);
  const met = (ok) => (ok ? "met" : "NOT MET");

  console.log("cargo-mirror: SQLite, loopback, undici; server CPU from /proc/<pid>/stat");
  console.log(
    `  (a) first download of a ${fmt(remote.length)} B .crate through the mirror, ${connections} requests at once: ${firstMs.toFixed(
      1,
    )} ms; upstream requests: ${upstreamDownloads} download, ${upstreamIndex} index file (target: 1 download: ${met(
      upstreamDownloads === 1,
    )})`,
  );
  console.log(`  (b) downloads of a ${fmt(local.length)} B .crate, ${connections} in flight, ${seconds} s each:`);
  console.log(
    `      GET /api/v1/mirror/download (cached)        ${fmt(rate(totals.mirror)).padStart(7)} /s  ${cpu(totals.mirror)} µs server CPU/request`,
  );
  console.log(
    `      GET /api/v1/crates/.../download (published)  ${fmt(rate(totals.published)).padStart(7)} /s  ${cpu(totals.published)} µs server CPU/request`,
  );
  console.log(
    `      ratio mirror / published: ${ratio.toFixed(2)} (target ≥ ${TARGET_RATIO}: ${met(ratio >= TARGET_RATIO)})`,
  );
  console.log(
    `      upstream downloads after (b): ${seen("/api/v1/crates/bench-remote/1.0.0/download")} (the cache served the rest)`,
  );
} catch (error) {
  console.error(`cargo-mirror failed: ${error.stack ?? error}`);
  exitCode = 1;
} finally {
  await pool.close();
  await mirror.stop();
  await proxy.close();
  await upstream.stop();
  for (const server of [mirror, upstream]) rmSync(server.directory, { recursive: true, force: true });
}
process.exit(exitCode);
