/**
 * The bounds of one event (src/streams/event-bounds.ts) and their measure on the Riemann wire
 * (measureEvent): fields at every depth, tags, one string, the size in all.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  boundProblem,
  DEFAULT_EVENT_BOUNDS,
  EventMeter,
  exceededBound,
  VALUE_BYTES,
} from "../../src/streams/event-bounds.js";
import { type EncodableEvent, encodeMsg, MsgReader, measureEvent } from "../../src/streams/riemann/protocol.js";

const SEED = Number(process.env.VIGIE_FC_SEED ?? 20_260_728);

const fields = (count: number, prefix = "k") =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${i}`, i]));

describe("exceededBound", () => {
  const bounds = DEFAULT_EVENT_BOUNDS;

  it("counts fields at every depth, attributes included", () => {
    expect(exceededBound({ host: "a", ...fields(999) }, bounds)).toBeUndefined();
    expect(exceededBound({ host: "a", ...fields(1000) }, bounds)).toBe("max-event-fields");
    expect(exceededBound({ host: "a", attributes: fields(998) }, bounds)).toBeUndefined();
    expect(exceededBound({ host: "a", attributes: fields(999) }, bounds)).toBe("max-event-fields");
    expect(exceededBound({ list: [fields(600), fields(600)] }, bounds)).toBe("max-event-fields");
  });

  it("counts the items of tags", () => {
    const tags = (count: number) => Array.from({ length: count }, (_, i) => `t${i}`);
    expect(exceededBound({ tags: tags(1000) }, bounds)).toBeUndefined();
    expect(exceededBound({ tags: tags(1001) }, bounds)).toBe("max-event-tags");
    // Only the top-level tags are tags.
    expect(exceededBound({ other: { tags: tags(1001) } }, bounds)).toBeUndefined();
  });

  it("bounds each string by its UTF-8 bytes, values, tags and field names alike", () => {
    expect(exceededBound({ description: "x".repeat(65_536) }, bounds)).toBeUndefined();
    expect(exceededBound({ description: "x".repeat(65_537) }, bounds)).toBe("max-event-string");
    // 21 846 characters of 3 bytes each: 65 538 bytes.
    expect(exceededBound({ description: "€".repeat(21_846) }, bounds)).toBe("max-event-string");
    expect(exceededBound({ description: "€".repeat(21_845) }, bounds)).toBeUndefined();
    expect(exceededBound({ tags: ["x".repeat(65_537)] }, bounds)).toBe("max-event-string");
    expect(exceededBound({ ["k".repeat(65_537)]: 1 }, bounds)).toBe("max-event-string");
  });

  it("bounds the size in all: names and strings in UTF-8 bytes, 8 bytes for any other value", () => {
    const small = { ...DEFAULT_EVENT_BOUNDS, size: 100 };
    // 8 (the event) + 1 + 83 (a) + 1 + 8 (b) = 101.
    expect(exceededBound({ a: "x".repeat(83), b: 1 }, small)).toBe("max-event-size");
    expect(exceededBound({ a: "x".repeat(82), b: 1 }, small)).toBeUndefined();
    // The exact count decides between UTF-16 length and 3 bytes per code unit.
    expect(exceededBound({ a: "é".repeat(40), b: 1 }, small)).toBeUndefined();
    expect(exceededBound({ a: "é".repeat(42), b: 1 }, small)).toBe("max-event-size");
    // Values of arrays count too: 131 072 numbers are more than 1 MiB.
    expect(exceededBound({ a: new Array(131_072).fill(0) }, bounds)).toBe("max-event-size");
  });

  it("agrees with the meter that decoders feed (property)", () => {
    const tiny = { fields: 12, tags: 3, string: 24, size: 160 };
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 30 }), fc.jsonValue({ maxDepth: 3 })), (event) => {
        const meter = new EventMeter(tiny);
        meter.start();
        const feed = (value: unknown, top: boolean): void => {
          if (typeof value === "string") meter.string(Buffer.byteLength(value));
          else {
            meter.value();
            if (Array.isArray(value)) for (const item of value) feed(item, false);
            else if (typeof value === "object" && value !== null) {
              for (const [key, item] of Object.entries(value)) {
                meter.field(Buffer.byteLength(key));
                if (top && key === "tags" && Array.isArray(item)) {
                  meter.value();
                  for (const tag of item) {
                    meter.tag();
                    feed(tag, false);
                  }
                } else feed(item, false);
              }
            }
          }
        };
        const object = event as Record<string, unknown>;
        for (const [key, item] of Object.entries(object)) {
          meter.field(Buffer.byteLength(key));
          if (key === "tags" && Array.isArray(item)) {
            meter.value();
            for (const tag of item) {
              meter.tag();
              feed(tag, false);
            }
          } else feed(item, false);
        }
        // Both find a bound exceeded, or neither (which one first may differ with the walk's order).
        expect(exceededBound(object, tiny) === undefined).toBe(meter.exceeded === undefined);
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it("tells how deeply an event within the bounds nests, so that a shallow one is walked once", () => {
    const depth = { deepest: 0, prototypeKeys: false };
    expect(exceededBound({ a: 1 }, bounds, depth)).toBeUndefined();
    expect(depth.deepest).toBe(1);
    expect(exceededBound({ a: { b: [1, { c: [] }] } }, bounds, depth)).toBeUndefined();
    expect(depth.deepest).toBe(5);
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(exceededBound({ deep }, bounds, depth)).toBeUndefined();
    expect(depth.deepest).toBe(64);
    // Over a bound, the depth is unknown: as deep as can be.
    expect(exceededBound({ ...fields(1001) }, bounds, depth)).toBe("max-event-fields");
    expect(depth.deepest).toBe(Number.POSITIVE_INFINITY);
  });

  it("tells whether an event within the bounds has a key named __proto__ or constructor, at any depth", () => {
    const report = { deepest: 0, prototypeKeys: true };
    expect(exceededBound({ a: { b: [{ c: 1 }] }, proto: 1, constructors: 2 }, bounds, report)).toBeUndefined();
    expect(report.prototypeKeys).toBe(false);
    for (const text of [
      '{"__proto__": 1}',
      '{"a": [{"b": {"\\u005f_proto__": {}}}]}',
      '{"constructor": "x"}',
      '{"a": {"constructor": {"prototype": 1}}}',
    ]) {
      expect(exceededBound(JSON.parse(text), bounds, report)).toBeUndefined();
      expect(report.prototypeKeys).toBe(true);
    }
    // A walk that stops at a bound saw only part of the event: it tells nothing.
    const over = JSON.parse(JSON.stringify(fields(1001)).replace("{", '{"__proto__": 1, '));
    expect(exceededBound(over, bounds, report)).toBe("max-event-fields");
    expect(report.prototypeKeys).toBe(false);
  });

  it("names the bound and the setting in the problem", () => {
    expect(boundProblem("max-event-fields", DEFAULT_EVENT_BOUNDS)).toBe(
      "has more than 1000 fields, nested ones included (streams.max-event-fields)",
    );
    expect(boundProblem("max-event-tags", DEFAULT_EVENT_BOUNDS)).toBe(
      "has more than 1000 tags (streams.max-event-tags)",
    );
    expect(boundProblem("max-event-string", DEFAULT_EVENT_BOUNDS)).toBe(
      "has a string of more than 65536 bytes (streams.max-event-string)",
    );
    expect(boundProblem("max-event-size", DEFAULT_EVENT_BOUNDS)).toBe(
      "is larger than 1048576 bytes (streams.max-event-size)",
    );
  });
});

describe("measureEvent (Riemann events on the wire)", () => {
  /** The bytes of one encoded event, and what measuring them says. */
  function measured(event: EncodableEvent, bounds = DEFAULT_EVENT_BOUNDS) {
    const body = encodeMsg({ events: [event] });
    // The Msg is one field: tag (1 byte), length (varint), the event.
    let offset = 1;
    while ((body[offset] as number) >= 0x80) offset++;
    offset++;
    const meter = new EventMeter(bounds);
    return { bound: measureEvent(body, offset, body.length, meter), meter };
  }
  const attributes = (count: number) => Array.from({ length: count }, (_, i) => ({ key: `a${i}`, value: "v" }));

  it("counts attributes as fields, but not the stream attribute", () => {
    expect(measured({ host: "h", attributes: attributes(999) }).bound).toBeUndefined();
    expect(measured({ host: "h", attributes: attributes(1000) }).bound).toBe("max-event-fields");
    expect(
      measured({ host: "h", attributes: [...attributes(999), { key: "stream", value: "s" }] }).bound,
    ).toBeUndefined();
  });

  it("counts tags, strings and the size as the mapped event has them", () => {
    expect(measured({ tags: Array.from({ length: 1001 }, () => "t") }).bound).toBe("max-event-tags");
    expect(measured({ description: "x".repeat(65_537) }).bound).toBe("max-event-string");
    expect(measured({ attributes: [{ key: "k".repeat(65_537), value: "" }] }).bound).toBe("max-event-string");
    const event: EncodableEvent = { host: "a.example", service: "cpu", metricD: 0.5, timeMicros: 5, tags: ["x", "y"] };
    const { meter } = measured(event);
    // As exceededBound counts {host, service, metric, time, tags: [x, y]}.
    const mapped = { host: "a.example", service: "cpu", metric: 0.5, time: 5e-6, tags: ["x", "y"] };
    expect(meter.fields).toBe(5);
    expect(meter.tags).toBe(2);
    expect(meter.size).toBe(VALUE_BYTES + 4 + 9 + 7 + 3 + 6 + VALUE_BYTES + 4 + VALUE_BYTES + 4 + VALUE_BYTES + 1 + 1);
    expect(exceededBound(mapped, { ...DEFAULT_EVENT_BOUNDS, size: meter.size })).toBeUndefined();
    expect(exceededBound(mapped, { ...DEFAULT_EVENT_BOUNDS, size: meter.size - 1 })).toBe("max-event-size");
  });

  it("stops at the first bound: a million attributes cost a thousand steps", () => {
    const body = encodeMsg({ events: [{ host: "h", attributes: attributes(1_000_000) }, { host: "ok" }] });
    const started = performance.now();
    const reader = new MsgReader(body, DEFAULT_EVENT_BOUNDS);
    const events: Parameters<MsgReader["read"]>[1] = [];
    expect(reader.read(10, events)).toBe(true);
    expect(performance.now() - started).toBeLessThan(50);
    expect(events.map((event) => event.host)).toEqual(["ok"]);
    expect([...reader.refused]).toEqual([["max-event-fields", 1]]);
  });

  it("refuses malformed events as decoding would", () => {
    const body = encodeMsg({ events: [{ host: "h", attributes: attributes(2) }] });
    expect(() => new MsgReader(body.subarray(0, body.length - 1), DEFAULT_EVENT_BOUNDS).read(10, [])).toThrow(
      RangeError,
    );
  });
});
