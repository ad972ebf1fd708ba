/**
 * Executes a healthcheck of any kind and times it (healthchecks.md §3): the executors of each kind
 * behind one entry point that answers an {@link Execution}.
 */
import { runCommand } from "./command.js";
import type { Definition } from "./definition.js";
import { runDns } from "./dns.js";
import { HttpExecutor } from "./http.js";
import { failure, type Outcome } from "./outcome.js";
import { runTcp } from "./tcp.js";
import { runTls } from "./tls.js";

/** One execution of a healthcheck. */
export interface Execution extends Outcome {
  /** Execution time in milliseconds (microsecond resolution). */
  readonly duration: number;
  /**
   * End of the execution, RFC 3339 with milliseconds and offset (`2026-11-22T10:15:02.123Z`), as
   * `Date.prototype.toISOString` writes it.
   */
  readonly timestamp: string;
}

/** Runs healthchecks of every kind; owns the http connections. Close it when done. */
export class Executor {
  readonly #http = new HttpExecutor();

  #run(definition: Definition, stop?: AbortSignal): Promise<Outcome> {
    switch (definition.kind) {
      case "http":
        return this.#http.run(definition, stop);
      case "tcp":
        return runTcp(definition, stop);
      case "dns":
        return runDns(definition, stop);
      case "tls":
        return runTls(definition, stop);
      case "command":
        return runCommand(definition, stop);
    }
  }

  /**
   * Executes one healthcheck. Never throws: an unexpected error becomes a failure `internal error:
   * <message>`.
   *
   * @param stop aborted when the module stops; the execution is abandoned
   */
  async execute(definition: Definition, stop?: AbortSignal): Promise<Execution> {
    const started = performance.now();
    let outcome: Outcome;
    try {
      outcome = await this.#run(definition, stop);
    } catch (error) {
      outcome = failure(`internal error: ${error instanceof Error ? error.message : String(error)}`);
    }
    const duration = Math.round((performance.now() - started) * 1000) / 1000;
    return { success: outcome.success, message: outcome.message, duration, timestamp: new Date().toISOString() };
  }

  /** Closes the shared http connections. */
  close(): Promise<void> {
    return this.#http.close();
  }
}
