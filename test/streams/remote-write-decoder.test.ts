import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import type { Event } from "../../src/streams/event.js";
import { DEFAULT_EVENT_BOUNDS } from "../../src/streams/event-bounds.js";
import { RemoteWriteDecoder, RemoteWriteError } from "../../src/streams/remote-write-decoder.js";
import { varint } from "../support/varint.js";

const schema = protobuf.loadSync(fileURLToPath(new URL("../../proto/remote-write.proto", import.meta.url)));
const WriteRequest = schema.lookupType("prometheus.WriteRequest");

interface Series {
  labels: Array<{ name: string; value: string }>;
  samples: Array<{ value: number; timestamp: number }>;
  exemplars?: unknown[];
}

function encode(timeseries: Series[], metadata: unknown[] = []): Uint8Array {
  return WriteRequest.encode(WriteRequest.fromObject({ timeseries, metadata })).finish();
}

/**
 * The sample-to-event mapping (docs/streams.md, Prometheus remote write), computed from protobufjs'
 * decoding: the reference.
 */
function reference(bytes: Uint8Array): Event[] {
  const request = WriteRequest.toObject(WriteRequest.decode(bytes), { longs: Number, defaults: true }) as {
    timeseries: Series[];
  };
  const events: Event[] = [];
  for (const series of request.timeseries) {
    for (const sample of series.samples) {
      const event: Event = {};
      let service: string | undefined;
      for (const { name, value } of series.labels) {
        if (name === "__name__") service = value;
        else event[name] = value;
      }
      if (service !== undefined) event.service = service;
      event.metric = sample.value;
      event.time = sample.timestamp / 1000;
      events.push(event);
    }
  }
  return events;
}

function decode(bytes: Uint8Array, decoder = new RemoteWriteDecoder()): Event[] {
  const events: Event[] = [];
  decoder.decode(bytes, (event) => events.push(event));
  return events;
}

/** A deterministic pseudo-random generator, so failures can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe("RemoteWriteDecoder", () => {
  it("maps every sample to an event: labels as fields, __name__ as service, value as metric, time in seconds", () => {
    const bytes = encode([
      {
        labels: [
          { name: "__name__", value: "http_requests_total" },
          { name: "instance", value: "127.0.0.1:8080" },
          { name: "job", value: "vigie" },
        ],
        samples: [
          { value: 12, timestamp: 1_700_000_000_123 },
          { value: 13.5, timestamp: 1_700_000_015_123 },
        ],
      },
      { labels: [{ name: "job", value: "other" }], samples: [{ value: -1, timestamp: 5 }] },
    ]);
    expect(decode(bytes)).toEqual([
      { instance: "127.0.0.1:8080", job: "vigie", service: "http_requests_total", metric: 12, time: 1_700_000_000.123 },
      {
        instance: "127.0.0.1:8080",
        job: "vigie",
        service: "http_requests_total",
        metric: 13.5,
        time: 1_700_000_015.123,
      },
      { job: "other", metric: -1, time: 0.005 },
    ]);
  });

  it("agrees with protobufjs on varied inputs", () => {
    const next = random(42);
    const words = ["", "a", "job", "é-ü-中文", "x".repeat(300), "instance", "le", "0.5", "__name__2"];
    for (let round = 0; round < 200; round++) {
      const timeseries: Series[] = [];
      const seriesCount = Math.floor(next() * 20);
      for (let s = 0; s < seriesCount; s++) {
        const labels = [];
        const labelCount = Math.floor(next() * 25);
        if (next() < 0.8) labels.push({ name: "__name__", value: `metric_${Math.floor(next() * 5)}` });
        for (let l = 0; l < labelCount; l++) {
          labels.push({
            name: `${words[Math.floor(next() * words.length)]}${l}`,
            value: words[Math.floor(next() * words.length)] as string,
          });
        }
        const samples = [];
        const sampleCount = Math.floor(next() * 4);
        for (let k = 0; k < sampleCount; k++) {
          const value = next() < 0.1 ? Number.POSITIVE_INFINITY : (next() - 0.5) * 10 ** Math.floor(next() * 20);
          samples.push({ value, timestamp: Math.floor(next() * 2 ** 42) - (next() < 0.05 ? 2 ** 41 : 0) });
        }
        timeseries.push({
          labels,
          samples,
          exemplars: next() < 0.2 ? [{ labels: [{ name: "trace_id", value: "abc" }], value: 1, timestamp: 3 }] : [],
        });
      }
      const metadata = next() < 0.3 ? [{ type: 1, metricFamilyName: "m", help: "h", unit: "" }] : [];
      const bytes = encode(timeseries, metadata);
      expect(decode(bytes), `round ${round}`).toEqual(reference(bytes));
    }
  });

  it("reuses one decoder across requests (cached label strings stay correct)", () => {
    const decoder = new RemoteWriteDecoder();
    const first = encode([{ labels: [{ name: "host", value: "a" }], samples: [{ value: 1, timestamp: 1000 }] }]);
    const second = encode([{ labels: [{ name: "host", value: "b" }], samples: [{ value: 2, timestamp: 2000 }] }]);
    expect(decode(first, decoder)).toEqual([{ host: "a", metric: 1, time: 1 }]);
    expect(decode(second, decoder)).toEqual([{ host: "b", metric: 2, time: 2 }]);
    expect(decode(first, decoder)).toEqual([{ host: "a", metric: 1, time: 1 }]);
  });

  it("decodes repeated, reordered and changed series the same through the series cache", () => {
    const next = random(11);
    const words = ["node", "é-ü-中文", "x".repeat(300), "10.0.0.1:9100", "", "a"];
    // A pool of series, sent again and again in varying order and subsets, as scrapes are.
    const pool: Series[] = Array.from({ length: 40 }, (_, s) => ({
      labels: [
        { name: "__name__", value: `m${s % 7}` },
        ...Array.from({ length: 1 + (s % 23) }, (_, l) => ({
          name: `l${l}`,
          value: words[(s + l) % words.length] as string,
        })),
      ],
      samples: [],
    }));
    const decoder = new RemoteWriteDecoder(DEFAULT_EVENT_BOUNDS);
    for (let round = 0; round < 60; round++) {
      const timeseries = pool
        .filter(() => next() < 0.7)
        .map((series) => ({
          labels: next() < 0.05 ? [...series.labels, { name: "extra", value: `${round}` }] : series.labels,
          samples: Array.from({ length: Math.floor(next() * 3) }, (_, k) => ({
            value: next(),
            timestamp: round * 10 + k,
          })),
        }));
      if (next() < 0.3) timeseries.reverse();
      const bytes = encode(timeseries);
      expect(decode(bytes, decoder), `round ${round}`).toEqual(reference(bytes));
    }
  });

  it("gives each sample an event of its own, never the cached one", () => {
    const decoder = new RemoteWriteDecoder();
    const bytes = encode([
      {
        labels: [{ name: "host", value: "a" }],
        samples: [
          { value: 1, timestamp: 1000 },
          { value: 2, timestamp: 2000 },
        ],
      },
    ]);
    const first = decode(bytes, decoder);
    (first[0] as Event).host = "changed";
    expect(first[0]).not.toBe(first[1]);
    expect(decode(bytes, decoder)).toEqual([
      { host: "a", metric: 1, time: 1 },
      { host: "a", metric: 2, time: 2 },
    ]);
  });

  it("decodes a series whose labels come after its samples (valid protobuf, not Prometheus' order)", () => {
    const label = (name: string, value: string) => {
      const bytes = Buffer.concat([
        Buffer.from([0x0a, name.length]),
        Buffer.from(name),
        Buffer.from([0x12, Buffer.byteLength(value)]),
        Buffer.from(value),
      ]);
      return Buffer.concat([Buffer.from([0x0a, bytes.length]), bytes]);
    };
    const sample = Buffer.from([0x12, 11, 0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10, 0x08]); // value 1, timestamp 8
    const request = (series: Buffer) => Buffer.concat([Buffer.from([0x0a, series.length]), series]);
    const decoder = new RemoteWriteDecoder();
    const opening = request(Buffer.concat([label("host", "a"), sample]));
    const late = request(Buffer.concat([label("host", "a"), sample, label("zone", "ü")]));
    expect(decode(opening, decoder)).toEqual([{ host: "a", metric: 1, time: 0.008 }]);
    expect(decode(late, decoder)).toEqual([{ host: "a", zone: "ü", metric: 1, time: 0.008 }]);
    expect(decode(Buffer.concat([late, opening]), decoder)).toEqual([
      { host: "a", zone: "ü", metric: 1, time: 0.008 },
      { host: "a", metric: 1, time: 0.008 },
    ]);
  });

  it("shares its caches with a fork, each with its own position", async () => {
    const decoder = new RemoteWriteDecoder();
    const bytes = encode([
      { labels: [{ name: "host", value: "a" }], samples: [{ value: 1, timestamp: 1000 }] },
      { labels: [{ name: "host", value: "b" }], samples: [{ value: 2, timestamp: 2000 }] },
    ]);
    const fork = decoder.fork();
    const sliced: Event[] = [];
    const pending = fork.decodeSliced(bytes, (event) => sliced.push(event));
    expect(decode(bytes, decoder)).toEqual(reference(bytes));
    await pending;
    expect(sliced).toEqual(reference(bytes));
  });

  it("skips staleness markers and keeps other NaNs", () => {
    const sample = (high: number, low: number, timestamp: number) => {
      const bytes = Buffer.alloc(11);
      bytes[0] = 0x09; // field 1, fixed64
      bytes.writeUInt32LE(low, 1);
      bytes.writeUInt32LE(high, 5);
      bytes[9] = 0x10; // field 2, varint
      bytes[10] = timestamp;
      return bytes;
    };
    const label = Buffer.from([0x0a, 0x03, 0x0a, 0x01, 0x61]); // Label{name: "a"}... wrapped below
    const series = Buffer.concat([
      Buffer.from([0x0a, label.length]),
      label,
      Buffer.from([0x12, 11]),
      sample(0x7ff00000, 0x00000002, 1),
      Buffer.from([0x12, 11]),
      sample(0x7ff80000, 0x00000000, 2),
    ]);
    const request = Buffer.concat([Buffer.from([0x0a, series.length]), series]);
    const events = decode(request);
    expect(events).toHaveLength(1);
    expect(events[0]?.time).toBe(0.002);
    expect(Number.isNaN(events[0]?.metric)).toBe(true);
  });

  it("decodes samples and series encoded otherwise than Prometheus does, at first and from the cache", () => {
    const field = (tag: number, body: Buffer) => Buffer.concat([Buffer.from([tag]), varint(body.length), body]);
    const value = (metric: number) => {
      const bytes = Buffer.alloc(9);
      bytes[0] = 0x09; // field 1, fixed64
      bytes.writeDoubleLE(metric, 1);
      return bytes;
    };
    const timestamp = (ms: number) => Buffer.concat([Buffer.from([0x10]), varint(ms)]); // field 2, varint
    const unknown = (length: number) => field(0x1a, Buffer.alloc(length, 0x61)); // field 3, length-delimited
    const samples = [
      Buffer.concat([value(1.5), timestamp(1_700_000_000_123)]),
      Buffer.concat([timestamp(1_700_000_000_123), value(2.5)]),
      value(3.5),
      timestamp(4000),
      Buffer.concat([value(5.5), timestamp(5000), Buffer.from([0x18, 0x01])]),
      Buffer.concat([value(6.5), timestamp(6000), value(-6.5)]),
      Buffer.concat([value(7.5), timestamp(7000), unknown(150)]),
      Buffer.alloc(0),
    ];
    const label = (name: string, text: string) =>
      field(0x0a, Buffer.concat([field(0x0a, Buffer.from(name)), field(0x12, Buffer.from(text))]));
    const series = samples.flatMap((sample, n) => {
      const labels = Buffer.concat([label("__name__", "up"), label("job", `j${n}`)]);
      return [
        field(0x0a, Buffer.concat([labels, field(0x12, sample)])),
        field(0x0a, Buffer.concat([labels, field(0x12, sample), field(0x12, samples[0] as Buffer)])),
        field(0x0a, Buffer.concat([labels, field(0x12, sample), Buffer.from([0x18, 0x02])])),
      ];
    });
    const request = Buffer.concat(series);
    const decoder = new RemoteWriteDecoder();
    for (let round = 0; round < 3; round++)
      expect(decode(request, decoder), `round ${round}`).toEqual(reference(request));
  });

  it("reads timestamps of every varint length, from a plan too, and non-minimal varints", () => {
    const varint = (value: bigint, padding = 0) => {
      const bytes: number[] = [];
      let rest = BigInt.asUintN(64, value);
      while (rest >= 0x80n) {
        bytes.push(Number(rest & 0x7fn) | 0x80);
        rest >>= 7n;
      }
      // Padding (a non-minimal varint of the same value): the last group with the continuation bit, then zero groups.
      if (padding > 0) {
        bytes.push(Number(rest) | 0x80);
        for (let i = 1; i < padding; i++) bytes.push(0x80);
        rest = 0n;
      }
      bytes.push(Number(rest));
      return Buffer.from(bytes);
    };
    const timestamps = [
      0,
      1,
      127,
      128,
      2 ** 14,
      2 ** 35 - 1,
      2 ** 42 + 3,
      2 ** 49 - 1,
      2 ** 49,
      2 ** 53 - 1,
      -1,
      -(2 ** 40),
    ];
    for (const padding of [0, 1, 2]) {
      const series = timestamps.map((timestamp, n) => {
        const sample = Buffer.alloc(9);
        sample[0] = 0x09; // field 1, fixed64: Prometheus' order, the value then the timestamp
        sample.writeDoubleLE(n + 0.5, 1);
        const body = Buffer.concat([
          sample,
          Buffer.from([0x10]),
          varint(BigInt(timestamp), timestamp < 0 ? 0 : padding),
        ]);
        const label = Buffer.from([0x0a, 0x08, 0x0a, 0x01, 0x6a, 0x12, 0x03, 0x6a, 0x6a, 0x30 + (n % 10)]);
        const samples = Buffer.concat([Buffer.from([0x12, body.length]), body]);
        return Buffer.concat([Buffer.from([0x0a, label.length + samples.length]), label, samples]);
      });
      const request = Buffer.concat(series);
      const expected = timestamps.map((timestamp, n) => ({
        j: `jj${n % 10}`,
        metric: n + 0.5,
        time: timestamp / 1000,
      }));
      const decoder = new RemoteWriteDecoder();
      // Decoded series by series, then (the same bytes) through the plan recorded the first time.
      for (let round = 0; round < 3; round++) expect(decode(request, decoder), `padding ${padding}`).toEqual(expected);
    }
  });

  it("refuses truncated and malformed messages", () => {
    const bytes = encode([
      { labels: [{ name: "__name__", value: "up" }], samples: [{ value: 1, timestamp: 1_700_000_000_000 }] },
    ]);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(() => decode(bytes.subarray(0, cut)), `cut at ${cut}`).toThrow(RemoteWriteError);
    }
    expect(() => decode(Uint8Array.from([0x0f]))).toThrow("unsupported wire type 7");
    expect(() => decode(Uint8Array.from([0x0a, 0x7f, 0x01]))).toThrow("length beyond the end of the message");
  });

  it("decodes the same in slices as at once", async () => {
    const next = random(7);
    for (let round = 0; round < 30; round++) {
      const timeseries: Series[] = [];
      for (let s = 0; s < Math.floor(next() * 30); s++) {
        const samples = Array.from({ length: Math.floor(next() * 3000) }, (_, k) => ({ value: k, timestamp: k }));
        timeseries.push({
          labels: [
            { name: "__name__", value: `m${s}` },
            { name: "host", value: `h${round}` },
          ],
          samples,
        });
      }
      const bytes = encode(timeseries);
      const sliced: Event[] = [];
      await new RemoteWriteDecoder(DEFAULT_EVENT_BOUNDS).decodeSliced(bytes, (event) => sliced.push(event));
      expect(sliced, `round ${round}`).toEqual(reference(bytes));
    }
  });
});

describe("RemoteWriteDecoder with event bounds", () => {
  const labels = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `l${i}`, value: "v" }));
  const sample = [{ value: 1, timestamp: 1000 }];

  it("refuses the samples of a series over a bound, counting them, and decodes the others", () => {
    const bytes = encode([
      { labels: [{ name: "__name__", value: "ok" }], samples: sample },
      // 998 labels, __name__ (service), metric and time: 1 001 fields.
      { labels: [{ name: "__name__", value: "wide" }, ...labels(998)], samples: [...sample, ...sample] },
      { labels: [{ name: "host", value: "x".repeat(65_537) }], samples: sample },
      { labels: [{ name: "__name__", value: "fits" }, ...labels(997)], samples: sample },
    ]);
    const decoder = new RemoteWriteDecoder(DEFAULT_EVENT_BOUNDS);
    const events = decode(bytes, decoder);
    expect(events.map((event) => event.service)).toEqual(["ok", "fits"]);
    expect(Object.keys(events[1] as Event)).toHaveLength(1000);
    expect([...decoder.refused]).toEqual([
      ["max-event-fields", 2],
      ["max-event-string", 1],
    ]);
    // The next request starts counting again.
    decode(encode([{ labels: [{ name: "a", value: "b" }], samples: sample }]), decoder);
    expect(decoder.refused.size).toBe(0);
  });

  it("skips the labels of a series once it is over a bound: a million labels cost little", () => {
    const bytes = encode([
      { labels: labels(1_000_000), samples: sample },
      { labels: labels(1), samples: sample },
    ]);
    const decoder = new RemoteWriteDecoder(DEFAULT_EVENT_BOUNDS);
    const started = performance.now();
    expect(decode(bytes, decoder)).toEqual([{ l0: "v", metric: 1, time: 1 }]);
    // Decoding (and caching) a million labels takes seconds; skipping them, milliseconds.
    expect(performance.now() - started).toBeLessThan(500);
    expect([...decoder.refused]).toEqual([["max-event-fields", 1]]);
  });
});
