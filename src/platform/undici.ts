/**
 * undici, imported on first use. It is the largest library of the server bundle (about a quarter
 * of its code, and loading it initialises Node's own fetch), and only http checks, HTTP outputs,
 * the Cargo mirror and `vigie run` send requests with it: a configuration without them never
 * loads it, and one with them loads it when the first request leaves, after the server answers
 * (docs/benchmarks.md, "Start-up"). In the server bundle, the dynamic import becomes a call that
 * evaluates undici's bundled modules then (scripts/build-server.mjs).
 */
/** The undici package: its `module.exports` (`Agent`, `interceptors`, `request` …). */
export type Undici = typeof import("undici")["default"];

let loaded: Undici | undefined;
let loading: Promise<Undici> | undefined;

/**
 * undici once a {@link loadUndici} promise resolved, else undefined: callers on a hot path use it
 * to skip the await after the first request.
 */
export function loadedUndici(): Undici | undefined {
  return loaded;
}

/**
 * undici, imported on the first call; every call gives the same promise.
 * @throws (rejects with) the import's error when undici cannot be loaded
 */
export function loadUndici(): Promise<Undici> {
  // The default export: a CommonJS package's `module.exports`, whether Node imports it (tsc's
  // dist/) or the bundle does (esbuild wraps it the same way).
  loading ??= import("undici").then(({ default: undici }) => {
    loaded = undici;
    return undici;
  });
  return loading;
}
