import { describe, expect, it } from "vitest";
import { type Event, fieldReader } from "../../src/streams/event.js";
import { IndexKeys, StreamIndex } from "../../src/streams/stream-index.js";

const fields = [
  { name: "service", read: fieldReader(["service"]) },
  { name: "attributes.host", read: fieldReader(["attributes", "host"]) },
];

/** The key format: each present field as `name SOH value NUL`, a value not a string in JSON. */
function expected(event: Event): string {
  let key = "";
  for (const { name, read } of fields) {
    const value = read(event);
    if (value !== undefined) key += `${name}\u0001${typeof value === "string" ? value : JSON.stringify(value)}\u0000`;
  }
  return key;
}

describe("IndexKeys", () => {
  it("makes the key of the present fields, whatever their values", () => {
    const keys = new IndexKeys(fields);
    const values: unknown[] = ["cpu", "", "é中", 1, 1.5, -0, Number.NaN, true, null, undefined, [1], { a: 1 }];
    for (let round = 0; round < 2; round++) {
      for (const service of values) {
        for (const host of values) {
          const event: Event = { service, attributes: { host } };
          expect(keys.of(event), `${String(service)} ${String(host)}`).toBe(expected(event));
        }
      }
    }
    expect(keys.of({})).toBe("");
    expect(keys.of({ attributes: "not an object" })).toBe("");
  });

  it("gives the same key to a string and a number of the same JSON text, as before", () => {
    const keys = new IndexKeys(fields);
    expect(keys.of({ service: "1" })).toBe(keys.of({ service: 1 }));
  });

  it("still makes right keys once it has started over", () => {
    const keys = new IndexKeys(fields);
    for (let i = 0; i < 100_100; i++) {
      const event = { service: `s${i % 100_050}`, attributes: { host: i % 3 } };
      const key = keys.of(event);
      if (i % 997 === 0 || i > 100_000) expect(key).toBe(expected(event));
    }
  });
});

describe("IndexKeys' prediction of the next key", () => {
  /** Top-level fields whose readers count their calls (a predicted key is not looked up). */
  function counted(names: readonly string[]) {
    const calls = { count: 0 };
    const keyFields = names.map((name) => {
      const read = fieldReader([name]);
      return {
        name,
        read: (event: Event) => {
          calls.count++;
          return read(event);
        },
      };
    });
    return { keys: new IndexKeys(keyFields), calls };
  }

  it("finds the keys that come in the same order as last time without looking them up", () => {
    const { keys, calls } = counted(["service", "instance"]);
    const events = Array.from({ length: 5 }, (_, i) => ({ service: `s${i % 2}`, instance: `i${i}` }));
    const slots = events.map((event) => keys.find(event));
    expect(calls.count).toBe(10);
    // The first key once more: nothing followed the last one yet.
    expect(keys.find(events[0] as Event)).toBe(slots[0]);
    expect(calls.count).toBe(12);
    calls.count = 0;
    for (let round = 0; round < 3; round++) {
      events.forEach((event, i) => {
        if (round > 0 || i > 0) expect(keys.find({ ...event })).toBe(slots[i]);
      });
    }
    expect(calls.count).toBe(0);
  });

  it("finds the right key when the prediction is wrong, in any order and with any values", () => {
    const keys = new IndexKeys(fields);
    const values: unknown[] = ["a", "b", "1", 1, -0, 0, Number.NaN, true, null, undefined, { a: 1 }];
    const events: Event[] = [];
    for (const service of values) for (const host of values) events.push({ service, attributes: { host } });
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 20; round++) {
      // The same order, then orders that mostly keep runs of the previous one.
      const order = events.map((_, i) => i);
      if (round > 2) for (let i = 0; i < order.length; i++) if (random() < 0.2) order.reverse();
      for (const i of order) {
        const event = events[i] as Event;
        expect(keys.of(event), `round ${round}, event ${i}`).toBe(expected(event));
      }
    }
  });

  it("stops predicting a while when its predictions keep failing, and predicts again after", () => {
    const { keys, calls } = counted(["service"]);
    const events = Array.from({ length: 64 }, (_, i) => ({ service: `s${i}` }));
    const slots = events.map((event) => keys.find(event));
    // A new order each round (another stride through the events): predictions fail.
    for (let round = 0; round < 3; round++) {
      const stride = 2 * round + 3;
      for (let k = 0; k < 64; k++) {
        const i = (k * stride) % 64;
        expect(keys.find(events[i] as Event)).toBe(slots[i]);
      }
    }
    // In the pause, an order that repeats is looked up all the same, pass after pass.
    calls.count = 0;
    const pass = () => {
      for (const [i, event] of events.entries()) expect(keys.find(event)).toBe(slots[i]);
    };
    pass();
    pass();
    expect(calls.count).toBe(128);
    // After it, the order is learnt again and predicted.
    for (let round = 0; round < 70; round++) pass();
    calls.count = 0;
    pass();
    expect(calls.count).toBe(0);
  });

  it("predicts keys of one and of two fields only when every value is the predicted key's", () => {
    for (const names of [["a"], ["a", "b"]]) {
      const keys = new IndexKeys(names.map((name) => ({ name, read: fieldReader([name]) })));
      // The same order every round, then one with the second value changed, or a field absent.
      const order: Event[] = [{ a: "x", b: 1 }, { a: "x", b: 2 }, { a: "y" }, { a: "y", b: 2 }, { b: 1 }];
      const keyOf = (event: Event) =>
        names.map((name) => (event[name] === undefined ? "" : `${name}\u0001${String(event[name])}\u0000`)).join("");
      for (let round = 0; round < 4; round++) {
        const events = round === 3 ? order.map((event) => ({ ...event, b: 3 })) : order;
        for (const event of events) expect(keys.of(event), `${names} ${JSON.stringify(event)}`).toBe(keyOf(event));
      }
    }
  });

  it("reads the first two top-level fields and any other field right", () => {
    const keyFields = ["a", "b.c", "d", "e"].map((name) => ({ name, read: fieldReader(name.split(".")) }));
    const keys = new IndexKeys(keyFields);
    const event = (k: number): Event => ({ a: `a${k % 2}`, b: { c: k % 3 }, d: k % 5, e: `e${k}` });
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 30; k++) {
        const found = keys.of(event(k));
        const key = `a\u0001a${k % 2}\u0000b.c\u0001${k % 3}\u0000d\u0001${k % 5}\u0000e\u0001e${k}\u0000`;
        expect(found).toBe(key);
      }
    }
  });
});

describe("StreamIndex", () => {
  const all = () => true;

  it("replaces the event of a key in its place, and still refuses only new keys once full", () => {
    const index = new StreamIndex(2);
    expect(index.put("a", { time: 5 })).toBe(true);
    expect(index.put("b", { time: 3 })).toBe(true);
    expect(index.put("c", { time: 1 })).toBe(false);
    const newer = { time: 4, metric: 1 };
    expect(index.put("a", newer)).toBe(true);
    expect(index.size).toBe(2);
    expect(index.currentTime).toBe(5);
    expect(index.search(all)).toEqual([{ time: 3 }, newer]);
    expect(index.put("a", { time: 6, state: "expired" })).toBe(true);
    expect(index.size).toBe(1);
    expect(index.put("c", { time: 1 })).toBe(true);
    expect(index.removeExpired(1_000)).toEqual([{ time: 1 }, { time: 3 }]);
  });

  it("stores through a key's slot as through its string, including after the key was removed", () => {
    const keys = new IndexKeys(fields);
    const index = new StreamIndex();
    const put = (event: Event) => index.put(keys.find(event), event);
    const first = { service: "a", time: 1 };
    expect(put(first)).toBe(true);
    const slot = keys.find(first);
    expect(typeof slot === "string" ? undefined : slot.entry?.event).toBe(first);
    const second = { service: "a", time: 2 };
    put(second);
    expect(index.search(all)).toEqual([second]);
    put({ service: "a", time: 3, state: "expired" });
    expect(index.size).toBe(0);
    // The removed entry no longer holds its event, and the key stored again is in the index again.
    expect(typeof slot === "string" ? undefined : slot.entry?.event).toEqual({});
    const third = { service: "a", time: 4, ttl: 1 };
    put(third);
    expect(index.search(all)).toEqual([third]);
    expect(index.removeExpired(10)).toEqual([third]);
    const fourth = { service: "a", time: 11 };
    put(fourth);
    expect(index.size).toBe(1);
    expect(index.search(all)).toEqual([fourth]);
    expect(index.put(expected(fourth), { service: "a", time: 12 })).toBe(true);
    expect(index.size).toBe(1);
  });

  it("answers a bounded search with the events that matched, even when replaced while it waited", async () => {
    const index = new StreamIndex();
    const first = { time: 1, n: 0 };
    index.put("k0", first);
    for (let n = 1; n < 200; n++) index.put(`k${n}`, { time: 1 + n, n });
    // A negative slice: the search lets the loop turn after every few entries.
    const search = index.searchAtMost((event) => event.n === 0 || event.n === 150, 10, -1);
    index.put("k0", { time: 500, n: 1 });
    index.put("k150", { time: 501, n: 150 });
    expect(await search).toEqual([first, { time: 501, n: 150 }]);
    expect(index.search((event) => event.n === 1)).toEqual([
      { time: 2, n: 1 },
      { time: 500, n: 1 },
    ]);
  });
});
