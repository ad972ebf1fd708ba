/**
 * The NATS connection of an instance in cluster mode and the JetStream stream `VIGIE_EVENTS` that
 * carries forwarded events to the owner of their stream (docs/cluster.md), through the official client.
 */

import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type * as JetStreamLibrary from "@nats-io/jetstream";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type * as TransportLibrary from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import { errorMessage } from "../errors.js";
import type { ClusterConfig } from "./config.js";

/** The JetStream stream of forwarded events. */
export const EVENTS_STREAM = "VIGIE_EVENTS";

/** The subjects of {@link EVENTS_STREAM}: `vigie.events.<escaped stream name>`. */
export const EVENTS_SUBJECTS = "vigie.events.>";

/** The NATS client libraries. */
export interface NatsLibrary {
  readonly jetstream: typeof JetStreamLibrary;
  readonly transport: typeof TransportLibrary;
}

let library: NatsLibrary | undefined;

/**
 * The NATS client libraries, loaded on first use: a server without `cluster.enabled` never loads
 * them (start-up time, docs/benchmarks.md). They are CommonJS packages, so a synchronous `require`
 * gives the same instances an `import` would.
 */
export function natsLibrary(): NatsLibrary {
  if (library === undefined) {
    const require = createRequire(import.meta.url);
    library = {
      jetstream: require("@nats-io/jetstream") as typeof JetStreamLibrary,
      transport: require("@nats-io/transport-node") as typeof TransportLibrary,
    };
  }
  return library;
}

/** A connected client with its JetStream handles. */
export interface NatsLink {
  readonly connection: NatsConnection;
  readonly jetstream: JetStreamClient;
  readonly manager: JetStreamManager;
  /** False between a disconnection and the next reconnection: forwarded pushes fail at once. */
  connected(): boolean;
}

/** What the link logs (a pino logger fits). */
export interface NatsLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** NATS could not be reached at start-up; the message names the servers. */
export class NatsUnavailableError extends Error {
  constructor(servers: readonly string[], cause: unknown) {
    super(`cannot connect to NATS at ${servers.join(", ")}: ${errorMessage(cause)}`);
    this.name = "NatsUnavailableError";
  }
}

/**
 * Connects to NATS, reconnecting forever afterwards (a NATS that goes away later makes forwarded
 * pushes fail with 503, it never stops the process), and creates or updates `VIGIE_EVENTS`.
 * @throws NatsUnavailableError when no server answers at start-up or JetStream is not enabled
 */
export async function connectNats(
  config: ClusterConfig["nats"],
  instanceId: string,
  logger: NatsLogger,
): Promise<NatsLink> {
  const { connect, credsAuthenticator, nanos } = natsLibrary().transport;
  const { DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } = natsLibrary().jetstream;
  let connection: NatsConnection;
  try {
    const credentials =
      config["credentials-file"] === undefined ? undefined : await readFile(config["credentials-file"]);
    connection = await connect({
      servers: config.servers,
      name: `vigie-${instanceId}`,
      ...(config.token === "" ? {} : { token: config.token }),
      ...(credentials === undefined ? {} : { authenticator: credsAuthenticator(credentials) }),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: 5_000,
    });
  } catch (error) {
    throw new NatsUnavailableError(config.servers, error);
  }
  let connected = true;
  void (async () => {
    for await (const status of connection.status()) {
      if (status.type === "disconnect") {
        connected = false;
        logger.warn({ server: status.server }, "disconnected from NATS; reconnecting");
      } else if (status.type === "reconnect") {
        connected = true;
        logger.info({ server: status.server }, "reconnected to NATS");
      }
    }
  })().catch(() => {});
  try {
    const manager = await jetstreamManager(connection, { timeout: 5_000 });
    const wanted = {
      subjects: [EVENTS_SUBJECTS],
      max_age: nanos(config["stream-max-age"].milliseconds),
      max_bytes: config["stream-max-bytes"],
    };
    try {
      const info = await manager.streams.info(EVENTS_STREAM);
      if (info.config.max_age !== wanted.max_age || info.config.max_bytes !== wanted.max_bytes) {
        await manager.streams.update(EVENTS_STREAM, wanted);
      }
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await manager.streams.add({
        name: EVENTS_STREAM,
        ...wanted,
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
      });
    }
    return {
      connection,
      jetstream: jetstream(connection, { timeout: 5_000 }),
      manager,
      connected: () => connected && !connection.isClosed(),
    };
  } catch (error) {
    await connection.close().catch(() => {});
    throw new NatsUnavailableError(config.servers, error);
  }
}

const decoder = new TextDecoder();

/**
 * The events of a JetStream message that carries a JSON array of them (forwarded events, a durable
 * output's queue), or `undefined` when it carries something else.
 */
export function eventsOfMessage(data: Uint8Array): Array<Record<string, unknown>> | undefined {
  try {
    const parsed: unknown = JSON.parse(decoder.decode(data));
    return Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function isNotFound(error: unknown): boolean {
  return /not found/i.test(errorMessage(error));
}

/**
 * A stream name as one NATS subject token or consumer name: letters, digits, `_` and `-` kept,
 * anything else (`.`, which separates subject tokens) written `~XX` in hexadecimal. Stream names
 * are `A-Z a-z 0-9 . _ -` (docs/streams.md), so the result is unique and valid in both places.
 */
export function subjectToken(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, (character) => `~${character.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
