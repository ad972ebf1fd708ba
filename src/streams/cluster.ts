/**
 * The streams module in cluster mode (docs/cluster.md): each stream has one owner instance (a
 * lease); every way in hands events for a stream owned elsewhere to JetStream (stream
 * `VIGIE_EVENTS`, subject `vigie.events.<stream>`, one message per request and target stream);
 * the owner consumes them with a durable pull consumer per stream (`vigie-<stream>`) and
 * acknowledges them once run. Index searches and current-time on a non-owner are answered by the
 * owner over NATS request/reply (an answer larger than one NATS message in parts: query-parts.ts);
 * channel publications reach the subscribers of every instance.
 * A partitioned stream (`:partition-by`) is all of this per partition: each partition `<stream>#<k>`
 * has its own lease, subject (`vigie.events.<stream>.<k>`), consumer and query subject.
 */
import { createHash } from "node:crypto";
import type { JsMsg } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  EVENTS_STREAM,
  eventsOfMessage,
  type LeaseSet,
  type NatsLink,
  natsLibrary,
  subjectToken,
} from "../platform/cluster/index.js";
import { type ErrorCode, errorMessage, STATUS_OF, UnavailableError, VigieError } from "../platform/errors.js";
import { isPlainObject } from "../platform/validation.js";
import type { Flow } from "./action.js";
import type { Stream, StreamEngine } from "./engine.js";
import type { Event } from "./event.js";
import { parsePartitionKey } from "./partition.js";
import { answerTooLarge, type BoundsWording, tooManyResults } from "./query-answer.js";
import { PartsError, requestInParts, respondInParts } from "./query-parts.js";

/** Milliseconds a non-owner waits for the owner's answer to a query. */
export const QUERY_TIMEOUT_MS = 2_000;

/** Forwarded messages a consumer holds before running them. */
const CONSUMER_BATCH = 64;

/** Milliseconds before a failed consumer starts again. */
const CONSUMER_RETRY_MS = 1_000;

/** Publications sent without waiting (event sink, reinjection) in flight at once; beyond, dropped. */
const MAX_UNACKNOWLEDGED_SENDS = 10_000;

/** What the cluster logs (a pino logger fits). */
export interface StreamClusterLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** Counters of the streams in cluster mode. */
export interface StreamClusterMetrics {
  /** Events handed to JetStream for another instance, by stream. */
  forwarded(stream: string, count: number): void;
  /** Events that could not be handed over (NATS down, bound reached), by stream. */
  dropped(stream: string, count: number): void;
  /** Events consumed from JetStream and run here, by stream. */
  consumed(stream: string, count: number): void;
}

/**
 * A stream's (or partition's) subject under `prefix`: `<prefix>.<escaped name>`, and for partition
 * k of a partitioned stream (key `name#k`) `<prefix>.<escaped name>.<k>`. Escaped names hold no
 * `.`, so a partition's subject never equals a stream's.
 */
function subjectOf(prefix: string, key: string): string {
  const { stream, partition } = parsePartitionKey(key);
  const subject = `${prefix}.${subjectToken(stream)}`;
  return partition === undefined ? subject : `${subject}.${partition}`;
}

/**
 * The subject of a stream's forwarded events: `vigie.events.<stream>`, or
 * `vigie.events.<stream>.<k>` for partition k (key `stream#k`) of a partitioned stream.
 */
export function eventsSubject(key: string): string {
  return subjectOf("vigie.events", key);
}

/** The longest consumer name JetStream accepts. */
const MAX_CONSUMER_NAME = 255;

/**
 * The durable consumer of a stream's forwarded events: `vigie-<escaped name>` (a partition's key
 * `stream#k` escapes to `stream~23k`, which no stream name gives), or, when escaping
 * makes that longer than JetStream's 255 characters (a long name with many dots), its first 200
 * characters and a SHA-256 of the stream name, which keeps names distinct.
 */
export function consumerName(stream: string): string {
  const name = `vigie-${subjectToken(stream)}`;
  if (name.length <= MAX_CONSUMER_NAME) return name;
  return `${name.slice(0, 200)}-${createHash("sha256").update(stream).digest("hex").slice(0, 32)}`;
}

/** The subject of the queries a stream's (or a partition's, key `stream#k`) owner answers. */
export function querySubject(key: string): string {
  return subjectOf("vigie.query", key);
}

/** The subject a channel's publications travel on between instances. */
export function channelSubject(channel: string): string {
  return `vigie.channel.${subjectToken(channel)}`;
}

/** A query sent to a stream's owner. */
type Query =
  | { readonly kind: "search"; readonly query: unknown }
  | { readonly kind: "riemann-search"; readonly query: string; readonly limit?: number }
  | { readonly kind: "current-time" };

/** A query as the owner receives it: its fields are checked by the code that runs it. */
export interface ReceivedQuery {
  readonly kind: string;
  readonly query?: unknown;
  readonly limit?: unknown;
}

/**
 * The owner's answer: the value, or an error with the HTTP status of its code (the status travels,
 * so that instances of different versions understand each other).
 */
type Answer = { readonly value: unknown } | { readonly status: number; readonly error: string };

/**
 * An answer its runner serialised already (a slice per turn of the event loop, while measuring
 * it): the UTF-8 JSON text `{"value": ...}`, sent as it is.
 */
export class EncodedAnswer {
  constructor(readonly json: Uint8Array) {}
}

/**
 * What the owner runs for a query (the routes' own code: compile the query, search the index): the
 * answer's value, or its {@link EncodedAnswer}; `partition` is set for a partition of a partitioned
 * stream, which is answered alone.
 */
export type QueryRunner = (stream: Stream, query: ReceivedQuery, partition?: number) => Promise<unknown>;

/** The error codes, to find the code of a status an owner answered. */
const CODES = Object.keys(STATUS_OF).filter(isErrorCode);

function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(STATUS_OF, code);
}

/** The error an owner answered, as the asker throws it again. */
function answeredError(status: number, message: string): VigieError {
  const code = CODES.find((candidate) => STATUS_OF[candidate] === status) ?? "VIGIE_ERR_INTERNAL";
  return new VigieError(code, message);
}

/** Reads the owner's answer; `undefined` when it is not one. */
function parseAnswer(data: Uint8Array): Answer | undefined {
  const answer: unknown = JSON.parse(decoder.decode(data));
  if (!isPlainObject(answer)) return undefined;
  if (!("error" in answer)) return { value: answer.value };
  const { status, error } = answer;
  return typeof status === "number" && typeof error === "string" ? { status, error } : undefined;
}

/** Reads a query sent to an owner. @throws Error when it is not one */
function parseQuery(data: Uint8Array): ReceivedQuery {
  const query: unknown = JSON.parse(decoder.decode(data));
  if (!isPlainObject(query) || typeof query.kind !== "string") throw new Error("not a query");
  return { kind: query.kind, query: query.query, limit: query.limit };
}

/** Reads a channel publication of another instance; `undefined` when it is not one. */
function parsePublication(data: Uint8Array): { origin: unknown; channel: string; value: Flow } | undefined {
  const publication: unknown = JSON.parse(decoder.decode(data));
  if (!isPlainObject(publication) || typeof publication.channel !== "string") return undefined;
  const { origin, channel, value } = publication;
  return isFlow(value) ? { origin, channel, value } : undefined;
}

/** Whether a value received from another instance is an event or a list of them. */
function isFlow(value: unknown): value is Flow {
  return isPlainObject(value) || (Array.isArray(value) && value.every(isPlainObject));
}

interface Consumer {
  readonly stop: () => Promise<void>;
  readonly queries: Subscription;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The streams of one instance among several. */
export class StreamCluster {
  readonly #consumers = new Map<string, Consumer>();
  readonly #connection: NatsConnection;
  #unacknowledged = 0;
  #channels: Subscription | undefined;
  #closed = false;

  constructor(
    readonly engine: StreamEngine,
    readonly nats: NatsLink,
    readonly leases: LeaseSet<string>,
    readonly instanceId: string,
    readonly leaseMs: number,
    readonly runQuery: QueryRunner,
    readonly metrics: StreamClusterMetrics,
    readonly logger: StreamClusterLogger,
  ) {
    this.#connection = nats.connection;
    engine.forwarder = {
      owns: (name) => leases.owns(name),
      forward: (name, events) => this.#forward(name, events),
      send: (name, events) => this.#send(name, events),
      ask: (name, query, bounds) => this.ask(name, query, bounds),
    };
    // A partitioned stream is leased partition by partition, so that its load spreads.
    leases.setKeys(() => engine.leaseKeys());
    leases.listen({
      gained: (names) => {
        logger.info({ streams: names }, "streams (or partitions) run here now");
        for (const name of names) this.#startConsumer(name);
      },
      lost: async (names) => {
        // Their state restarts empty wherever they run next: worth a line when it happens.
        logger.info({ streams: names }, "streams (or partitions) no longer run here");
        await Promise.all(names.map((name) => this.#stopConsumer(name)));
      },
    });
  }

  /** Whether this instance owns `name` now. */
  owns(name: string): boolean {
    return this.leases.owns(name);
  }

  /**
   * Asks the owner of `stream` (index search, current-time). A large answer arrives in parts
   * (query-parts.ts), each awaited at most {@link QUERY_TIMEOUT_MS}, the whole held to `bounds`
   * (default: `max-query-bytes` and `max-query-results` of this instance's streams, named as an
   * index search's).
   * @throws UnavailableError `owner of stream <name> unavailable` after {@link QUERY_TIMEOUT_MS}
   *   without an answer or a part of it; QueryBoundError when the answer exceeds `bounds` (with the
   *   message of an answer beyond them on one instance); the owner's own error (an invalid query,
   *   an answer beyond its bounds) as it answered it
   */
  async ask(stream: string, query: Query, bounds?: BoundsWording): Promise<unknown> {
    const limits: BoundsWording = bounds ?? {
      results: this.engine.limits.queryResults,
      bytes: this.engine.limits.queryBytes,
      resultsSetting: "streams.max-query-results",
      what: "index search",
    };
    const unavailable = () => new UnavailableError(`owner of stream ${stream} unavailable`);
    let answer: Answer | undefined;
    try {
      const reply = await requestInParts(
        this.#connection,
        querySubject(stream),
        encoder.encode(JSON.stringify(query)),
        {
          partTimeoutMs: QUERY_TIMEOUT_MS,
          // The answer's JSON, {"value":[...]}, is one byte shorter than the events' answer of an
          // index search, {"events":[...]}, which max-query-bytes bounds.
          maxBytes: limits.bytes,
        },
      );
      answer = parseAnswer(reply);
    } catch (error) {
      if (error instanceof PartsError && error.failure.kind === "too-large") throw answerTooLarge(limits);
      throw unavailable();
    }
    if (answer === undefined) throw unavailable();
    if ("error" in answer) throw answeredError(answer.status, answer.error);
    if (Array.isArray(answer.value) && answer.value.length > limits.results) throw tooManyResults(limits);
    return answer.value;
  }

  /**
   * A channel's publisher that also reaches the subscribers of the other
   * instances: the event goes to this instance's subscribers, then to NATS.
   */
  publisher(channel: string, local: (value: Flow) => void): (value: Flow) => void {
    const subject = channelSubject(channel);
    const connection = this.#connection;
    const origin = this.instanceId;
    return (value) => {
      local(value);
      try {
        connection.publish(subject, encoder.encode(JSON.stringify({ origin, channel, value })));
      } catch {
        // NATS closed: the local subscribers had it; the others miss it, as a slow subscriber would.
      }
    };
  }

  /** Delivers the publications of other instances to this instance's channel subscribers. */
  subscribeChannels(deliver: (channel: string, value: Flow) => void): void {
    this.#channels = this.#connection.subscribe("vigie.channel.>", {
      callback: (error, message) => {
        if (error !== null) return;
        try {
          const publication = parsePublication(message.data);
          if (publication !== undefined && publication.origin !== this.instanceId) {
            deliver(publication.channel, publication.value);
          }
        } catch {
          // Not ours: ignored.
        }
      },
    });
  }

  /** Stops every consumer (their leases are released by the cluster) and the channel subscription. */
  async close(): Promise<void> {
    this.#closed = true;
    try {
      this.#channels?.unsubscribe();
    } catch {
      // The connection is drained already (the cluster left first): nothing to unsubscribe from.
    }
    await Promise.all([...this.#consumers.keys()].map((name) => this.#stopConsumer(name)));
  }

  #forward(key: string, events: readonly Event[]): Promise<void> {
    // Counted by stream, not by partition: 64 series per stream would be noise.
    const name = parsePartitionKey(key).stream;
    if (!this.nats.connected()) {
      this.metrics.dropped(name, events.length);
      return Promise.reject(
        new UnavailableError(`stream ${name} is owned by another instance, and NATS is unreachable`),
      );
    }
    const data = encoder.encode(JSON.stringify(events));
    return this.nats.jetstream.publish(eventsSubject(key), data).then(
      () => this.metrics.forwarded(name, events.length),
      (error: unknown) => {
        this.metrics.dropped(name, events.length);
        throw new UnavailableError(
          `stream ${name} is owned by another instance, unreachable now: ${errorMessage(error)}`,
        );
      },
    );
  }

  #send(key: string, events: readonly Event[]): void {
    if (this.#unacknowledged >= MAX_UNACKNOWLEDGED_SENDS) {
      this.metrics.dropped(parsePartitionKey(key).stream, events.length);
      return;
    }
    this.#unacknowledged++;
    this.#forward(key, events)
      .catch(() => {})
      .finally(() => {
        this.#unacknowledged--;
      });
  }

  #startConsumer(name: string): void {
    if (this.#closed || this.#consumers.has(name)) return;
    let stopped = false;
    let messages: { stop(): void } | undefined;
    // Consumes until stopped: an error (NATS unreachable when the lease came) or an end the
    // client did not ask for starts it again a second later.
    const running = (async () => {
      while (!stopped) {
        try {
          await this.#consume(name, (iterator) => {
            messages = iterator;
            if (stopped) iterator.stop();
          });
        } catch (error) {
          if (!stopped) this.logger.warn({ err: error, stream: name }, "consumer of forwarded events failed; retrying");
        }
        if (!stopped) await new Promise((resume) => setTimeout(resume, CONSUMER_RETRY_MS));
      }
    })();
    const queries = this.#connection.subscribe(querySubject(name), {
      callback: (error, message) => {
        if (error !== null) return;
        void this.#answer(name, message.data).then((answer) => {
          try {
            const json = answer instanceof EncodedAnswer ? answer.json : encoder.encode(JSON.stringify(answer));
            respondInParts(this.#connection, message, json);
          } catch {
            // The connection closed meanwhile: the asker times out, as with an owner gone.
          }
        });
      },
    });
    this.#consumers.set(name, {
      queries,
      stop: async () => {
        stopped = true;
        try {
          queries.unsubscribe();
        } catch {
          // The connection is drained already: the subscription went with it.
        }
        messages?.stop();
        await running;
      },
    });
  }

  async #stopConsumer(name: string): Promise<void> {
    const consumer = this.#consumers.get(name);
    if (consumer === undefined) return;
    this.#consumers.delete(name);
    await consumer.stop();
    // What the stream (or partition) holds (windows, index) is not carried to the next owner: when
    // this instance owns it again later, it starts empty too.
    const { stream: streamName, partition } = parsePartitionKey(name);
    const stream = this.engine.get(streamName);
    if (stream === undefined) return;
    if (partition === undefined && stream.partitionOf === undefined) {
      this.engine.add(streamName, stream.config, stream.origin, stream.compiled);
    } else if (partition !== undefined && stream.partitionOf !== undefined) {
      stream.resetPart(partition);
    }
    // Otherwise the stream was replaced (partitioned since, or no longer): it started empty then.
  }

  async #consume(name: string, started: (messages: { stop(): void }) => void): Promise<void> {
    const durable = consumerName(name);
    const { jetstream, transport } = natsLibrary();
    const config = {
      durable_name: durable,
      filter_subject: eventsSubject(name),
      ack_policy: jetstream.AckPolicy.Explicit,
      deliver_policy: jetstream.DeliverPolicy.All,
      // Unacknowledged messages of an owner that died go to the next one after this long.
      ack_wait: transport.nanos(this.leaseMs),
      max_ack_pending: CONSUMER_BATCH * 4,
      // The consumer of a stream deleted everywhere goes away by itself after a week unused.
      inactive_threshold: transport.nanos(7 * 24 * 3_600_000),
    };
    try {
      await this.nats.manager.consumers.add(EVENTS_STREAM, config);
    } catch (error) {
      // It exists with another configuration (another lease): it still carries the ack floor.
      this.logger.info({ err: error, stream: name }, "using the existing consumer of forwarded events");
    }
    const consumer = await this.nats.jetstream.consumers.get(EVENTS_STREAM, durable);
    const messages = await consumer.consume({ max_messages: CONSUMER_BATCH });
    started(messages);
    for await (const message of messages) this.#run(name, message);
  }

  #run(name: string, message: JsMsg): void {
    const events: Event[] | undefined = eventsOfMessage(message.data);
    if (events === undefined) {
      // Not a message of ours: acknowledged so that it does not come back forever.
      message.term();
      return;
    }
    const { stream: streamName, partition } = parsePartitionKey(name);
    const stream = this.engine.get(streamName);
    if (stream === undefined) this.metrics.dropped(streamName, events.length);
    else {
      if ((partition === undefined) === (stream.partitionOf === undefined)) stream.pushPart(partition, events);
      // Sent before the stream was replaced by one partitioned otherwise: delivered as a new push.
      else void this.engine.deliver([stream], events, false);
      this.metrics.consumed(streamName, events.length);
    }
    message.ack();
  }

  async #answer(name: string, data: Uint8Array): Promise<Answer | EncodedAnswer> {
    const { stream: streamName, partition } = parsePartitionKey(name);
    const stream = this.engine.get(streamName);
    if (
      stream === undefined ||
      !this.leases.owns(name) ||
      (partition === undefined) !== (stream.partitionOf === undefined)
    ) {
      return { status: 503, error: `owner of stream ${name} unavailable` };
    }
    try {
      const value = await this.runQuery(stream, parseQuery(data), partition);
      return value instanceof EncodedAnswer ? value : { value };
    } catch (error) {
      if (error instanceof VigieError) return { status: STATUS_OF[error.code], error: error.message };
      return { status: 500, error: "the owner could not answer the query" };
    }
  }
}
