/**
 * Changes between instances through PostgreSQL `LISTEN/NOTIFY` (docs/cluster.md): an instance
 * that changed shared state (a healthcheck definition, a stream, a token) notifies a topic after
 * its transaction committed; every other instance receives it within milliseconds and re-reads
 * what changed. A notification missed while the listening connection was down is made up for by
 * the resync handlers, called after every (re)connection.
 */

import type pg from "pg";
import { loadPg } from "../database.js";
import { isPlainObject } from "../validation.js";

/** The PostgreSQL channel of every notification. */
const CHANNEL = "vigie_changes";

/** The largest payload NOTIFY carries (8000 bytes less a margin); longer ones become "resync". */
const MAX_PAYLOAD = 7_000;

/** Milliseconds between two connection attempts of the listener. */
const RECONNECT_MS = 1_000;

/** What the feed logs (a pino logger fits). */
export interface ChangeFeedLogger {
  warn(details: object, message: string): void;
}

/** A topic's handler: `data` is what the notifier sent (JSON), `undefined` meaning "everything changed". */
export type ChangeHandler = (data: unknown) => void | Promise<void>;

/**
 * The names a change notification carries as `{"names": [...]}` (healthchecks, streams), or
 * undefined for "any of them may have changed" (no names, or a payload too long for NOTIFY).
 */
export function changedNames(data: unknown): string[] | undefined {
  const names = isPlainObject(data) ? data.names : undefined;
  return Array.isArray(names) && names.every((name) => typeof name === "string") ? names : undefined;
}

/** Notifications of one instance, and their delivery to the others. */
export class ChangeFeed {
  readonly #handlers = new Map<string, ChangeHandler[]>();
  readonly #resync: Array<() => void | Promise<void>> = [];
  #client: pg.Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * @param url the PostgreSQL URL (a connection of its own, outside the pool: LISTEN holds it)
   * @param instanceId notifications of this instance are not delivered back to it
   * @param notify sends one notification through the pool (`select pg_notify(...)`)
   */
  constructor(
    readonly url: string,
    readonly instanceId: string,
    readonly notify: (channel: string, payload: string) => Promise<void>,
    readonly logger: ChangeFeedLogger,
  ) {}

  /** Calls `handler` with each notification of `topic` from another instance. */
  on(topic: string, handler: ChangeHandler): void {
    const handlers = this.#handlers.get(topic) ?? [];
    handlers.push(handler);
    this.#handlers.set(topic, handlers);
  }

  /** Calls `handler` after every (re)connection of the listener: re-read everything shared. */
  onResync(handler: () => void | Promise<void>): void {
    this.#resync.push(handler);
  }

  /**
   * Tells the other instances that `topic` changed. Never throws: a failed notification is logged
   * (the others catch up at their next resync).
   * @param data JSON-serialisable; too long a payload is sent as "everything changed"
   */
  async publish(topic: string, data?: unknown): Promise<void> {
    let payload = JSON.stringify({ from: this.instanceId, topic, data });
    if (payload.length > MAX_PAYLOAD) payload = JSON.stringify({ from: this.instanceId, topic });
    try {
      await this.notify(CHANNEL, payload);
    } catch (error) {
      this.logger.warn({ err: error, topic }, "could not notify the other instances of a change");
    }
  }

  /**
   * Connects the listener.
   * @throws the connection error of the first attempt (later ones are retried every second)
   */
  async start(): Promise<void> {
    await this.#connect();
  }

  /** Closes the listener. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    // Loaded on first use: only a cluster on PostgreSQL listens (start-up time, docs/benchmarks.md).
    const client = new (loadPg().Client)({ connectionString: this.url, connectionTimeoutMillis: 5_000 });
    client.on("notification", (message) => {
      if (message.channel === CHANNEL && message.payload !== undefined) this.#deliver(message.payload);
    });
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => {});
      if (this.#closed) return;
      this.logger.warn({ err: error }, "change listener disconnected from PostgreSQL; reconnecting");
      this.#retry();
    };
    client.on("error", onLost);
    client.on("end", () => onLost());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      lost = true;
      client.end().catch(() => {});
      throw error;
    }
    this.#client = client;
  }

  #retry(): void {
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#connect().then(
        () => this.#runResync(),
        () => this.#retry(),
      );
    }, RECONNECT_MS);
    this.#timer.unref();
  }

  #runResync(): void {
    for (const handler of this.#resync) {
      Promise.resolve()
        .then(handler)
        .catch((error: unknown) => this.logger.warn({ err: error }, "resync after reconnection failed"));
    }
  }

  #deliver(payload: string): void {
    let message: { from?: unknown; topic?: unknown; data?: unknown };
    try {
      message = JSON.parse(payload);
    } catch {
      return;
    }
    if (message.from === this.instanceId || typeof message.topic !== "string") return;
    for (const handler of this.#handlers.get(message.topic) ?? []) {
      Promise.resolve()
        .then(() => handler(message.data))
        .catch((error: unknown) =>
          this.logger.warn({ err: error, topic: message.topic }, "applying a change from another instance failed"),
        );
    }
  }
}
