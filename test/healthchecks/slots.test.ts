import { describe, expect, it } from "vitest";
import { SlotQueue } from "../../src/healthchecks/slots.js";

interface Item {
  readonly name: string;
  readonly at: number;
}

const item = (name: string, at: number): Item => ({ name, at });
const names = (items: readonly Item[]) => items.map((entry) => entry.name);

describe("SlotQueue", () => {
  it("knows its earliest key exactly and takes only what is due, slot after slot", () => {
    const queue = new SlotQueue<Item>((entry) => entry.at, 10);
    expect(queue.earliest()).toBe(Number.POSITIVE_INFINITY);
    for (const entry of [item("c", 25.5), item("a", 3), item("d", 38), item("b", 7.25), item("e", 21)]) {
      queue.push(entry);
    }
    expect(queue.size).toBe(5);
    expect(queue.earliest()).toBe(3);
    const taken: Item[] = [];
    queue.takeDue(2.9, taken);
    expect(taken).toEqual([]);
    // The slot [20, 30) is due in part: e (21) goes, c (25.5) stays, d (38) is not reached.
    queue.takeDue(24, taken);
    expect(names(taken)).toEqual(["a", "b", "e"]);
    expect(queue.size).toBe(2);
    expect(queue.earliest()).toBe(25.5);
    queue.takeDue(25.5, taken);
    expect(names(taken)).toEqual(["a", "b", "e", "c"]);
    expect(queue.earliest()).toBe(38);
    queue.takeDue(1000, taken);
    expect(names(taken)).toEqual(["a", "b", "e", "c", "d"]);
    expect(queue.size).toBe(0);
    expect(queue.earliest()).toBe(Number.POSITIVE_INFINITY);
  });

  it("keeps the order of pushes within a slot", () => {
    const queue = new SlotQueue<Item>((entry) => entry.at, 10);
    for (const entry of [item("x", 9), item("y", 1), item("z", 5)]) queue.push(entry);
    const taken: Item[] = [];
    queue.takeDue(10, taken);
    expect(names(taken)).toEqual(["x", "y", "z"]);
  });

  it("removes any queued item, the earliest of a slot included, and refuses one not queued", () => {
    const queue = new SlotQueue<Item>((entry) => entry.at, 10);
    const items = Array.from({ length: 100 }, (_, index) => item(`i${index}`, (index * 37) % 100));
    for (const entry of items) queue.push(entry);
    const removed = items.filter((entry) => entry.at % 3 === 0);
    for (const entry of removed) expect(queue.remove(entry)).toBe(true);
    for (const entry of removed) expect(queue.remove(entry)).toBe(false);
    expect(queue.remove(item("stranger", 50))).toBe(false);
    expect(queue.size).toBe(items.length - removed.length);
    // 0 and 3 are gone: 1 is the earliest left.
    expect(queue.earliest()).toBe(1);
    const taken: Item[] = [];
    queue.takeDue(99, taken);
    const kept = items.filter((entry) => entry.at % 3 !== 0);
    expect([...taken].sort((a, b) => a.at - b.at)).toEqual([...kept].sort((a, b) => a.at - b.at));
    expect(queue.size).toBe(0);
  });

  it("opens a slot again after it was emptied, and forgets everything on clear", () => {
    const queue = new SlotQueue<Item>((entry) => entry.at, 10);
    const first = item("first", 12);
    queue.push(first);
    queue.remove(first);
    expect(queue.earliest()).toBe(Number.POSITIVE_INFINITY);
    queue.push(item("again", 14));
    expect(queue.earliest()).toBe(14);
    queue.push(item("later", 40));
    queue.clear();
    expect(queue.size).toBe(0);
    expect(queue.earliest()).toBe(Number.POSITIVE_INFINITY);
    const taken: Item[] = [];
    queue.takeDue(100, taken);
    expect(taken).toEqual([]);
  });
});
