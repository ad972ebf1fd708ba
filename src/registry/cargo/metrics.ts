/**
 * The Cargo registry's metrics (docs/cargo.md): `registry_crates` and `registry_crate_versions`
 * (gauges read from the database at scrape time, so every instance sharing it reports the same),
 * `registry_downloads_total` and `registry_publish_total{outcome}`; and `registry_index_cache_bytes`,
 * the memory this instance gives to rendered index files (bounded by `index-cache-size`).
 */

import type { Counter, Registry } from "prom-client";
import { counter, countersAtZero, gaugeOf } from "../../platform/metrics.js";

/** How a publish ended, the label of `registry_publish_total`. */
export type PublishOutcome = "ok" | "invalid" | "unauthorized" | "forbidden" | "conflict" | "too-large" | "error";

const OUTCOMES: readonly PublishOutcome[] = [
  "ok",
  "invalid",
  "unauthorized",
  "forbidden",
  "conflict",
  "too-large",
  "error",
];

/** The outcome of a publish answered with `status`. */
export function publishOutcome(status: number): PublishOutcome {
  if (status < 300) return "ok";
  if (status === 401) return "unauthorized";
  if (status === 403) return "forbidden";
  if (status === 409) return "conflict";
  if (status === 413) return "too-large";
  return status < 500 ? "invalid" : "error";
}

/** The counters the routes feed. */
export interface CargoMetrics {
  readonly downloads: Counter;
  readonly publish: (outcome: PublishOutcome) => void;
}

/**
 * Registers the Cargo metrics in `registry`.
 * @param counts reads the numbers of crates and versions, at each scrape
 * @param indexCacheBytes reads the bytes of the index cache, at each scrape
 */
export function registerCargoMetrics(
  registry: Registry,
  counts: () => Promise<{ crates: number; versions: number }>,
  indexCacheBytes: () => number,
): CargoMetrics {
  // One read serves both gauges of a scrape.
  let pending: Promise<{ crates: number; versions: number }> | undefined;
  const read = () => {
    pending ??= counts().finally(() => {
      pending = undefined;
    });
    return pending;
  };
  gaugeOf(registry, "registry_crates", "Crates in the Cargo registry.", async () => (await read()).crates);
  gaugeOf(
    registry,
    "registry_crate_versions",
    "Published versions in the Cargo registry, yanked ones included.",
    async () => (await read()).versions,
  );
  gaugeOf(
    registry,
    "registry_index_cache_bytes",
    "Bytes of rendered sparse index files (plain and gzip) this instance keeps in memory.",
    indexCacheBytes,
  );
  const downloads = counter(registry, "registry_downloads_total", "Downloads of .crate files served by this instance.");
  const help = "Publishes by outcome (ok, invalid, unauthorized, forbidden, conflict, too-large, error).";
  const children = countersAtZero(counter(registry, "registry_publish_total", help, ["outcome"]), OUTCOMES);
  return { downloads, publish: (outcome) => children.get(outcome)?.inc() };
}
