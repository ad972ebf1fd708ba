/**
 * The platform's {@link Mailer}: messages of modules sent through the SMTP settings of the declared
 * `email` outputs. Each output has one bounded FIFO queue (at most its `queue-size` messages, capped
 * at {@link MAX_MAIL_QUEUE}) and sends one message at a time. A failed attempt is classified as the
 * `email` output does (smtpOutcome: 4yz and network errors retried, 5yz refused) and retried with
 * the outputs' backoff (retry.ts) until the output's `max-retry-time`. This is simpler than the
 * batching queue of outputs (delivery.ts): messages are few, each has its own recipients, and
 * nothing is grouped. Each message counts as one event in the output's metrics (metrics.ts), beside
 * the notifications the output sends: its outcome, its attempts' durations and its retries.
 */
import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { Mail, Mailer, MailOutcome } from "../mailer.js";
import type { OutputDefinition } from "./config.js";
import type { AttemptResult } from "./delivery.js";
import type { OutputMetrics, OutputOutcome } from "./metrics.js";
import { domainOf, type EmailOutputDefinition, nodemailer, smtpOptions, smtpOutcome } from "./notifiers/email.js";
import { backoffDelay } from "./retry.js";

/** The most messages one output's mail queue holds, whatever its `queue-size`. */
export const MAX_MAIL_QUEUE = 10_000;

/**
 * An e-mail address inside a server's reply (`550 5.1.1 <ann@example.org>: unknown`): replaced in
 * reasons before they are logged or reported, since recipients are people's addresses.
 */
const ADDRESS_IN_TEXT = /[^\s<>"'@]+@[^\s<>"']+/g;

/** The longest subject, in characters. */
const MAX_SUBJECT = 250;

/** Sends one message; the outcome of one attempt. */
export type MailAttempt = (mail: Mail) => Promise<AttemptResult>;

interface Pending {
  readonly mail: Mail;
  readonly onOutcome: ((outcome: MailOutcome, reason?: string) => void) | undefined;
}

/** One output's metric updaters, resolved once (metrics.ts). */
interface MailCounters {
  readonly counted: Readonly<Record<OutputOutcome, (count: number) => void>>;
  readonly retried: () => void;
  readonly attempted: (seconds: number) => void;
}

/** Counters that count nothing, for a mailer built without metrics (tests, tools). */
const UNCOUNTED: MailCounters = {
  counted: {
    sent: () => {},
    "dropped-queue-full": () => {},
    "dropped-rejected": () => {},
    "dropped-retries-exhausted": () => {},
  },
  retried: () => {},
  attempted: () => {},
};

function countersOf(metrics: OutputMetrics | undefined, output: string): MailCounters {
  if (metrics === undefined) return UNCOUNTED;
  const outcome = (name: OutputOutcome) => metrics.events(output, name);
  return {
    counted: {
      sent: outcome("sent"),
      "dropped-queue-full": outcome("dropped-queue-full"),
      "dropped-rejected": outcome("dropped-rejected"),
      "dropped-retries-exhausted": outcome("dropped-retries-exhausted"),
    },
    retried: metrics.retries(output),
    attempted: metrics.requestDuration(output),
  };
}

/** One output's queue: FIFO, one message in flight, retries with backoff. */
class MailQueue {
  readonly #items: Pending[] = [];
  readonly #capacity: number;
  readonly #maxRetryMs: number;
  readonly #attempt: MailAttempt;
  readonly #logger: FastifyBaseLogger;
  readonly #name: string;
  readonly #counters: MailCounters;
  #running: Promise<void> | undefined;
  #stopping = false;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;

  constructor(
    name: string,
    capacity: number,
    maxRetryMs: number,
    attempt: MailAttempt,
    logger: FastifyBaseLogger,
    counters: MailCounters,
  ) {
    this.#name = name;
    this.#counters = counters;
    this.#capacity = capacity;
    this.#maxRetryMs = maxRetryMs;
    this.#attempt = attempt;
    this.#logger = logger;
  }

  get size(): number {
    return this.#items.length;
  }

  offer(item: Pending): boolean {
    if (this.#stopping || this.#items.length >= this.#capacity) {
      this.#counters.counted["dropped-queue-full"](1);
      return false;
    }
    this.#items.push(item);
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined;
    });
    return true;
  }

  async #run(): Promise<void> {
    for (let item = this.#items[0]; item !== undefined; item = this.#items[0]) {
      const [outcome, raw, counted] = await this.#deliver(item.mail);
      const reason = raw?.replace(ADDRESS_IN_TEXT, "<address>");
      this.#items.shift();
      this.#counters.counted[counted](1);
      if (outcome !== "delivered") {
        // Never the recipients: they are people's addresses.
        this.#logger.warn({ output: this.#name, reason }, `mail through output ${this.#name} ${outcome}`);
      }
      item.onOutcome?.(outcome, reason);
    }
  }

  /**
   * Attempts until sent, refused, out of retry time, or stopped: the outcome for the sender, the
   * reason of a failure, and the outcome counted in the output's metrics.
   */
  async #deliver(mail: Mail): Promise<[MailOutcome, string | undefined, OutputOutcome]> {
    const started = Date.now();
    for (let retry = 1; ; retry++) {
      const attempted = performance.now();
      let result: AttemptResult;
      try {
        result = await this.#attempt(mail);
      } catch (error) {
        result = { kind: "retry", reason: error instanceof Error ? error.message : String(error) };
      }
      this.#counters.attempted((performance.now() - attempted) / 1000);
      if (result.kind === "sent") return ["delivered", undefined, "sent"];
      if (result.kind === "rejected") return ["failed", result.reason, "dropped-rejected"];
      const wait = result.retryAfterMs ?? backoffDelay(retry);
      if (this.#stopping || Date.now() + wait - started > this.#maxRetryMs) {
        const reason = `retries exhausted: ${result.reason}`;
        return [this.#stopping ? "dropped" : "failed", reason, "dropped-retries-exhausted"];
      }
      this.#counters.retried();
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        this.#timer = setTimeout(resolve, wait);
      });
    }
  }

  /** Waits up to `timeoutMs` for the queue to empty, then drops what is left. */
  async drain(timeoutMs: number): Promise<void> {
    const running = this.#running;
    if (running !== undefined) {
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([running, new Promise((resolve) => (timeout = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timeout);
    }
    this.#stopping = true;
    clearTimeout(this.#timer);
    this.#wake?.();
    const left = this.#items.splice(1);
    if (left.length > 0) this.#counters.counted["dropped-retries-exhausted"](left.length);
    for (const item of left) item.onOutcome?.("dropped", "stopping");
  }
}

/** Sends one message with nodemailer; the `Message-ID` is named after the `from` domain. */
function smtpAttempt(definition: EmailOutputDefinition): { attempt: MailAttempt; close: () => void } {
  const transport = nodemailer().createTransport(
    smtpOptions(definition["smtp-url"], definition["tls-insecure"], definition.timeout.milliseconds),
  );
  const domain = domainOf(definition.from);
  return {
    attempt: async (mail) => {
      try {
        await transport.sendMail({
          from: definition.from,
          to: [...mail.to],
          subject: mail.subject.replace(/\s+/g, " ").trim().slice(0, MAX_SUBJECT),
          text: mail.text,
          ...(mail.html === undefined ? {} : { html: mail.html }),
          headers: { ...mail.headers },
          messageId: `<vigie.${randomUUID()}@${domain}>`,
        });
        return { kind: "sent" };
      } catch (error) {
        return smtpOutcome(error);
      }
    },
    close: () => transport.close(),
  };
}

/** The {@link Mailer} over the declared `email` outputs; nothing is contacted before a message. */
export class SmtpMailer implements Mailer {
  readonly #queues = new Map<string, MailQueue>();
  readonly #closers: Array<() => void> = [];

  /**
   * @param definitions every declared output; those of type `email` get a queue
   * @param options.metrics the outputs' metrics, where each message counts as one event of its output
   * @param options.attemptOf how a message is sent through a definition (tests replace nodemailer)
   */
  constructor(
    definitions: Readonly<Record<string, OutputDefinition>>,
    logger: FastifyBaseLogger,
    options: {
      readonly metrics?: OutputMetrics;
      readonly attemptOf?: (definition: EmailOutputDefinition) => { attempt: MailAttempt; close: () => void };
    } = {},
  ) {
    const attemptOf = options.attemptOf ?? smtpAttempt;
    for (const [name, definition] of Object.entries(definitions)) {
      if (definition.type !== "email") continue;
      const { attempt, close } = attemptOf(definition);
      const capacity = Math.min(definition["queue-size"], MAX_MAIL_QUEUE);
      const maxRetryMs = definition["max-retry-time"].milliseconds;
      const counters = countersOf(options.metrics, name);
      this.#queues.set(name, new MailQueue(name, capacity, maxRetryMs, attempt, logger, counters));
      this.#closers.push(close);
    }
  }

  canSend(output: string): boolean {
    return this.#queues.has(output);
  }

  send(mail: Mail, onOutcome?: (outcome: MailOutcome, reason?: string) => void): boolean {
    const queued = this.#queues.get(mail.output)?.offer({ mail, onOutcome }) ?? false;
    if (!queued) onOutcome?.("dropped", this.#queues.has(mail.output) ? "queue full or stopping" : "no such output");
    return queued;
  }

  /** Messages waiting per output (the one in flight included). */
  queued(output: string): number {
    return this.#queues.get(output)?.size ?? 0;
  }

  /** Graceful stop: each queue sends what it holds for at most `timeoutMs`, the rest is dropped. */
  async close(timeoutMs: number): Promise<void> {
    await Promise.all([...this.#queues.values()].map((queue) => queue.drain(timeoutMs)));
    for (const close of this.#closers) close();
  }
}
