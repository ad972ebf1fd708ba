/**
 * The alerts of every check this instance runs (docs/alerts.md): each periodic result goes through
 * the state machine of each alert of its check (policy.ts); a transition is stored first, then sent
 * to its output through the platform's notifier, and recorded in the history with how its delivery
 * ended.
 *
 * - Only the instance that runs a check sees its results (in cluster mode, the owner of its
 *   shard), so each transition is decided and sent once, whatever the number of instances; the
 *   stored state makes a restart, or a check moving to another instance, neither resend a trigger
 *   nor forget one.
 * - During a maintenance window of the check nothing triggers, repeats or resolves; what was due
 *   is applied on the first result after the window.
 * - While a check named in `depends-on` is down (one of its alerts triggered, or, without alerts of
 *   its own, {@link PARENT_DOWN_FAILURES} consecutive failures), the check's triggers and reminders
 *   are recorded as suppressed instead of sent; a held trigger is sent once no parent is down.
 *
 * Plain TypeScript: the store (store.ts) and the notifier are handed in. On the result path nothing
 * is allocated and nothing awaited unless an alert transitions, and nothing is looked up by name:
 * each registered check keeps its {@link AlertEntry} (the catalog's registration holds it).
 */
import type { DeliveryOutcome, Notification, NotificationStatus, Notifier } from "../../platform/notifications.js";
import { rfc3339 } from "../../platform/time.js";
import type { Definition } from "../definition.js";
import { HEARTBEAT_THRESHOLDS } from "./fields.js";
import { type AlertPolicy, type AlertState, apply, count, type Due, dueOf, initialState } from "./policy.js";

/** Consecutive failures after which a check without alerts counts as down for its dependents. */
export const PARENT_DOWN_FAILURES = 3;

/** How a recorded notification ended: a delivery outcome, or suppressed by a dependency. */
export type HistoryOutcome = DeliveryOutcome | "suppressed";

/** One alert's state as stored (the counters are not: they count again after a restart). */
export interface StoredAlert {
  readonly check: string;
  /** The output; `""` marks a check without alerts that is down for its dependents. */
  readonly output: string;
  readonly triggered: boolean;
  readonly sinceMs: number;
  readonly lastDueMs: number;
  readonly lastSentMs?: number;
  readonly notified: boolean;
}

/** One notification of the history. */
export interface AlertHistoryEntry {
  readonly check: string;
  readonly output: string;
  /** When the transition happened, milliseconds since the epoch. */
  readonly timeMs: number;
  readonly status: NotificationStatus;
  readonly outcome: HistoryOutcome;
  /** Why it failed, was dropped or was suppressed. */
  readonly reason?: string;
}

/** Where the states and the history are kept (store.ts). */
export interface AlertStateStore {
  loadStates(names?: readonly string[]): Promise<StoredAlert[]>;
  saveState(state: StoredAlert, nowMs: number): Promise<void>;
  deleteState(check: string, output: string): Promise<void>;
  /** The checks with a triggered alert or marked down. */
  downChecks(): Promise<string[]>;
  addHistory(entry: AlertHistoryEntry): Promise<void>;
  pruneHistory(beforeMs: number): Promise<void>;
  /**
   * A store that gathers its writes (store.ts) writes them now; resolves once every write started
   * so far has ended.
   */
  flush?(): Promise<void>;
}

/** What the evaluator logs (a pino logger fits). */
export interface EvaluatorLogger {
  error(details: object, message: string): void;
}

/** Options of {@link AlertEvaluator}. */
export interface EvaluatorOptions {
  readonly notifier: Notifier;
  readonly store: AlertStateStore;
  /** `healthchecks.default-alerts`: the alerts of a check whose definition has no `alerts`. */
  readonly defaultAlerts: readonly AlertPolicy[];
  /** The registered check of a name (the catalog's); undefined once deleted. */
  readonly definitionOf: (name: string) => Definition | undefined;
  /**
   * Whether `check` is in a maintenance window at `atMs` (milliseconds since the epoch); called
   * only when a transition is due. Default: never.
   */
  readonly inMaintenance?: (check: string, atMs: number) => boolean;
  /** The `url` of notifications: the status page, or `http.public-url`. */
  readonly url: string;
  readonly logger: EvaluatorLogger;
  /** How long the history is kept (`healthchecks.history.retention`), milliseconds; 0: not recorded. */
  readonly historyRetentionMs: number;
  /**
   * Cluster mode: whether this instance runs a check. A parent run elsewhere is read from the
   * stored states (refreshed every second), and checks without alerts store when they are down.
   */
  readonly runsHere?: (name: string) => boolean;
  /** The clock of stored rows, milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
}

/**
 * A check as {@link AlertEvaluator.observe} takes it: the catalog's registration, made once per
 * registered definition, which keeps the check's alert entry between results.
 */
export interface ObservedCheck {
  readonly definition: Definition;
  /** The check's labels as results show them (redacted). */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** Set by the evaluator at the check's first result; only the evaluator reads or changes it. */
  alerts?: AlertEntry | undefined;
}

/**
 * The alerts of one check, as evaluated here; made and changed by the evaluator only (others hold
 * it in {@link ObservedCheck.alerts}).
 */
export interface AlertEntry {
  readonly definition: Definition;
  readonly policies: readonly AlertPolicy[];
  readonly states: AlertState[];
  /** Consecutive failed results of the check (whether it has alerts or not). */
  failures: number;
  /** Cluster mode, a check without alerts: whether it is stored as down for its dependents. */
  markedDown: boolean;
  /**
   * True once the evaluator no longer keeps this entry (replaced, its check deleted, or its states
   * read again after a cluster hand-over): a registration still holding it resolves it again.
   */
  dropped: boolean;
}

const HOUR_MS = 3_600_000;
const REMOTE_REFRESH_MS = 1_000;

/** The alerts of the checks this instance runs. */
export class AlertEvaluator {
  readonly #options: EvaluatorOptions;
  readonly #entries = new Map<string, AlertEntry>();
  /** Stored states not yet given to an entry, by check and output. */
  #stored = new Map<string, Map<string, StoredAlert>>();
  /** Checks whose stored states are being read again (cluster mode): no transition meanwhile. */
  readonly #loading = new Set<string>();
  #defaults: readonly AlertPolicy[];
  /** The default alerts as heartbeats take them (thresholds of 1), for one list of defaults. */
  #heartbeatDefaults: { source: readonly AlertPolicy[]; policies: readonly AlertPolicy[] } | undefined;
  /** Cluster mode: the checks down according to the stored states. */
  #remoteDown: ReadonlySet<string> = new Set();
  readonly #inflight = new Set<Promise<void>>();
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #now: () => number;

  constructor(options: EvaluatorOptions) {
    this.#options = options;
    this.#defaults = options.defaultAlerts;
    this.#now = options.now ?? Date.now;
  }

  /** Reads the stored states; call before the first result. */
  async load(): Promise<void> {
    this.#stored = byCheck(await this.#options.store.loadStates());
  }

  /**
   * Reads again the stored states of `names` (cluster mode: this instance takes their shards
   * over), holding their transitions back until it is done. Failures are logged.
   */
  async reload(names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    for (const name of names) this.#loading.add(name);
    try {
      const fresh = byCheck(await this.#options.store.loadStates(names));
      for (const name of names) {
        this.#drop(name);
        const states = fresh.get(name);
        if (states === undefined) this.#stored.delete(name);
        else this.#stored.set(name, states);
      }
    } catch (error) {
      this.#options.logger.error({ err: error }, "could not read the stored alert states of the checks taken over");
    } finally {
      for (const name of names) this.#loading.delete(name);
    }
  }

  /** Replaces `healthchecks.default-alerts` (a SIGHUP); checks without `alerts` take them at their next result. */
  setDefaults(alerts: readonly AlertPolicy[]): void {
    this.#defaults = alerts;
  }

  /**
   * The alerts of a check: its own, else the default ones; a heartbeat takes the default ones with
   * thresholds of 1 (docs/alerts.md: one missed run alerts at once).
   */
  policiesOf(definition: Definition): readonly AlertPolicy[] {
    return definition.alerts ?? this.#defaultsFor(definition);
  }

  #defaultsFor(definition: Definition): readonly AlertPolicy[] {
    if (definition.kind !== "heartbeat") return this.#defaults;
    if (this.#heartbeatDefaults?.source !== this.#defaults) {
      const policies = this.#defaults.map((policy) => ({
        ...policy,
        "failure-threshold": HEARTBEAT_THRESHOLDS.failure,
        "success-threshold": HEARTBEAT_THRESHOLDS.success,
      }));
      this.#heartbeatDefaults = { source: this.#defaults, policies };
    }
    return this.#heartbeatDefaults.policies;
  }

  /**
   * Starts the hourly prune of the history (and the sweep of deleted checks), and in cluster mode
   * the refresh of the parents other instances run. The timers do not keep the process alive.
   */
  start(): void {
    const hourly = setInterval(() => void this.#housekeeping(), HOUR_MS);
    hourly.unref();
    this.#timers.push(hourly);
    if (this.#options.runsHere !== undefined) {
      const refresh = setInterval(() => void this.#refreshRemote(), REMOTE_REFRESH_MS);
      refresh.unref();
      this.#timers.push(refresh);
      void this.#refreshRemote();
    }
  }

  /** Stops the timers and waits for the writes in flight. */
  async close(): Promise<void> {
    for (const timer of this.#timers) clearInterval(timer);
    await this.settled();
  }

  /**
   * Resolves when every stored write started so far has ended; the writes the store gathers are
   * written at once, not after their delay.
   */
  async settled(): Promise<void> {
    while (this.#inflight.size > 0) {
      await this.#options.store.flush?.();
      await Promise.all(this.#inflight);
    }
  }

  /**
   * Evaluates one periodic result of `check`. Never throws nor awaits. The check's entry is kept
   * in `check.alerts` and used again while it stays current (same definition and default alerts,
   * not dropped here), so a result is evaluated without a lookup by name.
   *
   * @param message the result's message (that of notifications of alerts without a description)
   * @param timeMs the end of the execution, milliseconds since the epoch
   */
  observe(check: ObservedCheck, success: boolean, message: string, timeMs: number): void {
    const { definition } = check;
    let entry = check.alerts;
    if (entry === undefined || !this.#current(entry, definition)) {
      entry = this.#entryOf(definition);
      check.alerts = entry;
    }
    entry.failures = success ? 0 : entry.failures + 1;
    if (this.#loading.size > 0 && this.#loading.has(definition.name)) return;
    const labels = check.labels;
    const { policies, states } = entry;
    for (let index = 0; index < policies.length; index++) {
      const state = states[index];
      const policy = policies[index];
      if (state === undefined || policy === undefined) continue;
      count(state, success);
      const due = dueOf(state, policy, timeMs);
      if (due !== "none") this.#transition(entry, policy, state, due, labels, message, timeMs);
    }
    if (policies.length === 0 && this.#options.runsHere !== undefined) this.#mark(entry, timeMs);
  }

  /**
   * The parent in `depends-on` of `definition` that is down, or undefined. A parent is down while
   * one of its alerts is triggered or, without alerts of its own, after
   * {@link PARENT_DOWN_FAILURES} consecutive failures; a parent without any result yet is not.
   */
  downParent(definition: Definition): string | undefined {
    const parents = definition["depends-on"];
    if (parents === undefined) return undefined;
    const runsHere = this.#options.runsHere;
    for (const parent of parents) {
      if (runsHere !== undefined && !runsHere(parent)) {
        if (this.#remoteDown.has(parent)) return parent;
        continue;
      }
      const entry = this.#entries.get(parent);
      if (entry === undefined) continue;
      const down =
        entry.policies.length === 0
          ? entry.failures >= PARENT_DOWN_FAILURES
          : entry.states.some((state) => state.triggered);
      if (down) return parent;
    }
    return undefined;
  }

  /**
   * The triggered alerts of every registered check, as stored (every instance's, in cluster mode),
   * after the writes in flight here. Alerts of deleted checks, or no longer in their check, are
   * left out.
   */
  async triggered(): Promise<StoredAlert[]> {
    await this.settled();
    const stored = await this.#options.store.loadStates();
    return stored
      .filter((alert) => {
        if (!alert.triggered || alert.output === "") return false;
        const definition = this.#options.definitionOf(alert.check);
        return definition !== undefined && this.policiesOf(definition).some((policy) => policy.output === alert.output);
      })
      .sort((a, b) => (a.check < b.check ? -1 : a.check > b.check ? 1 : a.output < b.output ? -1 : 1));
  }

  #transition(
    entry: AlertEntry,
    policy: AlertPolicy,
    state: AlertState,
    due: Exclude<Due, "none">,
    labels: Readonly<Record<string, string>> | undefined,
    message: string,
    timeMs: number,
  ): void {
    const { name } = entry.definition;
    const inMaintenance = this.#options.inMaintenance;
    if (inMaintenance?.(name, timeMs)) return;
    const parent = this.downParent(entry.definition);
    const wasTriggered = state.triggered;
    const decision = apply(state, due, policy, timeMs, parent !== undefined);
    if (decision.action === "none" && state.triggered === wasTriggered) return;
    const output = policy.output;
    // Stored before it is sent: a restart after the send never sends it again.
    const stored = this.#options.store
      .saveState(storedOf(name, output, state), this.#now())
      .catch((error: unknown) =>
        this.#options.logger.error(
          { err: error, healthcheck: name },
          `could not store the state of alert ${name}/${output}`,
        ),
      );
    if (decision.action === "none") {
      this.#track(stored);
    } else if (decision.action === "suppress") {
      const suppressed: AlertHistoryEntry = {
        check: name,
        output,
        timeMs,
        status: decision.status,
        outcome: "suppressed",
        reason: `${parent} is down (depends-on)`,
      };
      this.#track(stored.then(() => this.#record(suppressed)));
    } else {
      const notification = this.#notification(name, policy, state, decision.status, labels, message, timeMs);
      this.#track(stored.then(() => this.#send(output, notification, timeMs)));
    }
  }

  #notification(
    name: string,
    policy: AlertPolicy,
    state: AlertState,
    status: NotificationStatus,
    labels: Readonly<Record<string, string>> | undefined,
    message: string,
    timeMs: number,
  ): Notification {
    return {
      name,
      state: status === "resolved" ? "ok" : "critical",
      status,
      message: policy.description === "" ? message : policy.description,
      since: rfc3339(state.sinceMs),
      duration: Math.max(0, Math.round((timeMs - state.sinceMs) / 1000)),
      url: this.#options.url,
      labels: labels ?? {},
      key: `${name}/${policy.output}`,
    };
  }

  /** Hands a notification to the notifier, and records how its delivery ends. */
  #send(output: string, notification: Notification, timeMs: number): void {
    const { name: check, status } = notification;
    this.#options.notifier.notify(output, notification, (outcome, reason) =>
      this.#track(
        this.#record({ check, output, timeMs, status, outcome, ...(reason === undefined ? {} : { reason }) }),
      ),
    );
  }

  /** Cluster mode: stores when a check without alerts goes down or comes back, for dependents elsewhere. */
  #mark(entry: AlertEntry, timeMs: number): void {
    const down = entry.failures >= PARENT_DOWN_FAILURES;
    if (down === entry.markedDown) return;
    entry.markedDown = down;
    const marker: StoredAlert = {
      check: entry.definition.name,
      output: "",
      triggered: down,
      sinceMs: timeMs,
      lastDueMs: timeMs,
      notified: false,
    };
    this.#track(
      this.#options.store
        .saveState(marker, this.#now())
        .catch((error: unknown) => this.#options.logger.error({ err: error }, "could not store that a check is down")),
    );
  }

  async #record(entry: AlertHistoryEntry): Promise<void> {
    if (this.#options.historyRetentionMs === 0) return;
    try {
      await this.#options.store.addHistory(entry);
    } catch (error) {
      this.#options.logger.error({ err: error, healthcheck: entry.check }, "could not record an alert notification");
    }
  }

  #track(work: Promise<void>): void {
    this.#inflight.add(work);
    void work.finally(() => this.#inflight.delete(work));
  }

  /** Whether `entry` is still the one of `definition`: kept here, same definition and default alerts. */
  #current(entry: AlertEntry, definition: Definition): boolean {
    if (entry.dropped || entry.definition !== definition) return false;
    return definition.alerts !== undefined || entry.policies === this.#defaultsFor(definition);
  }

  /** The entry of a check, built again when its definition (or the default alerts) changed. */
  #entryOf(definition: Definition): AlertEntry {
    const existing = this.#entries.get(definition.name);
    if (existing !== undefined && this.#current(existing, definition)) return existing;
    const policies = this.policiesOf(definition);
    const stored = this.#stored.get(definition.name);
    this.#stored.delete(definition.name);
    const states = policies.map((policy) => {
      const kept = existing?.states[existing.policies.findIndex((old) => old.output === policy.output)];
      if (kept !== undefined) return kept;
      const row = stored?.get(policy.output);
      return row === undefined ? initialState() : stateOf(row);
    });
    // The alerts the check no longer has are forgotten.
    for (const old of existing?.policies ?? []) {
      if (!policies.some((policy) => policy.output === old.output)) this.#forget(definition.name, old.output);
    }
    const entry: AlertEntry = {
      definition,
      policies,
      states,
      failures: existing?.failures ?? 0,
      markedDown: existing?.markedDown ?? stored?.get("")?.triggered === true,
      dropped: false,
    };
    if (existing !== undefined) existing.dropped = true;
    this.#entries.set(definition.name, entry);
    return entry;
  }

  /** Forgets the entry of `name` (its states stay stored); a registration holding it resolves it again. */
  #drop(name: string): void {
    const entry = this.#entries.get(name);
    if (entry === undefined) return;
    entry.dropped = true;
    this.#entries.delete(name);
  }

  #forget(check: string, output: string): void {
    this.#track(
      this.#options.store
        .deleteState(check, output)
        .catch((error: unknown) => this.#options.logger.error({ err: error }, "could not delete an alert state")),
    );
  }

  /** Prunes the history past the retention and forgets the alerts of deleted checks. */
  async #housekeeping(): Promise<void> {
    for (const [name, entry] of this.#entries) {
      if (this.#options.definitionOf(name) !== undefined) continue;
      this.#drop(name);
      for (const policy of entry.policies) this.#forget(name, policy.output);
      if (entry.markedDown) this.#forget(name, "");
    }
    const retention = this.#options.historyRetentionMs;
    if (retention === 0) return;
    try {
      await this.#options.store.pruneHistory(this.#now() - retention);
    } catch (error) {
      this.#options.logger.error({ err: error }, "could not prune the alert history; it is pruned again in an hour");
    }
  }

  async #refreshRemote(): Promise<void> {
    try {
      this.#remoteDown = new Set(await this.#options.store.downChecks());
    } catch (error) {
      this.#options.logger.error({ err: error }, "could not read which checks are down");
    }
  }
}

/** Stored states by check, then output. */
function byCheck(rows: readonly StoredAlert[]): Map<string, Map<string, StoredAlert>> {
  const map = new Map<string, Map<string, StoredAlert>>();
  for (const row of rows) {
    let outputs = map.get(row.check);
    if (outputs === undefined) {
      outputs = new Map();
      map.set(row.check, outputs);
    }
    outputs.set(row.output, row);
  }
  return map;
}

/** A state to store: a copy, since the state goes on changing. */
function storedOf(check: string, output: string, state: AlertState): StoredAlert {
  return {
    check,
    output,
    triggered: state.triggered,
    sinceMs: state.sinceMs,
    lastDueMs: state.lastDueMs,
    ...(state.lastSentMs === undefined ? {} : { lastSentMs: state.lastSentMs }),
    notified: state.notified,
  };
}

/** The state of a stored alert, its counters at zero. */
function stateOf(row: StoredAlert): AlertState {
  return {
    ...initialState(),
    triggered: row.triggered,
    sinceMs: row.sinceMs,
    lastDueMs: row.lastDueMs,
    lastSentMs: row.lastSentMs,
    notified: row.notified,
  };
}
