import { describe, expect, it } from "vitest";
import { encodeLokiBatch, lokiLabels, pushPath } from "../../../src/platform/outputs/loki-output.js";
import { definitionOf, outputsHarness, receiver } from "../../support/outputs-harness.js";

const loki = (url: string, overrides: Record<string, unknown> = {}) =>
  definitionOf({ type: "loki", url, ...overrides });

describe("lokiLabels", () => {
  it("takes the listed scalar fields, names sanitised, the first in name order winning a clash", () => {
    expect(
      lokiLabels({ host: "web-1", "data-center": "par1", data_center: "other", rack: 12, up: true, env: "" }, [
        "host",
        "data_center",
        "data-center",
        "rack",
        "up",
        "env",
        "missing",
      ]),
    ).toEqual({ data_center: "par1", host: "web-1", rack: "12", up: "true" });
  });

  it("gives {source=vigie} to an event that has none of the fields, and skips names Loki reserves", () => {
    expect(lokiLabels({ service: "x", __name__: "n" }, ["host", "__name__"])).toEqual({ source: "vigie" });
  });
});

describe("encodeLokiBatch", () => {
  it("groups by label set, sorts each stream by time, the line being the event as JSON and the time in ns", () => {
    const batch = [
      { host: "a", service: "cpu", metric: 1, time: 1_700_000_002.5 },
      { host: "b", service: "cpu", metric: 2, time: 1_700_000_001 },
      { host: "a", service: "cpu", metric: 3, time: 1_700_000_001.000001 },
      { service: "cpu", description: 'quote " and \\ and\nnewline' },
    ];
    const encoded = encodeLokiBatch(batch, ["host", "service"], 1_700_000_009.25);
    expect(encoded.rejected).toBe(0);
    expect(encoded.units).toHaveLength(1);
    expect(encoded.units[0]?.events).toBe(4);
    expect(JSON.parse(encoded.units[0]?.payload ?? "")).toEqual({
      streams: [
        {
          stream: { host: "a", service: "cpu" },
          values: [
            ["1700000001000001000", JSON.stringify(batch[2])],
            ["1700000002500000000", JSON.stringify(batch[0])],
          ],
        },
        { stream: { host: "b", service: "cpu" }, values: [["1700000001000000000", JSON.stringify(batch[1])]] },
        { stream: { service: "cpu" }, values: [["1700000009250000000", JSON.stringify(batch[3])]] },
      ],
    });
  });

  it("rejects events whose time Loki cannot hold (negative, past 2262)", () => {
    const encoded = encodeLokiBatch([{ time: -1 }, { time: 1e13 }, { time: 0 }], ["host"], 1000);
    expect(encoded.rejected).toBe(2);
    expect(JSON.parse(encoded.units[0]?.payload ?? "").streams[0].values[0][0]).toBe("0");
  });

  it("puts the push path under the base URL's path", () => {
    expect(pushPath("/")).toBe("/loki/api/v1/push");
    expect(pushPath("/logs/")).toBe("/logs/loki/api/v1/push");
  });
});

describe("the loki output through the delivery model", () => {
  it("POSTs <url>/loki/api/v1/push as JSON with the tenant and a bearer token, retrying a 5xx", async () => {
    const target = await receiver((_request, index) => (index === 0 ? { status: 503 } : { status: 204 }));
    const { outputs, reaches, count } = outputsHarness({
      logs: loki(`${target.url}/base/`, { tenant: "team-a", token: "t0ken" }),
    });
    outputs.sink("logs")([
      { host: "web-1", service: "nginx", description: "GET /", time: 1_700_000_000 },
      { host: "web-1", service: "nginx", description: "GET /a", time: 1_700_000_001 },
    ]);
    await reaches("logs", "sent", 2);
    expect(target.requests).toHaveLength(2);
    const request = target.requests[1];
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/base/loki/api/v1/push");
    expect(request?.headers).toMatchObject({
      "content-type": "application/json",
      "x-scope-orgid": "team-a",
      authorization: "Bearer t0ken",
    });
    expect(request?.body.toString()).toBe(target.requests[0]?.body.toString());
    expect(JSON.parse(request?.body.toString() ?? "").streams).toEqual([
      {
        stream: { host: "web-1", service: "nginx" },
        values: [
          ["1700000000000000000", '{"host":"web-1","service":"nginx","description":"GET /","time":1700000000}'],
          ["1700000001000000000", '{"host":"web-1","service":"nginx","description":"GET /a","time":1700000001}'],
        ],
      },
    ]);
    expect(await count("logs", "dropped-rejected")).toBe(0);
  });

  it("sends username and password as Basic authorization; a 400 is not retried", async () => {
    const target = await receiver(() => ({ status: 400, body: "entry out of order" }));
    const { outputs, reaches, logs } = outputsHarness({
      logs: loki(target.url, { username: "loki-user", password: "pa55" }),
    });
    outputs.sink("logs")({ host: "a", service: "b", time: 1 });
    await reaches("logs", "dropped-rejected", 1);
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from("loki-user:pa55").toString("base64")}`);
    expect(JSON.stringify(logs)).not.toContain("pa55");
  });
});
