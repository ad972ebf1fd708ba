import { describe, expect, it } from "vitest";
import { isStale, SHORT_VARINT_BYTES, shortVarint } from "../../src/streams/remote-write-sample.js";
import { varint } from "../support/varint.js";

describe("remote write samples", () => {
  it("reads varints of 1 to 7 bytes that fill the range exactly, and no other", () => {
    for (const value of [0, 1, 127, 128, 300, 2 ** 21, 2 ** 35 - 1, 1_700_000_000_123, 2 ** 49 - 1]) {
      const bytes = Uint8Array.from([0xff, ...varint(value), 0xff]);
      expect(shortVarint(bytes, 1, bytes.length - 1), `${value}`).toBe(value);
      // Cut short (goes on past the range) or with a byte after its end within the range.
      expect(shortVarint(bytes, 1, bytes.length - 2)).toBe(-1);
      expect(shortVarint(bytes, 1, bytes.length)).toBe(-1);
    }
    expect(shortVarint(Uint8Array.from([0x80, 0x80, 0x00]), 0, 3)).toBe(0); // non-minimal
    expect(shortVarint(Uint8Array.from([0x81, 0x00]), 0, 2)).toBe(1);
    const eight = Uint8Array.from(varint(2 ** 49));
    expect(eight.length).toBe(SHORT_VARINT_BYTES + 1);
    expect(shortVarint(eight, 0, eight.length)).toBe(-1); // left to the general reader
    expect(shortVarint(eight, 0, 0)).toBe(-1);
  });

  it("tells the staleness marker from other NaNs", () => {
    const view = new DataView(new ArrayBuffer(10));
    view.setUint32(1, 0x00000002, true);
    view.setUint32(5, 0x7ff00000, true);
    expect(isStale(view, 1)).toBe(true);
    view.setFloat64(1, Number.NaN, true);
    expect(isStale(view, 1)).toBe(false);
  });
});
