/**
 * Heartbeat checks as the healthchecks module wires them (index.ts, docs/healthchecks.md
 * "Heartbeat checks"): the catalog places each heartbeat here instead of in the scheduler; the
 * tracker judges those this instance owns; pings find their heartbeat by key on any instance;
 * results go back through the catalog (history, streams, alerts, status page, badges, metrics);
 * the state is written to the database once a second so that it survives a restart.
 *
 * Cluster mode (docs/cluster.md): a ping received by an instance that does not own the heartbeat's
 * shard is written to `healthcheck_heartbeat_ping` before it is answered 200, then the owner is
 * told through the change feed; the owner takes it (DELETE … RETURNING: exactly once) and applies it
 * at the time it was received, the deletion committing only with the state that counts it (an
 * owner killed before that loses nothing). Pings waiting when a shard changes owner, or taken while
 * it moved away, are taken by the new owner.
 */

import { rfc3339 } from "../../platform/time.js";
import type { Catalog, HeartbeatHost, Registration } from "../catalog.js";
import type { ConfiguredCheck } from "../config.js";
import type { HeartbeatDefinition } from "../definition.js";
import type { HealthcheckResult } from "../results.js";
import { newKey } from "./fields.js";
import { PingRateLimiter } from "./pings.js";
import { type HeartbeatRhythm, rhythmOf } from "./schedule.js";
import type { AppliedPings, HeartbeatStore, StoredPing } from "./store.js";
import {
  type HeartbeatEvent,
  type HeartbeatSnapshot,
  type HeartbeatState,
  HeartbeatTracker,
  type PingSignal,
  type TrackerTimers,
} from "./tracker.js";

/** The change topic of pings forwarded to the owner of their heartbeat (docs/cluster.md). */
export const PING_TOPIC = "healthchecks.heartbeat-pings";

/** Milliseconds between two writes of the changed states (and, in cluster mode, sweeps of waiting pings). */
export const FLUSH_PERIOD_MS = 1_000;

/** Every how many flushes the owner looks for waiting pings it was not told about (cluster mode). */
const SWEEP_EVERY = 10;

/** The most ids of pings applied whose deletion is not committed yet, kept against applying them twice. */
const MAX_APPLIED = 10_000;

/** What the wiring logs (a pino logger fits). */
export interface HeartbeatLogger {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

/** Cluster mode: how pings reach the owner of their heartbeat. */
export interface HeartbeatCluster {
  /** Tells the other instances that pings of `names` wait in the database. */
  publish(names: readonly string[]): void;
}

/** Options of {@link ModuleHeartbeats}. */
export interface ModuleHeartbeatsOptions {
  readonly store: HeartbeatStore;
  /** The module's catalog (built after the heartbeats, which it places). */
  readonly catalog: () => Catalog;
  readonly logger: HeartbeatLogger;
  readonly cluster?: HeartbeatCluster;
  /** Called with a heartbeat's latest result after its state changed without a new result. */
  readonly onLatest?: (result: HealthcheckResult) => void;
  /** Called with a log ping as a result marked `log` (the history keeps it). */
  readonly onLog?: (result: HealthcheckResult, timeMs: number) => void;
  /** The latest result of a check (for the state of a heartbeat judged by another instance). */
  readonly latest?: (name: string) => HealthcheckResult | undefined;
  /** The wall clock, milliseconds since the epoch. */
  readonly now?: () => number;
  readonly timers?: TrackerTimers;
}

/** What {@link ModuleHeartbeats.ping} answers. */
export type PingAnswer =
  | { readonly kind: "ok" }
  | { readonly kind: "unknown" }
  | { readonly kind: "limited"; readonly retryAfter: number };

/** The heartbeats of the module. */
export class ModuleHeartbeats implements HeartbeatHost {
  readonly tracker: HeartbeatTracker;
  readonly limiter = new PingRateLimiter();
  readonly #options: ModuleHeartbeatsOptions;
  readonly #now: () => number;
  /** Key → name of every registered heartbeat (on every instance: a ping may come to any). */
  readonly #names = new Map<string, string>();
  /** Name → key. */
  readonly #keys = new Map<string, string>();
  /** One rhythm per registration, so that placing it again (a rebalance) changes nothing. */
  readonly #rhythms = new WeakMap<Registration, HeartbeatRhythm>();
  /** Snapshots read at start-up, consumed as heartbeats are placed. */
  #preloaded = new Map<string, HeartbeatSnapshot>();
  /** Names whose state changed since the last write (an untracked one: its stored state is forgotten). */
  #dirty = new Set<string>();
  /** The last state of heartbeats whose shard moved away, until it is written. */
  readonly #leaving = new Map<string, HeartbeatSnapshot>();
  /** Ids of stored pings applied here whose deletion did not commit yet (a failed transaction). */
  readonly #applied = new Set<number>();
  /** Heartbeats that moved here whose stored state is still being read ({@link #adopt}): reads pending. */
  readonly #adopting = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #flushes = 0;
  #closed = false;

  constructor(options: ModuleHeartbeatsOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.tracker = new HeartbeatTracker({
      now: this.#now,
      paused: true,
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      onEvent: (event) => this.#onEvent(event),
      onChange: (name) => this.#dirty.add(name),
    });
  }

  /** Reads the stored states (before the catalog places the heartbeats at start-up). */
  async load(): Promise<void> {
    this.#preloaded = await this.#options.store.snapshots();
  }

  /**
   * Starts judging deadlines (those passed while the server was down first) and writing the
   * changed states once a second; in cluster mode, also takes forgotten waiting pings.
   */
  start(): void {
    this.tracker.resume();
    this.#timer = setInterval(() => {
      this.#writing = this.#writing.then(() => this.#tick());
    }, FLUSH_PERIOD_MS);
    this.#timer.unref();
  }

  /** Stops judging and writes what changed. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.tracker.stop();
    await this.#writing;
    await this.#flush();
  }

  /**
   * Configuration-file heartbeats without `key` get the key stored for their name, or a new one
   * stored at once (the first instance to write it wins): the same key across restarts and
   * instances, without a secret derived from the name.
   */
  async withKeys(configured: readonly ConfiguredCheck[]): Promise<ConfiguredCheck[]> {
    const candidates = new Map<string, string>();
    for (const { definition } of configured) {
      if (definition.kind === "heartbeat" && definition.key === undefined) candidates.set(definition.name, newKey());
    }
    if (candidates.size === 0) return [...configured];
    const keys = await this.#options.store.generatedKeys(candidates, this.#now());
    return configured.map((check) => {
      const { definition } = check;
      if (definition.kind !== "heartbeat" || definition.key !== undefined) return check;
      const key = keys.get(definition.name);
      return key === undefined ? check : { ...check, definition: { ...definition, key } };
    });
  }

  /** The name of the heartbeat whose key is `key`, or undefined. */
  nameOf(key: string): string | undefined {
    return this.#names.get(key);
  }

  /**
   * The state of heartbeat `name`: the tracker's when this instance judges it, else its latest
   * result's (another instance judges it), else `new`.
   */
  stateOf(name: string): HeartbeatState {
    return this.tracker.stateOf(name) ?? this.#options.latest?.(name)?.state ?? "new";
  }

  placed(registration: Registration, runsHere: boolean): void {
    const definition = registration.definition;
    if (definition.kind !== "heartbeat") return;
    this.#index(definition);
    if (!runsHere) {
      const snapshot = this.tracker.snapshotOf(definition.name);
      if (snapshot !== undefined) {
        // The shard moved away: its new owner reads the state written now; pings from now on are
        // stored for it.
        this.tracker.untrack(definition.name);
        // Moved away before its stored state was even read, with nothing applied here: the stored
        // state is the right one, not the blank one tracked meanwhile.
        if (this.#adopting.has(definition.name) && snapshot.lastPingMs === undefined) return;
        this.#leaving.set(definition.name, snapshot);
        this.#dirty.add(definition.name);
        void this.#flush();
      }
      return;
    }
    let rhythm = this.#rhythms.get(registration);
    if (rhythm === undefined) {
      rhythm = rhythmOf(definition);
      this.#rhythms.set(registration, rhythm);
    }
    const tracked = this.tracker.has(definition.name);
    const preloaded = this.#preloaded.get(definition.name);
    this.#preloaded.delete(definition.name);
    this.tracker.track(definition.name, rhythm, tracked ? undefined : preloaded);
    if (!tracked && preloaded === undefined && this.#options.cluster !== undefined) this.#adopt(definition.name);
  }

  logged(result: HealthcheckResult, timeMs: number): void {
    this.#options.onLog?.(result, timeMs);
  }

  removed(registration: Registration): void {
    const { name } = registration.definition;
    const key = this.#keys.get(name);
    if (key !== undefined) {
      this.#keys.delete(name);
      if (this.#names.get(key) === name) this.#names.delete(key);
      this.limiter.forget(key);
    }
    this.tracker.untrack(name);
    this.#preloaded.delete(name);
    this.#leaving.delete(name);
    this.#dirty.add(name);
  }

  /**
   * A ping of `key` (docs/healthchecks.md): unknown key, over the rate, or accepted. Accepted means
   * applied here, or (cluster mode, another instance judges it) stored for its owner: a ping
   * answered 200 is never lost.
   * @throws Error when the ping could not be stored for another instance (the route's 503)
   */
  async ping(key: string, signal: PingSignal, rid: string | undefined, body: string): Promise<PingAnswer> {
    const name = this.#names.get(key);
    if (name === undefined || this.#closed) return { kind: "unknown" };
    const timeMs = this.#now();
    const retryAfter = this.limiter.take(key, timeMs);
    if (retryAfter > 0) return { kind: "limited", retryAfter };
    const ping = { signal, body, timeMs, ...(rid === undefined ? {} : { rid }) };
    if (this.tracker.ping(name, ping)) return { kind: "ok" };
    if (this.#options.cluster === undefined) return { kind: "unknown" };
    await this.#options.store.addPing(name, signal, rid, body, timeMs);
    this.#options.cluster.publish([name]);
    return { kind: "ok" };
  }

  /**
   * Cluster mode: applies the waiting pings of `names` that this instance judges (all when
   * undefined). Their deletion and the write of the states that count them are one transaction
   * (store.ts): a ping leaves the table only once its effect is stored. A ping whose heartbeat
   * moved away while it was being read stays in the table for the new owner.
   */
  async takePings(names: readonly string[] | undefined): Promise<void> {
    const mine = (names ?? [...this.#keys.keys()]).filter((name) => this.tracker.has(name));
    if (mine.length === 0) return;
    const applied: number[] = [];
    try {
      await this.#options.store.takePings(mine, (pings) => this.#applyTaken(pings, applied));
      // Committed: the rows of these pings are gone, their ids will not come back.
      for (const id of applied) this.#applied.delete(id);
    } catch (error) {
      this.#options.logger.warn({ err: error }, "could not read the heartbeat pings other instances received");
    }
  }

  /**
   * Applies pings taken from the table (inside the store's transaction, synchronously): those of
   * heartbeats no longer judged here are given back, those already applied before a failed commit
   * are not applied twice.
   * @param applied receives the ids of the pings applied now or before
   */
  #applyTaken(pings: readonly StoredPing[], applied: number[]): AppliedPings {
    const kept: StoredPing[] = [];
    const changed = new Set<string>();
    for (const ping of pings) {
      const { id, name, signal, body, timeMs } = ping;
      if (this.#applied.has(id)) {
        // Counted before a failed commit: its state is written with the deletion this time.
        applied.push(id);
        changed.add(name);
        continue;
      }
      if (!this.tracker.ping(name, { signal, body, timeMs, ...(ping.rid === undefined ? {} : { rid: ping.rid }) })) {
        kept.push(ping);
        continue;
      }
      applied.push(id);
      changed.add(name);
      // Until the commit: should it fail, the rows stay and must not count twice (bounded: the oldest go).
      if (this.#applied.size >= MAX_APPLIED) this.#applied.delete(this.#applied.values().next().value as number);
      this.#applied.add(id);
    }
    const snapshots: Array<[string, HeartbeatSnapshot]> = [];
    for (const name of changed) {
      const snapshot = this.tracker.snapshotOf(name);
      if (snapshot !== undefined) snapshots.push([name, snapshot]);
    }
    return { snapshots, kept, nowMs: this.#now() };
  }

  #index(definition: HeartbeatDefinition): void {
    const { name, key } = definition;
    if (key === undefined) return;
    const previous = this.#keys.get(name);
    if (previous === key) return;
    if (previous !== undefined && this.#names.get(previous) === name) this.#names.delete(previous);
    const holder = this.#names.get(key);
    if (holder !== undefined && holder !== name && this.#keys.get(holder) === key) {
      this.#options.logger.error(
        { healthcheck: name, holder },
        `heartbeat ${name} has the same key as heartbeat ${holder}: its pings count for ${holder}`,
      );
      return;
    }
    this.#names.set(key, name);
    this.#keys.set(name, key);
  }

  /** Cluster mode: a heartbeat that moved here takes the state its previous owner wrote. */
  #adopt(name: string): void {
    this.#adopting.set(name, (this.#adopting.get(name) ?? 0) + 1);
    void this.#options.store
      .snapshots([name])
      .then((found) => {
        const snapshot = found.get(name);
        const current = this.tracker.snapshotOf(name);
        // Only while nothing happened here since: a ping received meanwhile is newer.
        if (snapshot === undefined || current === undefined || current.lastPingMs !== undefined) return;
        const registration = this.#options.catalog().get(name);
        const rhythm = registration === undefined ? undefined : this.#rhythms.get(registration);
        if (rhythm === undefined) return;
        this.tracker.untrack(name);
        this.tracker.track(name, rhythm, snapshot);
      })
      .finally(() => {
        const pending = (this.#adopting.get(name) ?? 1) - 1;
        if (pending > 0) this.#adopting.set(name, pending);
        else this.#adopting.delete(name);
      })
      .then(() => this.takePings([name]))
      .catch((error: unknown) =>
        this.#options.logger.warn({ err: error, healthcheck: name }, "could not read a heartbeat's state"),
      );
  }

  #onEvent(event: HeartbeatEvent): void {
    const catalog = this.#options.catalog();
    if (event.type === "state") {
      catalog.setHeartbeatState(event.name, event.state);
      const latest = this.#options.latest?.(event.name);
      if (latest !== undefined) this.#options.onLatest?.(latest);
      return;
    }
    const execution = {
      success: event.success,
      message: event.message,
      duration: event.durationMs,
      timestamp: rfc3339(event.timeMs),
      time: event.timeMs,
    };
    catalog.recordHeartbeat(event.name, execution, {
      state: event.state,
      log: event.type === "log",
      start: event.start,
    });
  }

  async #tick(): Promise<void> {
    await this.#flush();
    if (this.#options.cluster !== undefined && ++this.#flushes % SWEEP_EVERY === 0) await this.takePings(undefined);
  }

  async #flush(): Promise<void> {
    if (this.#dirty.size === 0) return;
    const batch = this.#dirty;
    this.#dirty = new Set();
    const rows: Array<[string, HeartbeatSnapshot | undefined]> = [];
    const catalog = this.#options.catalog();
    for (const name of batch) {
      const snapshot = this.tracker.snapshotOf(name) ?? this.#leaving.get(name);
      // Not judged here but still registered: another instance judges it and writes its state.
      if (snapshot === undefined && catalog.get(name) !== undefined) continue;
      rows.push([name, snapshot]);
    }
    if (rows.length === 0) return;
    try {
      await this.#options.store.saveSnapshots(rows, this.#now());
      for (const [name] of rows) this.#leaving.delete(name);
    } catch (error) {
      for (const [name] of rows) this.#dirty.add(name);
      this.#options.logger.warn(
        { err: error, heartbeats: rows.length },
        "could not write the heartbeats' state; retrying",
      );
    }
  }
}
