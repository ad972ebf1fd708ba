import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { uncompressSync } from "snappy";
import { describe, expect, it } from "vitest";
import {
  encodeRemoteWriteBatch,
  REMOTE_WRITE_HEADERS,
  samplesOf,
} from "../../../src/platform/outputs/remote-write-output.js";
import type { Event } from "../../../src/streams/event.js";
import { RemoteWriteDecoder } from "../../../src/streams/remote-write-decoder.js";

const schema = protobuf.loadSync(fileURLToPath(new URL("../../../proto/remote-write.proto", import.meta.url)));
const WriteRequest = schema.lookupType("prometheus.WriteRequest");

interface DecodedSeries {
  labels: Array<{ name: string; value: string }>;
  samples: Array<{ value: number; timestamp: number }>;
}

/** What a receiver reads: snappy, then protobufjs against the schema. */
function decode(body: Uint8Array): DecodedSeries[] {
  const bytes = uncompressSync(body);
  if (typeof bytes === "string") throw new Error("snappy gave a string");
  const request = WriteRequest.toObject(WriteRequest.decode(bytes), { longs: Number, defaults: true }) as {
    timeseries: DecodedSeries[];
  };
  return request.timeseries.map(({ labels, samples }) => ({ labels, samples }));
}

function encodeAndDecode(batch: Event[]): { series: DecodedSeries[]; rejected: number; events: number } {
  const encoded = encodeRemoteWriteBatch(batch);
  expect(encoded.units.length).toBe(1);
  const unit = encoded.units[0];
  if (unit === undefined) throw new Error("no unit");
  return { series: decode(unit.payload), rejected: encoded.rejected, events: unit.events };
}

describe("the prometheus-remote-write encoding", () => {
  it("maps an event to a sample: service as __name__, other string fields as sanitised labels sorted by name, time in ms", () => {
    const { series, rejected, events } = encodeAndDecode([
      {
        service: "cpu",
        host: "web-1",
        "http-method": "GET",
        "2xx": "yes",
        description: "not a label",
        state: "ok",
        tags: ["a"],
        ttl: 60,
        nested: { x: "y" },
        empty: "",
        metric: 0.5,
        time: 100.0004,
      },
    ]);
    expect(rejected).toBe(0);
    expect(events).toBe(1);
    expect(series).toEqual([
      {
        labels: [
          { name: "__name__", value: "cpu" },
          { name: "_xx", value: "yes" },
          { name: "host", value: "web-1" },
          { name: "http_method", value: "GET" },
          { name: "state", value: "ok" },
        ],
        samples: [{ value: 0.5, timestamp: 100_000 }],
      },
    ]);
  });

  it("uses name when there is no string service, and keeps service as a label otherwise", () => {
    const { series } = encodeAndDecode([
      { name: "up", job: "node", metric: 1, time: 10 },
      { service: 12, name: "temperature", metric: 21.5, time: 10 },
      { service: "load", name: "the load", metric: 2, time: 10 },
    ]);
    expect(series.map((s) => s.labels)).toEqual([
      [
        { name: "__name__", value: "up" },
        { name: "job", value: "node" },
      ],
      [{ name: "__name__", value: "temperature" }],
      [
        { name: "__name__", value: "load" },
        { name: "name", value: "the load" },
      ],
    ]);
  });

  it("rounds timestamps to the millisecond and sorts the samples of a series by time, series in order of first sample", () => {
    const { series } = encodeAndDecode([
      { service: "b", metric: 3, time: 30.0006 },
      { service: "a", metric: 1, time: 5 },
      { service: "b", metric: 1, time: 10.0004 },
      { service: "b", metric: 2, time: 20 },
      { service: "b", metric: 4, time: 20 },
    ]);
    expect(series).toEqual([
      {
        labels: [{ name: "__name__", value: "b" }],
        samples: [
          { value: 1, timestamp: 10_000 },
          { value: 2, timestamp: 20_000 },
          { value: 4, timestamp: 20_000 },
          { value: 3, timestamp: 30_001 },
        ],
      },
      { labels: [{ name: "__name__", value: "a" }], samples: [{ value: 1, timestamp: 5000 }] },
    ]);
  });

  it("tells series apart by every label", () => {
    const { series } = encodeAndDecode([
      { service: "x", host: "a", metric: 1, time: 1 },
      { service: "x", host: "b", metric: 2, time: 2 },
      { service: "x", host: "a", env: "prod", metric: 3, time: 3 },
      { service: "x", host: "a", metric: 4, time: 4 },
    ]);
    expect(series.map((s) => [s.labels.map((l) => `${l.name}=${l.value}`), s.samples.map((p) => p.value)])).toEqual([
      [
        ["__name__=x", "host=a"],
        [1, 4],
      ],
      [["__name__=x", "host=b"], [2]],
      [["__name__=x", "env=prod", "host=a"], [3]],
    ]);
  });

  it("keeps, of fields whose names sanitise alike, the first in name order, whatever the order of the event's keys", () => {
    // "-" (0x2d) < "." (0x2e) < "_" (0x5f): a-b wins over a.b, which wins over a_b.
    const { series } = encodeAndDecode([
      { service: "x", "a.b": "dot", "a-b": "dash", metric: 1, time: 1 },
      { service: "x", "a-b": "dash", "a.b": "dot", metric: 2, time: 2 },
      { service: "x", a_b: "underscore", "a.b": "dot", "a-b": "dash", metric: 3, time: 3 },
      { service: "x", "a-b": "dash", a_b: "underscore", metric: 4, time: 4 },
      // The winner must give a label: an empty (left out) a-b leaves the name to a.b.
      { service: "x", "a-b": "", a_b: "underscore", "a.b": "dot", metric: 5, time: 5 },
      // __name__ is the service's, whatever field sanitises to it.
      { service: "x", __name__: "ignored", "--name__": "ignored too", metric: 6, time: 6 },
    ]);
    expect(series).toEqual([
      {
        labels: [
          { name: "__name__", value: "x" },
          { name: "a_b", value: "dash" },
        ],
        samples: [1, 2, 3, 4].map((value) => ({ value, timestamp: value * 1000 })),
      },
      {
        labels: [
          { name: "__name__", value: "x" },
          { name: "a_b", value: "dot" },
        ],
        samples: [{ value: 5, timestamp: 5000 }],
      },
      { labels: [{ name: "__name__", value: "x" }], samples: [{ value: 6, timestamp: 6000 }] },
    ]);
  });

  it("rejects events that cannot be a sample", () => {
    const batch: Event[] = [
      { service: "ok", metric: -1.5e300, time: -2 },
      { service: "no metric", time: 1 },
      { service: "string metric", metric: "1", time: 1 },
      { service: "no time", metric: 1 },
      { service: "string time", metric: 1, time: "1" },
      { service: "huge time", metric: 1, time: 1e300 },
      { host: "no name", metric: 1, time: 1 },
      { service: 5, name: ["x"], metric: 1, time: 1 },
    ];
    const { series, rejected, events } = encodeAndDecode(batch);
    expect(rejected).toBe(7);
    expect(events).toBe(1);
    expect(series).toEqual([
      { labels: [{ name: "__name__", value: "ok" }], samples: [{ value: -1.5e300, timestamp: -2000 }] },
    ]);
    expect(samplesOf(batch)).toMatchObject({ rejected: 7, count: 1 });
  });

  it("sends nothing when no event is a sample", () => {
    expect(encodeRemoteWriteBatch([{ service: "x" }, { metric: 1, time: 1 }])).toEqual({ units: [], rejected: 2 });
  });

  it("gives back what came in by remote write: same name, labels, values and times", () => {
    const incoming = WriteRequest.encode(
      WriteRequest.fromObject({
        timeseries: [
          {
            labels: [
              { name: "__name__", value: "http_requests_total" },
              { name: "instance", value: "127.0.0.1:9090" },
              { name: "job", value: "prometheus" },
              { name: "status", value: "200" },
            ],
            samples: [
              { value: 1027, timestamp: 1_700_000_000_123 },
              { value: 1030, timestamp: 1_700_000_015_123 },
            ],
          },
          {
            labels: [
              { name: "__name__", value: "up" },
              { name: "job", value: "node" },
            ],
            samples: [{ value: 1, timestamp: 1_700_000_000_000 }],
          },
        ],
      }),
    ).finish();
    const events: Event[] = [];
    new RemoteWriteDecoder().decode(incoming, (event) => events.push(event));
    const { series } = encodeAndDecode(events);
    expect(series).toEqual(
      (WriteRequest.toObject(WriteRequest.decode(incoming), { longs: Number }) as { timeseries: DecodedSeries[] })
        .timeseries,
    );
  });

  it("declares remote write 1.0's headers", () => {
    expect(REMOTE_WRITE_HEADERS).toEqual({
      "content-encoding": "snappy",
      "content-type": "application/x-protobuf",
      "x-prometheus-remote-write-version": "0.1.0",
    });
  });
});
