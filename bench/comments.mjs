// comments: throughput of the public comments API beside a bare Fastify server, in the same run.
//
// Starts the real server (dist/cli.js serve, SQLite in a temporary directory, log-level warn, one
// auto-approve website, rate limit raised so the load is not refused), seeds one article with 200
// approved comments, and starts a bare Fastify server in a child process that answers the same
// JSON array on one route (and a stub challenge and post, for the flow baseline). Then, with
// autocannon on loopback:
//   list: GET /api/v1/comment/<w>/<a>        requests/s, vigie vs bare (Fastify serialises the array
//                                            on every request, its default; vigie answers the JSON
//                                            text of its list cache)
//   list, pre-serialised                     the same vigie figure vs a bare route answering the JSON
//                                            text serialised once: what vigie's hooks, checks and
//                                            cache lookup cost beyond Fastify itself
//   304: the list with If-None-Match         requests/s of revalidations (304, no body), vigie only
//   flow: GET challenge, solve it, POST      completed flows/s (201 answers), vigie vs bare stubs
// Each phase runs BENCH_SECONDS (default 5, at most 10) after a 1 s warm-up, with BENCH_CONNECTIONS
// connections (default 10). Nothing asserts a timing; the figures and ratios are printed.
//
// `node bench/comments.mjs baseline-server <port> <json file>` is the bare server (child process).
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { freePort, startVigie, waitFor } from "./lib/vigie.mjs";

const here = fileURLToPath(import.meta.url);
const seconds = Math.min(10, Number(process.env.BENCH_SECONDS ?? 5));
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const WEBSITE = "bench";
const ARTICLE = "seeded";
const SEEDED = 200;

if (process.argv[2] === "baseline-server") {
  await baselineServer(Number(process.argv[3]), process.argv[4]);
} else {
  await main();
}

/**
 * The bare Fastify server: the same JSON array (serialised per request, and as text serialised
 * once under `/pre/`), and stubs of the challenge and the post.
 */
async function baselineServer(port, file) {
  const { default: Fastify } = await import("fastify");
  const comments = JSON.parse(readFileSync(file, "utf8"));
  const text = JSON.stringify(comments);
  const app = Fastify({ logger: false });
  app.get("/api/v1/comment/:website/:article", async () => comments);
  app.get("/pre/api/v1/comment/:website/:article", async (_request, reply) => {
    reply.type("application/json; charset=utf-8");
    return text;
  });
  app.get("/api/v1/challenge/:website/:article", async () => ({
    timestamp: Date.now(),
    question: "what is the result of: 7 + 3",
    signature: "0".repeat(64),
  }));
  app.post("/api/v1/comment/:website/:article", async (_request, reply) => {
    reply.code(201);
    return { message: "Comment added" };
  });
  await app.listen({ host: "127.0.0.1", port });
  process.on("SIGTERM", () => app.close().then(() => process.exit(0)));
}

/** The answer of `what is the result of: a op b`. */
function solve(question) {
  const match = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(question);
  if (match === null) throw new Error(`not a math question: ${question}`);
  const [left, right] = [Number(match[1]), Number(match[3])];
  return String(match[2] === "+" ? left + right : match[2] === "-" ? left - right : left * right);
}

async function postSolved(baseUrl, article, content) {
  const challenge = await (await fetch(`${baseUrl}/api/v1/challenge/${WEBSITE}/${article}`)).json();
  const response = await fetch(`${baseUrl}/api/v1/comment/${WEBSITE}/${article}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      author: "Bench",
      content,
      answer: solve(challenge.question),
      signature: challenge.signature,
      timestamp: challenge.timestamp,
    }),
  });
  if (response.status !== 201) throw new Error(`seeding: ${response.status} ${await response.text()}`);
}

/** Loads GET <url>; refuses a run with errors or non-2xx answers. */
async function loadList(url, duration) {
  const result = await autocannon({ url, connections, duration, pipelining: 1 });
  if (result.errors > 0 || result.non2xx > 0 || result.timeouts > 0) {
    throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx answers, ${result.timeouts} timeouts`);
  }
  return { perSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

/** Loads GET <url> with `If-None-Match: <etag>`; refuses a run where any answer is not a 304. */
async function loadRevalidation(url, etag, duration) {
  const result = await autocannon({ url, connections, duration, pipelining: 1, headers: { "if-none-match": etag } });
  if (result.errors > 0 || result.timeouts > 0 || result["3xx"] !== result.requests.total) {
    throw new Error(
      `${url}: ${result.errors} errors, ${result.timeouts} timeouts, ${result["3xx"]} 3xx answers of ${result.requests.total}`,
    );
  }
  return { perSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

/**
 * Loads the visitor's flow on `baseUrl`: GET a challenge, solve it, POST a comment, again. Counts
 * completed flows (201 answers) per second of the phase.
 */
async function loadFlow(baseUrl, duration) {
  let completed = 0;
  let refused = 0;
  const path = (kind) => `/api/v1/${kind}/${WEBSITE}/flow`;
  const result = await autocannon({
    url: baseUrl,
    connections,
    duration,
    pipelining: 1,
    requests: [
      {
        method: "GET",
        path: path("challenge"),
        onResponse: (status, body, context) => {
          context.challenge = status === 200 ? JSON.parse(body) : undefined;
        },
      },
      {
        method: "POST",
        path: path("comment"),
        headers: { "content-type": "application/json" },
        setupRequest: (request, context) => {
          const challenge = context.challenge;
          if (challenge === undefined) return undefined; // restart the pipeline with a new challenge
          return {
            ...request,
            body: JSON.stringify({
              author: "Bench",
              content: "A comment of the benchmark",
              answer: solve(challenge.question),
              signature: challenge.signature,
              timestamp: challenge.timestamp,
            }),
          };
        },
        onResponse: (status) => {
          if (status === 201) completed++;
          else refused++;
        },
      },
    ],
  });
  if (result.errors > 0 || result.timeouts > 0 || refused > 0) {
    throw new Error(
      `flow on ${baseUrl}: ${result.errors} errors, ${result.timeouts} timeouts, ${refused} refused posts`,
    );
  }
  return { perSecond: completed / duration, p50: result.latency.p50, p99: result.latency.p99 };
}

function figure(run, unit) {
  return `${run.perSecond.toFixed(0).padStart(7)} ${unit} (p50 ${run.p50} ms, p99 ${run.p99} ms)`;
}

function line(label, vigie, bare, unit) {
  const ratio = (vigie.perSecond / bare.perSecond).toFixed(2);
  console.log(`${label.padEnd(30)} vigie ${figure(vigie, unit)}   bare fastify ${figure(bare, unit)}   ratio ${ratio}`);
}

async function main() {
  const children = [];
  let vigie;
  try {
    vigie = await startVigie({
      yaml: [
        "comments:",
        "  admin-token: bench-admin-token",
        "  rate-limit: {comments: 1000000, per: 10m}",
        `  websites:\n    - name: ${WEBSITE}\n      auto-approve: true`,
        "",
      ].join("\n"),
    });
    const vigieUrl = vigie.base;
    const directory = vigie.directory;

    for (let index = 0; index < SEEDED; index++) {
      await postSolved(vigieUrl, ARTICLE, `Comment number ${index} of the seeded article, a sentence or two long.`);
    }
    const listUrl = `${vigieUrl}/api/v1/comment/${WEBSITE}/${ARTICLE}`;
    const list = await (await fetch(listUrl)).json();
    if (list.length !== SEEDED) throw new Error(`seeded ${list.length} comments, expected ${SEEDED}`);
    const listFile = join(directory, "list.json");
    writeFileSync(listFile, JSON.stringify(list));

    const barePort = await freePort();
    const bare = spawn(process.execPath, [here, "baseline-server", String(barePort), listFile], {
      stdio: ["ignore", "inherit", "inherit"],
    });
    children.push(bare);
    const bareUrl = `http://127.0.0.1:${barePort}`;
    await waitFor(`${bareUrl}/api/v1/comment/${WEBSITE}/${ARTICLE}`, bare);
    const bareBody = await (await fetch(`${bareUrl}/api/v1/comment/${WEBSITE}/${ARTICLE}`)).text();
    if (bareBody !== JSON.stringify(list)) throw new Error("the bare server does not answer the same array");

    console.log(
      `comments: ${SEEDED} approved comments (${Buffer.byteLength(bareBody)} bytes of JSON), ` +
        `${connections} connections, ${seconds} s per phase, node ${process.version}`,
    );
    const bareListUrl = `${bareUrl}/api/v1/comment/${WEBSITE}/${ARTICLE}`;
    const bareTextUrl = `${bareUrl}/pre/api/v1/comment/${WEBSITE}/${ARTICLE}`;
    await loadList(listUrl, 1);
    await loadList(bareListUrl, 1);
    await loadList(bareTextUrl, 1);
    const vigieList = await loadList(listUrl, seconds);
    line(`GET list (${SEEDED} comments)`, vigieList, await loadList(bareListUrl, seconds), "req/s");
    line("GET list, bare pre-serialised", vigieList, await loadList(bareTextUrl, seconds), "req/s");
    const etag = (await fetch(listUrl)).headers.get("etag");
    if (etag === null) throw new Error("the list has no ETag");
    await loadRevalidation(listUrl, etag, 1);
    console.log(
      `${"GET list, If-None-Match: 304".padEnd(30)} vigie ${figure(await loadRevalidation(listUrl, etag, seconds), "req/s")}`,
    );
    await loadFlow(vigieUrl, 1);
    await loadFlow(bareUrl, 1);
    line("challenge + solve + post", await loadFlow(vigieUrl, seconds), await loadFlow(bareUrl, seconds), "flows/s");
  } finally {
    for (const child of children) child.kill("SIGTERM");
    await Promise.all(
      children.map((child) => new Promise((done) => (child.exitCode !== null ? done() : child.on("exit", done)))),
    );
    if (vigie !== undefined) {
      await vigie.stop();
      rmSync(vigie.directory, { recursive: true, force: true });
    }
  }
}
