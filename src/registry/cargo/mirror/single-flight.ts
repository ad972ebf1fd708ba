/**
 * One upstream request per key at a time: concurrent callers asking for the same missing file
 * share the first one's promise. Bounded: past `max` keys in flight a new key is refused rather
 * than queued, so a flood of distinct requests cannot pile up work.
 */
import { UnavailableError } from "../../../platform/errors.js";

/** Promises in flight by key, at most `max` of them. */
export class SingleFlight<T> {
  readonly #flights = new Map<string, Promise<T>>();

  /** @param max keys in flight at once */
  constructor(readonly max: number) {}

  /** Keys in flight now. */
  get size(): number {
    return this.#flights.size;
  }

  /**
   * The result of `work` for `key`, started unless a call for `key` is in flight, whose result is
   * then shared (its rejection too).
   * @throws UnavailableError when `max` other keys are in flight
   */
  run(key: string, work: () => Promise<T>): Promise<T> {
    const running = this.#flights.get(key);
    if (running !== undefined) return running;
    if (this.#flights.size >= this.max) {
      throw new UnavailableError(`the mirror is fetching ${this.max} files from its upstream already: retry shortly`);
    }
    const flight = work().finally(() => this.#flights.delete(key));
    this.#flights.set(key, flight);
    return flight;
  }
}
