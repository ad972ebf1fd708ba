/**
 * A binary min-heap whose items know their position, so that any item can be removed in
 * O(log n): the timer structure of the executions' deadlines (deadline.ts) and of the scheduler's
 * slots (slots.ts).
 *
 * The keys live in a typed array beside the items rather than being read from the items: when it
 * held 10 000 scheduled checks the heap was 14 levels deep, and reading two children's objects
 * (scattered in memory) at each level through a comparator showed in a native profile as about
 * 5 % of the whole process's CPU (docs/benchmarks.md). Items are moved into a hole rather than
 * swapped, so each level writes one item's position, not two.
 */

/** An item of a {@link MinHeap}: the heap keeps `heapIndex` up to date (-1 outside the heap). */
export interface HeapItem {
  heapIndex: number;
}

/** Slots allocated at first; the arrays double when full. */
const INITIAL_CAPACITY = 64;

/**
 * A binary min-heap ordered by a numeric key (smallest first; equal keys in no particular order).
 * The key is read once, when the item is pushed: an item's key must not change while it is in the
 * heap (remove it, change it, push it again).
 */
export class MinHeap<T extends HeapItem> {
  #items: (T | undefined)[] = new Array(INITIAL_CAPACITY);
  #keys = new Float64Array(INITIAL_CAPACITY);
  #size = 0;

  /** @param key the ordering key of an item (a number, compared with `<`; not NaN) */
  constructor(private readonly key: (item: T) => number) {}

  /** Number of items. */
  get size(): number {
    return this.#size;
  }

  /** The first item, left in place. */
  peek(): T | undefined {
    return this.#size === 0 ? undefined : this.#items[0];
  }

  /** Adds an item that is not in the heap. O(log n). */
  push(item: T): void {
    if (this.#size === this.#keys.length) this.#grow();
    const index = this.#size++;
    this.#up(index, item, this.key(item));
  }

  /** Removes and returns the first item. O(log n). */
  pop(): T | undefined {
    const first = this.peek();
    if (first !== undefined) this.remove(first);
    return first;
  }

  /** Removes an item; false when it is not in the heap. O(log n). */
  remove(item: T): boolean {
    const index = item.heapIndex;
    if (index < 0 || index >= this.#size || this.#items[index] !== item) return false;
    item.heapIndex = -1;
    const lastIndex = --this.#size;
    const last = this.#items[lastIndex] as T;
    const lastKey = this.#keys[lastIndex] as number;
    this.#items[lastIndex] = undefined;
    if (last !== item) {
      // The last item fills the hole: down when it is larger than the hole's children, else up.
      const parent = (index - 1) >> 1;
      if (index > 0 && lastKey < (this.#keys[parent] as number)) this.#up(index, last, lastKey);
      else this.#down(index, last, lastKey);
    }
    return true;
  }

  /** Removes every item. */
  clear(): void {
    for (let index = 0; index < this.#size; index++) {
      const item = this.#items[index];
      if (item !== undefined) item.heapIndex = -1;
      this.#items[index] = undefined;
    }
    this.#size = 0;
  }

  #grow(): void {
    const keys = new Float64Array(this.#keys.length * 2);
    keys.set(this.#keys);
    this.#keys = keys;
    this.#items.length = keys.length;
  }

  /** Places `item` (of `key`) at the hole `index` or above it, moving larger parents down. */
  #up(index: number, item: T, key: number): void {
    const items = this.#items;
    const keys = this.#keys;
    let hole = index;
    while (hole > 0) {
      const parent = (hole - 1) >> 1;
      const parentKey = keys[parent] as number;
      if (!(key < parentKey)) break;
      const moved = items[parent] as T;
      items[hole] = moved;
      keys[hole] = parentKey;
      moved.heapIndex = hole;
      hole = parent;
    }
    items[hole] = item;
    keys[hole] = key;
    item.heapIndex = hole;
  }

  /** Places `item` (of `key`) at the hole `index` or below it, moving smaller children up. */
  #down(index: number, item: T, key: number): void {
    const items = this.#items;
    const keys = this.#keys;
    const size = this.#size;
    let hole = index;
    for (;;) {
      const left = 2 * hole + 1;
      if (left >= size) break;
      const right = left + 1;
      let child = left;
      let childKey = keys[left] as number;
      if (right < size && (keys[right] as number) < childKey) {
        child = right;
        childKey = keys[right] as number;
      }
      if (!(childKey < key)) break;
      const moved = items[child] as T;
      items[hole] = moved;
      keys[hole] = childKey;
      moved.heapIndex = hole;
      hole = child;
    }
    items[hole] = item;
    keys[hole] = key;
    item.heapIndex = hole;
  }
}
