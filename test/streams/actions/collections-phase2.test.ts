/**
 * Phase-2 actions on lists (docs/streams.md, Actions): coll-percentiles, coll-top, coll-bottom,
 * coll-sort, coll-quotient, coll-increase, sflatten. Each with the documented example, Mirabelle
 * v0.13's test cases (translated where Vigie differs), what is skipped and counted, empty lists and
 * bad params.
 */
import { describe, expect, it } from "vitest";
import type { Flow } from "../../../src/streams/action.js";
import type { Event } from "../../../src/streams/event.js";
import { compileErrorOf, run } from "../harness.js";

const TAP = "{:action :tap :params [:t]}";

/** The action's EDN name (`:coll-top :params [2]` → `coll-top`), for its drop counter. */
const nameOf = (action: string) => action.trim().split(/\s+/)[0]?.slice(1) ?? "";

/**
 * Sends each list, as a fixed-event-window of its size emits it, to `action` (one stream per list:
 * the actions keep no state); gathers what reached the tap and the action's drop count.
 */
function onLists(action: string, lists: readonly Event[][]): { out: Flow[]; dropped: number } {
  const out: Flow[] = [];
  let dropped = 0;
  for (const list of lists) {
    const { tap, drops } = run(
      `{:action :fixed-event-window :params [{:size ${list.length}}] :children [{:action ${action} :children [${TAP}]}]}`,
      list,
    );
    out.push(...tap("t"));
    dropped += drops.get(`s/${nameOf(action)}`) ?? 0;
  }
  return { out, dropped };
}

/** Sends `action` an empty list (a window whose coll-where keeps nothing). */
function onEmptyList(action: string): { out: Flow[]; dropped: number } {
  const { tap, drops } = run(
    `{:action :fixed-event-window :params [{:size 1}]
      :children [{:action :coll-where :params [[:= :host "nobody"]]
                  :children [{:action ${action} :children [${TAP}]}]}]}`,
    [{ host: "a", metric: 1, time: 1 }],
  );
  return { out: tap("t"), dropped: drops.get(`s/${nameOf(action)}`) ?? 0 };
}

/** Sends `action` single events (not lists). */
function onEvents(action: string, events: Event[]): { out: Flow[]; dropped: number } {
  const { tap, drops } = run(`{:action ${action} :children [${TAP}]}`, events);
  return { out: tap("t"), dropped: drops.get(`s/${nameOf(action)}`) ?? 0 };
}

const metrics = (...values: number[]): Event[] => values.map((metric) => ({ metric }));

/** Deep-frozen events: an action writing into one throws, and the stream counts a drop instead. */
function frozen<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const item of Object.values(value)) frozen(item);
    Object.freeze(value);
  }
  return value;
}

describe("coll-percentiles", () => {
  it("picks by nearest rank: [0 0.5 1] on metrics 3, 1, 2 gives 1, 2, 3 with :quantile a number", () => {
    expect(onLists(":coll-percentiles :params [[0 0.5 1]]", [metrics(3, 1, 2)]).out).toEqual([
      { metric: 1, quantile: 0 },
      { metric: 2, quantile: 0.5 },
      { metric: 3, quantile: 1 },
    ]);
  });

  it("follows Mirabelle's sorted-sample cases (quantiles as numbers, not strings)", () => {
    const action = ":coll-percentiles :params [[0 0.5 1]]";
    expect(onLists(action, [[{ metric: 1, service: "foo" }]]).out).toEqual([
      { metric: 1, service: "foo", quantile: 0 },
      { metric: 1, service: "foo", quantile: 0.5 },
      { metric: 1, service: "foo", quantile: 1 },
    ]);
    expect(onLists(action, [metrics(2, 1)]).out).toEqual([
      { metric: 1, quantile: 0 },
      { metric: 2, quantile: 0.5 },
      { metric: 2, quantile: 1 },
    ]);
    expect(onLists(action, [metrics(6, 1, 2, 1, 1)]).out).toEqual([
      { metric: 1, quantile: 0 },
      { metric: 1, quantile: 0.5 },
      { metric: 6, quantile: 1 },
    ]);
  });

  it("emits in param order, leaves out events without a numeric metric, keeps ties in list order", () => {
    const list = [
      { metric: 5, host: "a" },
      { host: "no-metric" },
      { metric: "7", host: "string-metric" },
      { metric: 1, host: "b" },
      { metric: 1, host: "c" },
    ];
    // Sorted: b(1) c(1) a(5); index = min(2, floor(3q)).
    expect(onLists(":coll-percentiles :params [[1 0 0.4]]", [list]).out).toEqual([
      { metric: 5, host: "a", quantile: 1 },
      { metric: 1, host: "b", quantile: 0 },
      { metric: 1, host: "c", quantile: 0.4 },
    ]);
  });

  it("skips and counts a list without metrics and a single event; an empty list emits nothing uncounted", () => {
    expect(onLists(":coll-percentiles :params [[0.5]]", [[{ metric: null }, { host: "a" }]])).toEqual({
      out: [],
      dropped: 1,
    });
    expect(onEvents(":coll-percentiles :params [[0.5]]", [{ metric: 1 }])).toEqual({ out: [], dropped: 1 });
    expect(onEmptyList(":coll-percentiles :params [[0.5]]")).toEqual({ out: [], dropped: 0 });
  });

  it("copies the selected events", () => {
    const list = frozen([{ metric: 2, labels: { a: "1" } }, { metric: 1 }]);
    expect(onLists(":coll-percentiles :params [[0 1]]", [list]).out).toEqual([
      { metric: 1, quantile: 0 },
      { metric: 2, labels: { a: "1" }, quantile: 1 },
    ]);
    expect(list).toEqual([{ metric: 2, labels: { a: "1" } }, { metric: 1 }]);
  });

  it("refuses quantiles outside [0, 1], non-numbers and an empty or missing vector", () => {
    const prefix = "invalid stream config: actions.children[0]: ";
    expect(compileErrorOf("{:action :coll-percentiles :params [[0.5 1.5]]}")).toBe(
      `${prefix}each quantile of :coll-percentiles must be between 0 and 1`,
    );
    expect(compileErrorOf("{:action :coll-percentiles :params [[-0.1]]}")).toBe(
      `${prefix}each quantile of :coll-percentiles must be between 0 and 1`,
    );
    expect(compileErrorOf('{:action :coll-percentiles :params [["0.5"]]}')).toBe(
      `${prefix}each quantile of :coll-percentiles must be a number`,
    );
    expect(compileErrorOf("{:action :coll-percentiles :params [[]]}")).toBe(
      `${prefix}:coll-percentiles takes a non-empty vector of quantiles such as [0.5 0.99]`,
    );
    expect(compileErrorOf("{:action :coll-percentiles :params [0.5]}")).toBe(
      `${prefix}:coll-percentiles takes a non-empty vector of quantiles such as [0.5 0.99]`,
    );
    expect(compileErrorOf("{:action :coll-percentiles}")).toBe(
      `${prefix}:coll-percentiles takes 1 param [[q ...]], got 0 params`,
    );
  });
});

describe("coll-top and coll-bottom", () => {
  const lists = [metrics(10, 4, 100, 2), metrics(10), metrics(-10, 1, 2, 0)];

  it("give the n events with the highest (descending) / lowest (ascending) metric, as Mirabelle's tests", () => {
    expect(onLists(":coll-top :params [2]", lists).out).toEqual([metrics(100, 10), metrics(10), metrics(2, 1)]);
    expect(onLists(":coll-bottom :params [2]", lists).out).toEqual([metrics(2, 4), metrics(10), metrics(-10, 0)]);
  });

  it("follow Mirabelle's extremum-n cases (n = 3)", () => {
    expect(onLists(":coll-top :params [3]", [metrics(1, 2, 4), metrics(10, 2, 4, 2)]).out).toEqual([
      metrics(4, 2, 1),
      metrics(10, 4, 2),
    ]);
    expect(onLists(":coll-bottom :params [3]", [metrics(1, 2, 4), metrics(10, 2, 4, 1)]).out).toEqual([
      metrics(1, 2, 4),
      metrics(1, 2, 4),
    ]);
  });

  it("keep ties in list order and leave out events without a numeric metric", () => {
    const list = [{ metric: 5, host: "a" }, { host: "none" }, { metric: 5, host: "b" }, { metric: 9, host: "c" }];
    expect(onLists(":coll-top :params [2]", [list]).out).toEqual([
      [
        { metric: 9, host: "c" },
        { metric: 5, host: "a" },
      ],
    ]);
    expect(onLists(":coll-bottom :params [5]", [list]).out).toEqual([
      [
        { metric: 5, host: "a" },
        { metric: 5, host: "b" },
        { metric: 9, host: "c" },
      ],
    ]);
  });

  it("skip and count a list without metrics and a single event; an empty list emits nothing uncounted", () => {
    for (const action of [":coll-top :params [2]", ":coll-bottom :params [2]"]) {
      expect(onLists(action, [[{ host: "a" }, { metric: null }]]), action).toEqual({ out: [], dropped: 1 });
      expect(onEvents(action, [{ metric: 1 }]), action).toEqual({ out: [], dropped: 1 });
      expect(onEmptyList(action), action).toEqual({ out: [], dropped: 0 });
    }
  });

  it("leave the window's list and its events as they were", () => {
    const list = frozen(metrics(1, 3, 2));
    const { tap } = run(
      `{:action :fixed-event-window :params [{:size 3}]
        :children [{:action :coll-top :params [2] :children [${TAP}]} {:action :tap :params [:raw]}]}`,
      list,
    );
    expect(tap("t")).toEqual([metrics(3, 2)]);
    expect(tap("raw")).toEqual([metrics(1, 3, 2)]);
  });

  it("refuse an n that is not an integer of at least 1", () => {
    const prefix = "invalid stream config: actions.children[0]: ";
    expect(compileErrorOf("{:action :coll-top :params [0]}")).toBe(
      `${prefix}n of :coll-top must be an integer of at least 1`,
    );
    expect(compileErrorOf("{:action :coll-bottom :params [1.5]}")).toBe(
      `${prefix}n of :coll-bottom must be an integer of at least 1`,
    );
    expect(compileErrorOf('{:action :coll-top :params ["2"]}')).toBe(`${prefix}n of :coll-top must be a number`);
    expect(compileErrorOf("{:action :coll-bottom}")).toBe(`${prefix}:coll-bottom takes 1 param [n], got 0 params`);
  });
});

describe("coll-sort", () => {
  it("sorts by the field, as Mirabelle's test", () => {
    const list = [{ time: 11 }, { time: 10 }, { time: 3 }, { time: 14 }];
    expect(onLists(":coll-sort :params [:time]", [list]).out).toEqual([
      [{ time: 3 }, { time: 10 }, { time: 11 }, { time: 14 }],
    ]);
  });

  it("takes a nested path, puts missing and null first and keeps ties in list order", () => {
    const list = [
      { id: 1, a: { b: 2 } },
      { id: 2, a: { b: 1 } },
      { id: 3 },
      { id: 4, a: { b: 1 } },
      { id: 5, a: { b: null } },
    ];
    expect(onLists(":coll-sort :params [[:a :b]]", [list]).out).toEqual([
      [{ id: 3 }, { id: 5, a: { b: null } }, { id: 2, a: { b: 1 } }, { id: 4, a: { b: 1 } }, { id: 1, a: { b: 2 } }],
    ]);
  });

  it("sorts mixed types without failing: numbers, then strings, then booleans", () => {
    const list = [{ v: true }, { v: "b" }, { v: 2 }, { v: "a" }, { v: 1 }];
    expect(onLists(":coll-sort :params [:v]", [list]).out).toEqual([
      [{ v: 1 }, { v: 2 }, { v: "a" }, { v: "b" }, { v: true }],
    ]);
  });

  it("gives an empty list for an empty list, and skips and counts a single event", () => {
    expect(onEmptyList(":coll-sort :params [:time]")).toEqual({ out: [[]], dropped: 0 });
    expect(onEvents(":coll-sort :params [:time]", [{ time: 1 }])).toEqual({ out: [], dropped: 1 });
  });

  it("sorts a new list: the window's other children see it in its order", () => {
    const list = frozen([{ time: 2 }, { time: 1 }]);
    const { tap } = run(
      `{:action :fixed-event-window :params [{:size 2}]
        :children [{:action :coll-sort :params [:time] :children [${TAP}]} {:action :tap :params [:raw]}]}`,
      list,
    );
    expect(tap("t")).toEqual([[{ time: 1 }, { time: 2 }]]);
    expect(tap("raw")).toEqual([[{ time: 2 }, { time: 1 }]]);
  });

  it("refuses a field that is not a keyword or a vector of keywords", () => {
    const prefix = "invalid stream config: actions.children[0]: ";
    expect(compileErrorOf('{:action :coll-sort :params ["time"]}')).toBe(
      `${prefix}the field of :coll-sort must be a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :coll-sort :params [[]]}")).toBe(
      `${prefix}the field of :coll-sort must be a keyword or a vector of keywords`,
    );
    expect(compileErrorOf("{:action :coll-sort :params [:a :b]}")).toBe(
      `${prefix}:coll-sort takes 1 param [field], got 2 params`,
    );
  });
});

describe("coll-quotient", () => {
  it("divides the first metric by the next ones, in list order, as Mirabelle's test", () => {
    expect(onLists(":coll-quotient", [metrics(1, 10, 5)]).out).toEqual([{ metric: 0.02 }]);
  });

  it("sets the quotient on the most recent event, and a one-event list gives its own metric", () => {
    const list = [
      { service: "enqueues", time: 12, metric: 30 },
      { service: "dequeues", time: 10, metric: 10 },
    ];
    expect(onLists(":coll-quotient", [list]).out).toEqual([{ service: "enqueues", time: 12, metric: 3 }]);
    expect(onLists(":coll-quotient", [[{ host: "a", metric: 7 }]]).out).toEqual([{ host: "a", metric: 7 }]);
    // A zero dividend is no division by zero.
    expect(onLists(":coll-quotient", [metrics(0, 4)]).out).toEqual([{ metric: 0 }]);
  });

  it("skips and counts a division by zero, an event without a metric and a single event", () => {
    expect(onLists(":coll-quotient", [metrics(1, 0), metrics(4, 2, 0)])).toEqual({ out: [], dropped: 2 });
    expect(onLists(":coll-quotient", [[{ metric: 4 }, { host: "x" }]])).toEqual({ out: [], dropped: 1 });
    expect(onEvents(":coll-quotient", [{ metric: 4 }])).toEqual({ out: [], dropped: 1 });
  });

  it("emits nothing for an empty list, uncounted", () => {
    expect(onEmptyList(":coll-quotient")).toEqual({ out: [], dropped: 0 });
  });

  it("copies the base event", () => {
    const list = frozen([
      { time: 1, metric: 6 },
      { time: 2, metric: 3 },
    ]);
    expect(onLists(":coll-quotient", [list]).out).toEqual([{ time: 2, metric: 2 }]);
    expect(list[1]).toEqual({ time: 2, metric: 3 });
  });

  it("takes no params", () => {
    expect(compileErrorOf("{:action :coll-quotient :params [1]}")).toBe(
      "invalid stream config: actions.children[0]: :coll-quotient takes no params, got 1 param",
    );
  });
});

describe("coll-increase", () => {
  it("gives newest − oldest on the newest event, as Mirabelle's tests", () => {
    const lists = [
      [
        { time: 1, metric: 10 },
        { time: 2, metric: 20 },
        { time: 11, metric: 50 },
      ],
      [
        { time: 14, metric: 60 },
        { time: 28, metric: 90 },
      ],
    ];
    expect(onLists(":coll-increase", lists).out).toEqual([
      { time: 11, metric: 40 },
      { time: 28, metric: 30 },
    ]);
    // A reset: nothing.
    const reset = [
      { time: 1, metric: 10 },
      { time: 2, metric: 20 },
      { time: 11, metric: 1 },
    ];
    expect(onLists(":coll-increase", [reset])).toEqual({ out: [], dropped: 0 });
  });

  it("finds newest and oldest by time, not by list order; on equal times the newest is the later, the oldest the earlier", () => {
    const unordered = [
      { time: 9, metric: 50, host: "newest" },
      { time: 1, metric: 10 },
      { time: 5, metric: 70 },
    ];
    expect(onLists(":coll-increase", [unordered]).out).toEqual([{ time: 9, metric: 40, host: "newest" }]);
    const ties = [
      { time: 1, metric: 10, host: "a" },
      { time: 1, metric: 12, host: "b" },
      { time: 5, metric: 20, host: "c" },
      { time: 5, metric: 30, host: "d" },
    ];
    expect(onLists(":coll-increase", [ties]).out).toEqual([{ time: 5, metric: 20, host: "d" }]);
  });

  it("emits nothing, uncounted, for a flat counter and an empty list", () => {
    const flat = [
      { time: 1, metric: 10 },
      { time: 2, metric: 10 },
    ];
    expect(onLists(":coll-increase", [flat])).toEqual({ out: [], dropped: 0 });
    expect(onEmptyList(":coll-increase")).toEqual({ out: [], dropped: 0 });
  });

  it("skips and counts a one-event list, an event without time or metric, and a single event", () => {
    expect(onLists(":coll-increase", [[{ time: 1, metric: 1 }]])).toEqual({ out: [], dropped: 1 });
    expect(
      onLists(":coll-increase", [
        [{ time: 1, metric: 1 }, { metric: 5 }],
        [{ time: 1, metric: 1 }, { time: 2 }],
        [
          { time: 1, metric: 1 },
          { time: 2, metric: "5" },
        ],
      ]),
    ).toEqual({ out: [], dropped: 3 });
    expect(onEvents(":coll-increase", [{ time: 1, metric: 1 }])).toEqual({ out: [], dropped: 1 });
  });

  it("copies the newest event", () => {
    const list = frozen([
      { time: 1, metric: 1 },
      { time: 2, metric: 4, tags: ["x"] },
    ]);
    expect(onLists(":coll-increase", [list]).out).toEqual([{ time: 2, metric: 3, tags: ["x"] }]);
    expect(list[1]).toEqual({ time: 2, metric: 4, tags: ["x"] });
  });

  it("takes no params", () => {
    expect(compileErrorOf("{:action :coll-increase :params [{:duration 5}]}")).toBe(
      "invalid stream config: actions.children[0]: :coll-increase takes no params, got 1 param",
    );
  });
});

describe("sflatten", () => {
  it("emits the events of a list one by one, in order, as Mirabelle's test", () => {
    const list = [
      { metric: 1, time: 1 },
      { metric: 10, time: 2 },
      { metric: 4, time: 3 },
      { metric: 10, time: 1 },
      { metric: 5, time: 4 },
    ];
    expect(onLists(":sflatten", [frozen(list)]).out).toEqual(list);
  });

  it("emits nothing for an empty list, and skips and counts a single event", () => {
    expect(onEmptyList(":sflatten")).toEqual({ out: [], dropped: 0 });
    expect(onEvents(":sflatten", [{ metric: 1 }])).toEqual({ out: [], dropped: 1 });
  });

  it("takes no params", () => {
    expect(compileErrorOf("{:action :sflatten :params [:x]}")).toBe(
      "invalid stream config: actions.children[0]: :sflatten takes no params, got 1 param",
    );
  });
});
