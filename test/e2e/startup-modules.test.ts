/**
 * Start-up loads only what the configuration uses (docs/benchmarks.md, "Start-up"): a server with
 * the default configuration and http checks, on SQLite, never loads the NATS client, pg,
 * protobufjs, snappy and the other libraries of inputs, outputs and routes it does not use (argon2
 * is loaded: the registry hashes a dummy password at start-up, registry/passwords.ts). The
 * real process is started with a `--require` hook that writes the CommonJS modules it loaded
 * (`require.cache`: every package here is CommonJS) to a file when it exits. The packages every
 * server uses (Fastify …) are in the server's bundle and never in that cache; the ones listed here
 * are left out of it, loaded by Node from node_modules (scripts/build-server.mjs, `EXTERNAL`).
 * undici is bundled but evaluated on first use (platform/undici.ts): a start without http checks
 * must not evaluate it, which a hook reads from the global dispatcher undici sets.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

/** Libraries a server uses only with some configuration, an input or a route's first request. */
const NOT_AT_START_UP = [
  "@nats-io/transport-node",
  "@nats-io/jetstream",
  "pg",
  "protobufjs",
  "snappy",
  "hdr-histogram-js",
  "tar-stream",
  "saxes",
  // Sending mail (email outputs), rendering a crate's README.
  "nodemailer",
  "markdown-it",
  // Fastify's validator compiler: no route declares a Fastify schema.
  "ajv",
];

let vigie: VigieProcess | undefined;
afterEach(async () => {
  await stopVigie(vigie);
  vigie = undefined;
});

/** The packages whose files a process loaded, from the hook's list of module paths. */
function packagesOf(paths: readonly string[]): Set<string> {
  const packages = new Set<string>();
  for (const path of paths) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
    if (match?.[1] !== undefined) packages.add(match[1]);
  }
  return packages;
}

/**
 * Starts a server on `config` (YAML lines after `http` and `database`), reads `/healthcheck/…`
 * as `check` says when given, stops it and returns the packages it loaded.
 */
async function packagesLoadedBy(config: readonly string[], check?: string): Promise<Set<string>> {
  const directory = temporaryDirectory();
  const port = await freePort();
  const list = join(directory, "modules.txt");
  const hook = join(directory, "modules-hook.cjs");
  writeFileSync(
    hook,
    `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(list)}, Object.keys(require.cache).join("\\n")));\n`,
  );
  const configFile = join(directory, "vigie.yaml");
  const lines = ["http:", `  port: ${port}`, "database:", `  url: sqlite:${join(directory, "vigie.db")}`];
  writeFileSync(configFile, [...lines, ...config.map((line) => line.replace("$PORT", String(port))), ""].join("\n"));
  vigie = await startVigie({ configFile, port, cwd: directory, env: { NODE_OPTIONS: `--require ${hook}` } });
  if (check !== undefined) {
    // The API works: the check's view, made on first read, is there.
    const answer = await fetch(`${vigie.baseUrl}/healthcheck/${check}`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ name: check, kind: "http", source: "configuration" });
  }
  await stopVigie(vigie);
  vigie = undefined;
  return packagesOf(readFileSync(list, "utf8").split("\n"));
}

describe("start-up", () => {
  it("does not load the libraries that the configuration does not use", async () => {
    const loaded = await packagesLoadedBy(
      [
        "healthchecks:",
        "  http-checks:",
        "    - { name: local, target: 127.0.0.1, port: $PORT, path: /healthz, valid-status: [200], interval: 1s, timeout: 1s }",
      ],
      "local",
    );
    // The hook saw the process's modules: the packages outside the bundle that every server needs
    // are there.
    expect(loaded).toContain("better-sqlite3");
    expect(loaded).toContain("@node-rs/argon2");
    expect(NOT_AT_START_UP.filter((name) => loaded.has(name))).toEqual([]);
  });

  it("loads protobufjs when the Riemann input is on, before any client sends a message", async () => {
    // Loading it with the first message would hold that message's turn of the event loop tens of
    // milliseconds longer (test/e2e/wide-events.test.ts).
    const riemannPort = await freePort();
    const loaded = await packagesLoadedBy([
      "streams:",
      "  riemann:",
      "    enabled: true",
      "    host: 127.0.0.1",
      `    port: ${riemannPort}`,
    ]);
    expect(loaded).toContain("protobufjs");
    expect(loaded.has("snappy")).toBe(false);
  });
});

/**
 * Whether the process evaluated undici: its `lib/global.js` sets the global dispatcher, a symbol
 * of `globalThis` that Node's own fetch does not use (it has its own, `.1`), when it is evaluated.
 * A `--require` hook writes it to a file as the process exits.
 */
async function undiciEvaluatedBy(config: readonly string[], resultOf?: string): Promise<boolean> {
  const directory = temporaryDirectory();
  const port = await freePort();
  const flag = join(directory, "undici.txt");
  const hook = join(directory, "undici-hook.cjs");
  writeFileSync(
    hook,
    `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(flag)}, String(globalThis[Symbol.for("undici.globalDispatcher.2")] !== undefined)));\n`,
  );
  const configFile = join(directory, "vigie.yaml");
  const lines = ["http:", `  port: ${port}`, "database:", `  url: sqlite:${join(directory, "vigie.db")}`];
  writeFileSync(configFile, [...lines, ...config.map((line) => line.replace("$PORT", String(port))), ""].join("\n"));
  vigie = await startVigie({ configFile, port, cwd: directory, env: { NODE_OPTIONS: `--require ${hook}` } });
  expect((await fetch(`${vigie.baseUrl}/healthcheck`)).status).toBe(200);
  if (resultOf !== undefined) {
    const url = `${vigie.baseUrl}/result/${resultOf}`;
    await vi.waitFor(async () => expect((await fetch(url)).status).toBe(200), { timeout: 10_000, interval: 100 });
  }
  await stopVigie(vigie);
  vigie = undefined;
  return readFileSync(flag, "utf8") === "true";
}

describe("undici, the HTTP client, evaluated on the first request to send", () => {
  it("is not evaluated by a start without http requests to send", async () => {
    expect(await undiciEvaluatedBy([])).toBe(false);
  });

  it("is evaluated once an http check has run", async () => {
    const check = [
      "healthchecks:",
      "  http-checks:",
      "    - { name: local, target: 127.0.0.1, port: $PORT, path: /healthz, valid-status: [200], interval: 1s, timeout: 1s }",
    ];
    expect(await undiciEvaluatedBy(check, "local")).toBe(true);
  });
});
