/**
 * The bound of one execution (docs/healthchecks.md): an abort signal that fires when the timeout
 * elapses or when the module stops, whichever comes first. The tcp, dns, tls and command executors
 * use it; the http executor settles through its undici handler's own timer (http.ts).
 */

/** A running bound; call {@link Deadline.clear} once the execution is over. */
export interface Deadline {
  /** Aborted at the timeout or when `stop` aborts. */
  readonly signal: AbortSignal;
  /** True when the timeout (not a stop) aborted the signal. */
  timedOut(): boolean;
  /** Calls `listener` once when the signal aborts, or at once when it already has. */
  onAbort(listener: () => void): void;
  /** Cancels the timer and the listeners. */
  clear(): void;
}

/** The reason of an abort caused by the timeout. */
export class TimeoutError extends Error {
  constructor(milliseconds: number) {
    super(`timeout after ${milliseconds}ms`);
    this.name = "TimeoutError";
  }
}

/**
 * Starts a deadline.
 *
 * @param milliseconds the timeout of the execution
 * @param stop aborted when the module stops (its executions are abandoned)
 */
export function startDeadline(milliseconds: number, stop?: AbortSignal): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new TimeoutError(milliseconds));
  }, milliseconds);
  // An execution in flight must not keep a stopping process alive.
  timer.unref();
  const onStop = () => controller.abort(stop?.reason);
  if (stop?.aborted) onStop();
  else stop?.addEventListener("abort", onStop, { once: true });
  const listeners: Array<() => void> = [];
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    onAbort: (listener) => {
      if (controller.signal.aborted) {
        listener();
        return;
      }
      listeners.push(listener);
      controller.signal.addEventListener("abort", listener, { once: true });
    },
    clear: () => {
      clearTimeout(timer);
      stop?.removeEventListener("abort", onStop);
      for (const listener of listeners) controller.signal.removeEventListener("abort", listener);
    },
  };
}
