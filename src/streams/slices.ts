/**
 * Work done a slice per turn of the event loop: decoding a large body, pushing many events,
 * searching an index, serialising an answer. No request may hold the loop for long (other
 * requests, pings and pushes run between two slices), so such work looks at the clock as it goes
 * and lets the loop turn once a slice has taken {@link SLICE_MS}.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Stream, StreamEngine } from "./engine.js";
import type { Event } from "./event.js";

/**
 * Milliseconds of work between two turns of the event loop: well under the 50 ms that no request
 * may hold it, leaving room for one slow step (a long regular expression, a scheduler delay).
 */
export const SLICE_MS = 10;

/** The clock of a task done a slice per turn. */
export class TurnClock {
  #start = performance.now();

  /** Whether the current slice has taken its {@link SLICE_MS}. */
  due(): boolean {
    return performance.now() - this.#start > SLICE_MS;
  }

  /** Lets the event loop turn, then starts a new slice. */
  async turn(): Promise<void> {
    await nextTurn();
    this.#start = performance.now();
  }
}

/** Events pushed between two looks at the clock; a batch of at most this many is pushed at once. */
export const EVENTS_PER_CHECK = 512;

/**
 * Delivers events to their streams (engine.deliver), in order: a batch of at most
 * {@link EVENTS_PER_CHECK} events at once, so that the usual push stays synchronous; a larger one
 * in chunks of that size, the loop turning whenever a slice has taken {@link SLICE_MS}.
 * @param targets the streams, looked up again before each chunk (so that a stream removed
 *   meanwhile is noticed: the function may throw, which rejects the returned promise)
 * @returns what engine.deliver returns for a small batch; for a large one, a promise that
 *   resolves once every chunk went through (and, in cluster mode, every owner has its events)
 */
export function deliverSliced(
  engine: StreamEngine,
  targets: () => readonly Stream[],
  events: readonly Event[],
): Promise<void> | undefined {
  if (events.length <= EVENTS_PER_CHECK) return engine.deliver(targets(), events);
  return deliverChunks(engine, targets, events);
}

async function deliverChunks(
  engine: StreamEngine,
  targets: () => readonly Stream[],
  events: readonly Event[],
): Promise<void> {
  const forwarded: Promise<void>[] = [];
  const clock = new TurnClock();
  for (let start = 0; start < events.length; start += EVENTS_PER_CHECK) {
    const pending = engine.deliver(targets(), events.slice(start, start + EVENTS_PER_CHECK));
    if (pending !== undefined) forwarded.push(pending);
    if (clock.due() && start + EVENTS_PER_CHECK < events.length) await clock.turn();
  }
  await Promise.all(forwarded);
}
