/**
 * Executes a healthcheck of any kind and times it (docs/healthchecks.md): the executors of each kind
 * behind one entry point that answers an {@link Execution}.
 */

import { errorMessage } from "../platform/errors.js";
import { rfc3339 } from "../platform/time.js";
import { loadedUndici, loadUndici } from "../platform/undici.js";
import { runCommand } from "./command.js";
import type { Definition, Source } from "./definition.js";
import { runDns } from "./dns.js";
import { HttpExecutor } from "./http.js";
import { failure, type Outcome } from "./outcome.js";
import { runTcp } from "./tcp.js";
import { runTls } from "./tls.js";
import { TLS_FILE_PATHS, type TlsFileLocation } from "./tls-files.js";

/** One execution of a healthcheck. */
export interface Execution extends Outcome {
  /** Execution time in milliseconds (microsecond resolution). */
  readonly duration: number;
  /**
   * End of the execution, RFC 3339 with milliseconds and offset (`2026-11-22T10:15:02.123Z`), as
   * `Date.prototype.toISOString` writes it.
   */
  readonly timestamp: string;
  /** End of the execution, milliseconds since the epoch (the same instant as `timestamp`). */
  readonly time: number;
}

/** Options of {@link Executor}. */
export interface ExecutorOptions {
  /**
   * `healthchecks.tls-directory` (absolute), where the TLS file names of API checks are
   * (docs/security.md); undefined when not configured.
   */
  readonly tlsDirectory?: string;
}

/** How one execution runs. */
export interface ExecuteOptions {
  /**
   * Where the check comes from: the TLS files (`key`, `cert`, `cacert`) of an `api` check are
   * names under `healthchecks.tls-directory`, those of a `configuration` check paths as given
   * (docs/security.md). One-off checks come from the API.
   */
  readonly source: Source;
  /** Aborted when the module stops; the execution is abandoned. */
  readonly stop?: AbortSignal;
}

/** The execution of an outcome that ended now, begun at `started` (performance.now()). */
function executionOf(outcome: Outcome, started: number): Execution {
  const duration = Math.round((performance.now() - started) * 1000) / 1000;
  const time = Date.now();
  return { success: outcome.success, message: outcome.message, duration, timestamp: rfc3339(time), time };
}

/** Runs healthchecks of every kind; owns the http connections. Close it when done. */
export class Executor {
  readonly #http = new HttpExecutor();
  readonly #apiFiles: TlsFileLocation;

  constructor(options: ExecutorOptions = {}) {
    this.#apiFiles = { kind: "names", directory: options.tlsDirectory };
  }

  /** The outcome of a check of a kind other than http. */
  #run(definition: Exclude<Definition, { kind: "http" }>, options: ExecuteOptions): Promise<Outcome> {
    const { stop } = options;
    switch (definition.kind) {
      case "tcp":
        return runTcp(definition, stop);
      case "dns":
        return runDns(definition, stop);
      case "tls":
        return runTls(definition, stop, this.#files(options));
      case "command":
        return runCommand(definition, stop);
      case "heartbeat":
        // Never scheduled: the job pings (heartbeat/); a one-off heartbeat is refused by validation.
        return Promise.resolve(failure("heartbeat checks are pinged by their job, not run"));
    }
  }

  /** How the TLS files of a check lead to files (docs/security.md). */
  #files(options: ExecuteOptions): TlsFileLocation {
    return options.source === "api" ? this.#apiFiles : TLS_FILE_PATHS;
  }

  /**
   * Executes one healthcheck; a promise of {@link Executor.start}'s execution. Never rejects.
   */
  execute(definition: Definition, options: ExecuteOptions): Promise<Execution> {
    return new Promise((resolve) => this.start(definition, options, resolve));
  }

  /**
   * Executes one healthcheck and calls `onEnd` once with its execution, possibly before it returns
   * (a check that cannot start). Never throws: an unexpected error becomes a failure `internal
   * error: <message>`. The message may quote what the target or the command said; callers that
   * show it redact it (redaction.ts, `redactMessage`). The periodic runs take this form: an http
   * check costs no promise (about 1 000 runs a second with 10 000 checks, docs/benchmarks.md).
   */
  start(definition: Definition, options: ExecuteOptions, onEnd: (execution: Execution) => void): void {
    const started = performance.now();
    if (definition.kind === "http") {
      if (loadedUndici() === undefined) {
        // The process's first http checks wait for the HTTP client to load (platform/undici.ts):
        // neither their duration nor their timeout counts that wait.
        loadUndici().then(
          () => this.start(definition, options, onEnd),
          (error: unknown) => onEnd(executionOf(failure(`internal error: ${errorMessage(error)}`), performance.now())),
        );
        return;
      }
      try {
        this.#http.start(definition, options.stop, this.#files(options), (outcome) =>
          onEnd(executionOf(outcome, started)),
        );
      } catch (error) {
        onEnd(executionOf(failure(`internal error: ${errorMessage(error)}`), started));
      }
      return;
    }
    let running: Promise<Outcome>;
    try {
      running = this.#run(definition, options);
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (outcome) => onEnd(executionOf(outcome, started)),
      (error: unknown) => onEnd(executionOf(failure(`internal error: ${errorMessage(error)}`), started)),
    );
  }

  /** Closes the shared http connections. */
  close(): Promise<void> {
    return this.#http.close();
  }
}
