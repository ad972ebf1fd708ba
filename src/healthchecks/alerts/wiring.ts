/**
 * The alerts as the healthchecks module wires them (index.ts, docs/alerts.md): the evaluator fed
 * by the catalog's results, its store, the checks of references for the API and the configuration
 * file, the cluster hand-over and the routes.
 */
import type { FastifyInstance } from "fastify";
import type { Cluster } from "../../platform/cluster/index.js";
import { ConfigError, configErrorMessage } from "../../platform/config.js";
import type { ModuleContext } from "../../platform/module.js";
import type { Catalog } from "../catalog.js";
import { type ConfiguredCheck, configuredChecks, type HealthchecksSection } from "../config.js";
import type { Definition } from "../definition.js";
import { registerAlertRoutes } from "../routes-alerts.js";
import { AlertEvaluator } from "./evaluator.js";
import type { AlertPolicy } from "./policy.js";
import { checksAfter, configurationReferenceError, type ReferenceProblem, referenceProblem } from "./references.js";
import { AlertStore } from "./store.js";

/** What {@link ModuleAlerts} reads of the module's section. */
export interface AlertSettings {
  readonly "default-alerts": readonly AlertPolicy[];
  readonly "status-page": { readonly enabled: boolean };
  /** Several pages: notifications link the one at `/status` (slug `""`) when there is one. */
  readonly "status-pages"?: readonly { readonly slug: string }[];
}

/** Options of {@link ModuleAlerts}. */
export interface ModuleAlertsOptions {
  readonly context: ModuleContext;
  readonly section: AlertSettings;
  /** The module's catalog (built after the alerts, which its results feed). */
  readonly catalog: () => Catalog;
  /** `healthchecks.history.retention`, milliseconds. */
  readonly retentionMs: number;
  /**
   * Whether `check` is in a maintenance window at `atMs` (milliseconds since the epoch); default
   * never.
   */
  readonly inMaintenance?: (check: string, atMs: number) => boolean;
}

/** The alerts of the healthchecks module. */
export class ModuleAlerts {
  readonly evaluator: AlertEvaluator;
  readonly store: AlertStore;
  readonly #options: ModuleAlertsOptions;

  constructor(options: ModuleAlertsOptions) {
    this.#options = options;
    const { context, section, catalog } = options;
    this.store = new AlertStore(context.database, { logger: context.logger });
    const publicUrl = context.config.http["public-url"].replace(/\/$/, "");
    this.evaluator = new AlertEvaluator({
      notifier: context.notifier,
      store: this.store,
      defaultAlerts: section["default-alerts"],
      definitionOf: (name) => catalog().get(name)?.definition,
      ...(options.inMaintenance === undefined ? {} : { inMaintenance: options.inMaintenance }),
      url:
        publicUrl +
        (section["status-page"].enabled || section["status-pages"]?.some((page) => page.slug === "") ? "/status" : ""),
      logger: context.logger,
      historyRetentionMs: options.retentionMs,
      ...(context.cluster === undefined ? {} : { runsHere: (name: string) => catalog().runsHere(name) }),
    });
  }

  /** Whether an output of that name is declared. */
  readonly hasOutput = (output: string): boolean => this.#options.context.notifier.has(output);

  /**
   * The alerts, their stored states read (before the first result), and in cluster mode listening
   * to the shards this instance takes over.
   */
  static async create(options: ModuleAlertsOptions): Promise<ModuleAlerts> {
    const alerts = new ModuleAlerts(options);
    await alerts.evaluator.load();
    if (options.context.cluster !== undefined) alerts.#listen(options.context.cluster);
    return alerts;
  }

  /** Cluster mode: a check taken over continues from the alert states its previous owner stored. */
  #listen(cluster: Cluster): void {
    cluster.shards.listen({
      gained: (shards) =>
        this.evaluator.reload(
          this.#options
            .catalog()
            .list()
            .filter((check) => shards.includes(check.shard))
            .map((check) => check.definition.name),
        ),
      lost: () => {},
    });
  }

  /**
   * Checks the references of the configuration file against the registered checks, then starts
   * the evaluator's timers.
   * @param onInvalid called before it throws (the module stops its checks)
   * @throws ConfigError `invalid configuration: healthchecks.http-checks[0].alerts[0].output: must
   *   name a declared output (pager is not one)`
   */
  start(configured: readonly ConfiguredCheck[], onInvalid: () => void): void {
    const error = this.#configurationError(configured, this.#options.section["default-alerts"]);
    if (error !== undefined) {
      onInvalid();
      throw new ConfigError(error);
    }
    this.evaluator.start();
  }

  /**
   * A SIGHUP: checks the references of the re-read checks, lets `applyChecks` apply them, then
   * takes the new `default-alerts`.
   * @throws Error `invalid configuration: …` naming the key (nothing changes then), or what
   *   `applyChecks` throws
   */
  async reload(
    section: HealthchecksSection,
    applyChecks: (configured: readonly ConfiguredCheck[]) => Promise<unknown>,
  ): Promise<void> {
    const configured = configuredChecks(section);
    const defaults = section["default-alerts"];
    const error = this.#configurationError(configured, defaults);
    if (error !== undefined) throw new Error(error);
    await applyChecks(configured);
    this.evaluator.setDefaults(defaults);
  }

  /** The first broken reference of checks posted through the API (routes.ts `references`). */
  readonly references = (changed: readonly Definition[], replacing: boolean): ReferenceProblem | undefined =>
    referenceProblem(changed, checksAfter(this.#options.catalog().list(), changed, replacing), this.hasOutput);

  /** Registers `GET /alerts` and `GET /alerts/history` (behind the API's guard). */
  routes(api: FastifyInstance): void {
    registerAlertRoutes(api, { evaluator: this.evaluator, store: this.store });
  }

  close(): Promise<void> {
    return this.evaluator.close();
  }

  #configurationError(configured: readonly ConfiguredCheck[], defaults: readonly AlertPolicy[]): string | undefined {
    const error = configurationReferenceError(configured, defaults, this.#options.catalog().list(), this.hasOutput);
    return error === undefined ? undefined : configErrorMessage(error);
  }
}
