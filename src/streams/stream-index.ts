/**
 * The index of a stream (docs/streams.md): the latest event per key, in memory. The key is made of the
 * listed fields present in the event; an event with state `expired` removes its key. The clock
 * (`current-time`) is the largest event time seen by `index` actions and never goes backwards.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Predicate } from "./condition.js";
import { type Event, isExpired, timeOf } from "./event.js";

/** Entries a bounded search examines between two looks at the clock. */
const ENTRIES_PER_CHECK = 64;

interface Entry {
  readonly key: string;
  readonly event: Event;
  readonly time: number;
}

/** The latest event per key of one stream. */
export class StreamIndex {
  readonly #entries = new Map<string, Entry>();
  #currentTime = 0;

  /** @param maxSize the most keys kept (`streams.max-index-size`) */
  constructor(readonly maxSize: number = Number.POSITIVE_INFINITY) {}

  /** The index clock in seconds; 0 before the first indexed event. */
  get currentTime(): number {
    return this.#currentTime;
  }

  /** How many events the index holds (`stream_index_size`). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Stores an event under `key` (built by the `index` action from the listed fields), or removes
   * the key when the event's state is `expired`. Events without a numeric time are not indexed, nor
   * events with a new key once the index holds `maxSize` keys.
   * @returns false when the event has no time or the index is full
   */
  put(key: string, event: Event): boolean {
    const time = timeOf(event);
    if (time === undefined) return false;
    if (time > this.#currentTime) this.#currentTime = time;
    if (event.state === "expired") this.#entries.delete(key);
    else if (this.#entries.size >= this.maxSize && !this.#entries.has(key)) return false;
    else this.#entries.set(key, { key, event, time });
    return true;
  }

  /** Every indexed event matching `predicate`, sorted by time then key. */
  search(predicate: Predicate): Event[] {
    const found: Entry[] = [];
    for (const entry of this.#entries.values()) if (predicate(entry.event)) found.push(entry);
    found.sort((a, b) => a.time - b.time || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.map((entry) => entry.event);
  }

  /**
   * The indexed events matching `predicate`, as {@link search} finds them, without holding the event
   * loop and without collecting more than `limit`: the entries are examined a slice at a time, the
   * loop turning after each `sliceMs` of work (other requests and pushes run in between, so an
   * entry replaced meanwhile is seen replaced, one added may be seen or not), and the search stops
   * at the first match beyond `limit`.
   * @param sliceMs milliseconds of work between two turns of the event loop
   * @returns the matches sorted by time then key, or undefined when more than `limit` match
   */
  async searchAtMost(predicate: Predicate, limit: number, sliceMs: number): Promise<Event[] | undefined> {
    const found: Entry[] = [];
    let sliceStart = performance.now();
    let examined = 0;
    for (const entry of this.#entries.values()) {
      if (predicate(entry.event)) {
        if (found.length === limit) return undefined;
        found.push(entry);
      }
      if (++examined % ENTRIES_PER_CHECK === 0 && performance.now() - sliceStart > sliceMs) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
    found.sort((a, b) => a.time - b.time || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.map((entry) => entry.event);
  }

  /** Removes and returns the events expired at clock `now` (seconds), sorted by time then key. */
  removeExpired(now: number): Event[] {
    const expired: Entry[] = [];
    for (const entry of this.#entries.values()) {
      if (isExpired(entry.event, now)) expired.push(entry);
    }
    for (const entry of expired) this.#entries.delete(entry.key);
    expired.sort((a, b) => a.time - b.time || (a.key < b.key ? -1 : 1));
    return expired.map((entry) => entry.event);
  }
}
