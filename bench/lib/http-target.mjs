// An HTTP target for the healthchecks benchmarks, in a process of its own so that its CPU does not
// count as the client's: nginx from Debian when installed (`BENCH_TARGET=node` forces the other),
// else a Node server. Both log every request as `<epoch seconds with milliseconds> <requests on
// its connection so far>`, from which `stats()` counts, over a time window, the requests, the new
// connections (a request that is the first of its connection) and the requests of each second.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitFor } from "./vigie.mjs";

const NGINX = "/usr/sbin/nginx";

// nginx closes a connection after `keepalive_requests` requests (1000 by default), which alone would
// make 60 new connections a minute at 1 000 requests/s: set high, so that the count shows how the
// client pools its connections. One worker, no daemon, every path in the temporary directory.
const nginxConfig = (directory, port) => `
daemon off;
master_process off;
worker_processes 1;
pid ${directory}/nginx.pid;
error_log ${directory}/error.log warn;
events { worker_connections 8192; }
http {
  log_format stamp '$msec $connection_requests';
  access_log ${directory}/access.log stamp buffer=256k flush=200ms;
  keepalive_requests 10000000;
  keepalive_timeout 75s;
  client_body_temp_path ${directory}/body;
  proxy_temp_path ${directory}/proxy;
  fastcgi_temp_path ${directory}/fastcgi;
  uwsgi_temp_path ${directory}/uwsgi;
  scgi_temp_path ${directory}/scgi;
  server {
    listen 127.0.0.1:${port};
    location / { return 200 "ok\\n"; }
  }
}
`;

// The Node target: "ok" to every request, keep-alive for 75 s as nginx, the same log lines.
const NODE_TARGET = `
import { createServer } from "node:http";
import { createWriteStream } from "node:fs";
const [port, log] = process.argv.slice(1);
const out = createWriteStream(log);
const server = createServer((request, response) => {
  out.write((Date.now() / 1000).toFixed(3) + " " + (request.socket.served = (request.socket.served ?? 0) + 1) + "\\n");
  response.end("ok\\n");
});
server.keepAliveTimeout = 75_000;
server.listen(Number(port), "127.0.0.1");
`;

/**
 * Starts the target on a free loopback port.
 * @returns `{ kind, port, origin, pid, stats(fromMs, toMs), stop() }`; `stats` reads the log (call it
 *   a little after `toMs`: nginx flushes its log every 200 ms) and returns `{ requests,
 *   newConnections, perSecond }`, `perSecond` the requests of each whole second of the window
 */
export async function startTarget() {
  const directory = mkdtempSync(join(tmpdir(), "vigie-bench-target-"));
  const port = await freePort();
  const log = join(directory, "access.log");
  const useNginx = process.env.BENCH_TARGET !== "node" && spawnSync(NGINX, ["-v"]).status === 0;
  let child;
  if (useNginx) {
    const config = join(directory, "nginx.conf");
    writeFileSync(config, nginxConfig(directory, port));
    child = spawn(NGINX, ["-c", config, "-p", directory], { stdio: ["ignore", "inherit", "inherit"] });
  } else {
    child = spawn(process.execPath, ["--input-type=module", "-e", NODE_TARGET, String(port), log], {
      stdio: ["ignore", "inherit", "inherit"],
    });
  }
  const exited = new Promise((done) => child.once("exit", done));
  await waitFor(`http://127.0.0.1:${port}/`, child);
  return {
    kind: useNginx ? "nginx" : "node",
    port,
    origin: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stats: (fromMs, toMs) => stats(log, fromMs, toMs),
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

function stats(log, fromMs, toMs) {
  const firstSecond = Math.ceil(fromMs / 1000);
  const lastSecond = Math.floor(toMs / 1000);
  const perSecond = new Array(Math.max(0, lastSecond - firstSecond)).fill(0);
  let requests = 0;
  let newConnections = 0;
  for (const line of readFileSync(log, "utf8").split("\n")) {
    const space = line.indexOf(" ");
    if (space < 0) continue;
    const ms = Number(line.slice(0, space)) * 1000;
    if (ms < fromMs || ms >= toMs) continue;
    requests++;
    if (line.slice(space + 1) === "1") newConnections++;
    const second = Math.floor(ms / 1000) - firstSecond;
    if (second >= 0 && second < perSecond.length) perSecond[second]++;
  }
  return { requests, newConnections, perSecond };
}
