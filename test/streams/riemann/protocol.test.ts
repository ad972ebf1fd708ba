import { describe, expect, it } from "vitest";
import {
  decodeMsg,
  decodeReply,
  type EncodableEvent,
  encodeMsg,
  errorFrame,
  eventsFrame,
  fromRiemann,
  OK_FRAME,
  targetStream,
  toRiemann,
} from "../../../src/streams/riemann/protocol.js";

/** The events of a message encoded as a client would, decoded as the server does. */
function received(events: EncodableEvent[], now = 1_000) {
  return decodeMsg(encodeMsg({ events })).events.map((event) => ({
    event: fromRiemann(event, now),
    stream: targetStream(event),
  }));
}

describe("Riemann events to Vigie events", () => {
  it("maps the standard fields when set, and nothing else", () => {
    expect(
      received([
        {
          host: "web-1",
          service: "cpu",
          state: "ok",
          description: "fine",
          tags: ["prod", "eu"],
          ttl: 60,
          metricD: 0.5,
          time: 1_700_000_000,
        },
        {},
      ]),
    ).toEqual([
      {
        event: {
          host: "web-1",
          service: "cpu",
          state: "ok",
          description: "fine",
          tags: ["prod", "eu"],
          ttl: 60,
          metric: 0.5,
          time: 1_700_000_000,
        },
        stream: undefined,
      },
      { event: { time: 1_000 }, stream: undefined },
    ]);
  });

  it("keeps empty strings that were sent, which are not absent fields", () => {
    expect(received([{ host: "", state: "" }])[0]?.event).toEqual({ host: "", state: "", time: 1_000 });
  });

  it("takes the metric from metric_sint64, else metric_d, else metric_f; a metric of 0 is a metric", () => {
    const metric = (event: EncodableEvent) => received([event])[0]?.event.metric;
    expect(metric({ metricSint64: 3, metricD: 4, metricF: 5 })).toBe(3);
    expect(metric({ metricD: 4.25, metricF: 5 })).toBe(4.25);
    expect(metric({ metricF: 5.5 })).toBe(5.5);
    expect(metric({ metricSint64: 0, metricD: 4 })).toBe(0);
    expect(metric({ metricSint64: -42 })).toBe(-42);
    expect(metric({ metricSint64: 2 ** 53 - 1 })).toBe(2 ** 53 - 1);
    expect(metric({ metricSint64: -(2 ** 40) })).toBe(-(2 ** 40));
    expect(typeof metric({ metricSint64: 2 ** 60 })).toBe("number");
    expect(metric({})).toBeUndefined();
  });

  it("takes the time from time_micros, else time (seconds), else now", () => {
    const time = (event: EncodableEvent) => received([event], 1_234.5)[0]?.event.time;
    expect(time({ timeMicros: 1_700_000_000_123_456, time: 5 })).toBe(1_700_000_000.123456);
    expect(time({ time: 1_700_000_000 })).toBe(1_700_000_000);
    expect(time({ time: 0 })).toBe(0);
    expect(time({})).toBe(1_234.5);
  });

  it("makes attributes top-level string fields, except stream which names the target", () => {
    expect(
      received([
        {
          host: "a",
          attributes: [
            { key: "plugin", value: "cpu" },
            { key: "stream", value: "collectd" },
            { key: "type_instance", value: "idle" },
          ],
        },
      ]),
    ).toEqual([{ event: { host: "a", time: 1_000, plugin: "cpu", type_instance: "idle" }, stream: "collectd" }]);
  });

  it("lets standard fields win over attributes of the same name, and skips names that cannot be fields", () => {
    const [first] = received([
      {
        metricD: 1,
        attributes: [
          { key: "metric", value: "oops" },
          { key: "time", value: "now" },
          { key: "__proto__", value: "x" },
          { key: "", value: "empty" },
          { key: "constructor", value: "c" },
          { key: "valueless" },
        ],
      },
    ]);
    expect(first?.event).toEqual({ metric: 1, time: 1_000, constructor: "c", valueless: "" });
    expect(Object.getPrototypeOf(first?.event)).toBe(Object.prototype);
  });
});

describe("Vigie events to Riemann events", () => {
  it("puts standard fields in their protobuf fields and other strings in attributes", () => {
    expect(
      toRiemann({
        host: "a",
        service: "cpu",
        state: "ok",
        description: "d",
        tags: ["x", 1, "y"],
        ttl: 30,
        time: 1_700_000_000.25,
        metric: 7,
        plugin: "cpu",
        count: 3,
        nested: { a: "b" },
      }),
    ).toEqual({
      host: "a",
      service: "cpu",
      state: "ok",
      description: "d",
      tags: ["x", "y"],
      ttl: 30,
      time: 1_700_000_000,
      timeMicros: 1_700_000_000_250_000,
      metricSint64: 7,
      metricF: 7,
      attributes: [{ key: "plugin", value: "cpu" }],
    });
    expect(toRiemann({ metric: 0.5 })).toEqual({ metricD: 0.5, metricF: 0.5 });
    expect(toRiemann({ metric: 2 ** 60 })).toEqual({ metricD: 2 ** 60, metricF: 2 ** 60 });
    expect(toRiemann({ host: 5, metric: "7", time: "now" })).toEqual({});
  });

  it("round-trips through the wire", () => {
    const event = {
      host: "a",
      service: "cpu",
      state: "ok",
      tags: ["x"],
      ttl: 30,
      time: 1_700_000_000.5,
      metric: -12,
      plugin: "p",
    };
    const [back] = decodeMsg(encodeMsg({ events: [toRiemann(event)] })).events;
    expect(back && fromRiemann(back, 0)).toEqual(event);
    const [real] = decodeMsg(encodeMsg({ events: [toRiemann({ ...event, metric: 0.25 })] })).events;
    expect(real && fromRiemann(real, 0)).toEqual({ ...event, metric: 0.25 });
  });
});

describe("messages and replies", () => {
  it("tells a query from no query", () => {
    expect(decodeMsg(encodeMsg({ events: [] })).query).toBeNull();
    expect(decodeMsg(encodeMsg({ query: { string: 'host = "a"' } })).query?.string).toBe('host = "a"');
    // A query without its string is still a query, of the empty string.
    const empty = decodeMsg(encodeMsg({ query: {} })).query;
    expect(empty).not.toBeNull();
    expect(empty?.string).toBe("");
  });

  it("frames replies with a 4-byte big-endian length", () => {
    expect(OK_FRAME.readUInt32BE(0)).toBe(OK_FRAME.length - 4);
    expect(decodeReply(OK_FRAME.subarray(4))).toEqual({ ok: true, events: [] });
    const error = errorFrame("unknown stream");
    expect(error.readUInt32BE(0)).toBe(error.length - 4);
    expect(decodeReply(error.subarray(4))).toEqual({ ok: false, error: "unknown stream", events: [] });
    const events = eventsFrame([{ host: "a", metric: 1, time: 2 }]);
    expect(decodeReply(events.subarray(4))).toEqual({
      ok: true,
      events: [{ host: "a", metricSint64: 1, metricF: 1, time: 2, timeMicros: 2_000_000, tags: [], attributes: [] }],
    });
  });

  it("refuses bytes that are not a Msg", () => {
    expect(() => decodeMsg(Buffer.from([0x32, 0x05, 0x01]))).toThrow();
    expect(() => decodeMsg(Buffer.from([0x0f]))).toThrow();
    expect(() => decodeMsg(Buffer.from("GET / HTTP/1.1\r\n"))).toThrow();
    // Deeply nested groups are refused by protobufjs' recursion limit, not by a stack overflow.
    expect(() => decodeMsg(Buffer.alloc(100_000, 0x0b))).toThrow();
  });
});
