/**
 * A binary min-heap whose items know their position, so that any item can be removed in
 * O(log n): the timer structure of the scheduler (docs/healthchecks.md).
 */

/** An item of a {@link MinHeap}: the heap keeps `heapIndex` up to date (-1 outside the heap). */
export interface HeapItem {
  heapIndex: number;
}

/** A binary min-heap ordered by `before` (true when `a` must come out before `b`). */
export class MinHeap<T extends HeapItem> {
  readonly #items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  /** Number of items. */
  get size(): number {
    return this.#items.length;
  }

  /** The first item, left in place. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** Adds an item that is not in the heap. O(log n). */
  push(item: T): void {
    item.heapIndex = this.#items.length;
    this.#items.push(item);
    this.#up(item.heapIndex);
  }

  /** Removes and returns the first item. O(log n). */
  pop(): T | undefined {
    const first = this.#items[0];
    if (first !== undefined) this.remove(first);
    return first;
  }

  /** Removes an item; false when it is not in the heap. O(log n). */
  remove(item: T): boolean {
    const index = item.heapIndex;
    if (index < 0 || this.#items[index] !== item) return false;
    const last = this.#items.pop() ?? item;
    item.heapIndex = -1;
    if (last !== item) {
      this.#items[index] = last;
      last.heapIndex = index;
      this.#down(index);
      this.#up(last.heapIndex);
    }
    return true;
  }

  /** Removes every item. */
  clear(): void {
    for (const item of this.#items) item.heapIndex = -1;
    this.#items.length = 0;
  }

  /** The item at `index`, which the caller knows to be in range. */
  #at(index: number): T {
    const item = this.#items[index];
    if (item === undefined) throw new RangeError(`no heap item at ${index}`);
    return item;
  }

  #swap(i: number, j: number): void {
    const a = this.#at(i);
    const b = this.#at(j);
    this.#items[i] = b;
    this.#items[j] = a;
    b.heapIndex = i;
    a.heapIndex = j;
  }

  #up(index: number): void {
    let child = index;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if (!this.before(this.#at(child), this.#at(parent))) return;
      this.#swap(child, parent);
      child = parent;
    }
  }

  #down(index: number): void {
    let parent = index;
    const length = this.#items.length;
    for (;;) {
      const left = 2 * parent + 1;
      const right = left + 1;
      let smallest = parent;
      if (left < length && this.before(this.#at(left), this.#at(smallest))) smallest = left;
      if (right < length && this.before(this.#at(right), this.#at(smallest))) smallest = right;
      if (smallest === parent) return;
      this.#swap(parent, smallest);
      parent = smallest;
    }
  }
}
