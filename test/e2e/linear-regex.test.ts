/**
 * User regular expressions run in linear time (docs/security.md): `(a+)+$` against 100 000 `a`
 * followed by `b`, which a backtracking engine takes exponential time on, answers within a second in
 * an http check's body-regexp and in a stream's `:regex` condition; meanwhile the server's event
 * loop never stalls for {@link LONGEST_STALL_MS} (its own delay monitor) and `/healthz` answers each
 * probe within {@link PROBE_BOUND_MS}. Patterns RE2 cannot run are 400s naming the field or node.
 */
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, longestStallMs, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const EVIL_PATTERN = "(a+)+$";
const EVIL_INPUT = `${"a".repeat(100_000)}b`;
// A backtracking engine would hold the event loop for a time exponential in the 100 000 `a`, never
// answering; the linear match takes a few milliseconds. The server measures its own stalls; a probe's
// round trip also waits for whatever else a loaded CI machine runs, the test process included (114
// ms once, under the whole suite), so its bound leaves room for that load.
const LONGEST_STALL_MS = 100;
const PROBE_BOUND_MS = 500;

let vigie: VigieProcess;
let target: Server;
let targetPort: number;

beforeAll(async () => {
  // Answers the evil input after 100 ms, so /healthz probes are in flight when the body is matched.
  target = createServer((_request, response) => {
    setTimeout(() => response.end(EVIL_INPUT), 100);
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetPort = (target.address() as { port: number }).port;
  const directory = temporaryDirectory();
  const port = await freePort();
  const configFile = join(directory, "vigie.yaml");
  writeFileSync(
    configFile,
    [
      `http:\n  port: ${port}`,
      "log-level: warn",
      "database:\n  url: sqlite:./vigie.db",
      // The evil input (100 001 characters) is longer than the default bound of one string of an
      // event (64 KiB): raised, so that the stream's regex does see it.
      "streams:\n  max-event-string: 256KiB",
    ].join("\n"),
  );
  vigie = await startVigie({ configFile, port, cwd: directory });
});

afterAll(async () => {
  vigie?.child.kill("SIGKILL");
  await new Promise<void>((resolve) => target?.close(() => resolve()));
});

function post(path: string, body: unknown, method = "POST"): Promise<Response> {
  return fetch(`${vigie.baseUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/**
 * Runs `work` while probing `/healthz` every 10 ms.
 * @returns how long `work` took, the slowest probe and the server's longest event-loop stall
 *   meanwhile, in milliseconds
 */
async function whileProbing(
  work: () => Promise<unknown>,
): Promise<{ workMs: number; slowestProbeMs: number; stallMs: number }> {
  await longestStallMs(vigie.baseUrl); // starts a new measure
  let done = false;
  let slowestProbeMs = 0;
  const probing = (async () => {
    while (!done) {
      const sent = performance.now();
      const response = await fetch(`${vigie.baseUrl}/healthz`);
      await response.arrayBuffer();
      expect(response.status).toBe(200);
      slowestProbeMs = Math.max(slowestProbeMs, performance.now() - sent);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  const started = performance.now();
  try {
    await work();
  } finally {
    done = true;
  }
  const workMs = performance.now() - started;
  await probing;
  return { workMs, slowestProbeMs, stallMs: await longestStallMs(vigie.baseUrl) };
}

describe("linear-time user regexes in the real process", () => {
  it("matches an http check's body-regexp (a+)+$ against 100 000 a and a b in linear time", async () => {
    let answer: { status: number; body: unknown } | undefined;
    const { workMs, slowestProbeMs, stallMs } = await whileProbing(async () => {
      const response = await post("/healthcheck/http", {
        name: "evil-body",
        target: "127.0.0.1",
        port: targetPort,
        "valid-status": [200],
        "body-regexp": [EVIL_PATTERN],
        timeout: "5s",
        "one-off": true,
      });
      answer = { status: response.status, body: await response.json() };
    });
    // The body ends with `b`: `(a+)+$` finds no match, the check fails, as it should.
    expect(answer).toEqual({
      status: 500,
      body: {
        message: `Execution of one off healthcheck evil-body failed: body does not match regexp ${EVIL_PATTERN}`,
      },
    });
    expect(workMs).toBeLessThan(1000);
    expect(stallMs).toBeLessThan(LONGEST_STALL_MS);
    expect(slowestProbeMs).toBeLessThan(PROBE_BOUND_MS);
  });

  it("matches a stream's [:regex :host (a+)+$] against 100 000 a and a b in linear time", async () => {
    const config = `{:actions {:action :where :params [[:regex :host "${EVIL_PATTERN}"]] :children [{:action :index :params [[:host]]}]}}`;
    const created = await post("/api/v1/stream/evil", { config: Buffer.from(config).toString("base64") });
    expect(created.status).toBe(201);
    let status = 0;
    const { workMs, slowestProbeMs, stallMs } = await whileProbing(async () => {
      const response = await post(
        "/api/v1/stream/evil",
        {
          events: [
            { host: EVIL_INPUT, time: 1 },
            { host: "aaa", time: 2 },
          ],
        },
        "PUT",
      );
      status = response.status;
      await response.arrayBuffer();
    });
    expect(status).toBe(200);
    expect(workMs).toBeLessThan(1000);
    expect(stallMs).toBeLessThan(LONGEST_STALL_MS);
    expect(slowestProbeMs).toBeLessThan(PROBE_BOUND_MS);
    // Only the value that matches as a whole was indexed.
    const query = Buffer.from("[:always-true]").toString("base64");
    const search = await fetch(`${vigie.baseUrl}/api/v1/index/evil/search?query=${query}`);
    expect(await search.json()).toEqual({ events: [{ host: "aaa", time: 2 }] });
  });

  it("refuses patterns RE2 cannot run with a 400 naming the field or the node", async () => {
    const check = await post("/healthcheck/http", {
      name: "backreference",
      target: "127.0.0.1",
      port: targetPort,
      "valid-status": [200],
      "body-regexp": ["ok", "(a)\\1"],
      timeout: "1s",
      interval: "1h",
    });
    expect(check.status).toBe(400);
    expect(await check.json()).toEqual({
      error:
        "invalid healthcheck: body-regexp[1]: must be a regular expression in RE2 syntax, which runs in linear time (no backreferences or lookaround): invalid escape sequence: `\\1`",
    });
    expect((await fetch(`${vigie.baseUrl}/healthcheck/backreference`)).status).toBe(404);

    const config = '{:actions {:action :sdo :children [{:action :where :params [[:regex :host "(?=a)"]]}]}}';
    const stream = await post("/api/v1/stream/lookahead", { config: Buffer.from(config).toString("base64") });
    expect(stream.status).toBe(400);
    expect(await stream.json()).toEqual({
      error:
        'invalid stream config: actions.children[0].params[0]: invalid regular expression "(?=a)": invalid or unsupported Perl syntax: `(?=` (RE2 syntax, which runs in linear time: no backreferences or lookaround)',
    });
  });
});
