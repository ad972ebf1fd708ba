/**
 * One timer for a series of deadlines, where a deadline comes thousands of times a second (each
 * batch of an output, each attempt to send one) and most end before it passes: setting and clearing
 * a timer each time would cost more than the work. The timer is set once; when it fires, it asks
 * for the deadline now in force and waits again for that one, or calls `expired` when it has passed.
 */
export class DeadlineTimer {
  readonly #deadline: () => number | undefined;
  readonly #expired: () => void;
  #timer: NodeJS.Timeout | undefined;
  #armed = false;

  /**
   * @param deadline the deadline in force, in performance.now() milliseconds, or undefined when
   *   there is none (the timer then stops until {@link ensure})
   * @param expired called once the deadline in force has passed
   */
  constructor(deadline: () => number | undefined, expired: () => void) {
    this.#deadline = deadline;
    this.#expired = expired;
  }

  /** Makes sure the timer runs, firing in `delayMs` milliseconds if it was stopped. */
  ensure(delayMs: number): void {
    if (!this.#armed) this.#arm(delayMs);
  }

  /** Stops the timer. */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armed = false;
  }

  #arm(delayMs: number): void {
    this.#armed = true;
    this.#timer = setTimeout(this.#fire, delayMs);
    // The server's own handles keep the process alive; this timer must not.
    this.#timer.unref();
  }

  readonly #fire = (): void => {
    this.#armed = false;
    const deadline = this.#deadline();
    if (deadline === undefined) return;
    const wait = deadline - performance.now();
    // Timers and performance.now() may disagree by a fraction of a millisecond.
    if (wait > 1) this.#arm(wait);
    else this.#expired();
  };
}
