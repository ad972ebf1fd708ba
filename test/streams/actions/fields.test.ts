/**
 * Phase-2 actions on the fields of single events (docs/streams.md, Actions): extract, iterate-on,
 * sformat, to-string, from-json, to-base64, from-base64. Each with Mirabelle v0.13's test cases
 * (translated where Vigie differs), what is skipped and counted, untouched inputs and bad params.
 */
import { describe, expect, it } from "vitest";
import type { Flow } from "../../../src/streams/action.js";
import { type Event, MAX_EVENT_NESTING } from "../../../src/streams/event.js";
import { compileErrorOf, run } from "../harness.js";

const TAP = "{:action :tap :params [:t]}";

/** Pushes `events` through `action`; what reached the tap and the action's drop count. */
function through(action: string, events: Event[]): { out: Flow[]; dropped: number } {
  const { tap, drops } = run(`{:action ${action} :children [${TAP}]}`, events);
  const name = action.trim().split(/\s+/)[0]?.slice(1) ?? "";
  return { out: tap("t"), dropped: drops.get(`s/${name}`) ?? 0 };
}

/** What `action` does to a list (a fixed-event-window of one event): nothing, counted. */
function onList(action: string): { out: Flow[]; dropped: number } {
  const { tap, drops } = run(
    `{:action :fixed-event-window :params [{:size 1}] :children [{:action ${action} :children [${TAP}]}]}`,
    [{ host: "a" }],
  );
  const name = action.trim().split(/\s+/)[0]?.slice(1) ?? "";
  return { out: tap("t"), dropped: drops.get(`s/${name}`) ?? 0 };
}

const PREFIX = "invalid stream config: actions.children[0]: ";

/** Deep-frozen events: an action writing into one throws, and the stream counts a drop instead. */
function frozen<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const item of Object.values(value)) frozen(item);
    Object.freeze(value);
  }
  return value;
}

/** A JSON value nesting `levels` deep: `[[...]]`. */
const nested = (levels: number): unknown => (levels <= 1 ? [] : [nested(levels - 1)]);

describe("extract", () => {
  it("emits the map stored at the field, as Mirabelle's tests; a missing or nil field is skipped and counted", () => {
    expect(
      through(":extract :params [:foo]", [{ foo: { time: 1 } }, { foo: { time: 2 }, bar: "a" }, { foo: null }, {}]),
    ).toEqual({ out: [{ time: 1 }, { time: 2 }], dropped: 2 });
    expect(
      through(":extract :params [[:foo :bar]]", [
        { foo: { bar: { time: 1 } } },
        { foo: { bar: { time: 2 } }, bar: "a" },
        { foo: { bar: null } },
        {},
      ]),
    ).toEqual({ out: [{ time: 1 }, { time: 2 }], dropped: 2 });
    // stream_test.clj
    expect(through(":extract :params [:foo]", [{ foo: { time: 0, metric: 10 } }, { time: 7, metric: 1 }]).out).toEqual([
      { time: 0, metric: 10 },
    ]);
  });

  it("skips and counts a value that is not a map (Mirabelle forwards it), and a list", () => {
    expect(through(":extract :params [:foo]", [{ foo: "text" }, { foo: 3 }, { foo: [{ time: 1 }] }])).toEqual({
      out: [],
      dropped: 3,
    });
    expect(onList(":extract :params [:foo]")).toEqual({ out: [], dropped: 1 });
  });

  it("leaves the event untouched", () => {
    const event = frozen({ host: "a", base: { service: "x", labels: { a: "1" } } });
    expect(through(":extract :params [:base]", [event]).out).toEqual([{ service: "x", labels: { a: "1" } }]);
    expect(event).toEqual({ host: "a", base: { service: "x", labels: { a: "1" } } });
  });

  it("refuses a field that is not a keyword or a vector of keywords", () => {
    expect(compileErrorOf('{:action :extract :params ["foo"]}')).toBe(
      `${PREFIX}the field of :extract must be a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :extract :params [:foo :bar]}")).toBe(
      `${PREFIX}:extract takes 1 param [field], got 2 params`,
    );
    expect(compileErrorOf("{:action :extract}")).toBe(`${PREFIX}:extract takes 1 param [field], got 0 params`);
  });
});

describe("iterate-on", () => {
  it("emits one event per element, the element at the destination and the source removed, as Mirabelle's test", () => {
    const event = frozen({
      "trace-id": "123",
      "span-id": "234",
      events: [
        { time: 3, name: "hello", attributes: { id: "foo" } },
        { time: 4, name: "bye", attributes: { id: "bar" } },
      ],
    });
    expect(through(":iterate-on :params [{:source :events :destination :event}]", [event]).out).toEqual([
      { "trace-id": "123", "span-id": "234", event: { time: 3, name: "hello", attributes: { id: "foo" } } },
      { "trace-id": "123", "span-id": "234", event: { time: 4, name: "bye", attributes: { id: "bar" } } },
    ]);
    expect(event.events).toHaveLength(2);
  });

  it("replaces the array by each element when source and destination are the same field", () => {
    expect(through(":iterate-on :params [{:source :items :destination :items}]", [{ items: [1, 2] }]).out).toEqual([
      { items: 1 },
      { items: 2 },
    ]);
  });

  it("takes nested paths, and removes only the source field", () => {
    const event = frozen({ span: { events: ["a", "b"], id: 1 }, host: "h" });
    expect(
      through(":iterate-on :params [{:source [:span :events] :destination [:attributes :event]}]", [event]).out,
    ).toEqual([
      { span: { id: 1 }, host: "h", attributes: { event: "a" } },
      { span: { id: 1 }, host: "h", attributes: { event: "b" } },
    ]);
    expect(event).toEqual({ span: { events: ["a", "b"], id: 1 }, host: "h" });
  });

  it("skips and counts a missing or non-array source and a list; an empty array emits nothing uncounted", () => {
    const action = ":iterate-on :params [{:source :events :destination :event}]";
    expect(through(action, [{ host: "a" }, { events: "x" }, { events: { a: 1 } }])).toEqual({ out: [], dropped: 3 });
    expect(through(action, [{ events: [] }])).toEqual({ out: [], dropped: 0 });
    expect(onList(action)).toEqual({ out: [], dropped: 1 });
  });

  it("skips and counts an element that would nest the event deeper than the limit", () => {
    // A destination 31 deep leaves room for elements nesting 1 level (an event nests 32 at most).
    const deep = Array.from({ length: MAX_EVENT_NESTING - 1 }, (_, index) => `:k${index}`).join(" ");
    const { out, dropped } = through(`:iterate-on :params [{:source :items :destination [${deep}]}]`, [
      { items: [1, { a: 1 }, { a: { b: 1 } }] },
    ]);
    expect(out).toHaveLength(2);
    expect(dropped).toBe(1);
  });

  it("refuses missing, unknown or malformed options", () => {
    expect(compileErrorOf("{:action :iterate-on :params [{:source :events}]}")).toBe(
      `${PREFIX}:iterate-on needs the option :destination`,
    );
    expect(compileErrorOf("{:action :iterate-on :params [{:source :a :destination :b :foo 1}]}")).toBe(
      `${PREFIX}unknown option :foo of :iterate-on`,
    );
    expect(compileErrorOf('{:action :iterate-on :params [{:source :a :destination "b"}]}')).toBe(
      `${PREFIX}:destination of :iterate-on must be a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :iterate-on :params [:events :event]}")).toBe(
      `${PREFIX}:iterate-on takes 1 param [{:source field :destination field}], got 2 params`,
    );
  });
});

describe("sformat", () => {
  it("formats fields into the target, as Mirabelle's tests", () => {
    expect(
      through(':sformat :params ["%s-cc-%s" :format-test [:host :service]]', [
        { host: "aa", service: "bb" },
        { host: "bb", service: "aa", state: "critical" },
      ]).out,
    ).toEqual([
      { host: "aa", service: "bb", "format-test": "aa-cc-bb" },
      { host: "bb", service: "aa", state: "critical", "format-test": "bb-cc-aa" },
    ]);
    expect(through(':sformat :params ["%s-cc" :service [:host]]', [{ host: "aa", service: "bb" }]).out).toEqual([
      { host: "aa", service: "aa-cc" },
    ]);
    const event = { host: { h: "aa" }, service: "bb", foo: "bar" };
    expect(through(':sformat :params ["%s-cc-%s" :service [[:host :h] :foo]]', [event]).out).toEqual([
      { host: { h: "aa" }, service: "aa-cc-bar", foo: "bar" },
    ]);
    expect(through(':sformat :params ["%s-cc-%s" [:a :service] [[:host :h] :foo]]', [event]).out).toEqual([
      { host: { h: "aa" }, service: "bb", a: { service: "aa-cc-bar" }, foo: "bar" },
    ]);
  });

  it("writes a missing field as empty text (not Mirabelle's null), values as text, and %% as %", () => {
    const action = ':sformat :params ["%s|%s|%s|%s|%s|%s 100%%" :out [:a :b :c :d :e :missing]]';
    expect(through(action, [{ a: "x", b: 1.5, c: true, d: null, e: { k: [1, "v"] } }]).out).toEqual([
      { a: "x", b: 1.5, c: true, d: null, e: { k: [1, "v"] }, out: 'x|1.5|true|null|{"k":[1,"v"]}| 100%' },
    ]);
  });

  it("leaves the event untouched, and skips and counts a list", () => {
    const event = frozen({ host: "a", a: { b: "c" } });
    expect(through(':sformat :params ["%s" [:a :d] [:host]]', [event]).out).toEqual([
      { host: "a", a: { b: "c", d: "a" } },
    ]);
    expect(event).toEqual({ host: "a", a: { b: "c" } });
    expect(onList(':sformat :params ["%s" :x [:host]]')).toEqual({ out: [], dropped: 1 });
  });

  it("refuses other directives, a count of %s that differs from the fields, and malformed params", () => {
    expect(compileErrorOf('{:action :sformat :params ["%d items" :out [:n]]}')).toBe(
      `${PREFIX}the template "%d items" of :sformat may hold only %s and %%, found %d`,
    );
    expect(compileErrorOf('{:action :sformat :params ["100%" :out []]}')).toBe(
      `${PREFIX}the template "100%" of :sformat may hold only %s and %%, found a % at the end`,
    );
    expect(compileErrorOf('{:action :sformat :params ["%s-%s" :out [:a]]}')).toBe(
      `${PREFIX}the template "%s-%s" of :sformat has 2 %s for 1 field(s)`,
    );
    expect(compileErrorOf('{:action :sformat :params ["%s" :out [:a :b]]}')).toBe(
      `${PREFIX}the template "%s" of :sformat has 1 %s for 2 field(s)`,
    );
    expect(compileErrorOf("{:action :sformat :params [:tpl :out [:a]]}")).toBe(
      `${PREFIX}the template of :sformat must be a string`,
    );
    expect(compileErrorOf('{:action :sformat :params ["%s" "out" [:a]]}')).toBe(
      `${PREFIX}the target of :sformat must be a keyword or a vector of keywords`,
    );
    expect(compileErrorOf('{:action :sformat :params ["%s" :out [1]]}')).toBe(
      `${PREFIX}:sformat takes a vector of fields, each a keyword or a vector of keywords`,
    );
    expect(compileErrorOf('{:action :sformat :params ["%s" :out]}')).toBe(
      `${PREFIX}:sformat takes 3 params ["template with %s" target [field ...]], got 2 params`,
    );
  });
});

describe("to-string", () => {
  it("gives each field its text, maps as JSON; a missing field stays missing (Mirabelle's test, translated)", () => {
    const events = [{}, { foo: 1, bar: { a: { b: true } }, baz: 3 }];
    expect(through(":to-string :params [[:foo :bar]]", events).out).toEqual([
      {},
      { foo: "1", bar: '{"a":{"b":true}}', baz: 3 },
    ]);
    expect(through(":to-string :params [[:foo [:bar :a :b]]]", events).out).toEqual([
      {},
      { foo: "1", bar: { a: { b: "true" } }, baz: 3 },
    ]);
  });

  it("keeps strings, writes null as null and arrays as JSON, and leaves the event untouched", () => {
    const event = frozen({ s: "x", n: null, l: [1, "a"], f: 1.5, o: { p: 1 } });
    expect(through(":to-string :params [[:s :n :l :f [:o :p]]]", [event]).out).toEqual([
      { s: "x", n: "null", l: '[1,"a"]', f: "1.5", o: { p: "1" } },
    ]);
    expect(event).toEqual({ s: "x", n: null, l: [1, "a"], f: 1.5, o: { p: 1 } });
  });

  it("skips and counts a list", () => {
    expect(onList(":to-string :params [[:host]]")).toEqual({ out: [], dropped: 1 });
  });

  it("refuses params that are not a vector of fields", () => {
    expect(compileErrorOf("{:action :to-string :params [[1.5]]}")).toBe(
      `${PREFIX}:to-string takes a vector of fields, each a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :to-string :params [3]}")).toBe(
      `${PREFIX}:to-string takes a vector of fields, each a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :to-string}")).toBe(
      `${PREFIX}:to-string takes 1 param [[field ...]], got 0 params`,
    );
  });
});

describe("from-json", () => {
  it("parses each field's JSON, as Mirabelle's tests; a missing field becomes nil, as Mirabelle sets it", () => {
    expect(through(":from-json :params [[:foo]]", [{ foo: '{"bar": "baz"}' }]).out).toEqual([{ foo: { bar: "baz" } }]);
    // Mirabelle's single path [:foo :bar] is written as a one-path list here.
    expect(through(":from-json :params [[[:foo :bar]]]", [{ foo: { bar: '{"bar": "baz2"}' }, host: "h" }]).out).toEqual(
      [{ foo: { bar: { bar: "baz2" } }, host: "h" }],
    );
    expect(through(":from-json :params [[:foo]]", [{ host: "aa" }])).toEqual({
      out: [{ host: "aa", foo: null }],
      dropped: 0,
    });
    expect(through(":from-json :params [[[:foo :bar] :baz]]", [{ host: "aa", foo: { x: 1 }, baz: "2" }]).out).toEqual([
      { host: "aa", foo: { x: 1, bar: null }, baz: 2 },
    ]);
  });

  it("makes a missing field present with null, not absent: its JSON shows it", () => {
    const [out] = through(":from-json :params [[:foo [:a :b]]]", [{ host: "aa", a: {} }]).out as Event[];
    expect(out).toStrictEqual({ host: "aa", foo: null, a: { b: null } });
    expect(Object.hasOwn(out as Event, "foo")).toBe(true);
    expect(JSON.stringify(out)).toBe('{"host":"aa","a":{"b":null},"foo":null}');
  });

  it("takes a list of fields, where Mirabelle's [:foo :bar] is one path; a lone keyword is one field", () => {
    expect(through(":from-json :params [[:foo :bar]]", [{ foo: "1", bar: "[true]" }]).out).toEqual([
      { foo: 1, bar: [true] },
    ]);
    expect(through(":from-json :params [:foo]", [{ foo: "null" }]).out).toEqual([{ foo: null }]);
  });

  it("skips and counts invalid JSON, a non-string value, a value nesting too deep, and a list", () => {
    expect(
      through(":from-json :params [[:a :b]]", [
        { a: "1", b: "{bad" },
        { a: 1 },
        { a: null },
        { a: JSON.stringify(nested(MAX_EVENT_NESTING)) },
      ]),
    ).toEqual({ out: [], dropped: 4 });
    // At the top level a value may nest 31 levels: the event nests 32.
    expect(through(":from-json :params [:a]", [{ a: JSON.stringify(nested(MAX_EVENT_NESTING - 1)) }]).out).toHaveLength(
      1,
    );
    expect(
      through(":from-json :params [[[:x :a]]]", [{ x: { a: JSON.stringify(nested(MAX_EVENT_NESTING - 1)) } }]),
    ).toEqual({ out: [], dropped: 1 });
    expect(onList(":from-json :params [[:a]]")).toEqual({ out: [], dropped: 1 });
  });

  it("leaves the event untouched", () => {
    const event = frozen({ x: { a: '{"b":1}', c: 2 } });
    expect(through(":from-json :params [[[:x :a]]]", [event]).out).toEqual([{ x: { a: { b: 1 }, c: 2 } }]);
    expect(event).toEqual({ x: { a: '{"b":1}', c: 2 } });
  });

  it("refuses params that are not a vector of fields", () => {
    expect(compileErrorOf('{:action :from-json :params ["foo"]}')).toBe(
      `${PREFIX}:from-json takes a vector of fields, each a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :from-json :params [[:a] [:b]]}")).toBe(
      `${PREFIX}:from-json takes 1 param [[field ...]], got 2 params`,
    );
  });
});

describe("to-base64 and from-base64", () => {
  it("encode and decode, as Mirabelle's tests (a field, a nested path)", () => {
    expect(
      through(":to-base64 :params [[:host]]", [
        { host: "aa", service: "bb" },
        { host: "bb", service: "aa", state: "critical" },
      ]).out,
    ).toEqual([
      { host: "YWE=", service: "bb" },
      { host: "YmI=", service: "aa", state: "critical" },
    ]);
    expect(through(":to-base64 :params [[[:foo :bar]]]", [{ foo: { bar: "aa" }, service: "bb" }]).out).toEqual([
      { foo: { bar: "YWE=" }, service: "bb" },
    ]);
    expect(
      through(":from-base64 :params [:host]", [
        { host: "YWE=", service: "YmI=" },
        { host: "YmI=", service: "YWE=", state: "critical" },
      ]).out,
    ).toEqual([
      { host: "aa", service: "YmI=" },
      { host: "bb", service: "YWE=", state: "critical" },
    ]);
    expect(through(":from-base64 :params [[[:host :bar]]]", [{ host: { bar: "YWE=" }, service: "YmI=" }]).out).toEqual([
      { host: { bar: "aa" }, service: "YmI=" },
    ]);
  });

  it("take a list of fields (Mirabelle's [:foo :bar] is one path) and round-trip UTF-8", () => {
    expect(through(":to-base64 :params [[:foo :bar]]", [{ foo: "aa", bar: "é☃😀" }]).out).toEqual([
      { foo: "YWE=", bar: "w6nimIPwn5iA" },
    ]);
    const roundTrip = run(
      `{:action :to-base64 :params [[:a]] :children [{:action :from-base64 :params [[:a]] :children [${TAP}]}]}`,
      [{ a: "é☃😀 \ufeff" }, { a: "" }],
    );
    expect(roundTrip.tap("t")).toEqual([{ a: "é☃😀 \ufeff" }, { a: "" }]);
    // A leading byte-order mark is text, kept.
    expect(through(":from-base64 :params [[:a]]", [{ a: "77u/YQ==" }]).out).toEqual([{ a: "\ufeffa" }]);
  });

  it("leave missing fields missing", () => {
    expect(through(":to-base64 :params [[:a :b]]", [{ a: "aa" }]).out).toEqual([{ a: "YWE=" }]);
    expect(through(":from-base64 :params [[:a :b]]", [{ b: "YWE=" }]).out).toEqual([{ b: "aa" }]);
  });

  it("skip and count non-strings, invalid base64, bytes that are not UTF-8 and lone surrogates", () => {
    expect(through(":to-base64 :params [[:a]]", [{ a: 1 }, { a: null }, { a: { b: "x" } }, { a: "x\ud800" }])).toEqual({
      out: [],
      dropped: 4,
    });
    expect(
      through(":from-base64 :params [[:a]]", [
        { a: 1 },
        { a: "YWE" }, // length not a multiple of 4
        { a: "YW=E" }, // padding inside
        { a: "Y!E=" }, // outside the alphabet
        { a: "YWE===" }, // too much padding
        { a: "YW-_" }, // base64url, not standard
        { a: "/w==" }, // the byte 0xff: not UTF-8
      ]),
    ).toEqual({ out: [], dropped: 7 });
    expect(onList(":to-base64 :params [[:a]]")).toEqual({ out: [], dropped: 1 });
    expect(onList(":from-base64 :params [[:a]]")).toEqual({ out: [], dropped: 1 });
  });

  it("leave the event untouched", () => {
    const event = frozen({ n: { a: "aa" }, b: "YmI=" });
    expect(through(":to-base64 :params [[[:n :a]]]", [event]).out).toEqual([{ n: { a: "YWE=" }, b: "YmI=" }]);
    expect(through(":from-base64 :params [[:b]]", [event]).out).toEqual([{ n: { a: "aa" }, b: "bb" }]);
    expect(event).toEqual({ n: { a: "aa" }, b: "YmI=" });
  });

  it("refuse params that are not a vector of fields", () => {
    expect(compileErrorOf('{:action :to-base64 :params ["a"]}')).toBe(
      `${PREFIX}:to-base64 takes a vector of fields, each a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :from-base64 :params [[[]]]}")).toBe(
      `${PREFIX}:from-base64 takes a vector of fields, each a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :from-base64}")).toBe(
      `${PREFIX}:from-base64 takes 1 param [[field ...]], got 0 params`,
    );
  });
});
