import { describe, expect, it } from "vitest";
import { hashOf, requestBytes, SeriesCache } from "../../src/streams/remote-write-series-cache.js";

/** Two different byte strings of the same 30-bit hash, found among numbered ones (birthday bound). */
function collision(): [Buffer, Buffer] {
  const seen = new Map<number, Buffer>();
  for (let i = 0; ; i++) {
    const bytes = Buffer.from(`series-${i}`);
    const hash = hashOf(requestBytes(bytes).view, 0, bytes.length);
    const other = seen.get(hash);
    if (other !== undefined) return [other, bytes];
    seen.set(hash, bytes);
  }
}

describe("SeriesCache", () => {
  it("tells apart series whose bytes share a hash", () => {
    const [first, second] = collision();
    expect(first.equals(second)).toBe(false);
    const cache = new SeriesCache();
    const a = requestBytes(first);
    const b = requestBytes(second);
    const cached = cache.add(a, 0, first.length, { which: "first" });
    expect(cache.find(a, 0, first.length)).toBe(cached);
    expect(cache.find(b, 0, second.length)).toBeUndefined();
    // The later one replaces the earlier under their hash; neither is mistaken for the other.
    cache.add(b, 0, second.length, { which: "second" });
    expect(cache.find(b, 0, second.length)?.template).toEqual({ which: "second" });
    expect(cache.find(a, 0, first.length)).toBeUndefined();
  });

  it("compares long series natively and short ones in a loop, both exactly", () => {
    const cache = new SeriesCache();
    for (const length of [0, 1, 3, 4, 5, 191, 192, 193, 1000]) {
      const bytes = Buffer.alloc(length + 8, 0x41);
      const cached = cache.add(requestBytes(bytes), 4, 4 + length, {});
      expect(cache.find(requestBytes(Buffer.from(bytes)), 4, 4 + length), `length ${length}`).toBe(cached);
      if (length > 0) {
        const changed = Buffer.from(bytes);
        changed[4 + length - 1] = 0x42; // the last byte differs
        expect(cache.opensWith(cached, requestBytes(changed), 4, 4 + length), `length ${length}`).toBe(false);
        expect(cache.opensWith(cached, requestBytes(bytes), 4, 4 + length), `length ${length}`).toBe(true);
      }
    }
  });

  it("does not follow a prediction into series forgotten when it started over", () => {
    const cache = new SeriesCache();
    const bytes = requestBytes(Buffer.from("labels"));
    const old = cache.add(bytes, 0, 6, {});
    for (let i = 0; i < 50_000; i++) cache.add(requestBytes(Buffer.from(`s${i}`)), 0, `s${i}`.length, {});
    expect(cache.size).toBeLessThanOrEqual(50_000);
    expect(cache.opensWith(old, bytes, 0, 6)).toBe(false);
  });
});
