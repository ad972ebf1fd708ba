/**
 * The outputs of `streams.outputs` (docs/streams.md): one {@link OutputQueue} per declared
 * output, each with the transport of its type. The `output` action reaches them through
 * {@link Outputs.sink}; the module drains them on a graceful stop.
 */
import type { FastifyBaseLogger } from "fastify";
import type { Flow } from "../action.js";
import type { OutputDefinition } from "../config.js";
import type { OutputMetrics } from "../metrics.js";
import { alertmanagerTransport } from "./alertmanager-output.js";
import { type DeliveryOptions, type DeliverySettings, OutputQueue } from "./delivery.js";
import { fileTransport } from "./file-output.js";
import { httpTransport } from "./http-output.js";
import { remoteWriteTransport } from "./remote-write-output.js";

/** What the outputs report to. */
export interface OutputsOptions {
  readonly metrics: OutputMetrics;
  readonly logger: FastifyBaseLogger;
}

/** What {@link Outputs} needs of a queue, whatever its payload type. */
interface Queue {
  readonly sink: (value: Flow) => void;
  readonly size: number;
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
    maxRetryTimeMs: definition["max-retry-time"].milliseconds,
  };
}

function queueOf(name: string, definition: OutputDefinition, options: DeliveryOptions): Queue {
  const settings = settingsOf(definition);
  switch (definition.type) {
    case "http":
      return new OutputQueue(name, httpTransport(definition), settings, options);
    case "file":
      return new OutputQueue(name, fileTransport(definition), settings, options);
    case "prometheus-remote-write":
      return new OutputQueue(name, remoteWriteTransport(definition), settings, options);
    case "alertmanager":
      return new OutputQueue(name, alertmanagerTransport(definition), settings, options);
  }
}

/** The declared outputs, each with its queue and sender; nothing is contacted before an event comes. */
export class Outputs {
  readonly #queues = new Map<string, Queue>();

  /** @param definitions `streams.outputs`, defaults filled in (config.ts) */
  constructor(definitions: Readonly<Record<string, OutputDefinition>>, options: OutputsOptions) {
    for (const [name, definition] of Object.entries(definitions)) {
      this.#queues.set(name, queueOf(name, definition, options));
    }
  }

  /**
   * The sink of a declared output: enqueues an event, or each event of a list, and returns at once;
   * an event that does not fit is dropped and counted `dropped-queue-full`.
   * @throws Error when `name` is not declared (the stream compiler refuses such a stream first)
   */
  sink(name: string): (value: Flow) => void {
    const queue = this.#queues.get(name);
    if (queue === undefined) throw new Error(`output ${name} is not declared in streams.outputs`);
    return queue.sink;
  }

  /** Events held per output (waiting plus the batch in flight), for `stream_output_queue_events`. */
  *queued(): Iterable<readonly [string, number]> {
    for (const [name, queue] of this.#queues) yield [name, queue.size] as const;
  }

  /**
   * Graceful stop (SIGTERM, docs/streams.md): every output sends what it holds, in order, retrying
   * as usual, for at most `timeoutMs` milliseconds; what is left then is dropped and counted
   * `dropped-retries-exhausted`, and connections are closed. Events that reach a sink once the
   * drain began are dropped and counted `dropped-queue-full`.
   */
  async drain(timeoutMs: number): Promise<void> {
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
