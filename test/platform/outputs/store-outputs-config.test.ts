/** The configuration of the loki, elasticsearch, influxdb and graphite outputs: defaults, secrets, refusals. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { outputsSection } from "../../../src/platform/outputs/config.js";
import { temporaryDirectory } from "../../support/temporary.js";

const parse = (raw: Record<string, unknown>) => outputsSection({ out: raw }, "outputs").out;
const refusal = (raw: Record<string, unknown>): string => {
  try {
    parse(raw);
  } catch (error) {
    return (error as Error).message;
  }
  return "accepted";
};

describe("defaults", () => {
  it("fills in each type's keys and batch size", () => {
    expect(parse({ type: "loki", url: "http://127.0.0.1:3100" })).toMatchObject({
      labels: ["host", "service"],
      headers: {},
      "batch-size": 1000,
    });
    expect(parse({ type: "elasticsearch", url: "http://127.0.0.1:9200" })).toMatchObject({
      index: "vigie-{date}",
      action: "index",
      "batch-size": 500,
    });
    expect(parse({ type: "influxdb", url: "http://127.0.0.1:8086", bucket: "b" })).toMatchObject({
      tags: ["host"],
      "batch-size": 1000,
    });
    expect(parse({ type: "graphite", host: "carbon.example.org" })).toMatchObject({
      port: 2003,
      path: "{host}.{service}",
      "batch-size": 1000,
    });
  });
});

describe("secrets", () => {
  it("come from <key>-env and <key>-file, and are never echoed", () => {
    const file = join(temporaryDirectory(), "token");
    writeFileSync(file, "file-t0ken\n");
    expect(parse({ type: "influxdb", url: "http://h:8086", bucket: "b", "token-file": file })).toMatchObject({
      token: "file-t0ken",
    });
    process.env.VIGIE_TEST_ES_KEY = "env-k3y";
    try {
      expect(parse({ type: "elasticsearch", url: "http://h:9200", "api-key-env": "VIGIE_TEST_ES_KEY" })).toMatchObject({
        "api-key": "env-k3y",
      });
    } finally {
      delete process.env.VIGIE_TEST_ES_KEY;
    }
    const message = refusal({ type: "loki", url: "http://h", token: "has space s3cret" });
    expect(message).toBe("outputs.out.token: must be printable ASCII without spaces");
  });
});

describe("refusals name the key", () => {
  it.each([
    [{ type: "loki", url: "ftp://h" }, "outputs.out.url: must be an http or https URL"],
    [{ type: "loki", url: "http://h", labels: "host" }, "outputs.out.labels: "],
    [{ type: "loki", url: "http://h", password: "p" }, "outputs.out.password: needs a username"],
    [
      { type: "loki", url: "http://h", username: "u", token: "t" },
      "outputs.out.token: takes one of username, token and api-key",
    ],
    [{ type: "elasticsearch", url: "http://h", index: "Logs-{date}" }, "outputs.out.index: must be an index name"],
    [{ type: "elasticsearch", url: "http://h", index: "_logs" }, "outputs.out.index: must be an index name"],
    [{ type: "elasticsearch", url: "http://h", index: "logs-{day}" }, "outputs.out.index: must be an index name"],
    [{ type: "elasticsearch", url: "http://h", action: "update" }, "outputs.out.action: must be one of index, create"],
    [{ type: "influxdb", url: "http://h" }, "outputs.out.bucket: is required (or database, for InfluxDB 1)"],
    [
      { type: "influxdb", url: "http://h", bucket: "b", database: "d" },
      "outputs.out.database: takes one of bucket (InfluxDB 2 and 3) and database (InfluxDB 1)",
    ],
    [{ type: "influxdb", url: "http://h", database: "d", org: "o" }, "outputs.out.org: goes with bucket"],
    [{ type: "graphite" }, "outputs.out.host: is required"],
    [{ type: "graphite", host: "h", port: 70000 }, "outputs.out.port: must be an integer between 1 and 65535"],
    [{ type: "graphite", host: "h", path: "{host} {service}" }, "outputs.out.path: must be a path template"],
    [{ type: "graphite", host: "h", url: "http://h" }, "outputs.out.url: unknown key"],
  ])("%j", (raw, expected) => {
    expect(refusal(raw)).toContain(expected);
  });
});
