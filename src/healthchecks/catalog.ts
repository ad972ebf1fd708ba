/**
 * The registered healthchecks of one server and every change to them (docs/healthchecks.md): API
 * upserts and deletions (stored first, then applied), bulk replacement, configuration-file reloads
 * and the restore at start-up. Each registered check is scheduled; its executions feed the latest
 * results and the metrics.
 *
 * What it shows is redacted (docs/security.md): the view of each check (definition.ts, `viewOf`), the
 * labels and messages of results, the labels of metric series. What it logs names checks and
 * rules, never a definition or a value.
 */
import { setMaxListeners } from "node:events";
import { isDeepStrictEqual } from "node:util";
import { errorMessage } from "../platform/errors.js";
import { ValidationError } from "../platform/validation.js";
import { checkApiDefinitionFiles } from "./admission.js";
import type { AlertEntry } from "./alerts/evaluator.js";
import type { ConfiguredCheck } from "./config.js";
import {
  type Definition,
  type DefinitionRules,
  type DefinitionView,
  isKind,
  type Source,
  toJson,
  validateDefinition,
  viewOf,
} from "./definition.js";
import type { ExecuteOptions, Execution, Executor } from "./execute.js";
import type { HeartbeatState } from "./heartbeat/tracker.js";
import type { CheckSeries, HealthcheckMetrics } from "./metrics.js";
import { redactLabels, redactMessage, type SecretSource } from "./redaction.js";
import { CheckRegistration } from "./registration.js";
import type { HealthcheckResult, LatestResult, ResultStore } from "./results.js";
import type { Scheduler } from "./scheduler.js";
import type { HealthcheckStore } from "./storage.js";

/** A registered, scheduled check. */
export interface Registration {
  readonly definition: Definition;
  /** Changes when an identical definition comes from the other source (the schedule stays). */
  source: Source;
  /**
   * What GET /healthcheck/<name> returns: the definition with its secrets redacted. Made on first
   * read: a start-up with 10 000 checks in the configuration file shows none of them yet.
   */
  view: DefinitionView;
  /** The labels shown in results and metrics: the definition's, URL passwords redacted. */
  readonly labels?: Readonly<Record<string, string>>;
  readonly series: CheckSeries;
  /** The check's shard in cluster mode (docs/cluster.md); 0 on a single instance. */
  readonly shard: number;
  /**
   * The check's alert state, kept here by the alert evaluator at its first result so that results
   * reach it without a lookup by name; a new registration (the check redefined) starts without.
   */
  alerts?: AlertEntry | undefined;
}

/**
 * Which instance runs a check, in cluster mode (docs/cluster.md): the owner of its shard's lease.
 */
export interface ShardOwnership {
  /** The shard of a check name. */
  shardOf(name: string): number;
  /** Whether this instance holds the lease of `shard` now (confirmed before each run). */
  owns(shard: number): boolean;
}

/**
 * Where heartbeat checks go instead of the scheduler (heartbeat/wiring.ts): their job pings, and
 * the instance that owns a heartbeat's shard judges its deadlines.
 */
export interface HeartbeatHost {
  /** A heartbeat registered, replaced, or whose shard moved; `runsHere`: this instance judges it. */
  placed(registration: Registration, runsHere: boolean): void;
  /** A heartbeat no longer registered (deleted, replaced by another kind, or removed from the file). */
  removed(registration: Registration): void;
  /** A log ping, as a result marked `log` (the history keeps it). Must not throw nor await. */
  logged(result: HealthcheckResult, timeMs: number): void;
}

/** What a heartbeat's result carries beyond an execution (its state now). */
export interface HeartbeatExtras {
  readonly state: HeartbeatState;
  /** A log ping: history only, the latest result unchanged. */
  readonly log?: boolean;
  /** A start ping: a result, but one that alerts do not judge (docs/alerts.md). */
  readonly start?: boolean;
}

/** What the catalog logs (a pino logger fits). */
export interface CatalogLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

/** What the catalog works with. */
export interface CatalogOptions {
  readonly storage: HealthcheckStore;
  readonly scheduler: Scheduler;
  readonly results: ResultStore;
  readonly metrics: HealthcheckMetrics;
  readonly executor: Executor;
  readonly logger: CatalogLogger;
  /** The rules of the running configuration (min-interval, tls-directory). */
  readonly rules: DefinitionRules;
  /**
   * Called with each periodic result once it is the latest (not for one-off runs): history,
   * stream events (docs/healthchecks.md), with the result's time in milliseconds since the epoch, and
   * whether alerts judge it (all but a heartbeat's start ping). Must not throw nor await: it runs on
   * the scheduler's path.
   */
  readonly onResult?: (registration: Registration, result: HealthcheckResult, timeMs: number, judged: boolean) => void;
  /**
   * Whether a result of check `name` ending at `timeMs` (milliseconds since the epoch) comes during
   * one of its maintenance windows: such a result carries `maintenance: true`. Runs on the
   * scheduler's path: must not throw nor await.
   */
  readonly inMaintenance?: (name: string, timeMs: number) => boolean;
  /** Where heartbeat checks go; without it they are registered and never judged. */
  readonly heartbeats?: HeartbeatHost;
  /** Cluster mode: only the checks of the shards this instance owns are scheduled. */
  readonly ownership?: ShardOwnership;
  /**
   * Called after API checks were stored or deleted here (`undefined`: any of them may have), so
   * that the other instances re-read them (docs/cluster.md).
   */
  readonly onStored?: (names: readonly string[] | undefined) => void;
}

/** How a configuration reload changed the configuration-file checks. */
export interface ReloadSummary {
  readonly added: string[];
  readonly changed: string[];
  readonly removed: string[];
  /** Names the file lists that an API check of the same name keeps. */
  readonly shadowed: string[];
}

type Change = "added" | "changed" | "unchanged";

/** What of a check holds secrets scrubbed from its messages: an http check's headers, query, path and body. */
function secretSourceOf(definition: Definition): SecretSource | undefined {
  return definition.kind === "http" ? definition : undefined;
}

/** The latest result of a heartbeat replaced by a heartbeat (read before it is deleted), else undefined. */
function heartbeatResultKept(
  existing: Registration | undefined,
  definition: Definition,
  results: ResultStore,
): HealthcheckResult | undefined {
  if (existing?.definition.kind !== "heartbeat" || definition.kind !== "heartbeat") return undefined;
  return results.get(definition.name);
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** What the scheduler passes a run to call when it ends (scheduler.ts, `Task`). */
type Done = (error?: unknown) => void;

/**
 * A registered check as its runs see it, made once when it is registered: the scheduler's task
 * holds it, so a run looks nothing up by name (1 000 runs a second with 10 000 checks at 10 s).
 */
class CheckRun {
  /** False once the check is deleted or replaced: a run that ends afterwards records nothing. */
  registered = true;
  /** The check's entry in the result store, once it has a result. */
  latest: LatestResult | undefined;
  /** Runs the check, as the scheduler starts it (made once, not per run). */
  readonly task: (done: Done) => undefined;

  constructor(
    readonly registration: Registration,
    run: (check: CheckRun, done: Done) => void,
  ) {
    this.task = (done) => void run(this, done);
  }

  /** The check was deleted or replaced. */
  retire(): void {
    this.registered = false;
  }
}

/** The healthchecks of one server. */
export class Catalog {
  readonly #checks = new Map<string, Registration>();
  /** What the runs of each registered check hold, by name; changes only with the registrations. */
  readonly #runs = new Map<string, CheckRun>();
  /** The checks the configuration file lists (as last loaded), shadowed ones included, by name. */
  #configured = new Map<string, Definition>();
  readonly #stopController = new AbortController();
  #tail: Promise<unknown> = Promise.resolve();
  readonly #options: CatalogOptions;
  /** How each periodic run executes, by source: the same two objects for every run. */
  readonly #runOptions: { readonly [S in Source]: ExecuteOptions };

  constructor(options: CatalogOptions) {
    this.#options = options;
    const stop = this.#stopController.signal;
    this.#runOptions = { api: { source: "api", stop }, configuration: { source: "configuration", stop } };
    // Every execution in flight listens to the stop signal (up to max-concurrency of them, plus
    // one-off runs): not a leak, so Node's warning past 10 listeners does not apply.
    setMaxListeners(0, this.#stopController.signal);
  }

  /** Every registered check, sorted by name. */
  list(): Registration[] {
    return [...this.#checks.values()].sort((a, b) => byName(a.definition, b.definition));
  }

  /** The check `name`, or `undefined`. */
  get(name: string): Registration | undefined {
    return this.#checks.get(name);
  }

  /** Whether `name` is registered and runs on this instance (always, outside cluster mode). */
  runsHere(name: string): boolean {
    const registration = this.#checks.get(name);
    return registration !== undefined && this.#owns(registration);
  }

  /** Number of registered checks. */
  get size(): number {
    return this.#checks.size;
  }

  /**
   * Registers the checks at start-up: the API checks stored in the database, and the
   * configuration-file checks. An API check wins over a configuration check of the same name (it
   * was created through the API after the file listed it, or replaced it). A stored check that the
   * current rules refuse (min-interval raised since; a TLS file name while tls-directory is no
   * longer configured, or that no longer leads to a regular file of at most 1 MiB in it,
   * docs/security.md) is logged and left in the database, unscheduled.
   */
  start(configured: readonly ConfiguredCheck[]): Promise<void> {
    return this.#serialize(async () => {
      const api = await this.#restore();
      const apiNames = new Set(api.map((definition) => definition.name));
      this.#configured = new Map(configured.map(({ definition }) => [definition.name, definition]));
      for (const { definition } of configured) {
        if (apiNames.has(definition.name)) {
          this.#options.logger.warn(
            { healthcheck: definition.name },
            `configuration healthcheck ${definition.name} is replaced by the API healthcheck of the same name`,
          );
          continue;
        }
        this.#apply(definition, "configuration");
      }
      for (const definition of api) this.#apply(definition, "api");
      this.#options.logger.info(
        { api: api.length, configuration: this.size - api.length },
        `${this.size} healthchecks scheduled`,
      );
    });
  }

  /**
   * Re-reads stored API checks that another instance changed (docs/cluster.md): each stored one
   * applied, each one no longer stored dropped (the configuration-file check it replaced, if any,
   * scheduled again).
   * @param names the changed checks; `undefined` for all of them
   */
  sync(names: readonly string[] | undefined): Promise<void> {
    return this.#serialize(async () => {
      const stored = await this.#restore(names);
      const present = new Set(stored.map((definition) => definition.name));
      const candidates = names ?? [...this.#checks.keys()];
      for (const name of candidates) {
        const registration = this.#checks.get(name);
        if (registration?.source !== "api" || present.has(name)) continue;
        this.#drop(registration);
        const configured = this.#configured.get(name);
        if (configured !== undefined) this.#apply(configured, "configuration");
      }
      for (const definition of stored) this.#apply(definition, "api");
    });
  }

  /**
   * Schedules the checks this instance owns and unschedules the others, after its shard leases
   * changed (docs/cluster.md). A check that moves here first runs at its next slot.
   */
  rebalance(): void {
    const scheduler = this.#options.scheduler;
    for (const registration of this.#checks.values()) {
      const name = registration.definition.name;
      const owned = this.#owns(registration);
      if (registration.definition.kind === "heartbeat") this.#options.heartbeats?.placed(registration, owned);
      else if (owned && !scheduler.has(name)) this.#schedule(registration);
      else if (!owned && scheduler.has(name)) scheduler.remove(name);
    }
  }

  /**
   * The stored API checks (those of `names`, or all) that the current rules accept. A stored check
   * that they refuse (min-interval raised since; a TLS file name while tls-directory is no longer
   * configured, or that no longer leads to a regular file of at most 1 MiB in it, docs/security.md)
   * is logged and left in the database, unscheduled.
   */
  async #restore(names?: readonly string[]): Promise<Definition[]> {
    const api: Definition[] = [];
    for (const stored of await this.#options.storage.list(names)) {
      try {
        const { kind } = stored;
        if (!isKind(kind)) throw new Error(`unknown kind ${kind}`);
        const definition = validateDefinition(kind, stored.definition, this.#options.rules, {
          unknownKeys: "ignore",
          tlsFiles: "names",
        });
        await checkApiDefinitionFiles(definition, this.#options.rules);
        api.push(definition);
      } catch (error) {
        // The reason names the field and the rule; not the error itself, whose quoted value a
        // logger would print (docs/security.md: no secrets in logs).
        this.#options.logger.error(
          { healthcheck: stored.name },
          `stored healthcheck ${stored.name} is invalid and was not restored: ${errorMessage(error)}`,
        );
      }
    }
    return api;
  }

  /**
   * Adds or replaces a check through the API (whatever the kind or source of the check it
   * replaces): stored first, then scheduled. An identical definition changes nothing in the
   * schedule.
   *
   * @throws Error when the database write fails (nothing changes then)
   */
  upsert(definition: Definition): Promise<void> {
    return this.#serialize(async () => {
      await this.#options.storage.save(definition);
      this.#apply(definition, "api");
      this.#options.onStored?.([definition.name]);
    });
  }

  /**
   * Deletes a check of either source, its result and its metric series. A configuration-file check
   * comes back at the next reload or restart, since the file still lists it.
   *
   * @returns false when no check has that name
   */
  delete(name: string): Promise<boolean> {
    return this.#serialize(async () => {
      const registration = this.#checks.get(name);
      if (registration === undefined) return false;
      if (registration.source === "api") await this.#options.storage.delete(name);
      this.#drop(registration);
      this.#options.onStored?.([name]);
      return true;
    });
  }

  /**
   * Makes the API checks exactly `definitions` (docs/healthchecks.md): one database transaction, then
   * each definition added or replaced (identical ones untouched) and every other API check removed.
   * Configuration-file checks are never removed; one named in the payload becomes an API check, and
   * one that a removed API check replaced is scheduled again from the file.
   *
   * @param definitions validated, with unique names
   * @throws Error when the transaction fails (nothing changes then)
   */
  replaceApiChecks(definitions: readonly Definition[]): Promise<void> {
    return this.#serialize(async () => {
      await this.#options.storage.replaceAll(definitions);
      const wanted = new Set(definitions.map((definition) => definition.name));
      for (const registration of [...this.#checks.values()]) {
        if (registration.source === "api" && !wanted.has(registration.definition.name)) {
          this.#drop(registration);
          const configured = this.#configured.get(registration.definition.name);
          if (configured !== undefined) this.#apply(configured, "configuration");
        }
      }
      for (const definition of definitions) this.#apply(definition, "api");
      this.#options.onStored?.(undefined);
    });
  }

  /**
   * Applies the configuration-file checks of a reloaded configuration (docs/healthchecks.md): added,
   * changed and removed ones are applied, identical ones keep their schedule, API checks are
   * untouched. The definitions are validated again against the running rules (min-interval is not
   * reloadable); on any error nothing changes.
   *
   * @throws Error `invalid configuration: healthchecks.http-checks[0].interval: must be at least 1s`
   */
  reload(configured: readonly ConfiguredCheck[]): Promise<ReloadSummary> {
    return this.#serialize(async () => {
      for (const { definition, path } of configured) {
        try {
          // Unknown keys were refused when the file was parsed; `kind` is part of the JSON form.
          validateDefinition(
            definition.kind,
            toJson(definition),
            this.#options.rules,
            { unknownKeys: "ignore", tlsFiles: "paths" },
            path,
          );
        } catch (error) {
          if (error instanceof ValidationError) throw new Error(`invalid configuration: ${error.message}`);
          throw error;
        }
      }
      this.#configured = new Map(configured.map(({ definition }) => [definition.name, definition]));
      const summary: ReloadSummary = { added: [], changed: [], removed: [], shadowed: [] };
      const wanted = new Set(configured.map(({ definition }) => definition.name));
      for (const registration of [...this.#checks.values()]) {
        if (registration.source === "configuration" && !wanted.has(registration.definition.name)) {
          this.#drop(registration);
          summary.removed.push(registration.definition.name);
        }
      }
      for (const { definition } of configured) {
        if (this.#checks.get(definition.name)?.source === "api") {
          summary.shadowed.push(definition.name);
          continue;
        }
        const change = this.#apply(definition, "configuration");
        if (change !== "unchanged") summary[change].push(definition.name);
      }
      this.#options.logger.info(summary, "configuration healthchecks reloaded");
      return summary;
    });
  }

  /**
   * Runs a one-off check at once (docs/healthchecks.md): nothing is stored, scheduled or kept. It
   * comes from the API (its TLS files are names under tls-directory); its message is redacted like
   * those of results.
   */
  async runOnce(definition: Definition): Promise<Execution> {
    const execution = await this.#options.executor.execute(definition, {
      source: "api",
      stop: this.#stopController.signal,
    });
    return { ...execution, message: redactMessage(execution.message, secretSourceOf(definition)) };
  }

  /** Stops every schedule and abandons executions in flight (the module is closing). */
  stop(): void {
    this.#options.scheduler.stop();
    this.#stopController.abort(new Error("the healthchecks module is stopping"));
  }

  /** Runs changes one after the other, so the database and the memory apply them in the same order. */
  #serialize<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(work, work);
    this.#tail = run.catch(() => {});
    return run;
  }

  #apply(definition: Definition, source: Source): Change {
    if (this.#stopController.signal.aborted) return "unchanged";
    const existing = this.#checks.get(definition.name);
    if (existing !== undefined && isDeepStrictEqual(existing.definition, definition)) {
      if (existing.source !== source) {
        existing.source = source;
        existing.view = viewOf(definition, source);
        // The kept result shows the definition as GET /healthcheck/<name> does.
        const result = this.#options.results.get(definition.name);
        if (result !== undefined) this.#options.results.set({ ...result, configuration: existing.view });
      }
      return "unchanged";
    }
    const kept = heartbeatResultKept(existing, definition, this.#options.results);
    if (existing !== undefined) {
      // The result belongs to the old definition; the series stays when the labels do.
      this.#options.results.delete(definition.name);
    }
    const labels = redactLabels(definition.labels);
    const registration = new CheckRegistration(
      definition,
      source,
      labels,
      this.#options.metrics.series(definition.name, labels),
      this.#options.ownership?.shardOf(definition.name) ?? 0,
    );
    this.#checks.set(definition.name, registration);
    this.#runs.get(definition.name)?.retire();
    const run = new CheckRun(registration, (check, done) => this.#run(check, done));
    this.#runs.set(definition.name, run);
    // A heartbeat edited (a new grace) keeps its state: its latest result stays, showing the new definition.
    if (kept !== undefined) this.#options.results.set({ ...kept, configuration: registration.view });
    if (existing?.definition.kind === "heartbeat" && definition.kind !== "heartbeat") {
      this.#options.heartbeats?.removed(existing);
    }
    if (definition.kind === "heartbeat") {
      this.#options.scheduler.remove(definition.name);
      this.#options.heartbeats?.placed(registration, this.#owns(registration));
    } else if (this.#owns(registration)) this.#schedule(registration);
    else this.#options.scheduler.remove(definition.name);
    return existing === undefined ? "added" : "changed";
  }

  #owns(registration: Registration): boolean {
    return this.#options.ownership?.owns(registration.shard) ?? true;
  }

  #schedule(registration: Registration): void {
    const { definition } = registration;
    const interval = definition.kind === "heartbeat" ? undefined : definition.interval?.milliseconds;
    if (interval === undefined) throw new Error(`healthcheck ${registration.definition.name} has no interval`);
    const run = this.#runs.get(registration.definition.name);
    if (run !== undefined) this.#options.scheduler.add(registration.definition.name, interval, run.task);
  }

  #drop(registration: Registration): void {
    const name = registration.definition.name;
    this.#checks.delete(name);
    this.#runs.get(name)?.retire();
    this.#runs.delete(name);
    this.#options.scheduler.remove(name);
    this.#options.results.delete(name);
    this.#options.metrics.remove(name);
    if (registration.definition.kind === "heartbeat") this.#options.heartbeats?.removed(registration);
  }

  #run(check: CheckRun, done: Done): void {
    const { registration } = check;
    // Cluster mode: the lease is confirmed before each run, so a check whose shard moved (or whose
    // lease could not be renewed) does not run here while its new owner runs it.
    if (!this.#owns(registration)) {
      done();
      return;
    }
    // The source is read at each run: an identical definition may have changed source since.
    const options = this.#runOptions[registration.source];
    this.#options.executor.start(registration.definition, options, (execution) => {
      // A run cut short because the module stops says nothing of its target: nothing is recorded.
      if (options.stop?.aborted === true) return done();
      try {
        this.#record(check, execution);
      } catch (error) {
        return done(error);
      }
      done();
    });
  }

  /**
   * Keeps a heartbeat's ping or missed deadline as its latest result (a log ping goes to the
   * history only), counts it and passes it on, exactly as a periodic execution of another kind.
   * Ignored when `name` is no longer a registered heartbeat.
   */
  recordHeartbeat(name: string, execution: Execution, extras: HeartbeatExtras): void {
    const check = this.#runs.get(name);
    if (check?.registration.definition.kind !== "heartbeat") return;
    this.#record(check, execution, extras);
  }

  /**
   * Changes the state shown in a heartbeat's latest result without a new result (it became late):
   * no history, no alert. Nothing when it has no result yet.
   */
  setHeartbeatState(name: string, state: HeartbeatState): void {
    const result = this.#options.results.get(name);
    if (result === undefined || result.state === state) return;
    this.#options.results.set({ ...result, state });
  }

  /** Keeps a periodic execution as the check's latest result, counts it and passes it on. */
  #record(check: CheckRun, execution: Execution, extras?: HeartbeatExtras): void {
    // Deleted or replaced while it ran: the result belongs to nobody.
    if (!check.registered) return;
    const { registration } = check;
    // Built field by field, labels last and only when the check has some (no spread per run).
    const result: { -readonly [K in keyof HealthcheckResult]: HealthcheckResult[K] } = {
      name: registration.definition.name,
      configuration: registration.view,
      success: execution.success,
      timestamp: execution.timestamp,
      // A success says `success`: only failure messages quote what a target or command said.
      message: execution.success
        ? execution.message
        : redactMessage(execution.message, secretSourceOf(registration.definition)),
      duration: execution.duration,
    };
    if (this.#options.inMaintenance?.(result.name, execution.time) === true) result.maintenance = true;
    if (extras !== undefined) result.state = extras.state;
    if (registration.labels !== undefined) result.labels = registration.labels;
    if (extras?.log === true) {
      // A log ping changes nothing: the history keeps its body (history.ts), nothing else sees it.
      this.#options.heartbeats?.logged({ ...result, log: true }, execution.time);
      return;
    }
    check.latest = this.#options.results.keep(result, check.latest);
    registration.series.observe(execution.success, execution.duration / 1000);
    this.#options.onResult?.(registration, result, execution.time, extras?.start !== true);
  }
}
