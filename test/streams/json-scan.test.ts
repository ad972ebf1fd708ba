/**
 * The validating JSON scanner of large bodies (src/streams/json-scan.ts): it accepts exactly what
 * JSON.parse accepts, whatever the slices it reads in, and measures values as exceededBound
 * measures them once parsed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_EVENT_BOUNDS,
  type EventBounds,
  EventMeter,
  exceededBound,
  VALUE_BYTES,
} from "../../src/streams/event-bounds.js";
import { type JsonPathItem, JsonScanError, JsonScanner } from "../../src/streams/json-scan.js";

const SEED = Number(process.env.VIGIE_FC_SEED ?? 20_260_728);

interface Measured {
  readonly path: JsonPathItem[];
  readonly text: string;
  readonly fields: number;
  readonly tags: number;
  readonly size: number;
  readonly exceeded: string | undefined;
}

/** Scans `text` in slices of `budget` bytes, measuring the values at `measure` depth. */
function scan(text: string | Buffer, budget: number, measure = 1, bounds: EventBounds = DEFAULT_EVENT_BOUNDS) {
  const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  const measured: Measured[] = [];
  const entered: Array<{ depth: number; path: JsonPathItem[]; kind: string }> = [];
  let current: JsonPathItem[] = [];
  const scanner = new JsonScanner(bytes, measure, {
    enter(depth, path, kind) {
      entered.push({ depth, path: [...path], kind });
      if (depth !== measure) return undefined;
      current = [...path];
      return new EventMeter(bounds);
    },
    leave(start, end, meter) {
      measured.push({
        path: current,
        text: bytes.toString("utf8", start, end),
        fields: meter.fields,
        tags: meter.tags,
        size: meter.size,
        exceeded: meter.exceeded,
      });
    },
  });
  let steps = 0;
  while (!scanner.step(budget)) steps++;
  return { measured, entered, steps };
}

function accepts(text: string, budget: number): boolean {
  try {
    scan(text, budget);
    return true;
  } catch (error) {
    if (error instanceof JsonScanError) return false;
    throw error;
  }
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** What exceededBound's walk counts, computed here independently: fields, tags and bytes. */
function counts(value: unknown): { fields: number; size: number } {
  if (typeof value === "string") return { fields: 0, size: Buffer.byteLength(value) };
  if (typeof value !== "object" || value === null) return { fields: 0, size: VALUE_BYTES };
  let fields = 0;
  let size = VALUE_BYTES;
  const entries = Array.isArray(value) ? value.map((item) => ["", item] as const) : Object.entries(value);
  for (const [key, item] of entries) {
    const inner = counts(item);
    if (!Array.isArray(value)) {
      fields += 1;
      size += Buffer.byteLength(key);
    }
    fields += inner.fields;
    size += inner.size;
  }
  return { fields, size };
}

/** A JSON text with a random edit: a byte removed, doubled or replaced by a structural one. */
const mutated = fc
  .tuple(
    fc.json(),
    fc.nat(),
    fc.constantFrom("", "{", "}", "[", "]", ",", ":", '"', "\\", "0", "-", "e", ".", " ", "\u0001", "t"),
    fc.boolean(),
  )
  .map(([text, at, insert, remove]) => {
    const position = text.length === 0 ? 0 : at % text.length;
    return text.slice(0, position) + insert + text.slice(position + (remove ? 1 : 0));
  });

describe("JsonScanner", () => {
  it("accepts what JSON.parse accepts and nothing else, whatever the slices (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.json(), mutated), fc.integer({ min: 1, max: 64 }), (text, budget) => {
        expect(accepts(text, budget)).toBe(parses(text));
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it("agrees with JSON.parse on hand-picked edge cases", () => {
    const cases = [
      "0",
      "-0",
      "01",
      "1.",
      ".5",
      "1e",
      "1e+",
      "1E-7",
      "-",
      "--1",
      "tru",
      "true ",
      " null",
      "nul l",
      '"\\u00e9\\ud83d\\ude00"',
      '"\\uD83D"',
      '"\\u12G4"',
      '"\\x"',
      '"a\tb"',
      '{"a":1,}',
      "[1,]",
      "[,1]",
      '{"a" 1}',
      '{"a":}',
      "{}{}",
      "[] []",
      "",
      " ",
      '{"a":[1,{"b":null}],"c":"d"}',
    ];
    for (const text of cases) expect([text, accepts(text, 3)]).toEqual([text, parses(text)]);
  });

  it("skips a leading byte order mark, as Fastify's JSON parser does", () => {
    expect(() => scan(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]), 4)).not.toThrow();
  });

  it("names the byte where a text stops being JSON", () => {
    expect(() => scan('{"a": [1, 2,]}', 100)).toThrow(new JsonScanError(12, 'unexpected "]"'));
    expect(() => scan('{"a": 1', 100)).toThrow(new JsonScanError(7, "unexpected end of JSON"));
  });

  it("shows the visitor each value down to its depth, with its path", () => {
    const { entered } = scan('{"events": [{"a": 1}, 2], "x": {"y": {"z": 3}}}', 5, 2);
    expect(entered).toEqual([
      { depth: 0, path: [], kind: "object" },
      { depth: 1, path: ["events"], kind: "array" },
      { depth: 2, path: ["events", 0], kind: "object" },
      { depth: 2, path: ["events", 1], kind: "number" },
      { depth: 1, path: ["x"], kind: "object" },
      { depth: 2, path: ["x", "y"], kind: "object" },
    ]);
    // Escaped keys are unescaped.
    expect(scan('{"\\u0065vents": 1}', 5, 1).entered[1]?.path).toEqual(["events"]);
  });

  it("measures values as the walk over the parsed value counts them (property)", () => {
    const object = fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 12 });
    fc.assert(
      fc.property(fc.array(object, { maxLength: 5 }), fc.integer({ min: 1, max: 256 }), (events, budget) => {
        const text = JSON.stringify({ events });
        const { measured } = scan(text, budget, 2);
        expect(measured.map((item) => item.path)).toEqual(events.map((_, i) => ["events", i]));
        for (const [i, item] of measured.entries()) {
          const event = events[i] as Record<string, unknown>;
          expect(JSON.parse(item.text)).toEqual(event);
          expect({ fields: item.fields, size: item.size }).toEqual(counts(event));
          expect(item.tags).toBe(Array.isArray(event.tags) ? event.tags.length : 0);
          expect(item.exceeded).toBe(exceededBound(event, DEFAULT_EVENT_BOUNDS));
        }
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it("stops counting at the first bound, and tells which", () => {
    const bounds = { fields: 3, tags: 2, string: 5, size: 100 };
    const texts = {
      fields: '{"a":1,"b":{"c":2,"d":3}}',
      tags: '{"tags":["a","b","c"]}',
      escapedTags: '{"t\\u0061gs":["a","b","c"]}',
      string: '{"a":"\\u00e9\\u00e9\\u00e9"}',
      size: `{"a":"${"x".repeat(5)}","b":[${new Array(12).fill(0).join(",")}]}`,
      within: '{"a":"12345","tags":["a","b"]}',
    };
    const exceeded = Object.fromEntries(
      Object.entries(texts).map(([name, text]) => [name, scan(`[${text}]`, 7, 1, bounds).measured[0]?.exceeded]),
    );
    expect(exceeded).toEqual({
      fields: "max-event-fields",
      tags: "max-event-tags",
      escapedTags: "max-event-tags",
      string: "max-event-string",
      size: "max-event-size",
      within: undefined,
    });
  });

  it("reads a long string or number across slices", () => {
    const long = `["${"é".repeat(100_000)}", ${"9".repeat(50_000)}.5e-3]`;
    const { measured, steps } = scan(long, 4096, 1, { ...DEFAULT_EVENT_BOUNDS, string: 1 << 20 });
    expect(steps).toBeGreaterThan(40);
    expect(measured.map((item) => item.size)).toEqual([200_000, VALUE_BYTES]);
  });
});
