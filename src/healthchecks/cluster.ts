/**
 * The healthchecks module in cluster mode (docs/cluster.md): the latest results shared through
 * PostgreSQL, and the comparison of configuration-file checks between instances. Scheduling by
 * shard lives in the catalog (its `ownership` option); this file wires nothing itself.
 */
import { createHash } from "node:crypto";
import type { Catalog } from "./catalog.js";
import type { ConfiguredCheck } from "./config.js";
import { type DefinitionView, toJson } from "./definition.js";
import type { HeartbeatState } from "./heartbeat/tracker.js";
import type { HealthcheckResult, ResultStore } from "./results.js";
import type { HealthcheckStore } from "./storage.js";

/** Milliseconds between two writes of the latest results, and the most a read waits for. */
export const SHARED_RESULTS_PERIOD_MS = 1_000;

/** What the shared results log (a pino logger fits). */
export interface SharedResultsLogger {
  warn(details: object, message: string): void;
}

/**
 * The latest results of every instance's checks: this instance writes those of the checks it runs
 * once a second (one statement per 500 results), and reads the others' when a route asks for
 * results, at most once a second, so an instance nobody asks reads nothing.
 */
export class SharedResults {
  #pending = new Map<string, HealthcheckResult>();
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | undefined;

  constructor(
    readonly storage: HealthcheckStore,
    readonly catalog: Catalog,
    readonly results: ResultStore,
    readonly logger: SharedResultsLogger,
    readonly now: () => number = () => performance.now(),
  ) {}

  /** Starts writing once a second. */
  start(): void {
    this.#timer = setInterval(() => {
      this.#writing = this.#writing.then(() => this.#flush());
    }, SHARED_RESULTS_PERIOD_MS);
    this.#timer.unref();
  }

  /** Keeps a result of a check this instance ran, for the next write. Never waits. */
  record(result: HealthcheckResult): void {
    this.#pending.set(result.name, result);
  }

  /**
   * Brings the results of the checks other instances run up to date, unless that was done less
   * than a second ago (concurrent callers share one read). A failed read is logged: the routes
   * answer with what this instance has.
   */
  refresh(): Promise<void> {
    if (this.#reading !== undefined) return this.#reading;
    if (this.now() - this.#readAt < SHARED_RESULTS_PERIOD_MS) return Promise.resolve();
    this.#readAt = this.now();
    this.#reading = this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  /** Stops the writes, after writing what is pending. */
  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.#writing;
    await this.#flush();
  }

  async #flush(): Promise<void> {
    if (this.#pending.size === 0) return;
    const batch = this.#pending;
    this.#pending = new Map();
    const rows: Array<[string, string]> = [];
    for (const [name, result] of batch) rows.push([name, JSON.stringify(storedOf(result))]);
    try {
      await this.storage.saveLatest(rows, Date.now());
    } catch (error) {
      // Kept for the next write, unless a newer result came meanwhile.
      for (const [name, result] of batch) if (!this.#pending.has(name)) this.#pending.set(name, result);
      this.logger.warn({ err: error, results: rows.length }, "could not write the latest results; retrying");
    }
  }

  async #read(): Promise<void> {
    let rows: Array<{ name: string; result: string }>;
    try {
      rows = await this.storage.listLatest();
    } catch (error) {
      this.logger.warn({ err: error }, "could not read the other instances' latest results");
      return;
    }
    for (const { name, result: text } of rows) {
      const registration = this.catalog.get(name);
      if (registration === undefined || this.catalog.runsHere(name)) continue;
      let stored: StoredResult;
      try {
        stored = JSON.parse(text);
      } catch {
        continue;
      }
      // A result of a previous definition of the check belongs to nobody.
      if (stored.v !== digestOf(registration.view)) continue;
      const local = this.results.get(name);
      // Same time, other state: a heartbeat became late without a new result.
      if (local !== undefined && Date.parse(local.timestamp) > Date.parse(stored.t)) continue;
      if (local !== undefined && local.timestamp === stored.t && local.state === stored.st) continue;
      this.results.set({
        name,
        configuration: registration.view,
        success: stored.s,
        timestamp: stored.t,
        message: stored.m,
        duration: stored.d,
        ...(stored.st === undefined ? {} : { state: stored.st }),
        ...(registration.labels === undefined ? {} : { labels: registration.labels }),
      });
    }
  }
}

/**
 * A latest result as stored: what changes at each run, and a digest of the definition's view
 * (the reader has the definition itself). A tenth of the whole result's size.
 */
interface StoredResult {
  /** {@link digestOf} the result's `configuration`. */
  readonly v: string;
  readonly s: boolean;
  readonly t: string;
  readonly m: string;
  readonly d: number;
  /** A heartbeat's state (docs/healthchecks.md); absent for other kinds. */
  readonly st?: HeartbeatState;
}

const digests = new WeakMap<object, string>();

/** A short SHA-256 of a definition's view, computed once per view object. */
function digestOf(view: DefinitionView): string {
  let digest = digests.get(view);
  if (digest === undefined) {
    digest = createHash("sha256").update(JSON.stringify(view)).digest("base64url").slice(0, 16);
    digests.set(view, digest);
  }
  return digest;
}

function storedOf(result: HealthcheckResult): StoredResult {
  return {
    v: digestOf(result.configuration),
    s: result.success,
    t: result.timestamp,
    m: result.message,
    d: result.duration,
    ...(result.state === undefined ? {} : { st: result.state }),
  };
}

/**
 * What this instance loaded from its configuration file, as JSON text: each check's name and a
 * SHA-256 of its definition (no secret leaves the instance). Compared between members: their files must list the same checks.
 */
export function fingerprintOf(configured: readonly ConfiguredCheck[]): string {
  const entries: Record<string, string> = {};
  for (const { definition } of configured) {
    entries[definition.name] = createHash("sha256")
      .update(JSON.stringify(toJson(definition)))
      .digest("base64url")
      .slice(0, 16);
  }
  return JSON.stringify(entries);
}

/**
 * The names of the checks whose definitions differ between two fingerprints (present in one
 * only, or different), sorted.
 */
export function differingChecks(mine: string, theirs: string): string[] {
  let a: Record<string, string>;
  let b: Record<string, string>;
  try {
    a = JSON.parse(mine);
    b = JSON.parse(theirs);
  } catch {
    return [];
  }
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...names].filter((name) => a[name] !== b[name]).sort();
}
