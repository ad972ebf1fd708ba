// registry-auth: what a registry token costs an authenticated request (target: under
// 0.2 ms of server CPU beyond the route itself).
//
// Starts the real server (dist/cli.js serve, SQLite in a temporary directory, log-level warn), with
// an admin from VIGIE_ADMIN_NAME/VIGIE_ADMIN_PASSWORD, creates a token, then loads in turn
//   open: GET /healthz                    (no token; one trivial database query)
//   auth: GET /api/v1/registry/token      (Bearer token; one indexed query listing the tokens)
// with autocannon on loopback, and reads the server's CPU time (utime + stime of /proc/<pid>/stat)
// before and after each phase. Both routes run one database query, so the difference of CPU per
// request is an upper bound of what authentication adds. Phases alternate (open, auth, open, auth)
// so drift of the machine hits both alike.
//
// Last, the guard alone is timed in-process: Auth.check() of a cached token, as a route's
// preHandler calls it.
//
// Environment: BENCH_SECONDS (per phase, default 5), BENCH_CONNECTIONS (default 10).
import { rmSync } from "node:fs";
import { join } from "node:path";
import autocannon from "autocannon";
import { cpuSeconds, root, startVigie } from "./lib/vigie.mjs";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const TARGET_MICROSECONDS = 200;

async function load(url, headers, duration) {
  const result = await autocannon({ url, headers, connections, duration, pipelining: 1 });
  if (result.errors > 0 || result.non2xx > 0 || result.timeouts > 0) {
    throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx answers, ${result.timeouts} timeouts`);
  }
  return result;
}

async function phase(pid, url, headers) {
  const before = cpuSeconds(pid);
  const result = await load(url, headers, seconds);
  const cpu = cpuSeconds(pid) - before;
  return { requests: result.requests.total, seconds: result.duration, cpu };
}

function summarise(phases) {
  const requests = phases.reduce((sum, entry) => sum + entry.requests, 0);
  const elapsed = phases.reduce((sum, entry) => sum + entry.seconds, 0);
  const cpu = phases.reduce((sum, entry) => sum + entry.cpu, 0);
  return { perSecond: requests / elapsed, cpuMicroseconds: (cpu / requests) * 1e6, requests };
}

/** Times Auth.check() of a cached token in this process, through the built modules. */
async function guardAlone() {
  const { parseConfig } = await import(join(root, "dist", "platform", "config.js"));
  const { buildServer, modules } = await import(join(root, "dist", "server.js"));
  const environment = { VIGIE_ADMIN_NAME: "bench", VIGIE_ADMIN_PASSWORD: "bench-password" };
  // The registry reads its bootstrap admin from process.env at start-up.
  Object.assign(process.env, environment);
  const config = parseConfig({ database: { url: "sqlite::memory:" }, "log-level": "warn" }, {}, modules);
  let server;
  try {
    server = await buildServer(config);
  } finally {
    for (const name of Object.keys(environment)) delete process.env[name];
  }
  try {
    const created = await server.app.inject({
      method: "POST",
      url: "/api/v1/registry/token",
      payload: { name: "guard", user: "bench", password: "bench-password" },
    });
    const { token } = created.json();
    await server.context.auth.check(token, "tech"); // fills the cache
    const rounds = 200_000;
    for (let index = 0; index < 20_000; index += 1) server.context.auth.check(token, "tech");
    const started = process.cpuUsage();
    for (let index = 0; index < rounds; index += 1) {
      const result = server.context.auth.check(token, "tech");
      if (result.outcome !== "ok") throw new Error(`guard answered ${result.outcome ?? "a promise"}`);
    }
    const used = process.cpuUsage(started);
    return (used.user + used.system) / rounds;
  } finally {
    await server.close();
  }
}

const vigie = await startVigie({ env: { VIGIE_ADMIN_NAME: "bench", VIGIE_ADMIN_PASSWORD: "bench-password" } });
const baseUrl = vigie.base;
const child = vigie.child;
let exitCode = 0;
try {
  const created = await fetch(`${baseUrl}/api/v1/registry/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "bench", user: "bench", password: "bench-password" }),
  });
  if (created.status !== 201) throw new Error(`token creation answered ${created.status}: ${await created.text()}`);
  const { token } = await created.json();

  const open = { url: `${baseUrl}/healthz`, headers: {} };
  const auth = { url: `${baseUrl}/api/v1/registry/token`, headers: { authorization: `Bearer ${token}` } };
  // Warm-up: JIT, connection pools, the token cache.
  await load(open.url, open.headers, 1);
  await load(auth.url, auth.headers, 1);

  const openPhases = [];
  const authPhases = [];
  for (let round = 0; round < 2; round += 1) {
    openPhases.push(await phase(child.pid, open.url, open.headers));
    authPhases.push(await phase(child.pid, auth.url, auth.headers));
  }
  const openResult = summarise(openPhases);
  const authResult = summarise(authPhases);
  const extra = authResult.cpuMicroseconds - openResult.cpuMicroseconds;
  const guard = await guardAlone();

  const row = (label, result) =>
    `  ${label.padEnd(36)} ${result.perSecond.toFixed(0).padStart(7)} req/s  ${result.cpuMicroseconds.toFixed(1).padStart(7)} µs CPU/request  (${result.requests} requests)`;
  console.log(
    `registry-auth: SQLite, ${connections} connections, 2 × ${seconds} s per route, server CPU from /proc/<pid>/stat`,
  );
  console.log(row("open  GET /healthz", openResult));
  console.log(row("auth  GET /api/v1/registry/token", authResult));
  console.log(
    `  extra CPU per authenticated request: ${extra.toFixed(1)} µs (target < ${TARGET_MICROSECONDS} µs: ${
      extra < TARGET_MICROSECONDS ? "met" : "NOT MET"
    })`,
  );
  console.log(
    `  ratio auth/open: CPU per request ${(authResult.cpuMicroseconds / openResult.cpuMicroseconds).toFixed(2)}, throughput ${(
      authResult.perSecond / openResult.perSecond
    ).toFixed(2)}`,
  );
  console.log(`  guard alone (Auth.check of a cached token, in-process): ${guard.toFixed(2)} µs CPU per check`);
} catch (error) {
  console.error(`registry-auth failed: ${error.stack ?? error}`);
  exitCode = 1;
} finally {
  await vigie.stop();
  rmSync(vigie.directory, { recursive: true, force: true });
}
process.exit(exitCode);
