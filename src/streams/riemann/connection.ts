/**
 * One connection of the Riemann protocol input: frames in, replies out, in order (see server.ts
 * for the rules it follows), its bytes counted in the input's {@link ByteBudget}.
 */
import type { Socket } from "node:net";
import type { FastifyBaseLogger } from "fastify";
import type { Duration } from "../../platform/duration.js";
import type { RiemannMetrics } from "../metrics.js";
import type { BudgetHolder, ByteBudget } from "./budget.js";
import { FrameReader } from "./framing.js";
import type { RiemannHandler } from "./handler.js";

/**
 * How long a closing connection may take to flush its last replies and see the peer's end before
 * it is destroyed, in milliseconds (a peer that never reads would otherwise hold it forever).
 */
export const CLOSE_GRACE_MS = 2_000;

/** What every connection of one input shares: its handler, bounds, budget, metrics and logs. */
export interface ConnectionContext {
  readonly handler: RiemannHandler;
  readonly logger: FastifyBaseLogger;
  readonly metrics: RiemannMetrics;
  /** The bytes all connections may hold together (`max-buffered-bytes`). */
  readonly budget: ByteBudget;
  /** Bytes of a frame's body at most (`max-frame-size`). */
  readonly maxFrameSize: number;
  /** How long a frame may take to arrive once its first bytes did (`frame-timeout`). */
  readonly frameTimeout: Duration;
  /** Logs a warning, at most once a minute for each `bound`. */
  readonly warn: (bound: string, fields: Record<string, unknown>, message: string) => void;
}

/** One client connection: frames in, replies out, in order. */
export class Connection implements BudgetHolder {
  readonly #socket: Socket;
  readonly #context: ConnectionContext;
  readonly #handler: RiemannHandler;
  readonly #reader: FrameReader;
  readonly #logger: FastifyBaseLogger;
  readonly #frameTimeoutMs: number;
  /** Bytes counted in the budget for this connection, as last reported. */
  #held = 0;
  /** Bytes of the frame being handled in slices (it is no longer in the reader). */
  #inFlight = 0;
  /** When the socket's write buffer last filled up (performance.now(), milliseconds). */
  #blockedSince = 0;
  /**
   * When the first bytes of the frame being waited for arrived (performance.now(), milliseconds);
   * undefined when no frame is partly received, or when the server, not the peer, holds things up
   * (a message handled in slices, a client not reading its replies).
   */
  #partialSince: number | undefined;
  /**
   * Fires at the earliest when the partial frame's time is up; armed only while bytes are buffered.
   * Not re-armed per frame: when it fires it looks at {@link #partialSince} and waits for what is
   * left of the current frame's time, so that fast clients whose frames straddle chunks do not
   * set and clear a timer per chunk.
   */
  #frameTimer: NodeJS.Timeout | undefined;
  /** Waiting for `drain` before handling more frames. */
  #blocked = false;
  /** A message is being handled in slices: the next frames wait for its reply. */
  #busy = false;
  /** The peer ended its side: what is buffered is all there will be. */
  #peerEnded = false;
  /** No more frames are handled (closing); what arrives is discarded. */
  #finished = false;
  #graceTimer: NodeJS.Timeout | undefined;
  /** Resolves once the socket is closed and the connection counted out. */
  readonly closed: Promise<void>;

  constructor(socket: Socket, context: ConnectionContext, onClose: () => void) {
    this.#socket = socket;
    this.#context = context;
    this.#handler = context.handler;
    this.#reader = new FrameReader(context.maxFrameSize);
    this.#frameTimeoutMs = context.frameTimeout.milliseconds;
    this.#logger = context.logger;
    socket.on("data", (chunk: Buffer) => {
      if (this.#finished) return;
      this.#reader.push(chunk);
      this.#process();
      this.#account();
    });
    socket.on("drain", () => {
      if (!this.#blocked) return;
      this.#blocked = false;
      this.#process();
      if (!this.#blocked && !this.#busy && !this.#finished) socket.resume();
      this.#account();
    });
    socket.on("end", () => {
      this.#peerEnded = true;
      // When finished, our side is ending too: the socket closes itself once the last reply is out.
      // While a message is handled in slices, its reply resumes the processing.
      if (!this.#finished && !this.#busy) this.#process();
      this.#account();
    });
    socket.on("error", (error) => {
      // Resets and broken pipes are what clients that vanish look like; `close` follows.
      this.#logger.debug({ err: error, remote: socket.remoteAddress }, "riemann: connection error");
    });
    this.closed = new Promise((resolve) => {
      socket.on("close", () => {
        this.#finished = true;
        this.#reader.clear();
        this.#account();
        this.#stopFrameTimer();
        if (this.#graceTimer !== undefined) clearTimeout(this.#graceTimer);
        onClose();
        resolve();
      });
    });
  }

  /** Ends the connection after the frame being handled (called when the server closes). */
  close(): void {
    this.#finish();
  }

  /**
   * Since when this connection's bytes wait on its client: the first bytes of its unfinished
   * frame, or its write buffer filling up (the client does not read its replies); undefined while
   * a message is handled (the server holds things up) and once closing.
   */
  get waitingSince(): number | undefined {
    if (this.#finished || this.#busy) return undefined;
    return this.#blocked ? this.#blockedSince : this.#partialSince;
  }

  /**
   * Closes the connection because the input holds more than `max-buffered-bytes` and this one
   * waited longest on its client: with an error reply naming the bound when the client reads, at
   * once (destroyed) when its replies are what is held.
   */
  shed(): void {
    if (this.#finished) return;
    const socket = this.#socket;
    const limit = this.#context.budget.limit;
    const held = this.#held;
    this.#context.metrics.closed("max-buffered-bytes");
    this.#logger.debug({ remote: socket.remoteAddress, held, limit }, "riemann: connection shed");
    this.#context.warn(
      "max-buffered-bytes",
      { limit },
      "riemann: connection closed, streams.riemann.max-buffered-bytes reached (logged at most once a minute)",
    );
    if (this.#blocked) {
      // A client that does not read would not see a reply; what it holds is its unread replies.
      this.#finish();
      socket.destroy();
      return;
    }
    socket.write(
      this.#handler.refuse(
        `the input holds more than ${limit} bytes for its clients (streams.riemann.max-buffered-bytes) and this connection's unfinished frame waited longest: closing the connection`,
      ),
    );
    this.#finish();
  }

  /**
   * Reports to the budget what this connection holds now: the bytes read and not handled, the
   * frame being handled, and while blocked the replies its client has not read.
   */
  #account(): void {
    const held = this.#finished
      ? 0
      : this.#reader.buffered + this.#inFlight + (this.#blocked ? this.#socket.writableLength : 0);
    const delta = held - this.#held;
    if (delta === 0) return;
    // Set first: the budget may shed this very connection, which reports again.
    this.#held = held;
    this.#context.budget.change(delta);
  }

  /** Handles the buffered frames, in order, until one is incomplete or the socket must drain. */
  #process(): void {
    const socket = this.#socket;
    socket.cork();
    try {
      while (!this.#blocked && !this.#busy && !this.#finished) {
        const next = this.#reader.next();
        switch (next.kind) {
          case "frame": {
            // This frame arrived in time; the next one's time starts when its first bytes are seen.
            this.#partialSince = undefined;
            const reply = this.#handler.handle(next.body);
            if (reply instanceof Promise) {
              // A large message goes through a slice per turn: read nothing more until it is answered.
              this.#busy = true;
              this.#inFlight = next.body.length;
              socket.pause();
              void reply.then((answer) => this.#answered(answer));
              return;
            }
            if (!socket.write(reply)) {
              this.#blocked = true;
              this.#blockedSince = performance.now();
              socket.pause();
            }
            break;
          }
          case "oversized": {
            const limit = this.#reader.maxFrameSize;
            this.#logger.debug({ remote: socket.remoteAddress, length: next.length, limit }, "riemann: frame too long");
            this.#context.metrics.closed("max-frame-size");
            socket.write(
              this.#handler.refuse(
                `frame of ${next.length} bytes is over the limit of ${limit} bytes (streams.riemann.max-frame-size): closing the connection`,
              ),
            );
            this.#finish();
            return;
          }
          case "incomplete":
            if (this.#peerEnded) this.#endOfInput();
            else this.#awaitFrame();
            return;
        }
      }
    } finally {
      socket.uncork();
    }
  }

  /**
   * The reply to a message handled in slices: written, then the next frames are handled. Undefined
   * when the handler stopped it (the server is closing, so is this connection).
   */
  #answered(reply: Buffer | undefined): void {
    this.#busy = false;
    this.#inFlight = 0;
    if (this.#finished || reply === undefined) {
      this.#account();
      return;
    }
    const socket = this.#socket;
    if (!socket.write(reply)) {
      this.#blocked = true;
      this.#blockedSince = performance.now();
    } else {
      this.#process();
      if (!this.#blocked && !this.#busy && !this.#finished) socket.resume();
    }
    this.#account();
  }

  /**
   * Waiting for the peer's bytes: with part of a frame buffered, its deadline runs from when those
   * bytes were first seen; with nothing buffered, there is no deadline and no timer (idle clients).
   */
  #awaitFrame(): void {
    if (this.#reader.buffered === 0) {
      this.#partialSince = undefined;
      this.#stopFrameTimer();
      return;
    }
    this.#partialSince ??= performance.now();
    this.#frameTimer ??= this.#startFrameTimer(this.#frameTimeoutMs);
  }

  #startFrameTimer(delayMs: number): NodeJS.Timeout {
    const timer = setTimeout(() => this.#frameTimeUp(), delayMs);
    // Never what keeps the process alive: the server's own handle does that while it runs.
    timer.unref();
    return timer;
  }

  #stopFrameTimer(): void {
    if (this.#frameTimer === undefined) return;
    clearTimeout(this.#frameTimer);
    this.#frameTimer = undefined;
  }

  /**
   * The frame timer fired: nothing to do when no frame is partly received any more, wait for the
   * rest of the current frame's time when it started later, else refuse the frame and close.
   */
  #frameTimeUp(): void {
    this.#frameTimer = undefined;
    const since = this.#partialSince;
    if (since === undefined || this.#finished) return;
    const left = since + this.#frameTimeoutMs - performance.now();
    if (left > 0) {
      this.#frameTimer = this.#startFrameTimer(left);
      return;
    }
    const socket = this.#socket;
    const buffered = this.#reader.buffered;
    const declared = this.#reader.declaredLength;
    this.#logger.debug({ remote: socket.remoteAddress, buffered, declared }, "riemann: frame not completed in time");
    this.#context.metrics.closed("frame-timeout");
    socket.write(
      this.#handler.refuse(
        `frame not completed within ${this.#context.frameTimeout.text} (streams.riemann.frame-timeout): closing the connection`,
      ),
    );
    this.#finish();
  }

  /** The peer ended its side and every whole frame is answered: answer a truncated one, then end. */
  #endOfInput(): void {
    const buffered = this.#reader.buffered;
    if (buffered > 0 && this.#socket.writable) {
      const declared = this.#reader.declaredLength;
      const expected = declared === undefined ? "a 4-byte length" : `${declared} bytes and its 4-byte length`;
      this.#logger.debug({ remote: this.#socket.remoteAddress, buffered, declared }, "riemann: truncated frame");
      this.#socket.write(
        this.#handler.refuse(`truncated frame: the connection ended after ${buffered} bytes of ${expected}`),
      );
    }
    this.#finish();
  }

  /**
   * Handles no more frames, ends the socket once its replies are flushed and discards what still
   * arrives, so the peer can read the last reply before the connection closes (closing with unread
   * input would reset it); destroys it after {@link CLOSE_GRACE_MS} if the peer lingers. What it
   * held is released from the budget at once.
   */
  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#reader.clear();
    this.#account();
    this.#partialSince = undefined;
    this.#stopFrameTimer();
    const socket = this.#socket;
    // Once both sides have ended, the socket destroys itself (autoDestroy).
    socket.end();
    socket.resume();
    this.#graceTimer = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
    this.#graceTimer.unref();
  }
}
