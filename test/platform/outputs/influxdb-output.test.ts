import { describe, expect, it } from "vitest";
import {
  encodeInfluxBatch,
  escapeKey,
  escapeMeasurement,
  pointLine,
  quoteString,
  writePath,
} from "../../../src/platform/outputs/influxdb-output.js";
import { streamingServer } from "../../support/notifiers.js";
import { afterTest, definitionOf, outputsHarness, receiver } from "../../support/outputs-harness.js";

const influxdb = (url: string, overrides: Record<string, unknown> = {}) =>
  definitionOf({ type: "influxdb", url, ...overrides });

describe("line protocol escaping", () => {
  it("escapes commas and spaces in measurements; commas, equals signs and spaces in keys and tag values", () => {
    expect(escapeMeasurement("disk used,/var=90")).toBe("disk\\ used\\,/var=90");
    expect(escapeKey("a b,c=d")).toBe("a\\ b\\,c\\=d");
  });

  it("quotes strings, escaping double quotes and backslashes", () => {
    expect(quoteString('say "hi" C:\\temp')).toBe('"say \\"hi\\" C:\\\\temp"');
  });

  it("replaces line breaks (line protocol cannot hold one) and drops a trailing backslash that would escape the separator", () => {
    expect(escapeMeasurement("two\nlines\r\n")).toBe("two\\ lines\\ ");
    expect(quoteString("a\nb")).toBe('"a b"');
    expect(escapeKey("C:\\dir\\")).toBe("C:\\dir");
  });
});

describe("pointLine", () => {
  it("writes service as measurement, sorted tags, metric/state/description fields and the time in ns", () => {
    expect(
      pointLine(
        {
          service: "disk used",
          host: "web 1",
          dc: "par=1",
          state: "critical",
          description: 'at "90%"',
          metric: 0.9,
          time: 1_700_000_000.5,
        },
        ["host", "dc"],
        0,
      ),
    ).toBe(
      'disk\\ used,dc=par\\=1,host=web\\ 1 metric=0.9,state="critical",description="at \\"90%\\"" 1700000000500000000',
    );
  });

  it("writes integers as floats (no i suffix), leaves empty tags out, takes now without time", () => {
    expect(pointLine({ service: "n", host: "", metric: 5 }, ["host"], 12.000_25)).toBe("n metric=5 12000250000");
    expect(pointLine({ service: "n", metric: 1e21 }, [], 1)).toBe("n metric=1e+21 1000000000");
  });

  it("gives no point without service, without any field, or with a time InfluxDB cannot hold", () => {
    expect(pointLine({ metric: 1 }, [], 1)).toBeUndefined();
    expect(pointLine({ service: "x", host: "a" }, ["host"], 1)).toBeUndefined();
    expect(pointLine({ service: "x", metric: 1, time: -5 }, [], 1)).toBeUndefined();
    expect(pointLine({ service: "\n", metric: 1 }, [], 1)).toBe("\\  metric=1 1000000000");
    expect(encodeInfluxBatch([{ metric: 1 }, { service: "a", metric: 1 }], [], 1)).toEqual({
      units: [{ payload: "a metric=1 1000000000\n", events: 1 }],
      rejected: 1,
    });
  });
});

describe("writePath", () => {
  it("uses the v2 API with a bucket (org when given), the v1 API with a database", () => {
    expect(writePath("/", { bucket: "my bucket", org: "acme&co", database: undefined })).toBe(
      "/api/v2/write?org=acme%26co&bucket=my%20bucket&precision=ns",
    );
    expect(writePath("/influx/", { bucket: "b", org: undefined, database: undefined })).toBe(
      "/influx/api/v2/write?bucket=b&precision=ns",
    );
    expect(writePath("/", { bucket: undefined, org: undefined, database: "telegraf" })).toBe("/write?db=telegraf");
  });
});

describe("the influxdb output through the delivery model", () => {
  it("v2: POSTs line protocol with Authorization: Token, retrying a 5xx, events that are no point rejected", async () => {
    const target = await receiver((_request, index) => (index === 0 ? { status: 500 } : { status: 204 }));
    const { outputs, reaches, count } = outputsHarness({
      tsdb: influxdb(target.url, { bucket: "vigie", org: "ops", token: "s3cret-token" }),
    });
    outputs.sink("tsdb")([
      { host: "a", service: "cpu", metric: 0.5, time: 10 },
      { host: "a", service: "cpu" },
      { host: "b", service: "cpu", metric: 0.25, time: 11 },
    ]);
    await reaches("tsdb", "sent", 2);
    expect(await count("tsdb", "dropped-rejected")).toBe(1);
    expect(target.requests).toHaveLength(2);
    const request = target.requests[1];
    expect(request?.url).toBe("/api/v2/write?org=ops&bucket=vigie&precision=ns");
    expect(request?.headers).toMatchObject({
      authorization: "Token s3cret-token",
      "content-type": "text/plain; charset=utf-8",
    });
    expect(request?.body.toString()).toBe("cpu,host=a metric=0.5 10000000000\ncpu,host=b metric=0.25 11000000000\n");
  });

  it("v1: POSTs to /write?db= with Basic authorization", async () => {
    const target = await receiver(() => ({ status: 204 }));
    const { outputs, reaches } = outputsHarness({
      tsdb: influxdb(target.url, { database: "metrics", username: "u", password: "p" }),
    });
    outputs.sink("tsdb")({ service: "up", state: "ok", time: 1 });
    await reaches("tsdb", "sent", 1);
    expect(target.requests[0]?.url).toBe("/write?db=metrics");
    expect(target.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from("u:p").toString("base64")}`);
    expect(target.requests[0]?.body.toString()).toBe('up state="ok" 1000000000\n');
  });
});

describe("the influxdb output on a real server", () => {
  it("writes what a stream sends to it, the token taken from the environment", async () => {
    const target = await receiver(() => ({ status: 204 }));
    process.env.VIGIE_TEST_INFLUX_TOKEN = "env-t0ken";
    const { server, push } = await streamingServer(
      { influx: { type: "influxdb", url: target.url, bucket: "b", "token-env": "VIGIE_TEST_INFLUX_TOKEN" } },
      "influx",
    ).finally(() => {
      delete process.env.VIGIE_TEST_INFLUX_TOKEN;
    });
    afterTest(() => server.close());
    expect(await push([{ host: "web 1", service: "cpu", metric: 0.5, time: 2 }])).toBe(200);
    await target.acceptedAtLeast(1);
    expect(target.requests[0]?.headers.authorization).toBe("Token env-t0ken");
    expect(target.requests[0]?.body.toString()).toBe("cpu,host=web\\ 1 metric=0.5 2000000000\n");
  });
});
