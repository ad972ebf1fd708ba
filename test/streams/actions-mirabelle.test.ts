/**
 * Phase-1 behaviours as Mirabelle v0.13 has them, where the actions follow it (each case with the
 * example docs/streams.md gives): what a configuration migrated from Mirabelle must find unchanged.
 */
import { describe, expect, it } from "vitest";
import { mostRecent } from "../../src/streams/actions/collections.js";
import { compileConfig } from "../../src/streams/compiler.js";
import { parseEdn } from "../../src/streams/edn.js";
import type { Event } from "../../src/streams/event.js";
import { recordingEngine, run } from "./harness.js";

const tapped = (actions: string, events: Event[], tap = "t") => run(actions, events).tap(tap);

describe("Mirabelle v0.13 behaviours", () => {
  it("coll-rate of a list spanning no time emits the sum, keeping the most recent event's nil fields", () => {
    const list = [
      { host: "a", time: 10, metric: 2, description: null },
      { host: "b", time: 10, metric: 3, description: null },
    ];
    expect(
      tapped(
        "{:action :fixed-event-window :params [{:size 2}] :children [{:action :coll-rate :children [{:action :tap :params [:t]}]}]}",
        list,
      ),
    ).toEqual([{ host: "b", time: 10, metric: 5, description: null }]);
    // A span: sum ÷ span, as before.
    expect(
      tapped(
        "{:action :fixed-event-window :params [{:size 2}] :children [{:action :coll-rate :children [{:action :tap :params [:t]}]}]}",
        [
          { time: 10, metric: 2 },
          { time: 12, metric: 4 },
        ],
      ),
    ).toEqual([{ time: 12, metric: 3 }]);
  });

  it('tag puts new tags in front: tag ["foo"] on ["bar"] gives ["foo" "bar"]; untag gives [] without :tags', () => {
    expect(
      tapped('{:action :tag :params ["foo"] :children [{:action :tap :params [:t]}]}', [{ tags: ["bar"] }]),
    ).toEqual([{ tags: ["foo", "bar"] }]);
    expect(tapped('{:action :untag :params ["foo"] :children [{:action :tap :params [:t]}]}', [{ host: "a" }])).toEqual(
      [{ host: "a", tags: [] }],
    );
  });

  it("coll-count of an empty list emits {:metric 0}; the other coll-* aggregations emit nothing", () => {
    const emptied = (action: string) =>
      tapped(
        `{:action :fixed-event-window :params [{:size 1}]
          :children [{:action :coll-where :params [[:> :metric 100]]
                      :children [{:action ${action} :children [{:action :tap :params [:t]}]}]}]}`,
        [{ metric: 1 }],
      );
    expect(emptied(":coll-count")).toEqual([{ metric: 0 }]);
    for (const action of [":coll-sum", ":coll-mean", ":coll-max", ":coll-min", ":coll-rate"]) {
      expect(emptied(action), action).toEqual([]);
    }
  });

  it("sdissoc and keep-keys take nested paths; an emptied parent goes", () => {
    expect(
      tapped("{:action :sdissoc :params [[:foo [:nested :key]]] :children [{:action :tap :params [:t]}]}", [
        { nested: { key: 1 }, metric: 2 },
      ]),
    ).toEqual([{ metric: 2 }]);
    // A parent that keeps other fields stays; the original event is untouched.
    const original = { nested: { key: 1, other: 2 }, foo: 3 };
    expect(
      tapped("{:action :sdissoc :params [[:foo [:nested :key]]] :children [{:action :tap :params [:t]}]}", [original]),
    ).toEqual([{ nested: { other: 2 } }]);
    expect(original).toEqual({ nested: { key: 1, other: 2 }, foo: 3 });
    expect(
      tapped("{:action :keep-keys :params [[[:foo :bar :baz] :a]] :children [{:action :tap :params [:t]}]}", [
        { a: 1, host: "foo", foo: { bar: { baz: "1", toto: "2" }, invalid: true } },
      ]),
    ).toEqual([{ a: 1, foo: { bar: { baz: "1" } } }]);
    expect(() => compileConfig(parseEdn('{:actions {:action :keep-keys :params [[:a ["b"]]]}}'))).toThrow(
      "invalid stream config: actions: :keep-keys takes a vector of fields, each a keyword or a vector of keywords",
    );
  });

  it("a fixed time window with :delay drops an event older than the latest time − delay, even in an open window", () => {
    const events = [
      [0, 10],
      [7, 1],
      [11, 3],
      [8, 2],
      [9, 2],
      [1, 2], // after 11: older than 11 − 5, dropped though window [0, 10) is open
      [14, 8],
      [19, 1],
      [20, 2],
      [23, 4],
      [25, 4],
    ].map(([time, metric]) => ({ time, metric }));
    const { tap, drops } = run(
      "{:action :sum :params [{:duration 10 :delay 5}] :children [{:action :tap :params [:t]}]}",
      events,
    );
    expect((tap("t") as Event[]).map((event) => event.metric)).toEqual([15, 12]);
    expect(drops.get("s/sum")).toBe(1);
    // Every fixed time window applies the rule.
    for (const action of [":fixed-time-window", ":mean", ":top", ":bottom", ":rate"]) {
      const windowed = run(`{:action ${action} :params [{:duration 10 :delay 5}]}`, events);
      expect(windowed.drops.get(`s/${action.slice(1)}`), action).toBe(1);
    }
  });

  it("by collects before routing, judging each fork by its previous event", () => {
    const { tap } = run(
      "{:action :by :params [{:fields [:host] :gc-interval 10 :fork-ttl 10}] :children [{:action :fixed-event-window :params [{:size 2}] :children [{:action :tap :params [:t]}]}]}",
      [1, 15, 21, 23, 31, 32, 50, 89, 110, 111].map((time) => ({ host: "a", time })),
    );
    expect((tap("t") as Event[][]).map((window) => window.map((event) => event.time))).toEqual([
      [15, 21],
      [23, 31],
      [110, 111],
    ]);
  });

  it("reaper's clock starts at 0: the first event at or after D sweeps", () => {
    const { engine, tap } = recordingEngine();
    engine.add(
      "s",
      parseEdn(`{:actions {:action :sdo :children [{:action :where :params [[:not= :host "tick"]]
                                                     :children [{:action :index :params [[:host]]}]}
                                                    {:action :where :params [[:= :host "tick"]]
                                                     :children [{:action :reaper :params [5 :expired]}]}]}}`),
      { kind: "api" },
    );
    engine.add("expired", parseEdn("{:actions {:action :tap :params [:expired]}}"), { kind: "api" });
    engine.get("s")?.push([
      { host: "a", time: 10, ttl: 1 },
      { host: "b", time: 20, ttl: 100 },
      { host: "tick", time: 20 }, // the reaper's first event, at 20 ≥ 0 + 5: it sweeps
    ]);
    expect(tap("expired")).toEqual([{ host: "a", time: 10, ttl: 1, state: "expired" }]);
  });

  it("loads what Mirabelle's builder writes: ddt [false], ddt-pos [true], :async-queue!, :nested? in ssort", () => {
    for (const config of [
      "{:actions {:action :ddt :params [false]}}",
      "{:actions {:action :ddt-pos :params [true]}}",
      "{:actions {:action :ddt :params []}}",
      "{:actions {:action :ssort :params [{:duration 10 :field [:nested :a] :nested? true :aggr-fn :ssort}]}}",
      "{:actions {:action :ssort :params [{:duration 10 :field :time :nested? false}]}}",
    ]) {
      expect(() => compileConfig(parseEdn(config)), config).not.toThrow();
    }
    expect(() => compileConfig(parseEdn('{:actions {:action :ddt :params ["no"]}}'))).toThrow(
      "invalid stream config: actions: :ddt takes no params, or one boolean (ignored)",
    );
    expect(() =>
      compileConfig(parseEdn("{:actions {:action :async-queue! :params [:q] :children [{:action :info}]}}"), {
        outputs: new Set(),
        asyncQueues: new Set(["q"]),
      }),
    ).not.toThrow();
  });

  it("takes as base the most recent event, the later one on ties, time-less events counting as oldest", () => {
    expect(mostRecent([{ n: 1, time: 5 }, { n: 2, time: 5 }, { n: 3 }])).toEqual({ n: 2, time: 5 });
    expect(mostRecent([{ n: 1 }, { n: 2 }])).toEqual({ n: 2 });
    expect(
      mostRecent([
        { n: 1, time: 9 },
        { n: 2, time: 5 },
      ]),
    ).toEqual({ n: 1, time: 9 });
  });
});
