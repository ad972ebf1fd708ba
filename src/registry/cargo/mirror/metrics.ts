/**
 * The mirror's metrics (docs/cargo.md): `registry_mirror_stale_total`, index files served from the
 * cache because the upstream could not revalidate them, and `registry_mirror_upstream_requests_total{kind}`,
 * the requests made to the upstream (`index`, `config`, `crate`), which shows what the cache saves.
 */
import type { Counter, Registry } from "prom-client";
import { counter, countersAtZero } from "../../../platform/metrics.js";

/** What an upstream request fetched, the label of `registry_mirror_upstream_requests_total`. */
export type UpstreamKind = "index" | "config" | "crate";

const KINDS: readonly UpstreamKind[] = ["index", "config", "crate"];

/** The mirror's counters. */
export interface MirrorMetrics {
  readonly stale: Counter;
  readonly upstreamRequest: (kind: UpstreamKind) => void;
}

/** Registers the mirror's metrics in `registry`. */
export function registerMirrorMetrics(registry: Registry): MirrorMetrics {
  const stale = counter(
    registry,
    "registry_mirror_stale_total",
    "Index files the Cargo mirror served stale, its upstream being unreachable or failing.",
  );
  const help = "Requests the Cargo mirror made to its upstream, by kind (index, config, crate).";
  const children = countersAtZero(counter(registry, "registry_mirror_upstream_requests_total", help, ["kind"]), KINDS);
  return { stale, upstreamRequest: (kind) => children.get(kind)?.inc() };
}
