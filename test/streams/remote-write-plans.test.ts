import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import type { Event } from "../../src/streams/event.js";
import { DEFAULT_EVENT_BOUNDS } from "../../src/streams/event-bounds.js";
import { RemoteWriteDecoder } from "../../src/streams/remote-write-decoder.js";
import { PlanRecorder, RequestPlans } from "../../src/streams/remote-write-plans.js";
import { requestBytes } from "../../src/streams/remote-write-series-cache.js";

const schema = protobuf.loadSync(fileURLToPath(new URL("../../proto/remote-write.proto", import.meta.url)));
const WriteRequest = schema.lookupType("prometheus.WriteRequest");

interface Sample {
  value: number;
  timestamp: number;
  /** A staleness marker (its value is {@link STALE}): no event. */
  stale?: boolean;
}

/** A request of `series` series (sorted labels, as Prometheus sends them), `host` in each. */
function encode(series: number, samples: (s: number) => Sample[], host = "a"): Uint8Array {
  const timeseries = [];
  for (let s = 0; s < series; s++) {
    const labels = [
      { name: "__name__", value: `metric_${s % 3}` },
      { name: "host", value: `${host}${s}` },
      { name: "job", value: "node" },
    ];
    timeseries.push({ labels, samples: samples(s) });
  }
  return WriteRequest.encode(WriteRequest.fromObject({ timeseries })).finish();
}

/** The events the request must give, written out. */
function expected(series: number, samples: (s: number) => Sample[], host = "a"): Event[] {
  const events: Event[] = [];
  for (let s = 0; s < series; s++) {
    for (const { value, timestamp, stale } of samples(s)) {
      if (stale === true) continue;
      events.push({
        host: `${host}${s}`,
        job: "node",
        service: `metric_${s % 3}`,
        metric: value,
        time: timestamp / 1000,
      });
    }
  }
  return events;
}

/** Prometheus' staleness marker (0x7ff0000000000002): read back from its bits. */
const STALE = new DataView(new Uint32Array([2, 0x7ff00000]).buffer).getFloat64(0, true);

function decode(decoder: RemoteWriteDecoder, bytes: Uint8Array): Event[] {
  const events: Event[] = [];
  decoder.decode(bytes, (event) => events.push(event));
  return events;
}

/** Samples of scrape `k`: values and times change, their encoded lengths do not. */
const scrape = (k: number) => (s: number) => [{ value: s * 1.5 + k, timestamp: 1_700_000_000_000 + 1000 * k + s }];

describe("remote write request plans", () => {
  it("decodes requests that differ from an earlier one only in their samples as the samples say", () => {
    const decoder = new RemoteWriteDecoder();
    for (let k = 0; k < 5; k++) expect(decode(decoder, encode(50, scrape(k)))).toEqual(expected(50, scrape(k)));
  });

  it("keeps skipping staleness markers and reads several samples per series", () => {
    const decoder = new RemoteWriteDecoder();
    const samples = (k: number) => (s: number) => [
      (s + k) % 4 === 0
        ? { value: STALE, timestamp: 1_700_000_000_000 + k, stale: true }
        : { value: s + k, timestamp: 1_700_000_000_000 + k },
      { value: Number.NaN, timestamp: 1_700_000_000_500 + k },
    ];
    for (let k = 0; k < 5; k++) expect(decode(decoder, encode(20, samples(k)))).toEqual(expected(20, samples(k)));
  });

  it("does not take a request of the same length with other labels for the planned one", () => {
    const decoder = new RemoteWriteDecoder();
    for (let k = 0; k < 3; k++) decode(decoder, encode(30, scrape(k)));
    expect(decode(decoder, encode(30, scrape(3), "b"))).toEqual(expected(30, scrape(3), "b"));
    expect(decode(decoder, encode(30, scrape(4)))).toEqual(expected(30, scrape(4)));
  });

  it("compares with its own copy: a buffer changed in place by the caller is read again", () => {
    const decoder = new RemoteWriteDecoder();
    const bytes = encode(10, scrape(0));
    decode(decoder, bytes);
    decode(decoder, bytes);
    bytes.set(encode(10, scrape(0), "b"));
    expect(decode(decoder, bytes)).toEqual(expected(10, scrape(0), "b"));
  });

  it("matches in slices, and a fork shares the plans", async () => {
    const decoder = new RemoteWriteDecoder();
    decode(decoder, encode(3000, scrape(0)));
    const events: Event[] = [];
    await decoder.fork().decodeSliced(encode(3000, scrape(1)), (event) => events.push(event));
    expect(events).toEqual(expected(3000, scrape(1)));
  });

  it("replays compact templates that keep no field or value of an earlier request", () => {
    const decoder = new RemoteWriteDecoder();
    // Seen once (recorded), then matched (its templates made compact), then replayed again.
    for (let k = 0; k < 3; k++) expect(decode(decoder, encode(4, scrape(k)))).toEqual(expected(4, scrape(k)));
    const replayed = decode(decoder, encode(4, scrape(3)));
    expect(replayed).toEqual(expected(4, scrape(3)));
    // An event changed by a stream does not change the next request's.
    for (const event of replayed) {
      event.host = "changed";
      event.extra = 1;
      delete event.job;
    }
    expect(decode(decoder, encode(4, scrape(4)))).toEqual(expected(4, scrape(4)));
    // The same series but for a label's value, then without a label: nothing of the planned ones stays.
    expect(decode(decoder, encode(4, scrape(5), "b"))).toEqual(expected(4, scrape(5), "b"));
    const withoutJob = WriteRequest.encode(
      WriteRequest.fromObject({
        timeseries: [0, 1, 2, 3].map((s) => ({
          labels: [
            { name: "__name__", value: `metric_${s % 3}` },
            { name: "host", value: `a${s}` },
          ],
          samples: scrape(6)(s),
        })),
      }),
    ).finish();
    expect(decode(decoder, withoutJob)).toEqual(expected(4, scrape(6)).map(({ job: _job, ...event }) => event));
    expect(decode(decoder, encode(4, scrape(7)))).toEqual(expected(4, scrape(7)));
  });

  it("makes a plan's templates compact when first matched, once, as copies with the same fields", () => {
    const decoder = new RemoteWriteDecoder();
    const plans = new RequestPlans();
    const recorder = new PlanRecorder();
    const bytes = encode(3, scrape(0));
    recorder.start(true);
    const template = { host: "a0", job: "node", service: "metric_0", metric: 0, time: 0 };
    for (let s = 0; s < 3; s++) recorder.series(s === 2 ? { ...template, host: "a2" } : template, [0, 0], 0);
    const recorded = [...recorder.templates];
    plans.add(bytes, recorder);
    const plan = plans.match(requestBytes(bytes));
    if (plan === undefined) throw new Error("the request matches its own plan");
    expect(plan.compact).toBe(true);
    expect(plan.templates).toEqual(recorded);
    for (let s = 0; s < 3; s++) expect(plan.templates[s]).not.toBe(recorded[s]);
    // A template shared by two series is copied once; a plan matched again keeps its copies.
    expect(plan.templates[1]).toBe(plan.templates[0]);
    const compacted = [...plan.templates];
    expect(plans.match(requestBytes(bytes))?.templates).toEqual(compacted);
    for (let s = 0; s < 3; s++) expect(plan.templates[s]).toBe(compacted[s]);
    expect(decode(decoder, bytes)).toEqual(expected(3, scrape(0)));
  });

  it("counts the samples of a series over a bound in every request", () => {
    const decoder = new RemoteWriteDecoder({ ...DEFAULT_EVENT_BOUNDS, string: 2 });
    for (let k = 0; k < 3; k++) {
      expect(decode(decoder, encode(5, scrape(k)))).toEqual([]);
      expect([...decoder.refused.values()]).toEqual([5]);
    }
  });
});

describe("RequestPlans", () => {
  const record = (bytes: Uint8Array, plans: RequestPlans) => {
    const recorder = new PlanRecorder();
    recorder.start(true);
    // One series whose only sample is the last 11 bytes (value and a one-byte timestamp).
    recorder.series({ metric: 0, time: 0 }, [bytes.length - 11, bytes.length], 2);
    plans.add(bytes, recorder);
  };

  it("matches a request that differs only in the planned sample bytes, nothing else", () => {
    const plans = new RequestPlans();
    const planned = Uint8Array.from({ length: 40 }, (_, i) => i);
    record(planned, plans);
    const samplesChanged = Uint8Array.from(planned, (byte, i) => (i >= 29 ? 255 - byte : byte));
    expect(plans.match(requestBytes(samplesChanged))).toBeDefined();
    const labelChanged = Uint8Array.from(samplesChanged, (byte, i) => (i === 28 ? byte + 1 : byte));
    expect(plans.match(requestBytes(labelChanged))).toBeUndefined();
    expect(plans.match(requestBytes(planned.subarray(1)))).toBeUndefined();
    expect(plans.match(requestBytes(planned))).toBeDefined();
  });

  it("matches whatever the sample bytes, NaN bit patterns included (staleness markers, V8's hole)", () => {
    const plans = new RequestPlans();
    const planned = Uint8Array.from({ length: 40 }, (_, i) => i);
    record(planned, plans);
    const patterns = [
      [0x00000002, 0x7ff00000],
      [0xfff7ffff, 0xfff7ffff],
      [0x00000001, 0x7ff40000],
      [0xffffffff, 0xffffffff],
    ];
    for (const [low, high] of patterns) {
      // The NaN at every offset of the 11 sample bytes, whatever 8 of them are copied at once.
      for (let at = 29; at + 8 <= 40; at++) {
        const request = Uint8Array.from(planned);
        const view = new DataView(request.buffer);
        view.setUint32(at, low ?? 0, true);
        view.setUint32(at + 4, high ?? 0, true);
        for (let round = 0; round < 3; round++) expect(plans.match(requestBytes(request)), `at ${at}`).toBeDefined();
      }
    }
  });

  it("keeps two layouts of the same length, evicting the one matched least recently", () => {
    const plans = new RequestPlans();
    const layout = (label: number) => Uint8Array.from({ length: 40 }, (_, i) => (i === 0 ? label : i));
    record(layout(1), plans);
    record(layout(2), plans);
    expect(plans.match(requestBytes(layout(1)))).toBeDefined();
    expect(plans.match(requestBytes(layout(2)))).toBeDefined();
    record(layout(3), plans); // evicts layout 1, matched before layout 2
    expect(plans.match(requestBytes(layout(2)))).toBeDefined();
    expect(plans.match(requestBytes(layout(3)))).toBeDefined();
    expect(plans.match(requestBytes(layout(1)))).toBeUndefined();
  });

  it("records after 1, 2, 4, 8 … requests in a row that matched no plan", () => {
    const plans = new RequestPlans();
    const wanted: boolean[] = [];
    for (let i = 0; i < 9; i++) {
      plans.match(requestBytes(new Uint8Array(i + 1)));
      wanted.push(plans.wants(i + 1));
    }
    expect(wanted).toEqual([true, true, false, true, false, false, false, true, false]);
  });
});
