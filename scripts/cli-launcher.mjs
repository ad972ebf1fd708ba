#!/usr/bin/env node
// The vigie command (package.json "bin"; deploy/ and the image run it): the build copies this file
// to dist/cli.js (scripts/build-server.mjs). It runs the bundle of src/cli.ts, a CommonJS module,
// with V8's code cache of it: compiling the 3 MB bundle and the functions a start calls was about
// a sixth of a start's CPU (docs/benchmarks.md, "V8's code cache").
//
// Node 20 has no code cache for the modules it loads (`module.enableCompileCache` is Node 22.1 and
// later), so this file wraps the bundle as Node wraps a CommonJS module, compiles it with
// `vm.Script` and calls it. A cache file is the SHA-256 of the bundle's bytes followed by V8's
// cache: V8 checks that a cache fits its own version and flags, not that it was made from the same
// source, so a cache whose digest differs is not used. The cache is read from the user's cache
// directory (`$CACHE_DIRECTORY`, systemd's CacheDirectory=, else `$XDG_CACHE_HOME/vigie`, else
// `~/.cache/vigie`) when it holds one for these bytes, else from dist/bundle/cli.cjs.cache (the
// build's, in a clone or the container image). When there is none, or V8 refuses it (the npm
// package has none; another Node.js version, or V8 flags such as `--max-old-space-size`, made it
// unfit), a process still running 5 s after its start writes one to the user's directory, which
// the next start reads first; a user's cache V8 refuses is removed where the build has one.
// `VIGIE_CODE_CACHE=off` turns the user's cache off. With source maps on (`node
// --enable-source-maps`), Node loads the bundle itself, without a cache, so that stack traces
// give source positions.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

const bundle = join(dirname(fileURLToPath(import.meta.url)), "bundle", "cli.cjs");
const require = createRequire(bundle);
/** How long after its start a process without a fitting cache writes one (ms). */
const WRITE_AFTER_MS = 5_000;

/** The user's cache file, or undefined when there is no cache directory (or it is turned off). */
function userCacheFile() {
  const { env } = process;
  if (env.VIGIE_CODE_CACHE === "off") return undefined;
  const systemd = env.CACHE_DIRECTORY?.split(":")[0];
  const xdg =
    env.XDG_CACHE_HOME !== undefined && isAbsolute(env.XDG_CACHE_HOME) ? join(env.XDG_CACHE_HOME, "vigie") : undefined;
  const home = env.HOME !== undefined && isAbsolute(env.HOME) ? join(env.HOME, ".cache", "vigie") : undefined;
  const directory = systemd || xdg || home;
  return directory === undefined ? undefined : join(directory, "cli.cjs.cache");
}

/** V8's cache in `file` when its digest is `digest`, else undefined. */
function cacheOf(file, digest) {
  try {
    const cache = readFileSync(file);
    if (cache.length > digest.length && cache.subarray(0, digest.length).equals(digest)) {
      return cache.subarray(digest.length);
    }
  } catch {
    // No such file, or unreadable: no cache.
  }
  return undefined;
}

/** Writes `script`'s cache to `file` (its directory made 0700, the file 0600), whole or not at all. */
function writeCache(file, digest, script) {
  const partial = `${file}.${process.pid}`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(partial, Buffer.concat([digest, script.createCachedData()]), { mode: 0o600 });
    renameSync(partial, file);
  } catch {
    // A read-only or missing home: the next start compiles without a cache, as this one did.
    rmSync(partial, { force: true });
  }
}

if (process.sourceMapsEnabled) {
  require(bundle);
} else {
  const bytes = readFileSync(bundle);
  const digest = createHash("sha256").update(bytes).digest();
  const built = `${bundle}.cache`;
  const user = userCacheFile();
  // The user's first: it exists only where the build's was missing or unfit.
  const fromUser = user === undefined ? undefined : cacheOf(user, digest);
  const fromBuild = cacheOf(built, digest);
  // On one line: positions in the bundle stay those of the file. The bundle has no `import()` of
  // a file outside it (scripts/build-server.mjs checks), so the script needs no module loader.
  const source = `(function (exports, require, module, __filename, __dirname) {${bytes.toString("utf8")}\n})`;
  const script = new Script(source, { filename: bundle, cachedData: fromUser ?? fromBuild });
  const fits = (fromUser ?? fromBuild) !== undefined && !script.cachedDataRejected;
  // A user's cache V8 refuses was made under other V8 flags (a benchmark's profiler, say) or
  // another Node.js. Where the build's cache is there for these bytes, the user's goes, so that
  // the next start takes the build's (V8 would not read a second cache of the same source in this
  // process); else it is written again below.
  const dropUser = !fits && fromUser !== undefined && fromBuild !== undefined;
  if (dropUser && user !== undefined) rmSync(user, { force: true });
  if (process.env.VIGIE_BUILD_CODE_CACHE === "1") {
    // The build's one start (scripts/build-server.mjs): the cache then holds the functions that
    // start called, compiled.
    process.once("exit", () => writeFileSync(built, Buffer.concat([digest, script.createCachedData()])));
  } else if (user !== undefined && !fits && !dropUser) {
    // After the start, so that the cache holds the functions it called; a short command has exited.
    setTimeout(() => writeCache(user, digest, script), WRITE_AFTER_MS).unref();
  }
  const module = { exports: {} };
  script.runInThisContext()(module.exports, require, module, bundle, dirname(bundle));
}
