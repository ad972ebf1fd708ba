/**
 * The event bounds on the other ways in, through the real routes (app.inject): remote write and
 * OTLP traces (protobuf and JSON, small bodies and large ones decoded in slices) drop an event
 * beyond a bound and count it, and so does the event sink of other modules; the rest goes on.
 */
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { compressSync } from "snappy";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { VigieServer } from "../../../src/server.js";
import { streamsModule } from "../../../src/streams/index.js";
import { INLINE_DECODED_BYTES } from "../../../src/streams/routes/remote-write.js";
import { startTestServer } from "../../support/server.js";

const proto = (file: string) => protobuf.loadSync(fileURLToPath(new URL(`../../../proto/${file}`, import.meta.url)));
const WriteRequest = proto("remote-write.proto").lookupType("prometheus.WriteRequest");
const TraceRequest = proto("otlp-trace.proto").lookupType("vigie.otlp.ExportTraceServiceRequest");
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

let server: VigieServer;

beforeAll(async () => {
  server = await startTestServer({ modules: [streamsModule], config: { streams: { "max-event-fields": 20 } } });
});
afterAll(() => server.close());
beforeEach(async () => {
  // A fresh index for each test; `name` and `host` key spans and samples.
  await server.app.inject({
    method: "POST",
    url: "/api/v1/stream/s",
    payload: { config: b64("{:actions {:action :index :params [[:name :host :n]]}}") },
  });
});

async function indexed(): Promise<Array<Record<string, unknown>>> {
  const response = await server.app.inject({ method: "GET", url: `/api/v1/index/s/search?query=${b64("[:true]")}` });
  return (response.json() as { events: Array<Record<string, unknown>> }).events;
}

async function dropped(action: string, reason: string): Promise<number> {
  const text = (await server.app.inject({ method: "GET", url: "/metrics" })).body;
  const prefix = `stream_dropped_events_total{stream="s",action="${action}",reason="${reason}"} `;
  const line = text.split("\n").find((item) => item.startsWith(prefix));
  return line === undefined ? 0 : Number(line.slice(prefix.length));
}

const labels = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `l${i}`, value: "v" }));

function remoteWrite(body: Uint8Array) {
  return server.app.inject({
    method: "POST",
    url: "/api/v1/tsdb/remote-write/s",
    headers: { "content-type": "application/x-protobuf" },
    payload: compressSync(Buffer.from(body)),
  });
}

describe("remote write", () => {
  it("drops the samples of a series beyond a bound, in a small request and in a large one", async () => {
    for (const samplesPerSeries of [1, 20_000]) {
      const before = await dropped("remote-write", "max-event-fields");
      const samples = Array.from({ length: samplesPerSeries }, (_, i) => ({ value: i, timestamp: 1_000 + i }));
      const body = WriteRequest.encode(
        WriteRequest.fromObject({
          timeseries: [
            { labels: [{ name: "host", value: "ok" }], samples },
            { labels: [{ name: "host", value: "wide" }, ...labels(18)], samples },
          ],
        }),
      ).finish();
      expect(body.length > INLINE_DECODED_BYTES).toBe(samplesPerSeries > 1);
      expect((await remoteWrite(body)).statusCode).toBe(204);
      expect((await indexed()).map((event) => event.host)).toEqual(["ok"]);
      expect((await dropped("remote-write", "max-event-fields")) - before).toBe(samplesPerSeries);
    }
  });

  it("answers a large malformed request with a 400, as a small one", async () => {
    const samples = Array.from({ length: 30_000 }, (_, i) => ({ value: i, timestamp: i }));
    const body = WriteRequest.encode(
      WriteRequest.fromObject({ timeseries: [{ labels: labels(1), samples }] }),
    ).finish();
    const response = await remoteWrite(body.subarray(0, body.length - 3));
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/^invalid remote write body: /);
  });
});

describe("OTLP traces", () => {
  const attributes = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ key: `a${i}`, value: { stringValue: "v" } }));
  const spans = (count: number) => [
    ...Array.from({ length: count }, (_, i) => ({ name: `span-${i}`, attributes: attributes(2) })),
    { name: "wide", attributes: attributes(25) },
  ];
  const requestOf = (count: number) => ({ resourceSpans: [{ scopeSpans: [{ spans: spans(count) }] }] });

  for (const encoding of ["protobuf", "json"] as const) {
    for (const count of [1, 10_000]) {
      it(`drops a span beyond a bound (${encoding}, ${count === 1 ? "small" : "large"} body)`, async () => {
        const before = await dropped("otlp", "max-event-fields");
        const value = requestOf(count);
        const payload =
          encoding === "json"
            ? JSON.stringify(value)
            : Buffer.from(TraceRequest.encode(TraceRequest.fromObject(value)).finish());
        // A large body takes the sliced path (past 256 KiB of protobuf, 64 KiB of JSON).
        expect(payload.length > INLINE_DECODED_BYTES).toBe(count > 1);
        const response = await server.app.inject({
          method: "POST",
          url: "/api/v1/opentelemetry/v1/traces/s",
          headers: { "content-type": encoding === "json" ? "application/json" : "application/x-protobuf" },
          payload,
        });
        expect(response.statusCode).toBe(200);
        const names = (await indexed()).map((event) => event.name);
        expect(names).toHaveLength(count);
        expect(names).not.toContain("wide");
        expect((await dropped("otlp", "max-event-fields")) - before).toBe(1);
      });
    }
  }
});

describe("the event sink of other modules", () => {
  it("drops an event beyond a bound and counts it; the others reach the stream", async () => {
    const wide = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`f${i}`, i]));
    server.context.events.push("s", [
      { name: "a", time: 1 },
      { name: "b", time: 2, ...wide },
      { name: "c", time: 3 },
    ]);
    expect((await indexed()).map((event) => event.name)).toEqual(["a", "c"]);
    expect(await dropped("event-sink", "max-event-fields")).toBe(1);
  });
});
