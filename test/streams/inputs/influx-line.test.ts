/**
 * The InfluxDB line protocol parser (docs/inputs.md) against a table built from InfluxDB's line
 * protocol reference: the documented examples of escapes, field types, comments and optional
 * timestamps, then malformed lines.
 */
import { describe, expect, it } from "vitest";
import type { Event } from "../../../src/streams/event.js";
import { LineProtocolReader, PRECISIONS } from "../../../src/streams/influx-line.js";

const NOW = 1_700_000_000;

/** The events of a body (nanosecond precision unless told), and the reader's counts. */
function parse(text: string, precision = "ns") {
  const unit = PRECISIONS[precision] ?? { digits: 0, multiplier: Number.NaN };
  const reader = new LineProtocolReader(text, unit, NOW);
  const events: Event[] = [];
  while (!reader.read(2, (event) => events.push(event))) {
    // a few lines per call, as the route reads a large body
  }
  return { events, reader };
}

/** The one event of a line of one field. */
function only(line: string): Event {
  const { events, reader } = parse(line);
  expect(reader.firstError?.message).toBeUndefined();
  expect(events).toHaveLength(1);
  return events[0] ?? {};
}

describe("line protocol: the reference's examples", () => {
  it.each<[string, string, Event]>([
    [
      "the syntax example",
      'myMeasurement,tag1=value1,tag2=value2 fieldKey="fieldValue" 1556813561098000000',
      {
        service: "myMeasurement.fieldKey",
        tag1: "value1",
        tag2: "value2",
        description: "fieldValue",
        time: 1556813561.098,
      },
    ],
    ["a float", "myMeasurement fieldKey=1.0", { service: "myMeasurement.fieldKey", metric: 1, time: NOW }],
    ["a float without a point", "myMeasurement fieldKey=1", { metric: 1 }],
    ["a float with an exponent", "myMeasurement fieldKey=-1.234456e+78", { metric: -1.234456e78 }],
    ["an integer", "myMeasurement fieldKey=12485903i", { metric: 12485903 }],
    ["a negative integer", "myMeasurement fieldKey=-12485903i", { metric: -12485903 }],
    ["an unsigned integer", "myMeasurement fieldKey=12485903u", { metric: 12485903 }],
    ["the largest int64", "m f=9223372036854775807i", { metric: 2 ** 63 }],
    ["the largest uint64", "m f=18446744073709551615u", { metric: 2 ** 64 }],
    ["a string", 'myMeasurement fieldKey="this is a string"', { description: "this is a string" }],
    ["true", "myMeasurement fieldKey=true", { metric: 1 }],
    ["t", "myMeasurement fieldKey=t", { metric: 1 }],
    ["TRUE", "m f=TRUE", { metric: 1 }],
    ["True", "m f=True", { metric: 1 }],
    ["F", "m f=F", { metric: 0 }],
    ["False", "m f=False", { metric: 0 }],
    ["FALSE", "m f=FALSE", { metric: 0 }],
    ["false", "myMeasurement fieldKey=false", { metric: 0 }],
    [
      "a measurement with a space",
      'my\\ Measurement fieldKey="string value"',
      { service: "my Measurement.fieldKey", description: "string value" },
    ],
    ["a measurement with a comma", "my\\,Measurement f=1", { service: "my,Measurement.f" }],
    [
      "a double quote in a string",
      'myMeasurement fieldKey="\\"string\\" within a string"',
      { description: '"string" within a string' },
    ],
    [
      "tag keys and values with spaces",
      "myMeasurement,tag\\ Key1=tag\\ Value1,tag\\ Key2=tag\\ Value2 fieldKey=100",
      { "tag Key1": "tag Value1", "tag Key2": "tag Value2", metric: 100 },
    ],
    [
      "emojis",
      'myMeasurement,tagKey=🍭 fieldKey="Launch 🚀" 1556813561098000000',
      { tagKey: "🍭", description: "Launch 🚀" },
    ],
    ["an equals sign in a tag value", "m,k=a\\=b f=1", { k: "a=b" }],
    ["an equals sign and a comma in a field key", "m field\\=key\\,x=1", { service: "m.field=key,x" }],
    ["a backslash in a string", 'm f="C:\\\\path"', { description: "C:\\path" }],
    ["a literal backslash in a string", 'm f="a\\b"', { description: "a\\b" }],
    ["a literal backslash in a measurement", "my\\measurement f=1", { service: "my\\measurement.f" }],
    ["an escaped backslash in a measurement", "my\\\\measurement f=1", { service: "my\\measurement.f" }],
    ["an escaped backslash then a comma in a tag", "m,k=a\\\\\\,b f=1", { k: "a\\,b" }],
    ["a comma and a space in a string", 'm f="a, b=c"', { description: "a, b=c" }],
    ["an empty string", 'm f=""', { description: "" }],
    ["an equals sign in a string", 'm f="x=1"', { description: "x=1" }],
    ["the host tag", "cpu,host=web-1 usage=0.5", { host: "web-1", service: "cpu.usage", metric: 0.5 }],
    ["a negative timestamp", "m f=1 -1000000000", { time: -1 }],
    ["a timestamp of zero", "m f=1 0", { time: 0 }],
    ["a timestamp under a second", "m f=1 5", { time: 5e-9 }],
    ["a negative timestamp under a second", "m f=1 -500000000", { time: -0.5 }],
    ["a trailing carriage return", "m f=1 1000000000\r", { time: 1 }],
  ])("%s", (_name, line, expected) => {
    expect(only(line)).toMatchObject(expected);
  });

  it("emits one event per field, each with the tags and the time", () => {
    const { events } = parse('cpu,host=a,region=eu user=1.5,system=2i,idle="x",up=t 1000000000');
    expect(events).toEqual([
      { host: "a", region: "eu", service: "cpu.user", time: 1, metric: 1.5 },
      { host: "a", region: "eu", service: "cpu.system", time: 1, metric: 2 },
      { host: "a", region: "eu", service: "cpu.idle", time: 1, description: "x" },
      { host: "a", region: "eu", service: "cpu.up", time: 1, metric: 1 },
    ]);
  });

  it("lets the fields it sets win over tags of the same name", () => {
    expect(only("m,service=s,time=t,metric=x f=2 1000000000")).toMatchObject({ service: "m.f", time: 1, metric: 2 });
  });

  it.each<[string, number]>([
    ["ns", 1.5],
    ["n", 1.5],
    ["us", 1500],
    ["u", 1500],
    ["ms", 1_500_000],
    ["s", 1_500_000_000],
    ["m", 90_000_000_000],
    ["h", 5_400_000_000_000],
  ])("reads timestamps in precision %s", (precision, expected) => {
    const { events } = parse("m f=1 1500000000", precision);
    expect(events[0]?.time).toBeCloseTo(expected, 6);
  });

  it("skips comments and blank lines, and counts lines from 1", () => {
    const { events, reader } = parse("# a comment\n\nm f=1\n   \r\nm f=2\nbroken\n");
    expect(events.map((event) => event.metric)).toEqual([1, 2]);
    expect(reader.lines).toBe(2);
    expect(reader.firstError?.line).toBe(6);
  });

  it("accepts runs of spaces between sections", () => {
    expect(only("m,k=v   f=1   2000000000  ")).toMatchObject({ k: "v", metric: 1, time: 2 });
  });
});

describe("line protocol: malformed lines", () => {
  it.each<[string, string, RegExp]>([
    ["no fields", "myMeasurement", /missing fields/],
    ["no fields after tags", "m,k=v", /missing fields/],
    ["no measurement", ",k=v f=1", /missing measurement/],
    ["a field without a value", "m f=", /has no value/],
    ["a field without an equals sign", "m f", /a field is key=value/],
    ["a tag without a value", "m,k= f=1", /has no value/],
    ["a tag without an equals sign", "m,k f=1", /a tag is key=value/],
    ["an unquoted string", "m f=abc", /invalid value/],
    ["a float with a suffix", "m f=1.5i", /invalid value/],
    ["NaN", "m f=NaN", /invalid value/],
    ["an unterminated string", 'm f="abc', /unterminated/],
    ["an int64 out of range", "m f=9223372036854775808i", /int64 range/],
    ["a uint64 out of range", "m f=18446744073709551616u", /uint64 range/],
    ["a negative unsigned integer", "m f=-1u", /invalid value/],
    ["a float timestamp", "m f=1 1.5", /invalid timestamp/],
    ["a word after the timestamp", "m f=1 100 extra", /invalid timestamp/],
    ["text right after a string", 'm f="a"x', /after the fields/],
    ["a trailing comma in fields", "m f=1,", /a field is key=value/],
  ])("refuses %s", (_name, line, reason) => {
    const { events, reader } = parse(`m ok=1\n${line}\nm ok=2`);
    expect(reader.firstError?.line).toBe(2);
    expect(reader.firstError?.message).toMatch(reason);
    expect(reader.malformed).toBe(1);
    // The valid lines around it are still read.
    expect(events.map((event) => event.metric)).toEqual([1, 2]);
  });
});
