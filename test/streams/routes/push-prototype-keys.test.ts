/**
 * The push route parses a small body with V8's JSON parser and answers as Fastify's JSON parser
 * would: a body with a `__proto__` key, or a `constructor` key holding a `prototype`, anywhere
 * (escaped or not, in an event dropped at a bound, beside an invalid event, under another
 * top-level key) is `request body is not valid JSON`, before any other problem; nothing is pushed.
 */
import fc from "fast-check";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INVALID_JSON } from "../../../src/platform/errors.js";
import type { VigieServer } from "../../../src/server.js";
import { streamsModule } from "../../../src/streams/index.js";
import { hasPrototypeKeys } from "../../../src/streams/routes/push.js";
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

async function push(body: string) {
  const response = await server.app.inject({
    method: "PUT",
    url: "/api/v1/stream/cpu",
    headers: { "content-type": "application/json" },
    payload: body,
  });
  return { status: response.statusCode, body: response.json() as unknown };
}

async function indexed(): Promise<unknown[]> {
  const response = await server.app.inject({ method: "GET", url: `/api/v1/index/cpu/search?query=${b64("[:true]")}` });
  return (response.json() as { events: unknown[] }).events;
}

const wide = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`f${i}`, i]));
const REFUSED = { status: 400, body: { error: INVALID_JSON } };
const OK = { status: 200, body: { message: "ok" } };

describe("prototype keys in a small push body", () => {
  it("refuses them wherever they are, before any other problem of the body", async () => {
    const nested = (depth: number, inner: string) => "[".repeat(depth) + inner + "]".repeat(depth);
    const refused = [
      '{"events": [{"host": "a", "__proto__": {"x": 1}}]}',
      '{"events": [{"host": "a", "b": [{"\\u005f_proto__": 1}]}]}',
      '{"events": [{"host": "a", "c": {"constructor": {"prototype": {}}}}]}',
      '{"event": {"host": "a", "__proto__": 1}}',
      '{"event": {"host": "a", "constructor": {"prototype": 1}}}',
      // Beside an event that is not an object, or whose time is not a number.
      '{"events": [2, {"__proto__": 1}]}',
      '{"events": [{"time": "x"}, {"__proto__": 1}]}',
      // Under another top-level key, or at the top level.
      '{"events": [{"host": "a"}], "other": {"__proto__": 1}}',
      '{"events": [{"host": "a"}], "__proto__": {}}',
      '{"__proto__": 1}',
      '[{"__proto__": 1}]',
      // In an event dropped at a bound (max-event-fields 50), which the bounds' walk leaves unread.
      JSON.stringify({ events: [{ host: "a" }, wide(60)] }).replace('"f59"', '"__proto__"'),
      // Nested deeper than events may be.
      `{"events": [{"host": "a", "deep": ${nested(40, '{"__proto__": 1}')}}]}`,
      `{"event": {"host": "a", "deep": ${nested(70, '{"__proto__": 1}')}}}`,
    ];
    for (const body of refused) expect({ body, answer: await push(body) }).toEqual({ body, answer: REFUSED });
    expect(await indexed()).toEqual([]);
  });

  it("takes keys that only look like them", async () => {
    const accepted = [
      '{"events": [{"host": "a", "constructor": {"x": 1}, "proto": 1, "__proto": 2}]}',
      '{"events": [{"host": "b", "prototype": {}}], "other": {"constructor": "c"}}',
      '{"event": {"host": "c", "constructor": null}}',
      '\uFEFF{"event": {"host": "d"}}',
    ];
    for (const body of accepted) expect({ body, answer: await push(body) }).toEqual({ body, answer: OK });
    expect(((await indexed()) as Array<{ host: string }>).map((event) => event.host).sort()).toEqual([
      "a",
      "b",
      "c",
      "d",
    ]);
  });

  it("answers the other problems as before when there are none", async () => {
    const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
    expect(await push('{"events": [2, {"host": "a"}]}')).toEqual({
      status: 400,
      body: { error: "field events[0]: must be an object" },
    });
    expect(await push(`{"events": [{"host": "a"}, {"deep": ${nested(40)}}]}`)).toEqual({
      status: 400,
      body: { error: "field events[1]: must not nest objects and arrays more than 32 levels deep" },
    });
    expect(await push('{"event": {"time": "x"}}')).toEqual({
      status: 400,
      body: { error: "field event.time: must be a number of seconds" },
    });
    expect(await push('{"events": [{"host": "a"}]')).toEqual(REFUSED);
  });
});

describe("hasPrototypeKeys", () => {
  it("agrees with Fastify's JSON parser (property)", async () => {
    const app = Fastify();
    const fastifyParser = app.getDefaultJsonParser("error", "error");
    const refusedByFastify = (text: string) => {
      let failed = false;
      fastifyParser({} as never, text, (error) => {
        failed = error !== null;
      });
      return failed;
    };
    const key = fc.constantFrom("__proto__", "constructor", "prototype", "a", "host");
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.oneof(fc.integer(), fc.constant(null), fc.string({ maxLength: 3 })),
        fc.array(tie("value"), { maxLength: 3 }),
        fc.dictionary(key, tie("value"), { maxKeys: 3 }),
      ),
    }));
    // Some underscores and letters of the keys escaped, as a client may send them.
    const text = fc
      .tuple(value, fc.boolean())
      .map(([parsed, escaped]) =>
        escaped ? JSON.stringify(parsed).replaceAll("_", "\\u005F").replaceAll("o", "\\u006f") : JSON.stringify(parsed),
      );
    fc.assert(
      fc.property(text, (candidate) => {
        expect(hasPrototypeKeys(JSON.parse(candidate))).toBe(refusedByFastify(candidate));
      }),
      { seed: SEED, numRuns: 2000 },
    );
    await app.close();
  });
});
