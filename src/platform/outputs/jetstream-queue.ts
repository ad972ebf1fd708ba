/**
 * A durable output in cluster mode (docs/outputs.md, "Durable outputs"): its queue is a JetStream
 * stream, `VIGIE_OUTPUT_<name>`, shared by every instance. Each instance publishes what its streams
 * hand to the output, one message per few milliseconds (a JSON array of events), and every instance
 * consumes the one durable consumer of the output with at most one message unacknowledged: the
 * message goes to one instance, which delivers its events through its own {@link OutputQueue}
 * (batches, retries) and acknowledges it once every event of it ended. The next message goes out
 * only then, so the receiver sees the messages in the stream's order; a message whose instance
 * died is delivered again, to another one, after {@link ACK_WAIT_MS} (at least once).
 */
import { createHash } from "node:crypto";
import type { JsMsg } from "@nats-io/jetstream";
import type { FastifyBaseLogger } from "fastify";
import { eventsOfMessage, type NatsLink, natsLibrary, subjectToken } from "../cluster/index.js";
import { errorMessage } from "../errors.js";
import type { QueueLog } from "./delivery.js";
import { FLUSH_EVENTS, FLUSH_INTERVAL_MS } from "./durable-log.js";
import type { Event, Flow } from "./event.js";

/**
 * How long a message stays with the instance it went to without news, in milliseconds: while it
 * delivers, the instance tells JetStream every {@link WORKING_EVERY_MS}; after a crash, the message
 * goes to another instance this long after the last word.
 */
export const ACK_WAIT_MS = 30_000;
const WORKING_EVERY_MS = 10_000;

/** Delay before a consumer that failed (NATS unreachable) starts again, in milliseconds. */
const CONSUMER_RETRY_MS = 1_000;

/** The longest JetStream name this file makes (streams and consumers). */
const MAX_NAME = 240;

const encoder = new TextEncoder();

/** A name made of `prefix` and the escaped output name, hashed when too long for JetStream. */
function jetstreamName(prefix: string, output: string): string {
  const name = `${prefix}${subjectToken(output)}`;
  if (name.length <= MAX_NAME) return name;
  return `${name.slice(0, 200)}-${createHash("sha256").update(output).digest("hex").slice(0, 32)}`;
}

/** The JetStream stream of a durable output in cluster mode. */
export function outputStreamName(output: string): string {
  return jetstreamName("VIGIE_OUTPUT_", output);
}

/** The subject its messages are published on. */
export function outputSubject(output: string): string {
  return `vigie.output.${subjectToken(output)}`;
}

/** What the queue delivers through: an {@link OutputQueue} whose log is the queue itself. */
export interface DeliveryQueue {
  readonly size: number;
  restore(events: readonly Event[]): void;
  beginDrain(): void;
  idle(): Promise<void>;
  stop(): Promise<void>;
}

/** A message being delivered: how many of its events have not ended yet. */
interface Pending {
  readonly message: JsMsg;
  left: number;
  readonly working: NodeJS.Timeout;
}

/** The JetStream queue of one durable output on one instance. */
export class JetStreamQueue implements QueueLog {
  readonly #output: string;
  readonly #nats: NatsLink;
  /** `queue-size`: messages the stream keeps at most; events this instance buffers at most. */
  readonly #queueSize: number;
  readonly #dropped: (count: number) => void;
  readonly #logger: FastifyBaseLogger;
  /** Events per message at most: a message must fit in the delivery queue. */
  readonly #messageEvents: number;
  #delivery: DeliveryQueue | undefined;
  /** Events taken, not yet published. */
  #buffer: Event[] = [];
  #limit: number;
  #timer: NodeJS.Timeout | undefined;
  #publishing: Promise<void> | undefined;
  #pending: Pending | undefined;
  #consuming: { stop(): void } | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #failureLoggedAt = Number.NEGATIVE_INFINITY;
  readonly full = false;

  constructor(
    output: string,
    nats: NatsLink,
    queueSize: number,
    dropped: (count: number) => void,
    logger: FastifyBaseLogger,
  ) {
    this.#output = output;
    this.#nats = nats;
    this.#queueSize = queueSize;
    this.#limit = queueSize;
    this.#dropped = dropped;
    this.#logger = logger;
    this.#messageEvents = Math.min(FLUSH_EVENTS, queueSize);
  }

  /** Sets the queue that delivers the messages (built with this object as its log). */
  attach(delivery: DeliveryQueue): void {
    this.#delivery = delivery;
  }

  /** Events held here: waiting to be published, and those of the message being delivered. */
  get size(): number {
    return this.#buffer.length + (this.#delivery?.size ?? 0);
  }

  /** Takes an event, or each of a list, to publish; beyond `queue-size` waiting, they are dropped. */
  readonly sink = (value: Flow): void => {
    if (!Array.isArray(value)) {
      this.offer(value);
      return;
    }
    let dropped = 0;
    for (const event of value) if (!this.#take(event)) dropped += 1;
    if (dropped > 0) this.#dropped(dropped);
  };

  offer(event: Event): boolean {
    if (this.#take(event)) return true;
    this.#dropped(1);
    return false;
  }

  #take(event: Event): boolean {
    if (this.#buffer.length >= this.#limit) return false;
    this.#buffer.push(event);
    if (this.#timer === undefined && this.#publishing === undefined) {
      this.#timer = setTimeout(this.#publish, FLUSH_INTERVAL_MS);
      this.#timer.unref();
    }
    return true;
  }

  /** Messages come from the stream, not from a previous run's table. */
  restore(): void {}

  /**
   * Creates the output's stream and consumer when missing, and starts consuming.
   * @throws the JetStream error when the stream cannot be created
   */
  async start(): Promise<void> {
    const stream = outputStreamName(this.#output);
    const wanted = { subjects: [outputSubject(this.#output)], max_msgs: this.#queueSize };
    try {
      const info = await this.#nats.manager.streams.info(stream);
      if (info.config.max_msgs !== wanted.max_msgs) await this.#nats.manager.streams.update(stream, wanted);
    } catch (error) {
      if (!/not found/i.test(errorMessage(error))) throw error;
      const { DiscardPolicy, RetentionPolicy, StorageType } = natsLibrary().jetstream;
      await this.#nats.manager.streams.add({
        name: stream,
        ...wanted,
        storage: StorageType.File,
        retention: RetentionPolicy.Workqueue,
        // A full queue refuses new events, as the memory queue does.
        discard: DiscardPolicy.New,
      });
    }
    this.#running = this.#consumeForever(stream);
  }

  readonly #publish = (): void => {
    this.#timer = undefined;
    if (this.#publishing !== undefined || this.#buffer.length === 0) return;
    this.#publishing = this.#publishAll().finally(() => {
      this.#publishing = undefined;
      if (this.#buffer.length > 0) this.#publish();
    });
  };

  /** Publishes what is buffered, one message per {@link FLUSH_EVENTS} events, in order. */
  async #publishAll(): Promise<void> {
    while (this.#buffer.length > 0) {
      const events = this.#buffer.splice(0, this.#messageEvents);
      try {
        await this.#nats.jetstream.publish(outputSubject(this.#output), encoder.encode(JSON.stringify(events)));
      } catch (error) {
        // The stream is full (queue-size messages), or NATS is unreachable: dropped and counted.
        this.#dropped(events.length);
        this.#logFailure(error, `${events.length} events could not be queued in JetStream; dropped`);
      }
    }
  }

  async #consumeForever(stream: string): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#consume(stream);
      } catch (error) {
        if (!this.#stopped) this.#logFailure(error, "consumer failed; retrying");
      }
      if (!this.#stopped) await new Promise((resume) => setTimeout(resume, CONSUMER_RETRY_MS).unref());
    }
  }

  async #consume(stream: string): Promise<void> {
    const durable = jetstreamName("vigie-output-", this.#output);
    const { AckPolicy, DeliverPolicy } = natsLibrary().jetstream;
    const { nanos } = natsLibrary().transport;
    try {
      await this.#nats.manager.consumers.add(stream, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: nanos(ACK_WAIT_MS),
        // One message at a time over every instance: the order of the stream is the order sent.
        max_ack_pending: 1,
      });
    } catch (error) {
      this.#logger.debug({ err: error, output: this.#output }, "using the existing consumer of a durable output");
    }
    const consumer = await this.#nats.jetstream.consumers.get(stream, durable);
    const messages = await consumer.consume({ max_messages: 1 });
    this.#consuming = messages;
    if (this.#stopped) messages.stop();
    for await (const message of messages) this.#deliver(message);
  }

  #deliver(message: JsMsg): void {
    const events: Event[] | undefined = eventsOfMessage(message.data);
    if (events === undefined) {
      // Not a message of ours: removed, so that it does not block the queue forever.
      message.term();
      return;
    }
    // limit 0: the drain began, the delivery queue takes nothing more.
    if (this.#stopped || this.#limit === 0 || this.#delivery === undefined || events.length === 0) {
      if (events.length === 0) message.ack();
      else message.nak();
      return;
    }
    const working = setInterval(() => message.working(), WORKING_EVERY_MS);
    working.unref();
    this.#pending = { message, left: events.length, working };
    this.#delivery.restore(events);
  }

  /** Events are published by {@link sink}, not appended through the delivery queue. */
  append(): void {}

  /** The delivery queue ended `count` events: once every event of the message ended, it is acknowledged. */
  acknowledge(count: number): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    pending.left -= count;
    if (pending.left > 0) return;
    clearInterval(pending.working);
    this.#pending = undefined;
    pending.message.ack();
  }

  #logFailure(error: unknown, message: string): void {
    const now = performance.now();
    if (now - this.#failureLoggedAt < 60_000) return;
    this.#failureLoggedAt = now;
    this.#logger.error({ output: this.#output, err: error }, `output ${this.#output}: ${message}`);
  }

  /** Graceful stop, first step: no new events; what is buffered is published now. */
  beginDrain(): void {
    this.#limit = 0;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#publish();
    this.#delivery?.beginDrain();
  }

  /** Resolves once what was buffered is published and the message in hand delivered. */
  async idle(): Promise<void> {
    await this.#publishing;
    await this.#delivery?.idle();
  }

  /**
   * Graceful stop, last step: stops consuming; a message not fully delivered goes back to the
   * stream at once (another instance, or the next start, sends it again).
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#consuming?.stop();
    await this.#delivery?.stop();
    await this.#running?.catch(() => {});
  }

  /**
   * Before the instance leaves the cluster (NATS is closed then): publishes what is buffered,
   * stops consuming, and gives the message in hand back to the stream for another instance.
   * Events taken later are still published while NATS is open.
   */
  async handOver(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#publish();
    await this.#publishing;
    await this.stop();
  }

  /** Called by the delivery queue's stop: the message in hand returns to the stream. */
  async close(): Promise<void> {
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending === undefined) return;
    clearInterval(pending.working);
    try {
      pending.message.nak();
    } catch {
      // NATS is closed already: the message goes to another instance after ACK_WAIT_MS.
    }
  }
}
