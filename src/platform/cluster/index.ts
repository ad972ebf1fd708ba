/**
 * Cluster mode (docs/cluster.md): membership through heartbeats in PostgreSQL, leases of the
 * healthcheck shards and of the streams, changes between instances through `LISTEN/NOTIFY`, and
 * the NATS connection the streams module forwards events through. `src/server.ts` builds one
 * {@link Cluster} when `cluster.enabled` is true and hands it to every module in its context;
 * modules never reach each other through it, each uses its own lease set and topics.
 */

import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import { sql } from "kysely";
import type { Gauge, Registry } from "prom-client";
import type { Database } from "../database.js";
import { counter, gauge, gaugeOf } from "../metrics.js";
import { ChangeFeed } from "./changes.js";
import { type ClusterConfig, instanceIdOf } from "./config.js";
import { LeaseSet } from "./leases.js";
import { connectNats, type NatsLink } from "./nats.js";
import { ClusterStore, SHARD_LEASES, STREAM_LEASES } from "./storage.js";

export { ChangeFeed, type ChangeHandler, changedNames } from "./changes.js";
export { CLUSTER_ENVIRONMENT, type ClusterConfig, checkCluster, clusterSection } from "./config.js";
export { type LeaseListener, LeaseSet, shareOf } from "./leases.js";
export {
  EVENTS_STREAM,
  eventsOfMessage,
  type NatsLink,
  NatsUnavailableError,
  natsLibrary,
  subjectToken,
} from "./nats.js";
export { clusterMigrations } from "./storage.js";

/** Healthcheck names are split into this many shards, each run by one instance (docs/cluster.md). */
export const SHARD_COUNT = 256;

/**
 * The shard of a healthcheck: FNV-1a 32-bit of the UTF-8 name, mod 256 (docs/cluster.md). Stable
 * across instances, restarts and versions, so that every instance agrees on who runs a check.
 */
export function shardOf(name: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(name, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % SHARD_COUNT;
}

const ALL_SHARDS: readonly number[] = Array.from({ length: SHARD_COUNT }, (_, shard) => shard);

/** What the cluster logs (a pino logger fits). */
export interface ClusterLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

/** One member as `GET /cluster` shows it. */
export interface MemberView {
  readonly id: string;
  readonly url: string;
  readonly "started-at": string;
  readonly "heartbeat-at": string;
  readonly shards: number;
  readonly streams: string[];
}

/** This instance's place among several. */
export class Cluster {
  readonly instanceId: string;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  readonly storage: ClusterStore;
  readonly changes: ChangeFeed;
  /** Leases of the 256 healthcheck shards. */
  readonly shards: LeaseSet<number>;
  /** Leases of the streams; the streams module sets their keys (its stream names). */
  readonly streams: LeaseSet<string>;
  #nats: NatsLink | undefined;
  readonly #startedAt = new Date();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #stopped = false;
  readonly #membersGauge: Gauge;

  constructor(
    readonly config: ClusterConfig,
    readonly database: Database,
    /** `cluster.advertise-url`, else `http.public-url`. */
    readonly url: string,
    readonly logger: ClusterLogger,
    metrics: Registry,
  ) {
    this.instanceId = instanceIdOf(config);
    this.leaseMs = config.lease.milliseconds;
    this.heartbeatMs = config.heartbeat.milliseconds;
    const db = database.kysely;
    this.storage = new ClusterStore(db);
    this.changes = new ChangeFeed(
      databaseUrlOf(database),
      this.instanceId,
      async (channel, payload) => {
        await sql`select pg_notify(${channel}, ${payload})`.execute(db);
      },
      logger,
    );
    this.shards = new LeaseSet<number>(SHARD_LEASES, this.instanceId, this.leaseMs, this.storage, () => ALL_SHARDS);
    this.streams = new LeaseSet<string>(STREAM_LEASES, this.instanceId, this.leaseMs, this.storage);
    this.#membersGauge = gauge(
      metrics,
      "vigie_cluster_members",
      "Live members of the cluster, as this instance last saw them.",
    );
    const shards = this.shards;
    gaugeOf(
      metrics,
      "vigie_cluster_shards_owned",
      "Healthcheck shards this instance holds the lease of (of 256).",
      () => shards.size,
    );
    const rebalances = counter(
      metrics,
      "vigie_cluster_rebalances_total",
      "Changes of the shards or streams this instance owns (gained or lost).",
      ["leases"],
    );
    this.shards.onRebalance = () => rebalances.inc({ leases: "shards" });
    this.streams.onRebalance = () => rebalances.inc({ leases: "streams" });
    const report = (error: unknown) => logger.error({ err: error }, "a module failed to follow a lease change");
    this.shards.onError = report;
    this.streams.onError = report;
  }

  /** The NATS link; set once {@link connect} resolved. */
  get nats(): NatsLink {
    if (this.#nats === undefined) throw new Error("the cluster is not connected to NATS");
    return this.#nats;
  }

  /**
   * Connects to NATS and to the change feed, and sends the first heartbeat (before the modules
   * register, so that the members starting with it see it).
   * @throws NatsUnavailableError naming the servers; the database's error
   */
  async connect(): Promise<void> {
    this.#nats = await connectNats(this.config.nats, this.instanceId, this.logger);
    await this.changes.start();
    await this.storage.heartbeat(this.instanceId, this.url, this.#startedAt);
  }

  /**
   * Starts balancing leases (after the modules registered their listeners): one step now, then
   * one every heartbeat.
   */
  async start(): Promise<void> {
    await this.#tick();
  }

  /** Runs one heartbeat now (tests, and when a module's keys changed). */
  kick(): void {
    if (this.#stopped || this.#ticking !== undefined) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    void this.#tick();
  }

  #tick(): Promise<void> {
    // One heartbeat at a time: two interleaved ones (a kick before start(), a timer during a tick)
    // would see each other's leases half-taken and drop them as lapsed.
    if (this.#ticking !== undefined) return this.#ticking;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const run = (async () => {
      // A heartbeat after stop() would bring the member row back after its deletion.
      if (this.#stopped) return;
      const startedAt = performance.now();
      let delay = this.heartbeatMs;
      try {
        await this.storage.heartbeat(this.instanceId, this.url, this.#startedAt);
        const alive = await this.storage.aliveMembers(this.leaseMs);
        const members = alive.map((member) => member.id);
        this.#membersGauge.set(members.length);
        // A member that stopped beating counts as dead before the next heartbeat: look again
        // right then, so that its shards and streams move one heartbeat sooner.
        for (const member of alive) {
          if (member.id !== this.instanceId && member.expiresInMs + 20 < delay) {
            delay = Math.max(20, member.expiresInMs + 20);
          }
        }
        const shardExpiry = await this.shards.balance(members, startedAt);
        for (const expiry of [shardExpiry, await this.streams.balance(members, startedAt)]) {
          // A lease of a dead member ends before the next heartbeat: take it right then.
          if (expiry !== undefined && expiry + 20 < delay) delay = Math.max(20, expiry + 20);
        }
      } catch (error) {
        this.logger.warn({ err: error }, "cluster heartbeat failed; leases lapse unless renewed in time");
        await this.shards.expire();
        await this.streams.expire();
        delay = Math.min(delay, 500);
      }
      const elapsed = performance.now() - startedAt;
      if (!this.#stopped) {
        this.#timer = setTimeout(() => void this.#tick(), Math.max(0, delay - elapsed));
        this.#timer.unref();
      }
    })();
    this.#ticking = run;
    return run.finally(() => {
      this.#ticking = undefined;
    });
  }

  /** `GET /cluster`: the live members, with the shards and streams each holds. */
  async view(): Promise<{ instance: string; members: MemberView[] }> {
    const members = await this.storage.aliveMembers(this.leaseMs);
    const shards = await this.storage.holdings<number>(SHARD_LEASES);
    const streams = await this.storage.holdings<string>(STREAM_LEASES);
    return {
      instance: this.instanceId,
      members: members.map((member) => ({
        id: member.id,
        url: member.url,
        "started-at": member.startedAt,
        "heartbeat-at": member.heartbeatAt,
        shards: shards.get(member.id)?.length ?? 0,
        streams: streams.get(member.id) ?? [],
      })),
    };
  }

  /** Registers `GET /cluster` behind `guard` (the healthcheck API's). */
  routes(app: FastifyInstance, guard: preHandlerHookHandler | undefined): void {
    const openapi = { summary: "the members of the cluster and the leases each holds (docs/cluster.md)" };
    app.get("/cluster", { config: { openapi }, ...(guard === undefined ? {} : { preHandler: guard }) }, () =>
      this.view(),
    );
  }

  /**
   * Leaves the cluster gracefully: every lease released (listeners first, so streams stop
   * consuming), the member row deleted, NATS drained and the listener closed. Errors are logged:
   * what is not released expires after `cluster.lease`.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#ticking?.catch(() => {});
    try {
      await this.shards.releaseAll();
      await this.streams.releaseAll();
    } catch (error) {
      this.logger.warn({ err: error }, "could not release every lease; the rest expire after cluster.lease");
    }
    try {
      await this.storage.leave(this.instanceId);
      this.logger.info({ instance: this.instanceId }, "left the cluster");
    } catch (error) {
      this.logger.warn({ err: error }, "could not leave the cluster; this instance counts as dead after cluster.lease");
    }
    await this.changes.close();
    await this.#nats?.connection.drain().catch(() => {});
  }
}

function databaseUrlOf(database: Database): string {
  if (database.url === undefined) throw new Error("cluster mode needs a PostgreSQL database");
  return database.url;
}
