/**
 * The catalog's record of one registered check (catalog.ts, {@link Registration}), as a class: a
 * start-up with 10 000 checks in the configuration file creates 10 000 of them, and an object
 * literal with its own `view` accessors was the dearest part of registering a check
 * (docs/benchmarks.md, "Start-up").
 */
import type { AlertEntry } from "./alerts/evaluator.js";
import type { Registration } from "./catalog.js";
import { type Definition, type DefinitionView, type Source, viewOf } from "./definition.js";
import type { CheckSeries } from "./metrics.js";

/** A {@link Registration} whose API view is made on first read and kept until replaced. */
export class CheckRegistration implements Registration {
  readonly definition: Definition;
  source: Source;
  readonly labels: Readonly<Record<string, string>> | undefined;
  readonly series: CheckSeries;
  readonly shard: number;
  /** Set by the alert evaluator (alerts/evaluator.ts, `observe`). */
  alerts: AlertEntry | undefined = undefined;
  #view: DefinitionView | undefined = undefined;

  /**
   * @param labels the labels shown in results and metrics (URL passwords redacted), or undefined
   * @param shard the check's shard in cluster mode, 0 on a single instance
   */
  constructor(
    definition: Definition,
    source: Source,
    labels: Readonly<Record<string, string>> | undefined,
    series: CheckSeries,
    shard: number,
  ) {
    this.definition = definition;
    this.source = source;
    this.labels = labels;
    this.series = series;
    this.shard = shard;
  }

  /** The definition with its secrets redacted, as GET /healthcheck/<name> shows it. */
  get view(): DefinitionView {
    this.#view ??= viewOf(this.definition, this.source);
    return this.#view;
  }

  set view(changed: DefinitionView) {
    this.#view = changed;
  }
}
