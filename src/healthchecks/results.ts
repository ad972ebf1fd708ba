/**
 * The latest result of each healthcheck (healthchecks.md §3), kept in memory only: results are
 * recomputed after a restart.
 */
import type { DefinitionView } from "./definition.js";

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
  /** The check's labels, when it has some. */
  readonly labels?: Readonly<Record<string, string>>;
}

/** The latest result of each check, by name. */
export class ResultStore {
  readonly #results = new Map<string, HealthcheckResult>();

  /** Keeps `result` as the latest of its check. */
  set(result: HealthcheckResult): void {
    this.#results.set(result.name, result);
  }

  /** The latest result of `name`, or `undefined` when it has none yet. */
  get(name: string): HealthcheckResult | undefined {
    return this.#results.get(name);
  }

  /** Forgets the result of `name`. */
  delete(name: string): void {
    this.#results.delete(name);
  }

  /** Every result, sorted by name (code-unit order). */
  list(): HealthcheckResult[] {
    return [...this.#results.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}
