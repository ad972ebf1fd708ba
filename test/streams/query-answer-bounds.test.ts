/**
 * The bounds of index searches (HTTP) and queries (Riemann): at most `streams.max-query-results`
 * events and `streams.max-query-bytes` bytes per answer, and the characters a query's regular
 * expressions may read of one event; beyond, a 400 (an `ok: false` reply) naming the setting.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { object } from "../../src/platform/validation.js";
import type { VigieServer } from "../../src/server.js";
import { DEFAULT_STREAM_LIMITS } from "../../src/streams/action.js";
import { streamsShape } from "../../src/streams/config.js";
import { parseEdn } from "../../src/streams/edn.js";
import { StreamEngine } from "../../src/streams/engine.js";
import { streamsModule } from "../../src/streams/index.js";
import { RiemannHandler } from "../../src/streams/riemann/handler.js";
import { decodeReply, encodeMsg, LENGTH_PREFIX } from "../../src/streams/riemann/protocol.js";
import { startTestServer } from "../support/server.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const INDEXING = "{:actions {:action :index :params [[:host]]} :default true}";

describe("index search bounds (HTTP)", () => {
  let server: VigieServer;
  beforeAll(async () => {
    server = await startTestServer({
      modules: [streamsModule],
      config: { streams: { "max-query-results": 3, "max-query-bytes": 300 } },
    });
    await server.app.inject({ method: "POST", url: "/api/v1/stream/s", payload: { config: b64(INDEXING) } });
    const events = Array.from({ length: 4 }, (_, i) => ({ host: `h${i}`, time: i, description: "d" }));
    events.push({ host: "long", time: 9, description: "x".repeat(60_000) });
    await server.app.inject({ method: "PUT", url: "/api/v1/stream/s", payload: { events } });
  });
  afterAll(() => server.close());

  const search = async (condition: string) => {
    const response = await server.app.inject({ method: "GET", url: `/api/v1/index/s/search?query=${b64(condition)}` });
    return { status: response.statusCode, body: response.json() as unknown, type: response.headers["content-type"] };
  };

  it("answers within the bounds as before: the JSON of the events", async () => {
    expect(await search('[:contains [:host] "x"]')).toMatchObject({ status: 200, body: { events: [] } });
    const found = await search("[:< :time 2]");
    expect(found).toEqual({
      status: 200,
      body: {
        events: [
          { host: "h0", time: 0, description: "d" },
          { host: "h1", time: 1, description: "d" },
        ],
      },
      type: "application/json; charset=utf-8",
    });
  });

  it("refuses an answer of more than max-query-results events, or of more than max-query-bytes bytes", async () => {
    expect(await search("[:< :time 5]")).toMatchObject({
      status: 400,
      body: { error: "index search matches more than 3 events (streams.max-query-results)" },
    });
    expect(await search('[:= :host "long"]')).toMatchObject({
      status: 400,
      body: { error: "index search answer is larger than 300 bytes (streams.max-query-bytes)" },
    });
  });

  it("refuses a query whose regular expressions would read more than max-event-size characters of one event", async () => {
    const patterns = Array.from({ length: 20 }, (_, i) => `[:regex :description ".*${i}"]`).join(" ");
    expect(await search(`[:or ${patterns}]`)).toMatchObject({
      status: 400,
      body: {
        error:
          "index search: the query's regular expressions read more than 1048576 characters of one event (streams.max-event-size)",
      },
    });
  });
});

describe("Riemann query bounds", () => {
  function handler(riemannResults: number | undefined, limits = DEFAULT_STREAM_LIMITS) {
    const engine = new StreamEngine({}, limits);
    const stream = engine.add("s", parseEdn(INDEXING), { kind: "api" });
    stream.push(Array.from({ length: 5 }, (_, i) => ({ host: `h${i}`, time: i, description: "d".repeat(100) })));
    const metrics = { connections() {}, message() {}, events() {} };
    return new RiemannHandler({ "query-stream": undefined, "max-query-results": riemannResults }, engine, metrics);
  }
  const ask = async (target: RiemannHandler, query: string) => {
    const reply = (await target.handle(encodeMsg({ query: { string: query } }))) as Buffer;
    return decodeReply(reply.subarray(LENGTH_PREFIX));
  };

  it("takes streams.max-query-results, or the Riemann input's own key when it is set", async () => {
    const limits = { ...DEFAULT_STREAM_LIMITS, queryResults: 4 };
    expect((await ask(handler(undefined, limits), "true")).error).toBe(
      "query matches more than 4 events (streams.max-query-results)",
    );
    expect((await ask(handler(5, limits), "true")).events).toHaveLength(5);
    expect((await ask(handler(2, limits), "true")).error).toBe(
      "query matches more than 2 events (streams.riemann.max-query-results)",
    );
  });

  it("answers ok: false when the reply would be larger than max-query-bytes", async () => {
    const limits = { ...DEFAULT_STREAM_LIMITS, queryBytes: 400 };
    expect((await ask(handler(undefined, limits), 'host = "h0"')).events).toHaveLength(1);
    expect(await ask(handler(undefined, limits), "true")).toEqual({
      ok: false,
      error: "query answer is larger than 400 bytes (streams.max-query-bytes)",
      events: [],
    });
  });

  it("keeps accepting streams.riemann.max-query-results in the configuration, with no default of its own", () => {
    const validate = object(streamsShape, { unknownKeys: "reject" });
    const section = validate({ riemann: { "max-query-results": 7 } }, "streams");
    expect(section.riemann["max-query-results"]).toBe(7);
    expect(section["max-query-results"]).toBe(10_000);
    expect(validate({}, "streams").riemann["max-query-results"]).toBeUndefined();
    expect(section["max-query-bytes"]).toBe(16 * 1024 * 1024);
  });
});
