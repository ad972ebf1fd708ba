/**
 * One attempt at a time of an output queue, each bounded by the output's `timeout` whatever phase
 * the transport is in, and each cut short on demand (the graceful stop).
 *
 * A queue makes thousands of attempts a second, all between two pushes of the streams that feed
 * it, so an attempt allocates little: the abort controller is kept until an attempt is actually
 * aborted, and one timer serves every attempt (it re-arms for the attempt in progress when it fires
 * for one that already ended), instead of a controller, a signal and a timer each time.
 */
import { DeadlineTimer } from "./deadline-timer.js";
import type { AttemptResult, Transport } from "./delivery.js";

/** A short, secret-free description of an error (see delivery.ts's `errorReason`). */
type ReasonOf = (error: unknown) => string;

/** Runs the attempts of one queue: {@link run} one, {@link interrupt} the one in progress. */
export class Attempts<P> {
  readonly #transport: Transport<P>;
  readonly #timeoutMs: number;
  /** Observes an attempt's duration, in seconds. */
  readonly #observe: (seconds: number) => void;
  readonly #reasonOf: ReasonOf;
  /** Handed to every attempt until one is aborted: a signal that never fired can be shared. */
  #controller = new AbortController();
  readonly #timer = new DeadlineTimer(
    () => (this.#resolve === undefined ? undefined : this.#deadline),
    () => {
      this.#abort();
      this.#finish(this.#generation, { kind: "retry", reason: `no answer within ${this.#timeoutMs} ms` });
    },
  );
  /** Counts attempts, so that a late answer to one that already ended is ignored. */
  #generation = 0;
  /** The attempt in progress: its resolver, start and deadline (performance.now() milliseconds). */
  #resolve: ((result: AttemptResult | undefined) => void) | undefined;
  #startedAt = 0;
  #deadline = 0;

  /**
   * @param timeoutMs the deadline of one attempt, in milliseconds
   * @param observe told each attempt's duration, in seconds, however it ended
   */
  constructor(transport: Transport<P>, timeoutMs: number, observe: (seconds: number) => void, reasonOf: ReasonOf) {
    this.#transport = transport;
    this.#timeoutMs = timeoutMs;
    this.#observe = observe;
    this.#reasonOf = reasonOf;
  }

  /**
   * Sends one unit: resolves with the transport's outcome, a `retry` when it threw, rejected or
   * took longer than the timeout, or `undefined` when {@link interrupt} cut it short. One attempt
   * at a time: the caller awaits each before the next.
   */
  run(payload: P): Promise<AttemptResult | undefined> {
    const generation = ++this.#generation;
    this.#startedAt = performance.now();
    this.#deadline = this.#startedAt + this.#timeoutMs;
    this.#timer.ensure(this.#timeoutMs);
    const done = new Promise<AttemptResult | undefined>((resolve) => {
      this.#resolve = resolve;
    });
    let sending: Promise<AttemptResult>;
    try {
      sending = this.#transport.send(payload, this.#controller.signal);
    } catch (error) {
      sending = Promise.reject(error);
    }
    sending.then(
      (result) => this.#finish(generation, result),
      (error: unknown) => this.#finish(generation, { kind: "retry", reason: this.#reasonOf(error) }),
    );
    return done;
  }

  /** Cuts the attempt in progress short (it resolves `undefined`); nothing when none is. */
  interrupt(): void {
    if (this.#resolve === undefined) return;
    this.#abort();
    this.#finish(this.#generation, undefined);
  }

  /** Stops the timer: no attempt follows. */
  close(): void {
    this.#timer.stop();
  }

  #finish(generation: number, result: AttemptResult | undefined): void {
    const resolve = this.#resolve;
    if (generation !== this.#generation || resolve === undefined) return;
    this.#resolve = undefined;
    this.#observe((performance.now() - this.#startedAt) / 1000);
    resolve(result);
  }

  /** Aborts the shared signal, and takes a fresh controller for the attempts to come. */
  #abort(): void {
    this.#controller.abort();
    this.#controller = new AbortController();
  }
}
