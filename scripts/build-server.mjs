/**
 * Bundles the server's code with esbuild so that `vigie serve` starts fast (docs/benchmarks.md,
 * "Start-up"): Node loads a few files instead of about 300 ES modules of dist/. Run by
 * `npm run build` after tsc, whose output stays in dist/ (the benchmarks import some of its
 * modules); the command itself runs the bundle:
 *
 * - dist/bundle/cli.js, the bundle of src/cli.ts, ES module for Node 20, split into chunks
 *   (dist/bundle/chunk-*.js) at the source's dynamic imports;
 * - dist/cli.js, the command (package.json "bin", deploy/ and the image run it): it imports the
 *   bundle, so that every file of the bundle is in one directory (see `importMetaUrl` below).
 *
 * The packages every server loads are bundled too (Fastify, kysely …: resolving and compiling
 * hundreds of CommonJS files was most of the start-up time left). undici is bundled in a chunk of
 * its own, imported when the first request leaves (src/platform/undici.ts). `EXTERNAL` lists those
 * Node still loads from node_modules at run time.
 *
 * Usage: node scripts/build-server.mjs [--outdir <directory>]   (default: dist; the bundle goes
 * to <directory>/bundle/, which must be one level below the directory where tsc put the build)
 * Paths are resolved from the repository, whatever the working directory.
 */
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";
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
 * that module has in that layout, computed from the bundle file's own URL: every bundle file is
 * in dist/bundle/, one level below dist/.
 */
const importMetaUrl = {
  name: "import-meta-url",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      if (!source.includes("import.meta.url")) return undefined;
      const asBuilt = `../${relative(sources, args.path).replaceAll("\\", "/").replace(/\.ts$/, ".js")}`;
      return {
        contents: source.replaceAll("import.meta.url", `new URL(${JSON.stringify(asBuilt)}, import.meta.url).href`),
        loader: "ts",
      };
    });
  },
};

await build({
  absWorkingDir: root,
  entryPoints: { cli: "src/cli.ts" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: EXTERNAL,
  // CommonJS packages in the bundle call `require` for Node's modules and the external packages;
  // an ES module has none, so each bundle file makes its own.
  banner: {
    js: 'import { createRequire as __vigieCreateRequire } from "node:module";\nconst require = __vigieCreateRequire(import.meta.url);',
  },
  tsconfig: "tsconfig.build.json",
  // Whitespace and syntax minified, which makes the bundle smaller and faster to compile; names
  // are kept as written (stack traces, error names) by not renaming identifiers at all. esbuild's
  // `keepNames` would do it with a call that sets the name of each function as it is created, at
  // every closure of every request: +8 µs of CPU per GET /healthz (docs/benchmarks.md). The
  // source maps (dist/bundle/*.map, not in the package) give source positions with
  // `node --enable-source-maps`.
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: false,
  sourcemap: true,
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
  plugins: [importMetaUrl],
});

const command = resolve(values.outdir, "cli.js");
writeFileSync(
  command,
  [
    "#!/usr/bin/env node",
    "// The vigie command: the bundle of src/cli.ts (scripts/build-server.mjs).",
    'import "./bundle/cli.js";',
    "",
  ].join("\n"),
);
chmodSync(command, 0o755);
