/**
 * ssort and ratio: the epoch-aligned fixed windows of fixed-time-window,
 * with Mirabelle v0.13's test cases; where Mirabelle anchors its windows on the first event, the
 * expectations are those of epoch-aligned windows.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_STREAM_LIMITS } from "../../../src/streams/action.js";
import { compileConfig } from "../../../src/streams/compiler.js";
import { parseEdn } from "../../../src/streams/edn.js";
import type { Event } from "../../../src/streams/event.js";
import { run } from "../harness.js";

function through(action: string, events: Event[], limits = DEFAULT_STREAM_LIMITS) {
  const before = structuredClone(events);
  const result = run(`{:action ${action} :children [{:action :tap :params [:t]}]}`, events, limits);
  expect(events, "inputs are not modified").toEqual(before);
  const name = action.split(" ")[0]?.slice(1);
  return { out: result.tap("t") as Event[], drops: result.drops.get(`s/${name}`) ?? 0 };
}

const compile = (action: string) => () => compileConfig(parseEdn(`{:actions {:action :sdo :children [${action}]}}`));
const at = (...times: number[]): Event[] => times.map((time) => ({ time }));

describe("ssort", () => {
  it("passes Mirabelle's test 1 (D = 5, delay 10)", () => {
    const { out, drops } = through(
      ":ssort :params [{:duration 5 :field :time :delay 10}]",
      at(0, 3, 2, 4, 1, 10, 14, 12, 19, 49, 47, 51, 49, 100),
    );
    expect(out).toEqual(at(0, 1, 2, 3, 4, 10, 12, 14, 19, 47, 49, 49, 51));
    expect(drops).toBe(0);
  });

  it("passes Mirabelle's test 2 with epoch-aligned windows: 30 is in [30, 35), still open at 41", () => {
    const { out } = through(":ssort :params [{:duration 5 :field :time :delay 10}]", at(1, 2, 4, 4, 7, 30, 24, 41));
    expect(out).toEqual(at(1, 2, 4, 4, 7, 24));
  });

  it("passes Mirabelle's test 3 (D = 10, delay 20): two windows closed by one event, oldest first", () => {
    const { out } = through(":ssort :params [{:duration 10 :field :time :delay 20}]", at(1, 10, 4, 9, 13, 41));
    expect(out).toEqual(at(1, 4, 9, 10, 13));
  });

  it("passes Mirabelle's test 4: a nested field, with :nested? accepted and ignored", () => {
    const input = [
      [1, 4],
      [3, 1],
      [7, -1],
      [9, 10],
      [11, 3],
    ].map(([time, a]) => ({ time, nested: { a } }));
    const { out } = through(":ssort :params [{:duration 10 :field [:nested :a] :nested? true}]", input);
    expect(out).toEqual([input[2], input[1], input[0], input[3]]);
    // The field's shape says it is nested, whatever :nested? says.
    expect(through(":ssort :params [{:duration 10 :field [:nested :a]}]", input).out).toEqual(out);
  });

  it("sorts stably, missing and null values first, without ever throwing on mixed types", () => {
    const input: Event[] = [
      { time: 1, v: "b" },
      { time: 2, v: 2 },
      { time: 3 },
      { time: 4, v: 1, id: "first" },
      { time: 5, v: null },
      { time: 6, v: 1, id: "second" },
      { time: 10 },
    ];
    const { out } = through(":ssort :params [{:duration 10 :field :v}]", input);
    expect(out).toEqual([input[2], input[4], input[3], input[5], input[1], input[0]]);
  });

  it("counts events without time, events too late for their window, and lists as dropped", () => {
    const { out, drops } = through(":ssort :params [{:duration 10 :field :time}]", [
      { time: 5 },
      { metric: 1 },
      { time: 12 },
      { time: 8 }, // its window [0, 10) is closed
      { time: 20 },
    ]);
    expect(out).toEqual(at(5, 12));
    expect(drops).toBe(2);
    const listed = run(
      "{:action :fixed-event-window :params [{:size 1}] :children [{:action :ssort :params [{:duration 1 :field :time}]}]}",
      at(0),
    );
    expect(listed.drops.get("s/ssort")).toBe(1);
  });

  it("holds at most max-window-events events in a window", () => {
    const { out, drops } = through(":ssort :params [{:duration 10 :field :time}]", at(3, 1, 2, 10), {
      ...DEFAULT_STREAM_LIMITS,
      windowEvents: 2,
    });
    expect(out).toEqual(at(1, 3));
    expect(drops).toBe(1);
  });

  it("refuses bad params, naming the node", () => {
    expect(compile("{:action :ssort :params [{:duration 10}]}")).toThrow(
      "actions.children[0]: :ssort needs the option :field",
    );
    expect(compile('{:action :ssort :params [{:duration 10 :field "time"}]}')).toThrow(
      "actions.children[0].params[0]: a field must be a keyword or a vector of keywords",
    );
    expect(compile("{:action :ssort :params [{:duration -1 :field :time}]}")).toThrow(
      "actions.children[0]: :duration must be a number of seconds greater than 0",
    );
    expect(compile("{:action :ssort :params [{:duration 1 :field :time :delay -2}]}")).toThrow(
      "actions.children[0]: :delay must be a number of seconds of at least 0",
    );
    expect(compile("{:action :ssort :params []}")).toThrow(
      "actions.children[0]: :ssort takes 1 param [{:duration D :field f :delay L}], got 0 params",
    );
  });
});

describe("ratio", () => {
  const states = (list: Array<[string, number, number?]>): Event[] =>
    list.map(([state, time, metric]) => (metric === undefined ? { state, time } : { state, time, metric }));
  const input1 = states([
    ["ok", 1],
    ["ok", 2],
    ["ok", 2],
    ["error", 3],
    ["ok", 4],
    ["ok", 12],
    ["error", 13],
    ["ok", 19],
    ["ok", 20],
    ["ok", 21],
    ["ok", 22],
    ["error", 23],
    ["error", 140],
    ["ok", 141],
    ["ok", 141],
    ["error", 142],
    ["ok", 1151],
  ]);
  const input2 = states([
    ["ok", 1, 1],
    ["ok", 2, 1],
    ["ok", 2, 2],
    ["error", 3, 10],
    ["ok", 4, 3],
    ["error", 12, 2],
    ["error", 13, 1],
    ["ok", 19, 10],
    ["ok", 20, 3],
    ["ok", 21, 2],
    ["ok", 22, 10],
    ["error", 2, 13],
  ]);

  it("passes Mirabelle's test 1 with epoch-aligned windows: errors ÷ all events, on the most recent event", () => {
    const { out } = through(
      ':ratio :params [{:duration 10 :delay 0 :conditions [[:= :state "error"] [:true]]}]',
      input1,
    );
    expect(out).toEqual([
      { state: "ok", time: 4, metric: 1 / 5 },
      { state: "ok", time: 19, metric: 1 / 3 },
      { state: "error", time: 23, metric: 1 / 4 },
      { state: "error", time: 142, metric: 1 / 2 },
    ]);
  });

  it("passes Mirabelle's test 2 with epoch-aligned windows: sums of metrics with :metric true", () => {
    const { out, drops } = through(
      ':ratio :params [{:duration 10 :delay 0 :conditions [[:= :state "error"] [:true]] :metric true}]',
      input2,
    );
    expect(out).toEqual([
      { state: "ok", time: 4, metric: 10 / 17 },
      { state: "ok", time: 19, metric: 3 / 13 },
    ]);
    // {:state "error" :time 2} comes after 22 with a delay of 0.
    expect(drops).toBe(1);
  });

  it("passes Mirabelle's test 3 with epoch-aligned windows: 0 when the divisor is 0", () => {
    const { out } = through(
      ':ratio :params [{:duration 10 :delay 0 :conditions [[:= :state "error"] [:= :state "warn"]]}]',
      input2,
    );
    expect(out).toEqual([
      { state: "ok", time: 4, metric: 0 },
      { state: "ok", time: 19, metric: 0 },
    ]);
  });

  it("tests the conditions independently, counts a missing metric as 0, and lets late events join an open window", () => {
    const { out } = through(
      ":ratio :params [{:duration 10 :delay 5 :conditions [[:> :metric 1] [:true]] :metric true}]",
      [
        { time: 3, metric: 4 },
        { time: 11, metric: 2 },
        { time: 8, metric: 1 }, // late, within the delay: joins [0, 10)
        { time: 9 },
        { time: 16 },
      ],
    );
    expect(out).toEqual([{ time: 9, metric: 4 / 5 }]);
  });

  it("counts events without time and lists as dropped", () => {
    const { out, drops } = through(":ratio :params [{:duration 10 :conditions [[:true] [:true]]}]", [
      { time: 1 },
      { metric: 1 },
      { time: 10 },
    ]);
    expect(out).toEqual([{ time: 1, metric: 1 }]);
    expect(drops).toBe(1);
    const listed = run(
      "{:action :fixed-event-window :params [{:size 1}] :children [{:action :ratio :params [{:duration 1 :conditions [[:true] [:true]]}]}]}",
      at(0),
    );
    expect(listed.drops.get("s/ratio")).toBe(1);
  });

  it("holds at most max-window-events events in a window", () => {
    const { out, drops } = through(
      ':ratio :params [{:duration 10 :conditions [[:= :state "error"] [:true]]}]',
      states([
        ["ok", 1],
        ["error", 2],
        ["error", 3],
        ["ok", 10],
      ]),
      { ...DEFAULT_STREAM_LIMITS, windowEvents: 2 },
    );
    expect(out).toEqual([{ state: "error", time: 2, metric: 1 / 2 }]);
    expect(drops).toBe(1);
  });

  it("refuses bad params, naming the node", () => {
    expect(compile("{:action :ratio :params [{:duration 10}]}")).toThrow(
      "actions.children[0]: :ratio needs the option :conditions",
    );
    expect(compile("{:action :ratio :params [{:duration 10 :conditions [[:true]]}]}")).toThrow(
      "actions.children[0]: :conditions of :ratio must be a vector of exactly 2 conditions",
    );
    expect(compile("{:action :ratio :params [{:duration 10 :conditions [[:true] [:foo]]}]}")).toThrow(
      "actions.children[0].params[0].conditions[1]",
    );
    expect(compile("{:action :ratio :params [{:duration 10 :conditions [[:true] [:true]] :metric 1}]}")).toThrow(
      "actions.children[0]: :metric of :ratio must be true or false",
    );
  });
});
