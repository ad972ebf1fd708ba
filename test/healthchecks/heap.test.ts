import { describe, expect, it } from "vitest";
import { MinHeap } from "../../src/healthchecks/heap.js";

interface Item {
  value: number;
  heapIndex: number;
}

const item = (value: number): Item => ({ value, heapIndex: -1 });

describe("MinHeap", () => {
  it("pops items in order", () => {
    const heap = new MinHeap<Item>((entry) => entry.value);
    const values = [5, 3, 9, 1, 7, 3, 0, 8, 2, 6];
    for (const value of values) heap.push(item(value));
    expect(heap.size).toBe(values.length);
    expect(heap.peek()?.value).toBe(0);
    const popped: number[] = [];
    for (let next = heap.pop(); next !== undefined; next = heap.pop()) popped.push(next.value);
    expect(popped).toEqual([...values].sort((a, b) => a - b));
    expect(heap.pop()).toBeUndefined();
  });

  it("removes any item and keeps the order of the rest", () => {
    const heap = new MinHeap<Item>((entry) => entry.value);
    const items = Array.from({ length: 200 }, (_, index) => item((index * 7919) % 200));
    for (const entry of items) heap.push(entry);
    const removed = items.filter((_, index) => index % 3 === 0);
    for (const entry of removed) expect(heap.remove(entry)).toBe(true);
    for (const entry of removed) {
      expect(entry.heapIndex).toBe(-1);
      expect(heap.remove(entry)).toBe(false);
    }
    const popped: number[] = [];
    for (let next = heap.pop(); next !== undefined; next = heap.pop()) popped.push(next.value);
    const expected = items
      .filter((_, index) => index % 3 !== 0)
      .map((entry) => entry.value)
      .sort((a, b) => a - b);
    expect(popped).toEqual(expected);
  });

  it("clears", () => {
    const heap = new MinHeap<Item>((entry) => entry.value);
    const entry = item(1);
    heap.push(entry);
    heap.clear();
    expect(heap.size).toBe(0);
    expect(entry.heapIndex).toBe(-1);
  });
});
