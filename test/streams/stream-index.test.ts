import { describe, expect, it } from "vitest";
import { type Event, fieldReader } from "../../src/streams/event.js";
import { IndexKeys } from "../../src/streams/stream-index.js";

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
