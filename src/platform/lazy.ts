/**
 * Values made on first use. Start-up loads only what the configuration uses (docs/benchmarks.md,
 * "Start-up"): a library that serves one route or one input (protobufjs for OTLP and Riemann,
 * snappy for remote write, semver for the Cargo registry …) is loaded when it is first needed.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** `make()`'s value, computed on the first call and kept. */
export function lazily<T>(make: () => T): () => T {
  let made = false;
  let value: T;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value;
  };
}

/**
 * A CommonJS package, loaded synchronously on the first call: the same instance `import` would
 * give (both share Node's module cache).
 * @param name the package, e.g. `"protobufjs"`; `T` is its type (`typeof import("protobufjs")`)
 * @throws Error from Node when the package cannot be loaded
 */
export function lazyLibrary<T>(name: string): () => T {
  return lazily(() => require(name) as T);
}
