/**
 * One request of an {@link HttpTarget}, through undici's dispatcher handler interface rather than
 * `request()`: an output sends thousands of batches a second between two pushes of its streams, and
 * `request()` builds a response stream, its promise machinery and an abort listener of its own for
 * each, where the answer is mostly discarded. The handler reads only what the outcome needs.
 */
import type { Dispatcher } from "undici";
import { ANSWER_SNIPPET_BYTES, type AttemptResult, SENT } from "./delivery.js";
import { parseRetryAfter } from "./retry.js";

/** An answer as an {@link AnswerReader} sees it. */
export interface Answer {
  readonly status: number;
  /** The first bytes of the body (the target's `answerBytes`, 4 096 by default), as UTF-8 text. */
  readonly text: string;
  /** What `Retry-After` asks for, in milliseconds (RFC 9110 §10.2.3), when the answer has one. */
  readonly retryAfterMs: number | undefined;
}

/** A service's reading of its answer: sent, retried or refused, with the service's own reason. */
export type AnswerReader = (answer: Answer) => AttemptResult;

/** Bytes of an answer read to its end so that its connection serves the next request; past it, the connection closes. */
const DRAIN_LIMIT_BYTES = 64 * 1024;

/** Bytes of an accepted or retried answer read and discarded (undici's `dump()` default); past it, the connection closes. */
const DISCARD_LIMIT_BYTES = 128 * 1024;

/** Ends undici's side of an exchange whose outcome is already known. */
class Done extends Error {
  constructor() {
    super("the answer was read");
    this.name = "Done";
  }
}

/**
 * The handler of one request: resolves with the outcome once enough of the answer is read
 * (2xx sent; 429 and 5xx retried with `Retry-After`; other statuses refused with the first
 * {@link ANSWER_SNIPPET_BYTES} bytes; or what `readAnswer` makes of its first `answerBytes`
 * bytes), rejects with undici's error when no answer came (network error, abort of `signal`).
 * A body that fails midway is judged on what arrived.
 */
export class HttpExchange implements Dispatcher.DispatchHandler {
  readonly #resolve: (result: AttemptResult) => void;
  readonly #reject: (error: unknown) => void;
  readonly #signal: AbortSignal;
  readonly #readAnswer: AnswerReader | undefined;
  readonly #answerBytes: number;
  #controller: Dispatcher.DispatchController | undefined;
  #done = false;
  #status = 0;
  #retryAfterMs: number | undefined;
  /** Body bytes kept for the outcome (0: none), and how many are read before the outcome is given. */
  #keep = 0;
  #readUpTo = 0;
  #chunks: Buffer[] | undefined;
  #length = 0;

  constructor(
    signal: AbortSignal,
    readAnswer: AnswerReader | undefined,
    answerBytes: number,
    resolve: (result: AttemptResult) => void,
    reject: (error: unknown) => void,
  ) {
    this.#signal = signal;
    this.#readAnswer = readAnswer;
    this.#answerBytes = answerBytes;
    this.#resolve = resolve;
    this.#reject = reject;
    // The exchange itself listens (handleEvent): no closure per request.
    signal.addEventListener("abort", this, { once: true });
  }

  /** The signal aborted: the request is abandoned. */
  handleEvent(): void {
    this.#fail(this.#signal.reason);
    this.#controller?.abort(new Done());
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#done) controller.abort(new Done());
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.#status = statusCode;
    const retried = statusCode === 429 || statusCode >= 500;
    const refused = !retried && !(statusCode >= 200 && statusCode < 300);
    if (this.#readAnswer !== undefined || retried) {
      this.#retryAfterMs = parseRetryAfter(headers["retry-after"], Date.now());
    }
    if (this.#readAnswer !== undefined) {
      this.#keep = this.#answerBytes;
      this.#readUpTo = Math.max(this.#answerBytes, DRAIN_LIMIT_BYTES);
    } else if (refused) {
      this.#keep = ANSWER_SNIPPET_BYTES;
      this.#readUpTo = ANSWER_SNIPPET_BYTES;
    } else {
      this.#readUpTo = DISCARD_LIMIT_BYTES;
    }
    if (this.#keep > 0) this.#chunks = [];
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#chunks !== undefined && this.#length < this.#keep) this.#chunks.push(chunk);
    this.#length += chunk.length;
    // Enough read: the rest is not downloaded (the connection closes).
    if (this.#length >= this.#readUpTo) {
      this.#answer();
      controller.abort(new Done());
    }
  }

  onResponseEnd(): void {
    this.#answer();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (error instanceof Done) return;
    // Headers arrived: what came of the body is enough for the outcome.
    if (this.#status !== 0) this.#answer();
    else this.#fail(error);
  }

  #answer(): void {
    if (this.#done) return;
    const status = this.#status;
    const readAnswer = this.#readAnswer;
    let result: AttemptResult;
    try {
      if (readAnswer !== undefined) {
        result = readAnswer({ status, text: this.#text(), retryAfterMs: this.#retryAfterMs });
      } else if (status >= 200 && status < 300) {
        result = SENT;
      } else if (status === 429 || status >= 500) {
        const retryAfterMs = this.#retryAfterMs;
        result =
          retryAfterMs === undefined
            ? { kind: "retry", reason: `HTTP ${status}` }
            : { kind: "retry", reason: `HTTP ${status}`, retryAfterMs };
      } else {
        result = { kind: "rejected", reason: `HTTP ${status}`, answer: this.#text() };
      }
    } catch (error) {
      this.#fail(error);
      return;
    }
    this.#end();
    this.#resolve(result);
  }

  /** The kept bytes as UTF-8 text (a cut character becomes U+FFFD). */
  #text(): string {
    return Buffer.concat(this.#chunks ?? [])
      .subarray(0, this.#keep)
      .toString("utf8");
  }

  #fail(error: unknown): void {
    if (this.#done) return;
    this.#end();
    this.#reject(error);
  }

  #end(): void {
    this.#done = true;
    this.#chunks = undefined;
    this.#signal.removeEventListener("abort", this);
  }
}
