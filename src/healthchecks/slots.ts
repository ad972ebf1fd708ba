/**
 * The timer structure of the scheduler (scheduler.ts): items grouped by the slot of
 * {@link SlotQueue}'s length their key falls in, the slots in a {@link MinHeap}. The scheduler
 * wakes at most once per slot length and starts everything due at once, so it never needed the
 * items in strict order, only the slots: with 10 000 checks at 10 s, a wake takes the ten or so
 * runs of a slot from one array, where a heap of the checks themselves went down 14 levels per run
 * and wrote the position of every item it moved, objects scattered in memory (docs/benchmarks.md).
 */
import { type HeapItem, MinHeap } from "./heap.js";

/** The items whose keys fall in one slot, in the order they came. */
interface Slot<T> extends HeapItem {
  /** `Math.floor(key / slotMs)` of its items. */
  readonly slot: number;
  readonly items: T[];
  /** The keys of `items`, index for index: read without touching the items. */
  readonly keys: number[];
  /** The smallest of `keys`. */
  min: number;
}

/**
 * Items ordered by a numeric key at the granularity of a slot: {@link SlotQueue.earliest} is
 * exact, and {@link SlotQueue.takeDue} takes every item whose key has passed, slot after slot,
 * within a slot in the order they were pushed. An item's key is read once, when it is pushed, and
 * must not change while it is queued.
 */
export class SlotQueue<T> {
  readonly #slots = new Map<number, Slot<T>>();
  readonly #heap = new MinHeap<Slot<T>>((slot) => slot.slot);
  /** The slot pushed to last: successive pushes mostly land in the same one. */
  #last: Slot<T> | undefined;
  #size = 0;

  /**
   * @param key the ordering key of an item (a finite number, e.g. milliseconds)
   * @param slotMs the length of a slot, in the key's unit (positive)
   */
  constructor(
    private readonly key: (item: T) => number,
    private readonly slotMs: number,
  ) {}

  /** Number of items queued. */
  get size(): number {
    return this.#size;
  }

  /** The smallest key queued; +∞ when empty. */
  earliest(): number {
    return this.#heap.peek()?.min ?? Number.POSITIVE_INFINITY;
  }

  /** Adds an item that is not queued. O(1), or O(log slots) for an item opening a slot. */
  push(item: T): void {
    const key = this.key(item);
    const number = Math.floor(key / this.slotMs);
    let slot = this.#last;
    if (slot === undefined || slot.slot !== number) {
      slot = this.#slots.get(number);
      if (slot === undefined) {
        slot = { slot: number, items: [], keys: [], min: key, heapIndex: -1 };
        this.#slots.set(number, slot);
        this.#heap.push(slot);
      }
      this.#last = slot;
    }
    slot.items.push(item);
    slot.keys.push(key);
    if (key < slot.min) slot.min = key;
    this.#size++;
  }

  /** Removes a queued item; false when it is not queued. O(items of its slot). */
  remove(item: T): boolean {
    const slot = this.#slots.get(Math.floor(this.key(item) / this.slotMs));
    const index = slot === undefined ? -1 : slot.items.indexOf(item);
    if (slot === undefined || index < 0) return false;
    slot.items.splice(index, 1);
    const [key] = slot.keys.splice(index, 1);
    this.#size--;
    if (slot.items.length === 0) this.#drop(slot);
    else if (key === slot.min) slot.min = Math.min(...slot.keys);
    return true;
  }

  /**
   * Moves every item whose key is at most `now` to the end of `into`: the slots in order, each
   * slot's items in the order they were pushed.
   */
  takeDue(now: number, into: T[]): void {
    for (let slot = this.#heap.peek(); slot !== undefined && slot.min <= now; slot = this.#heap.peek()) {
      const { items, keys } = slot;
      let kept = 0;
      let min = Number.POSITIVE_INFINITY;
      for (let index = 0; index < items.length; index++) {
        const key = keys[index] as number;
        const item = items[index] as T;
        if (key <= now) {
          into.push(item);
          continue;
        }
        items[kept] = item;
        keys[kept++] = key;
        if (key < min) min = key;
      }
      this.#size -= items.length - kept;
      if (kept === 0) {
        this.#drop(slot);
        continue;
      }
      // Part of the slot is not due yet: the later slots are not either.
      items.length = kept;
      keys.length = kept;
      slot.min = min;
      return;
    }
  }

  /** Forgets every item. */
  clear(): void {
    this.#slots.clear();
    this.#heap.clear();
    this.#last = undefined;
    this.#size = 0;
  }

  #drop(slot: Slot<T>): void {
    this.#slots.delete(slot.slot);
    this.#heap.remove(slot);
    if (this.#last === slot) this.#last = undefined;
  }
}
