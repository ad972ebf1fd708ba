/**
 * The OTLP trace decoders that hold spans to the event bounds: the hand-written protobuf decoder
 * (otlp-protobuf.ts) against protobufjs and the OTLP/JSON mapping, the large OTLP/JSON decoder
 * (otlp-json.ts) against the small one, on random requests; and what each does with a span or a
 * resource beyond a bound.
 */
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import type { Event } from "../../src/streams/event.js";
import { DEFAULT_EVENT_BOUNDS, type EventBound, type EventBounds } from "../../src/streams/event-bounds.js";
import { decodeJsonTraces, eventsOfRequest, OtlpError } from "../../src/streams/otlp.js";
import { decodeLargeJsonTraces } from "../../src/streams/otlp-json.js";
import { OtlpProtobufDecoder } from "../../src/streams/otlp-protobuf.js";

const SEED = Number(process.env.VIGIE_FC_SEED ?? 20_260_728);
const schema = protobuf.loadSync(fileURLToPath(new URL("../../proto/otlp-trace.proto", import.meta.url)));
const Request = schema.lookupType("vigie.otlp.ExportTraceServiceRequest");

/** Bounds nothing random reaches. */
const LOOSE: EventBounds = { fields: 1e9, tags: 1e9, string: 1e9, size: 1e12 };

type Json = Record<string, unknown>;

/** What protobufjs and the OTLP/JSON mapping make of the bytes: the reference. */
function reference(bytes: Uint8Array): Event[] {
  return eventsOfRequest(Request.toObject(Request.decode(bytes), { longs: String, defaults: false }) as Json);
}

function decoded(bytes: Uint8Array, bounds = LOOSE) {
  const decoder = new OtlpProtobufDecoder(bounds);
  const events: Event[] = [];
  decoder.decode(bytes, (event) => events.push(event));
  return { events, refused: decoder.refused };
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const key = fc.string({ maxLength: 6 }).filter((text) => text !== "__proto__");
const nanoseconds = fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String);

/** AnyValues in protobufjs' object form. */
const { anyValue } = fc.letrec<{ anyValue: Json; keyValue: Json }>((tie) => ({
  anyValue: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant({}),
    fc.record({ stringValue: fc.string({ maxLength: 8 }) }),
    fc.record({ boolValue: fc.boolean() }),
    fc.record({ intValue: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String) }),
    fc.record({ doubleValue: fc.double({ noNaN: true }) }),
    fc.record({ bytesValue: fc.uint8Array({ maxLength: 6 }) }),
    fc.record({ arrayValue: fc.record({ values: fc.array(tie("anyValue"), { maxLength: 3 }) }) }),
    fc.record({ kvlistValue: fc.record({ values: fc.array(tie("keyValue"), { maxLength: 3 }) }) }),
  ),
  keyValue: fc.record({ key, value: tie("anyValue") }, { requiredKeys: ["key"] }),
}));
const keyValue = fc.record({ key, value: anyValue }, { requiredKeys: ["key"] });
const attributes = fc.array(keyValue, { maxLength: 4 });

const span = fc.record(
  {
    traceId: fc.uint8Array({ minLength: 16, maxLength: 16 }),
    spanId: fc.uint8Array({ minLength: 8, maxLength: 8 }),
    parentSpanId: fc.uint8Array({ maxLength: 8 }),
    name: fc.string({ maxLength: 8 }),
    kind: fc.integer({ min: 0, max: 7 }),
    startTimeUnixNano: nanoseconds,
    endTimeUnixNano: nanoseconds,
    attributes,
    events: fc.array(fc.record({ timeUnixNano: nanoseconds, name: fc.string({ maxLength: 4 }), attributes }), {
      maxLength: 2,
    }),
    links: fc.array(
      fc.record({
        traceId: fc.uint8Array({ maxLength: 16 }),
        spanId: fc.uint8Array({ maxLength: 8 }),
        traceState: fc.string({ maxLength: 4 }),
        attributes,
      }),
      { maxLength: 2 },
    ),
    status: fc.record({ message: fc.string({ maxLength: 6 }), code: fc.integer({ min: 0, max: 3 }) }),
  },
  { requiredKeys: ["traceId", "spanId"] },
);

const request = fc.record({
  resourceSpans: fc.array(
    fc.record({
      resource: fc.record({ attributes }),
      scopeSpans: fc.array(
        fc.record({
          scope: fc.record({ name: fc.string({ maxLength: 4 }), version: fc.string({ maxLength: 4 }) }),
          spans: fc.array(span, { maxLength: 3 }),
        }),
        { maxLength: 2 },
      ),
    }),
    { maxLength: 3 },
  ),
});

/** The OTLP/JSON form of a request in protobufjs' object form: hex ids, base64 bytes values. */
function toOtlpJson(value: unknown, field = ""): unknown {
  if (value instanceof Uint8Array) {
    return field === "bytesValue" ? Buffer.from(value).toString("base64") : hex(value);
  }
  if (Array.isArray(value)) return value.map((item) => toOtlpJson(item));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, toOtlpJson(item, name)]));
  }
  return value;
}

describe("OtlpProtobufDecoder", () => {
  it("decodes as protobufjs and the OTLP/JSON mapping do (property)", () => {
    fc.assert(
      fc.property(request, (value) => {
        const bytes = Request.encode(Request.fromObject(value)).finish();
        const { events, refused } = decoded(bytes);
        expect(events).toEqual(reference(bytes));
        expect(refused.size).toBe(0);
      }),
      { seed: SEED, numRuns: 400 },
    );
  });

  it("decodes the same in slices as at once", async () => {
    const spans = Array.from({ length: 2000 }, (_, i) => ({
      traceId: Buffer.alloc(16, i % 256),
      spanId: Buffer.alloc(8, 1),
      name: `s${i}`,
      attributes: [{ key: "i", value: { intValue: String(i) } }],
    }));
    const bytes = Request.encode(
      Request.fromObject({ resourceSpans: [{ scopeSpans: [{ spans }] }, { scopeSpans: [{ spans }] }] }),
    ).finish();
    const sliced: Event[] = [];
    await new OtlpProtobufDecoder(LOOSE).decodeSliced(bytes, (event) => sliced.push(event));
    expect(sliced).toEqual(reference(bytes));
  });

  it("drops a span beyond a bound, and every span of a resource beyond one, counting them", () => {
    const wide = (count: number) =>
      Array.from({ length: count }, (_, i) => ({ key: `a${i}`, value: { stringValue: "v" } }));
    const spanOf = (name: string, attributes: Json[] = []) => ({
      traceId: Buffer.alloc(16),
      spanId: Buffer.alloc(8),
      name,
      attributes,
    });
    const bytes = Request.encode(
      Request.fromObject({
        resourceSpans: [
          {
            resource: { attributes: [{ key: "service.name", value: { stringValue: "api" } }] },
            scopeSpans: [
              {
                spans: [
                  spanOf("ok"),
                  // Past the bound, the last attribute's value is malformed: read, it would throw.
                  spanOf("wide", [...wide(1_001), { key: "zz-mark", value: { stringValue: "zz" } }]),
                  spanOf("long", [{ key: "d", value: { stringValue: "x".repeat(65_537) } }]),
                ],
              },
            ],
          },
          { resource: { attributes: wide(1001) }, scopeSpans: [{ spans: [spanOf("a"), spanOf("b")] }] },
        ],
      }),
    ).finish();
    // AnyValue { string_value: "zz" } claims 5 bytes where it has 2: the framing around it stays whole.
    const mark = Buffer.from(bytes).indexOf(Buffer.from([...Buffer.from("zz-mark"), 0x12, 4, 0x0a, 2]));
    expect(mark).toBeGreaterThan(0);
    bytes[mark + "zz-mark".length + 3] = 5;
    expect(() => decoded(bytes)).toThrow(OtlpError);
    // The decoder stops reading a span at its bound, so it never reads the malformed value.
    const { events, refused } = decoded(bytes, DEFAULT_EVENT_BOUNDS);
    expect(events.map((event) => event.name)).toEqual(["ok"]);
    expect([...refused]).toEqual([
      ["max-event-fields", 3],
      ["max-event-string", 1],
    ] satisfies Array<[EventBound, number]>);
  });

  it("refuses malformed bytes and hostile nesting with an OtlpError", () => {
    const bytes = Request.encode(
      Request.fromObject({ resourceSpans: [{ scopeSpans: [{ spans: [{ name: "x" }] }] }] }),
    ).finish();
    expect(() => decoded(bytes.subarray(0, bytes.length - 1))).toThrow(OtlpError);
    let value: Json = { stringValue: "deep" };
    for (let i = 0; i < 40; i++) value = { arrayValue: { values: [value] } };
    const deep = Request.encode(
      Request.fromObject({ resourceSpans: [{ scopeSpans: [{ spans: [{ attributes: [{ key: "k", value }] }] }] }] }),
    ).finish();
    expect(() => decoded(deep)).toThrow("attribute values must not nest more than 32 levels deep in an event");
  });
});

describe("decodeLargeJsonTraces", () => {
  it("gives the events decodeJsonTraces gives for the same text (property)", async () => {
    await fc.assert(
      fc.asyncProperty(request, async (value) => {
        const text = JSON.stringify(toOtlpJson(value));
        const refused = new Map<EventBound, number>();
        expect(await decodeLargeJsonTraces(Buffer.from(text), LOOSE, refused)).toEqual(decodeJsonTraces(text));
        expect(refused.size).toBe(0);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it("maps what the small decoder maps in odd places the same way", async () => {
    const texts = [
      '{"resourceSpans": [1, {"scopeSpans": [{"spans": [5, {"name": "n"}]}]}]}',
      '{"resourceSpans": {"0": {}}}',
      '{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "a"}]}], "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "late"}}]}}]}',
      '{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "a"}]}]}], "resourceSpans": [{"scopeSpans": [{"spans": [{"name": "b"}]}]}]}',
      '{"resourceSpans": [{"scopeSpans": [{"scope": "x", "spans": [{"name": "a"}]}], "resource": 3}]}',
    ];
    for (const text of texts) {
      expect(await decodeLargeJsonTraces(Buffer.from(text), LOOSE, new Map())).toEqual(decodeJsonTraces(text));
    }
    await expect(decodeLargeJsonTraces(Buffer.from("[]"), LOOSE, new Map())).rejects.toThrow(
      "request body must be a JSON object",
    );
    await expect(decodeLargeJsonTraces(Buffer.from('{"a": }'), LOOSE, new Map())).rejects.toThrow(
      "request body is not valid JSON",
    );
  });

  it("drops a span beyond a bound without parsing a million attributes", async () => {
    const attribute = (i: number) => `{"key":"a${i}","value":{"stringValue":"v"}}`;
    const many = Array.from({ length: 1_000_000 }, (_, i) => attribute(i)).join(",");
    const text = `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"ok"},{"name":"wide","attributes":[${many}]},{"name":"edge","attributes":[${Array.from({ length: 1001 }, (_, i) => attribute(i)).join(",")}]}]}]}]}`;
    const refused = new Map<EventBound, number>();
    const events = await decodeLargeJsonTraces(Buffer.from(text), DEFAULT_EVENT_BOUNDS, refused);
    expect(events.map((event) => event.name)).toEqual(["ok"]);
    // The wide one fails the first, loose bound; the other the exact one, on its event.
    expect([...refused]).toEqual([["max-event-fields", 2]]);
  });
});
