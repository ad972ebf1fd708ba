import { describe, expect, it } from "vitest";
import { CONTENT_TYPES, encodeHttpBatch } from "../../../src/platform/outputs/http-output.js";
import { summaryOf } from "../../../src/platform/outputs/summary.js";

const events = [
  { host: "web-1", service: "cpu", state: "critical", metric: 0.97, time: 1700000000.5, tags: ["prod"] },
  { host: "web-2", service: "disk /", state: "ok", description: "disk is fine: 12% used", nested: { a: [1, "é"] } },
];

describe("summaryOf", () => {
  it("is the description when it is a string", () => {
    expect(summaryOf({ description: "database down", service: "db" })).toBe("database down");
    expect(summaryOf({ description: "" })).toBe("");
  });

  it("is '<service> is <state> on <host>' otherwise, numbers as written, missing parts 'unknown'", () => {
    expect(summaryOf({ host: "web-1", service: "cpu", state: "critical" })).toBe("cpu is critical on web-1");
    expect(summaryOf({ host: "web-1", service: "cpu", state: "critical", description: 42 })).toBe(
      "cpu is critical on web-1",
    );
    expect(summaryOf({ service: 7, state: true, host: 1.5 })).toBe("7 is true on 1.5");
    expect(summaryOf({ service: "cpu" })).toBe("cpu is unknown on unknown");
    expect(summaryOf({ service: ["x"], state: { a: 1 }, host: null })).toBe("unknown is unknown on unknown");
  });
});

describe("encodeHttpBatch", () => {
  it("json: one array per batch, the events exactly as in the stream", () => {
    const encoded = encodeHttpBatch("json", events);
    expect(encoded).toEqual({ units: [{ payload: JSON.stringify(events), events: 2 }], rejected: 0 });
    expect(JSON.parse(encoded.units[0]?.payload ?? "")).toEqual(events);
  });

  it("ndjson: one event per line, every line ending with a newline", () => {
    expect(encodeHttpBatch("ndjson", events)).toEqual({
      units: [
        {
          payload:
            '{"host":"web-1","service":"cpu","state":"critical","metric":0.97,"time":1700000000.5,"tags":["prod"]}\n' +
            '{"host":"web-2","service":"disk /","state":"ok","description":"disk is fine: 12% used","nested":{"a":[1,"é"]}}\n',
          events: 2,
        },
      ],
      rejected: 0,
    });
  });

  it('slack: one request per event, {"text": <summary>}', () => {
    expect(encodeHttpBatch("slack", events)).toEqual({
      units: [
        { payload: '{"text":"cpu is critical on web-1"}', events: 1 },
        { payload: '{"text":"disk is fine: 12% used"}', events: 1 },
      ],
      rejected: 0,
    });
  });

  it("text: one request per event, the summary as it is", () => {
    expect(encodeHttpBatch("text", events)).toEqual({
      units: [
        { payload: "cpu is critical on web-1", events: 1 },
        { payload: "disk is fine: 12% used", events: 1 },
      ],
      rejected: 0,
    });
  });

  it("declares the content type of each format", () => {
    expect(CONTENT_TYPES).toEqual({
      json: "application/json",
      ndjson: "application/x-ndjson",
      slack: "application/json",
      text: "text/plain; charset=utf-8",
    });
  });
});
