/**
 * Start-up loads only what the configuration uses (docs/benchmarks.md, "Start-up"): a server with
 * the default configuration and http checks, on SQLite, never loads the NATS client, pg,
 * protobufjs, snappy and the other libraries of inputs, outputs and routes it does not use (argon2
 * is loaded: the registry hashes a dummy password at start-up, registry/passwords.ts). The
 * real process is started with a `--require` hook that writes the CommonJS modules it loaded
 * (`require.cache`: every package here is CommonJS) to a file when it exits. The packages every
 * server uses (Fastify …) are in the server's bundle and never in that cache; the ones listed here
 * are left out of it, loaded by Node from node_modules (scripts/build-server.mjs, `EXTERNAL`).
 * undici is bundled but imported on first use, into a chunk of its own (platform/undici.ts): a
 * module loader hook lists the bundle files a start loaded, and none may hold undici's code.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
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

/** Writes a `--import` hook that appends the URL of every ES module the process loads to `list`. */
function moduleListHook(directory: string, list: string): string {
  const loader = join(directory, "module-list-loader.mjs");
  writeFileSync(
    loader,
    `import { appendFileSync } from "node:fs";\nexport async function load(url, context, next) {\n  appendFileSync(${JSON.stringify(list)}, url + "\\n");\n  return next(url, context);\n}\n`,
  );
  const hook = join(directory, "module-list-hook.mjs");
  writeFileSync(
    hook,
    `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(loader).href)});\n`,
  );
  return hook;
}

describe("start-up without http requests to send", () => {
  it("does not load undici's chunk of the bundle", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const list = join(directory, "modules.txt");
    writeFileSync(list, "");
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      ["http:", `  port: ${port}`, "database:", `  url: sqlite:${join(directory, "vigie.db")}`, ""].join("\n"),
    );
    const hook = moduleListHook(directory, list);
    vigie = await startVigie({ configFile, port, cwd: directory, env: { NODE_OPTIONS: `--import ${hook}` } });
    expect((await fetch(`${vigie.baseUrl}/healthcheck`)).status).toBe(200);
    await stopVigie(vigie);
    vigie = undefined;

    const bundleFiles = readFileSync(list, "utf8")
      .split("\n")
      .filter((url) => /\/dist\/bundle\/[^/]+\.js$/.test(url))
      .map((url) => fileURLToPath(url));
    // The hook saw the bundle's main file.
    expect(bundleFiles.some((file) => file.endsWith("/dist/bundle/cli.js"))).toBe(true);
    // An error code that only undici's code has.
    const withUndici = bundleFiles.filter((file) => readFileSync(file, "utf8").includes("UND_ERR_CONNECT_TIMEOUT"));
    expect(withUndici).toEqual([]);
  });
});
