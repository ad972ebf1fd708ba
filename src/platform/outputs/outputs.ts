/**
 * The declared outputs (`outputs:` and `streams.outputs`, docs/outputs.md): one {@link OutputQueue}
 * per output, each with the transport of its type. Streams' `output` action reaches them through
 * {@link Outputs.sink}, notifications through {@link Outputs.offer}; the server drains them on a
 * graceful stop.
 */
import type { FastifyBaseLogger } from "fastify";
import type { NatsLink } from "../cluster/index.js";
import { alertmanagerTransport } from "./alertmanager-output.js";
import type { OutputDefinition } from "./config.js";
import { type DeliveryOptions, type DeliverySettings, OutputQueue } from "./delivery.js";
import { DurableLog } from "./durable-log.js";
import type { DurableStore } from "./durable-storage.js";
import { elasticsearchTransport } from "./elasticsearch-output.js";
import type { Event, Flow } from "./event.js";
import { fileTransport } from "./file-output.js";
import { graphiteTransport } from "./graphite-output.js";
import { httpTransport } from "./http-output.js";
import { influxdbTransport } from "./influxdb-output.js";
import { JetStreamQueue } from "./jetstream-queue.js";
import { lokiTransport } from "./loki-output.js";
import type { OutputMetrics } from "./metrics.js";
import { discordTransport } from "./notifiers/discord.js";
import { emailTransport } from "./notifiers/email.js";
import { matrixTransport } from "./notifiers/matrix.js";
import { ntfyTransport } from "./notifiers/ntfy.js";
import { pagerdutyTransport } from "./notifiers/pagerduty.js";
import { slackTransport } from "./notifiers/slack.js";
import { telegramTransport } from "./notifiers/telegram.js";
import { webhookTransport } from "./notifiers/webhook.js";
import { remoteWriteTransport } from "./remote-write-output.js";

/** What the outputs report to. */
export interface OutputsOptions {
  readonly metrics: OutputMetrics;
  readonly logger: FastifyBaseLogger;
  /** Told how the events of notifier types ended (see {@link DeliveryOptions.settled}). */
  readonly settled?: DeliveryOptions["settled"];
  /** Called when the drain begins, before the queues stop taking events (the notifier sends its groups). */
  readonly beforeDrain?: () => void;
  /** `http.public-url`: the `url` of notifier templates when an event has none; "" by default. */
  readonly publicUrl?: string;
  /** Where the queues of `durable: true` outputs are kept; required when one is declared. */
  readonly store?: DurableStore;
  /** Cluster mode: durable outputs keep their queue in JetStream instead of {@link store}. */
  readonly nats?: NatsLink;
}

/** What {@link Outputs} needs of a queue, whatever its payload type. */
interface Queue {
  readonly sink: (value: Flow) => void;
  offer(event: Event): boolean;
  readonly size: number;
  restore(events: readonly Event[]): void;
  beginDrain(): void;
  idle(): Promise<void>;
  stop(): Promise<void>;
}

function settingsOf(definition: OutputDefinition): DeliverySettings {
  return {
    queueSize: definition["queue-size"],
    batchSize: definition["batch-size"],
    flushIntervalMs: definition["flush-interval"].milliseconds,
    timeoutMs: definition.timeout.milliseconds,
    // A durable output keeps its events until the receiver takes them, up to queue-size.
    maxRetryTimeMs: definition.durable ? Number.POSITIVE_INFINITY : definition["max-retry-time"].milliseconds,
  };
}

function queueOf(name: string, definition: OutputDefinition, options: DeliveryOptions, publicUrl: string): Queue {
  const settings = settingsOf(definition);
  const notifier = { publicUrl };
  switch (definition.type) {
    case "http":
      return new OutputQueue(name, httpTransport(definition), settings, options);
    case "file":
      return new OutputQueue(name, fileTransport(definition), settings, options);
    case "prometheus-remote-write":
      return new OutputQueue(name, remoteWriteTransport(definition), settings, options);
    case "alertmanager":
      return new OutputQueue(name, alertmanagerTransport(definition), settings, options);
    case "loki":
      return new OutputQueue(name, lokiTransport(definition), settings, options);
    case "elasticsearch":
      return new OutputQueue(name, elasticsearchTransport(definition), settings, options);
    case "influxdb":
      return new OutputQueue(name, influxdbTransport(definition), settings, options);
    case "graphite":
      return new OutputQueue(name, graphiteTransport(definition), settings, options);
    case "slack":
      return new OutputQueue(name, slackTransport(definition, notifier), settings, options);
    case "discord":
      return new OutputQueue(name, discordTransport(definition, notifier), settings, options);
    case "telegram":
      return new OutputQueue(name, telegramTransport(definition, notifier), settings, options);
    case "ntfy":
      return new OutputQueue(name, ntfyTransport(definition, notifier), settings, options);
    case "webhook":
      return new OutputQueue(name, webhookTransport(definition, notifier), settings, options);
    case "email":
      return new OutputQueue(name, emailTransport(definition, publicUrl), settings, options);
    case "matrix":
      return new OutputQueue(name, matrixTransport(definition, publicUrl), settings, options);
    case "pagerduty":
      return new OutputQueue(name, pagerdutyTransport(definition, publicUrl), settings, options);
  }
}

/** The declared outputs, each with its queue and sender; nothing is contacted before an event comes. */
export class Outputs {
  readonly #queues = new Map<string, Queue>();
  /** The durable outputs' logs, by output name. */
  readonly #logs = new Map<string, { readonly log: DurableLog; readonly queueSize: number }>();
  /** Cluster mode: the durable outputs' JetStream queues. */
  readonly #jetstreamQueues: JetStreamQueue[] = [];
  readonly #metrics: OutputMetrics;
  readonly #beforeDrain: (() => void) | undefined;
  #drained: Promise<void> | undefined;

  /**
   * @param definitions every declared output, defaults filled in (config.ts)
   * @throws Error when an output is durable and `options.store` is missing
   */
  constructor(definitions: Readonly<Record<string, OutputDefinition>>, options: OutputsOptions) {
    this.#beforeDrain = options.beforeDrain;
    this.#metrics = options.metrics;
    const publicUrl = options.publicUrl ?? "";
    for (const [name, definition] of Object.entries(definitions)) {
      if (!definition.durable) this.#queues.set(name, queueOf(name, definition, options, publicUrl));
      else if (options.nats !== undefined) this.#addJetStream(name, definition, options, options.nats, publicUrl);
      else {
        if (options.store === undefined) throw new Error(`output ${name} is durable and no store was given`);
        const log = new DurableLog(name, options.store, definition["queue-size"], options.logger);
        this.#logs.set(name, { log, queueSize: definition["queue-size"] });
        this.#queues.set(name, queueOf(name, definition, { ...options, log }, publicUrl));
      }
    }
  }

  #addJetStream(
    name: string,
    definition: OutputDefinition,
    options: OutputsOptions,
    nats: NatsLink,
    publicUrl: string,
  ): void {
    const dropped = options.metrics.events(name, "dropped-queue-full");
    const queue = new JetStreamQueue(name, nats, definition["queue-size"], dropped, options.logger);
    queue.attach(queueOf(name, definition, { ...options, log: queue }, publicUrl));
    this.#jetstreamQueues.push(queue);
    this.#queues.set(name, queue);
  }

  /**
   * Start-up, before any event comes: the durable outputs take back the events their previous run
   * kept and did not settle, oldest first (those beyond `queue-size` are dropped and counted); in
   * cluster mode, they create their JetStream stream when missing and start consuming it.
   * @throws the database's error; JetStream's
   */
  async restore(): Promise<void> {
    for (const queue of this.#jetstreamQueues) await queue.start();
    for (const [name, { log, queueSize }] of this.#logs) {
      const events = await log.restore(queueSize, this.#metrics.events(name, "dropped-queue-full"));
      this.#queues.get(name)?.restore(events);
    }
  }

  /**
   * Cluster mode, before the instance leaves (while NATS is open): the durable outputs publish
   * what they buffer, stop consuming and give back the message they were delivering.
   */
  async handOver(): Promise<void> {
    await Promise.all(this.#jetstreamQueues.map((queue) => queue.handOver()));
  }

  /** Events kept on disk per durable output, for `stream_output_durable_events`. */
  *stored(): Iterable<readonly [string, number]> {
    for (const [name, { log }] of this.#logs) yield [name, log.stored] as const;
  }

  /**
   * The sink of a declared output: enqueues an event, or each event of a list, and returns at once;
   * an event that does not fit is dropped and counted `dropped-queue-full`.
   * @throws Error when `name` is not declared (the stream compiler refuses such a stream first)
   */
  sink(name: string): (value: Flow) => void {
    const queue = this.#queues.get(name);
    if (queue === undefined) throw new Error(`output ${name} is not declared`);
    return queue.sink;
  }

  /** The names of the declared outputs. */
  names(): Iterable<string> {
    return this.#queues.keys();
  }

  /** Whether an output of that name is declared. */
  has(name: string): boolean {
    return this.#queues.has(name);
  }

  /**
   * Enqueues one event for `name`, as {@link sink} does, telling whether it was taken: `false` when
   * the output is not declared, its queue is full (counted `dropped-queue-full`) or it is stopping.
   */
  offer(name: string, event: Event): boolean {
    return this.#queues.get(name)?.offer(event) ?? false;
  }

  /** Events held per output (waiting plus the batch in flight), for `stream_output_queue_events`. */
  *queued(): Iterable<readonly [string, number]> {
    for (const [name, queue] of this.#queues) yield [name, queue.size] as const;
  }

  /**
   * Graceful stop (SIGTERM, docs/outputs.md): every output sends what it holds, in order, retrying
   * as usual, for at most `timeoutMs` milliseconds; what is left then is dropped and counted
   * `dropped-retries-exhausted`, and connections are closed. Events that reach a sink once the
   * drain began are dropped and counted `dropped-queue-full`. Later calls wait for the first one.
   */
  drain(timeoutMs: number): Promise<void> {
    // Several parts of the server drain on a stop (the streams module, then the server): once.
    this.#drained ??= this.#drain(timeoutMs);
    return this.#drained;
  }

  async #drain(timeoutMs: number): Promise<void> {
    this.#beforeDrain?.();
    const queues = [...this.#queues.values()];
    for (const queue of queues) queue.beginDrain();
    let deadline: NodeJS.Timeout | undefined;
    // This timer is left referenced: it keeps the process alive until the drain ends.
    const expired = new Promise<void>((resolve) => {
      deadline = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([Promise.all(queues.map((queue) => queue.idle())), expired]);
    clearTimeout(deadline);
    await Promise.all(queues.map((queue) => queue.stop()));
  }
}
