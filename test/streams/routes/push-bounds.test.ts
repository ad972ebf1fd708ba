/**
 * The event bounds on the push route (PUT /api/v1/stream/<name>): a single event beyond one is a
 * 400 naming it, an event of a batch beyond one is dropped and counted; bodies over 64 KiB, read by
 * the slicing scanner, are answered exactly as small ones.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { VigieServer } from "../../../src/server.js";
import { streamsModule } from "../../../src/streams/index.js";
import { INLINE_BODY_BYTES } from "../../../src/streams/routes/push.js";
import { startTestServer } from "../../support/server.js";

const SEED = Number(process.env.VIGIE_FC_SEED ?? 20_260_728);
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const INDEXING = "{:actions {:action :index :params [[:host]]}}";

let server: VigieServer;

beforeAll(async () => {
  server = await startTestServer({ modules: [streamsModule], config: { streams: { "max-event-fields": 50 } } });
  await server.app.inject({ method: "POST", url: "/api/v1/stream/cpu", payload: { config: b64(INDEXING) } });
});
afterAll(() => server.close());

async function push(body: string | Buffer, name = "cpu") {
  const response = await server.app.inject({
    method: "PUT",
    url: `/api/v1/stream/${name}`,
    headers: { "content-type": "application/json" },
    payload: body,
  });
  return { status: response.statusCode, body: response.json() as unknown };
}

async function indexed(): Promise<unknown[]> {
  const response = await server.app.inject({ method: "GET", url: `/api/v1/index/cpu/search?query=${b64("[:true]")}` });
  return (response.json() as { events: unknown[] }).events;
}

/** The index, times stamped at receipt (events pushed without one) replaced by "now". */
async function indexedUnstamped(): Promise<unknown[]> {
  const stamp = Date.now() / 1000 - 3600;
  return (await indexed()).map((event) => {
    const time = (event as { time?: unknown }).time;
    return typeof time === "number" && time > stamp ? { ...(event as object), time: "now" } : event;
  });
}

async function reset() {
  await server.app.inject({ method: "POST", url: "/api/v1/stream/cpu", payload: { config: b64(INDEXING) } });
}

async function dropped(reason: string): Promise<number> {
  const text = (await server.app.inject({ method: "GET", url: "/metrics" })).body;
  const line = text
    .split("\n")
    .find((item) => item.startsWith(`stream_dropped_events_total{stream="cpu",action="push",reason="${reason}"}`));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}

const wide = (count: number) => ({
  host: "wide",
  time: 1,
  ...Object.fromEntries(Array.from({ length: count }, (_, i) => [`f${i}`, i])),
});
/** Whitespace that takes a body over the inline limit without changing its JSON. */
const PADDING = " ".repeat(INLINE_BODY_BYTES + 1);

describe("the push route's event bounds", () => {
  it("refuses a single event beyond a bound with a 400 naming it, small body or large", async () => {
    for (const padding of ["", PADDING]) {
      expect(await push(JSON.stringify({ event: wide(50) }) + padding)).toEqual({
        status: 400,
        body: { error: "field event: has more than 50 fields, nested ones included (streams.max-event-fields)" },
      });
      expect(await push(JSON.stringify({ event: { host: "a", tags: new Array(1001).fill("t") } }) + padding)).toEqual({
        status: 400,
        body: { error: "field event: has more than 1000 tags (streams.max-event-tags)" },
      });
      expect(await push(JSON.stringify({ event: { host: "a", description: "d".repeat(65_537) } }) + padding)).toEqual({
        status: 400,
        body: { error: "field event: has a string of more than 65536 bytes (streams.max-event-string)" },
      });
    }
    expect(await indexed()).toEqual([]);
  });

  it("drops an event of a batch beyond a bound, counts it and pushes the others", async () => {
    await reset();
    const before = await dropped("max-event-fields");
    const events = [{ host: "a", time: 1 }, wide(50), { host: "b", time: 2 }];
    expect(await push(JSON.stringify({ events }))).toEqual({ status: 200, body: { message: "ok" } });
    expect(await indexed()).toEqual([
      { host: "a", time: 1 },
      { host: "b", time: 2 },
    ]);
    expect((await dropped("max-event-fields")) - before).toBe(1);
  });

  it("reads a large batch in slices: the events within the bounds are pushed, in order", async () => {
    await reset();
    const before = await dropped("max-event-string");
    const events = Array.from({ length: 3000 }, (_, i) =>
      i % 1000 === 999 ? { host: `h${i}`, time: i, description: "x".repeat(70_000) } : { host: `h${i}`, time: i },
    );
    const body = JSON.stringify({ events });
    expect(body.length).toBeGreaterThan(INLINE_BODY_BYTES);
    expect(await push(body)).toEqual({ status: 200, body: { message: "ok" } });
    const found = (await indexed()) as Array<{ host: string }>;
    expect(found).toHaveLength(2997);
    expect(found.map((event) => event.host)).toEqual(events.filter((_, i) => i % 1000 !== 999).map((e) => e.host));
    expect((await dropped("max-event-string")) - before).toBe(3);
  });

  it("refuses a 16 MB event of a million keys at once, without parsing it", async () => {
    const keys: string[] = [];
    for (let i = 0; i < 1_000_000; i++) keys.push(`"key-${i}":${i}`);
    const body = `{"event":{${keys.join(",")}}}`;
    const started = performance.now();
    expect(await push(body)).toEqual({
      status: 400,
      body: { error: "field event: has more than 50 fields, nested ones included (streams.max-event-fields)" },
    });
    // Scanning 16 MB takes a fraction of what building a million-key object takes (seconds).
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("answers a large body as it answers the same body small (property)", async () => {
    const event = fc.oneof(
      fc.record({ host: fc.string({ maxLength: 5 }), time: fc.oneof(fc.integer(), fc.string({ maxLength: 2 })) }),
      fc.record({ host: fc.constant("w"), tags: fc.array(fc.constant("t"), { minLength: 999, maxLength: 1002 }) }),
      fc.jsonValue({ maxDepth: 2 }),
    );
    const body = fc.oneof(
      fc.record({ events: fc.array(event, { maxLength: 4 }) }),
      fc.record({ event }),
      fc.record({ event, events: fc.array(event, { maxLength: 1 }) }),
      fc.jsonValue({ maxDepth: 2 }).map((value) => ({ other: value })),
    );
    const text = fc.oneof(
      body.map((value) => JSON.stringify(value)),
      body.map((value) => JSON.stringify(value).slice(0, -1)),
      fc.constantFrom('{"event": {"__proto__": {"x": 1}}}', '{"events": [{"a": 1}, 2]}', "[]", '"x"', "{}"),
    );
    await fc.assert(
      fc.asyncProperty(text, async (candidate) => {
        await reset();
        const small = await push(candidate);
        const smallIndex = await indexedUnstamped();
        await reset();
        const large = await push(candidate + PADDING);
        expect(large).toEqual(small);
        expect(await indexedUnstamped()).toEqual(smallIndex);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });
});
