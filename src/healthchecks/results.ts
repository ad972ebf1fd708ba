/**
 * The latest result of each healthcheck (docs/healthchecks.md), kept in memory only: results are
 * recomputed after a restart.
 */
import type { DefinitionView } from "./definition.js";
import type { HeartbeatState } from "./heartbeat/tracker.js";

/** A result as the result routes return it. */
export interface HealthcheckResult {
  readonly name: string;
  /** The definition that produced the result, as GET /healthcheck/<name> returns it. */
  readonly configuration: DefinitionView;
  readonly success: boolean;
  /** End of the execution, RFC 3339 with milliseconds and offset. */
  readonly timestamp: string;
  /** `success`, or the failure message. */
  readonly message: string;
  /** Execution time in milliseconds. */
  readonly duration: number;
  /**
   * Present (true) when the result came during a maintenance window of the check
   * (docs/healthchecks.md): it is stored and shown, but left out of uptime.
   */
  readonly maintenance?: true;
  /** Heartbeat checks: the heartbeat's state now (docs/healthchecks.md, "Heartbeat checks"). */
  readonly state?: HeartbeatState;
  /**
   * Never in a kept result: marks a heartbeat's log ping passed to the history (stored with its
   * body, left out of uptime).
   */
  readonly log?: true;
  /** The check's labels, when it has some. */
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * The latest result of one check in a {@link ResultStore}. A check's runs hold it ({@link
 * ResultStore.keep}), so that keeping each result needs no lookup by name.
 */
export interface LatestResult {
  /** Whether the store still holds it (false once the check's result is deleted). */
  readonly kept: boolean;
}

interface Entry extends LatestResult {
  result: HealthcheckResult;
  /** `JSON.stringify(result)`, computed the first time a listing needs it after the result changed. */
  json: string | undefined;
  kept: boolean;
}

/** What {@link ResultStore.listJson} keeps: `?name=` (any of them) and `?success=`. */
export interface ResultFilter {
  readonly names?: readonly string[];
  readonly success?: boolean;
}

/**
 * The latest result of each check, by name. Listings are served as JSON text assembled from each
 * result's own serialisation, kept until the result changes (docs/healthchecks.md): with 10 000
 * checks at 10 s, a listing re-serialises only the results that changed since the previous one.
 */
export class ResultStore {
  readonly #results = new Map<string, Entry>();
  /** The names sorted (code-unit order), until a name comes or goes. */
  #sorted: string[] | undefined;

  /** Keeps `result` as the latest of its check. */
  set(result: HealthcheckResult): void {
    this.#set(result);
  }

  /**
   * Keeps `result` as the latest of its check, in `latest` when it is still that check's entry (no
   * lookup by name: 1 000 times a second with 10 000 checks at 10 s).
   * @param latest what the previous call answered for this check, if any
   * @returns the check's entry, to pass to the next call
   */
  keep(result: HealthcheckResult, latest: LatestResult | undefined): LatestResult {
    // Only the store makes entries: a kept one is one of its own.
    if (latest?.kept === true) {
      const entry = latest as Entry;
      entry.result = result;
      entry.json = undefined;
      return entry;
    }
    return this.#set(result);
  }

  #set(result: HealthcheckResult): Entry {
    // The entry is updated in place: no new object per run (the replaced entry would be long-lived
    // garbage, docs/benchmarks.md).
    const entry = this.#results.get(result.name);
    if (entry !== undefined) {
      entry.result = result;
      entry.json = undefined;
      return entry;
    }
    this.#sorted = undefined;
    const created: Entry = { result, json: undefined, kept: true };
    this.#results.set(result.name, created);
    return created;
  }

  /** The latest result of `name`, or `undefined` when it has none yet. */
  get(name: string): HealthcheckResult | undefined {
    return this.#results.get(name)?.result;
  }

  /** Forgets the result of `name`. */
  delete(name: string): void {
    const entry = this.#results.get(name);
    if (entry === undefined) return;
    entry.kept = false;
    this.#results.delete(name);
    this.#sorted = undefined;
  }

  /** Every result, sorted by name (code-unit order). */
  list(): HealthcheckResult[] {
    return this.#names().flatMap((name) => this.#results.get(name)?.result ?? []);
  }

  /**
   * The results as `GET /result` returns them, JSON text of an array sorted by name: every result,
   * or those `filter` keeps (of one of `filter.names`, with `success` equal to `filter.success`).
   */
  listJson(filter: ResultFilter = {}): string {
    const names = filter.names === undefined ? this.#names() : [...new Set(filter.names)].sort(compareNames);
    const parts: string[] = [];
    for (const name of names) {
      const entry = this.#results.get(name);
      if (entry === undefined) continue;
      if (filter.success !== undefined && entry.result.success !== filter.success) continue;
      if (entry.json === undefined) entry.json = JSON.stringify(entry.result);
      parts.push(entry.json);
    }
    return `[${parts.join(",")}]`;
  }

  #names(): string[] {
    if (this.#sorted === undefined) this.#sorted = [...this.#results.keys()].sort(compareNames);
    return this.#sorted;
  }
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
