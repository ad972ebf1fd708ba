/**
 * Bundles the server's code with esbuild so that `vigie serve` starts fast (docs/benchmarks.md,
 * "Start-up"): Node loads a few files instead of about 300 ES modules of dist/. Run by
 * `npm run build` after tsc, whose output stays in dist/ (the benchmarks import some of its
 * modules); the command itself runs the bundle:
 *
 * - dist/bundle/cli.cjs, the bundle of src/cli.ts: one CommonJS module for Node 20, which the
 *   command compiles itself (scripts/cli-launcher.mjs), with the packages every server loads
 *   (Fastify, kysely …: resolving and compiling hundreds of CommonJS files was most of the start-up
 *   time left). The source's dynamic imports (undici, dagre) stay in it, evaluated when first
 *   imported.
 * - dist/bundle/cli.cjs.cache, V8's code cache of it, written by one start of the built server
 *   (an http check or two, SQLite in a temporary directory, a loopback port) as it exits.
 * - dist/cli.js, the command (package.json "bin", deploy/ and the image run it): a copy of
 *   scripts/cli-launcher.mjs, which compiles the bundle with that cache.
 *
 * `EXTERNAL` lists the packages Node still loads from node_modules at run time.
 *
 * Usage: node scripts/build-server.mjs [--outdir <directory>]   (default: dist; the bundle goes
 * to <directory>/bundle/, which must be one level below the directory where tsc put the build)
 * Paths are resolved from the repository, whatever the working directory.
 */
import { spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const root = resolve(import.meta.dirname, "..");
const sources = resolve(root, "src");
const { values } = parseArgs({ options: { outdir: { type: "string", default: resolve(root, "dist") } } });
const outdir = resolve(values.outdir, "bundle");

/**
 * Packages left out of the bundle, loaded from node_modules by Node:
 * - native addons, which esbuild cannot bundle: better-sqlite3, @node-rs/argon2, snappy;
 * - packages a configuration may not use, loaded on first use (src/platform/lazy.ts, dynamic
 *   imports): left out, they cost nothing until then, and test/e2e/startup-modules.test.ts sees
 *   whether a start loaded them (it reads Node's module cache, where bundled code never is); keep
 *   this list and that test's in step. Fastify's schema compilers (ajv), which no route uses, and
 *   light-my-request (`inject`), which only tests use, are left out likewise (semver, which the
 *   Cargo registry loads on first use, is bundled all the same: Fastify needs it at start-up);
 * - ws's optional native helpers.
 * pino is bundled: only its transports need files next to its own (`__dirname`, which a bundle in
 * ES module format does not have) to start workers, and Vigie writes its logs to standard output
 * without any transport; loading its 29 files from node_modules cost start-up time.
 */
const EXTERNAL = [
  "better-sqlite3",
  "@node-rs/argon2",
  "snappy",
  "@nats-io/*",
  "pg",
  "protobufjs",
  "hdr-histogram-js",
  "tar-stream",
  "saxes",
  "nodemailer",
  "markdown-it",
  "ajv",
  "@fastify/ajv-compiler",
  "@fastify/fast-json-stringify-compiler",
  "light-my-request",
  "bufferutil",
  "utf-8-validate",
];

/**
 * Code finds its files (migrations, proto/, docs/, the browser assets) relative to its own module
 * (`new URL("../../proto/x.proto", import.meta.url)`), written for the tsc layout, where
 * src/a/b.ts runs as dist/a/b.js. In the bundle, each module's `import.meta.url` becomes the URL
 * that module has in that layout, computed from the bundle file's own URL (`__vigieBundleUrl`, set
 * by the banner from `__filename`): the bundle is in dist/bundle/, one level below dist/.
 */
const importMetaUrl = {
  name: "import-meta-url",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      if (!source.includes("import.meta.url")) return undefined;
      const asBuilt = `../${relative(sources, args.path).replaceAll("\\", "/").replace(/\.ts$/, ".js")}`;
      return {
        contents: source.replaceAll("import.meta.url", `new URL(${JSON.stringify(asBuilt)}, __vigieBundleUrl).href`),
        loader: "ts",
      };
    });
  },
};

const built = await build({
  absWorkingDir: root,
  entryPoints: { cli: "src/cli.ts" },
  outdir,
  outExtension: { ".js": ".cjs" },
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  external: EXTERNAL,
  // The bundle's directive first (the launcher wraps the file in a function whose body it is).
  banner: { js: '"use strict";const __vigieBundleUrl = require("node:url").pathToFileURL(__filename).href;' },
  tsconfig: "tsconfig.build.json",
  // Whitespace and syntax minified, which makes the bundle smaller and faster to compile; names
  // are kept as written (stack traces, error names) by not renaming identifiers at all. esbuild's
  // `keepNames` would do it with a call that sets the name of each function as it is created, at
  // every closure of every request: +8 µs of CPU per GET /healthz (docs/benchmarks.md). The
  // source maps (dist/bundle/*.map, not in the package) give source positions with
  // `node --enable-source-maps`, under which the command lets Node load the bundle.
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: false,
  sourcemap: true,
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
  plugins: [importMetaUrl],
  metafile: true,
});

// The launcher compiles the bundle with `vm.Script`, where `import()` has no module loader unless
// an experimental option gives it one: a package outside the bundle is loaded with `require`
// (src/platform/lazy.ts), and the build refuses an `import()` of one.
const dynamicImports = Object.values(built.metafile.outputs).flatMap((output) =>
  output.imports.filter((entry) => entry.external && entry.kind === "dynamic-import").map((entry) => entry.path),
);
if (dynamicImports.length > 0) {
  throw new Error(
    `the bundle imports ${dynamicImports.join(", ")} with import(): load it with lazyLibrary (src/platform/lazy.ts)`,
  );
}

const command = resolve(values.outdir, "cli.js");
copyFileSync(resolve(root, "scripts/cli-launcher.mjs"), command);
chmodSync(command, 0o755);
await buildCodeCache(command, resolve(outdir, "cli.cjs.cache"));

/** A TCP port free on the loopback address at the time of the call. */
function freePort() {
  return new Promise((done, failed) => {
    const server = createServer();
    server.once("error", failed);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

/**
 * Starts the built server once, until `GET /healthz` answers, then stops it: the launcher writes
 * V8's code cache of the bundle as the process exits (`VIGIE_BUILD_CODE_CACHE=1`). The server runs
 * in a temporary directory, on SQLite, with two http checks of a closed loopback port, and an
 * environment of its own (a `VIGIE_*` variable or `NODE_OPTIONS` of the build would change what
 * it starts, or V8's flags, which a cache must match).
 * @throws Error when the server does not answer within 60 s, or exits without writing the cache
 */
async function buildCodeCache(command, cacheFile) {
  rmSync(cacheFile, { force: true });
  const directory = mkdtempSync(join(tmpdir(), "vigie-code-cache-"));
  try {
    const port = await freePort();
    const config = join(directory, "vigie.yaml");
    const check = (name) =>
      `    - { name: ${name}, target: 127.0.0.1, port: 9, valid-status: [200], interval: 10s, timeout: 1s }`;
    writeFileSync(
      config,
      [
        "http:",
        `  port: ${port}`,
        "log-level: warn",
        "database:",
        `  url: sqlite:${join(directory, "vigie.db")}`,
        "healthchecks:",
        "  http-checks:",
        check("first"),
        check("second"),
        "",
      ].join("\n"),
    );
    const env = { PATH: process.env.PATH ?? "", HOME: directory, VIGIE_BUILD_CODE_CACHE: "1" };
    const child = spawn(process.execPath, [command, "serve", "--config", config], {
      cwd: directory,
      env,
      stdio: ["ignore", "ignore", "inherit"],
    });
    const exited = new Promise((done) => child.once("exit", (code, signal) => done(code ?? signal)));
    const deadline = Date.now() + 60_000;
    let ready = false;
    while (!ready && child.exitCode === null && Date.now() < deadline) {
      ready = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.ok,
        () => false,
      );
      if (!ready) await new Promise((done) => setTimeout(done, 20));
    }
    child.kill("SIGTERM");
    const status = await exited;
    if (!ready) {
      // The process wrote the cache of a failed start as it exited: not one to keep.
      rmSync(cacheFile, { force: true });
      throw new Error(`the code cache's start of ${command} did not answer GET /healthz (exit: ${status})`);
    }
    if (!existsSync(cacheFile)) throw new Error(`the code cache's start of ${command} wrote no ${cacheFile}`);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
