import { describe, expect, it } from "vitest";
import { FrameReader, type FrameResult } from "../../../src/streams/riemann/framing.js";

function framed(...bodies: string[]): Buffer {
  return Buffer.concat(
    bodies.map((body) => {
      const bytes = Buffer.from(body);
      const prefix = Buffer.alloc(4);
      prefix.writeUInt32BE(bytes.length);
      return Buffer.concat([prefix, bytes]);
    }),
  );
}

/** Every frame body the reader yields until it needs more, as text; or the non-frame result. */
function drain(reader: FrameReader): Array<string | FrameResult> {
  const found: Array<string | FrameResult> = [];
  for (;;) {
    const next = reader.next();
    if (next.kind !== "frame") {
      if (next.kind === "oversized") found.push(next);
      return found;
    }
    found.push(next.body.toString());
  }
}

describe("FrameReader", () => {
  it("cuts several frames out of one chunk, empty frames included, without copying", () => {
    const reader = new FrameReader(1024);
    const chunk = framed("one", "", "three");
    reader.push(chunk);
    const first = reader.next();
    expect(first.kind === "frame" && first.body.buffer).toBe(chunk.buffer);
    expect(drain(reader)).toEqual(["", "three"]);
    expect(reader.buffered).toBe(0);
  });

  it("reassembles frames and length prefixes split anywhere, byte by byte", () => {
    const bytes = framed("hello", "world!", "x".repeat(300));
    const reader = new FrameReader(1024);
    const bodies: Array<string | FrameResult> = [];
    for (const byte of bytes) {
      reader.push(Buffer.from([byte]));
      bodies.push(...drain(reader));
      expect(reader.buffered).toBeLessThanOrEqual(4 + 300);
    }
    expect(bodies).toEqual(["hello", "world!", "x".repeat(300)]);
    for (let cut = 1; cut < bytes.length; cut += 7) {
      const split = new FrameReader(1024);
      split.push(bytes.subarray(0, cut));
      const found = drain(split);
      split.push(bytes.subarray(cut));
      found.push(...drain(split));
      expect(found).toEqual(["hello", "world!", "x".repeat(300)]);
    }
  });

  it("reports an oversized frame as soon as its length is in, before its body", () => {
    const reader = new FrameReader(10);
    reader.push(framed("0123456789"));
    expect(drain(reader)).toEqual(["0123456789"]);
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(0xffffffff);
    reader.push(prefix.subarray(0, 2));
    expect(reader.next()).toEqual({ kind: "incomplete" });
    reader.push(prefix.subarray(2));
    expect(reader.next()).toEqual({ kind: "oversized", length: 0xffffffff });
    expect(reader.declaredLength).toBe(0xffffffff);
  });

  it("holds only what was sent of an incomplete frame, and forgets it on clear", () => {
    const reader = new FrameReader(16 * 1024 * 1024);
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(16 * 1024 * 1024);
    reader.push(prefix);
    reader.push(Buffer.alloc(10));
    expect(reader.next()).toEqual({ kind: "incomplete" });
    expect(reader.buffered).toBe(14);
    expect(reader.declaredLength).toBe(16 * 1024 * 1024);
    reader.clear();
    expect(reader.buffered).toBe(0);
    expect(reader.next()).toEqual({ kind: "incomplete" });
  });
});
