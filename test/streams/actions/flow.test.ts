import { describe, expect, it } from "vitest";
import { compileConfig } from "../../../src/streams/compiler.js";
import { parseEdn } from "../../../src/streams/edn.js";
import { StreamEngine } from "../../../src/streams/engine.js";
import type { Event } from "../../../src/streams/event.js";
import { run } from "../harness.js";

describe("sdo, where, split", () => {
  it("sdo forwards to every child in order", () => {
    const { tap } = run(
      "{:action :sdo :children [{:action :tap :params [:a]} {:action :increment :children [{:action :tap :params [:b]}]}]}",
      [{ metric: 1 }],
    );
    expect(tap("a")).toEqual([{ metric: 1 }]);
    expect(tap("b")).toEqual([{ metric: 2 }]);
  });

  it("where forwards matching events only", () => {
    const { tap } = run("{:action :where :params [[:> :metric 10]] :children [{:action :tap :params [:t]}]}", [
      { metric: 5 },
      { metric: 15 },
    ]);
    expect(tap("t")).toEqual([{ metric: 15 }]);
  });

  it("split gives each event to the first matching condition's child, or to the default child", () => {
    const { tap } = run(
      `{:action :split :params [[[:> :metric 10] [:> :metric 5]]]
        :children [{:action :tap :params [:high]} {:action :tap :params [:mid]} {:action :tap :params [:low]}]}`,
      [{ metric: 20 }, { metric: 7 }, { metric: 1 }],
    );
    expect(tap("high")).toEqual([{ metric: 20 }]);
    expect(tap("mid")).toEqual([{ metric: 7 }]);
    expect(tap("low")).toEqual([{ metric: 1 }]);
  });
});

describe("by", () => {
  it("keeps an independent copy of the children per distinct field value", () => {
    const events: Event[] = [
      { host: "a", time: 1 },
      { host: "b", time: 2 },
      { host: "a", time: 3 },
      { host: "b", time: 4 },
      { host: "a", time: 5 },
    ];
    const { tap } = run(
      "{:action :by :params [{:fields [:host]}] :children [{:action :fixed-event-window :params [{:size 2}] :children [{:action :tap :params [:w]}]}]}",
      events,
    );
    // Without isolation, a and b would share one window of size 2.
    expect(tap("w")).toEqual([
      [events[0], events[2]],
      [events[1], events[3]],
    ]);
  });

  it("forks on one field by its value: missing, a number, a string, or the JSON text of the rest", () => {
    const values = [undefined, 1, "1", 1.0, null, { a: 1 }, { a: 1 }, [1], "[1]", true, "true", undefined, null];
    const events: Event[] = values.map((host, time) => (host === undefined ? { time } : { host, time }));
    const { tap, stream } = run(
      "{:action :by :params [{:fields [:host]}] :children [{:action :fixed-event-window :params [{:size 2}] :children [{:action :tap :params [:w]}]}]}",
      events,
    );
    // The number 1 and the string "1" are different keys; null, objects, arrays and booleans are
    // keyed by their JSON text, which a string of the same text shares.
    const pairs = (tap("w") as Event[][]).map((window) => window.map((event) => event.time));
    expect(pairs).toEqual([
      [1, 3],
      [5, 6],
      [7, 8],
      [9, 10],
      [0, 11],
      [4, 12],
    ]);
    expect(stream.graph().in).toBe(values.length);
  });

  it("forks on tuples of several fields, nested paths included", () => {
    const { tap } = run(
      '{:action :by :params [{:fields [:host [:labels :dc]]}] :children [{:action :changed :params [{:field :state :init "ok"}] :children [{:action :tap :params [:c]}]}]}',
      [
        { host: "a", labels: { dc: "x" }, state: "critical" },
        { host: "a", labels: { dc: "y" }, state: "critical" },
        { host: "a", labels: { dc: "x" }, state: "critical" },
      ],
    );
    expect(tap("c")).toHaveLength(2);
  });

  it("accepts the vector shorthand [[:host]]", () => {
    const { tap } = run("{:action :by :params [[:host]] :children [{:action :coll-count}]}", [{ host: "a" }]);
    expect(tap("x")).toEqual([]);
  });

  it("drops forks idle for :fork-ttl, checked every :gc-interval seconds of event time", () => {
    const config =
      "{:action :by :params [{:fields [:host] :gc-interval 10 :fork-ttl 20}] :children [{:action :fixed-event-window :params [{:size 2}] :children [{:action :tap :params [:w]}]}]}";
    const events: Event[] = [
      { host: "old", time: 0 }, // the first event: a collection (of nothing), the next due at 10
      { host: "new", time: 5 },
      { host: "new", time: 18 }, // due at 10, so a collection: nothing idle for more than 20 s; next due at 28
      { host: "new", time: 30 }, // a collection: "old" (previous event at 0) is idle 30 > 20 s and goes
      { host: "old", time: 31 }, // a fresh fork: its window starts empty
      { host: "old", time: 32 },
    ];
    const { tap } = run(config, events);
    expect(tap("w")).toEqual([
      [events[1], events[2]],
      [events[4], events[5]],
    ]);
  });

  it("judges each fork by its previous event before routing, so the arriving event's fork may restart", () => {
    // Mirabelle's own example (docs/streams.md, `by`): one host, fixed-event-window 2, so a
    // collection can drop the fork the arriving event belongs to.
    const config =
      "{:action :by :params [{:fields [:host] :gc-interval 10 :fork-ttl 10}] :children [{:action :fixed-event-window :params [{:size 2}] :children [{:action :tap :params [:w]}]}]}";
    const times = [1, 15, 21, 23, 31, 32, 50, 89, 110, 111];
    const { tap } = run(
      config,
      times.map((time) => ({ host: "a", time })),
    );
    expect(tap("w").map((window) => (window as Event[]).map((event) => event.time))).toEqual([
      [15, 21],
      [23, 31],
      [110, 111],
    ]);
  });

  it("keeps forks without gc-interval", () => {
    const config =
      "{:action :by :params [{:fields [:host]}] :children [{:action :fixed-event-window :params [{:size 2}] :children [{:action :tap :params [:w]}]}]}";
    const events: Event[] = [
      { host: "old", time: 0 },
      { host: "new", time: 1000 },
      { host: "old", time: 2000 },
    ];
    expect(run(config, events).tap("w")).toEqual([[events[0], events[2]]]);
  });
});

describe("exception-stream", () => {
  const EXCEPTION = {
    service: "vigie-exception",
    state: "error",
    metric: 1,
    tags: ["exception"],
  };

  it("sends what the first child could not apply to the second child, instead of counting it", () => {
    // Mirabelle's fixture: increment on a metric that is not a number.
    const { tap, drops } = run(
      `{:action :exception-stream
        :children ({:action :with :params [{:metric "invalid!"}] :children ({:action :increment :children [{:action :tap :params [:ok]}]})}
                   {:action :tap :params [:failed]})}`,
      [{ host: "a", time: 3 }, { host: "b" }],
    );
    expect(tap("ok")).toEqual([]);
    expect(tap("failed")).toEqual([
      {
        ...EXCEPTION,
        time: 3,
        description: "action :increment could not apply to the event",
        "base-event": { host: "a", time: 3 },
      },
      { ...EXCEPTION, description: "action :increment could not apply to the event", "base-event": { host: "b" } },
    ]);
    expect(drops.size).toBe(0);
  });

  it("passes through what the first child applies, and lets its other branches go on after a failure", () => {
    const { tap } = run(
      `{:action :exception-stream
        :children [{:action :sdo :children [{:action :increment :children [{:action :tap :params [:incremented]}]}
                                            {:action :tap :params [:after]}]}
                   {:action :tap :params [:failed]}]}`,
      [
        { metric: 1, time: 1 },
        { host: "no metric", time: 2 },
      ],
    );
    expect(tap("incremented")).toEqual([{ metric: 2, time: 1 }]);
    expect(tap("after")).toEqual([
      { metric: 1, time: 1 },
      { host: "no metric", time: 2 },
    ]);
    expect(tap("failed")).toHaveLength(1);
  });

  it("keeps counting drops of actions outside it, and of its second child", () => {
    const { tap, drops } = run(
      `{:action :sdo
        :children [{:action :exception-stream
                    :children [{:action :increment}
                               {:action :decrement :children [{:action :tap :params [:failed]}]}]}
                   {:action :scale :params [2]}]}`,
      [{ host: "x" }],
    );
    // The exception event has a metric, so decrement applies to it.
    expect(tap("failed")).toEqual([
      {
        ...EXCEPTION,
        metric: 0,
        description: "action :increment could not apply to the event",
        "base-event": { host: "x" },
      },
    ]);
    expect(drops.get("s/increment")).toBeUndefined();
    expect(drops.get("s/scale")).toBe(1);
  });

  it("counts what its second child cannot apply: a failure there is not sent back", () => {
    // The base event has no time, so the exception event has none, and ddt cannot apply to it.
    const { tap, drops } = run(
      `{:action :exception-stream
        :children [{:action :increment}
                   {:action :sdo :children [{:action :tap :params [:failed]} {:action :ddt}]}]}`,
      [{ host: "x" }],
    );
    expect(tap("failed")).toHaveLength(1);
    expect(drops.get("s/ddt")).toBe(1);
  });

  it("sends an action that throws to the second child, with the error's message", () => {
    const failures: unknown[] = [];
    const engine = new StreamEngine({
      tap: (_stream, name, value) => {
        if (name === "explode") throw new Error("boom");
        failures.push(value);
      },
    });
    engine
      .add(
        "s",
        parseEdn(`{:actions {:action :exception-stream
                             :children [{:action :tap :params [:explode]} {:action :tap :params [:failed]}]}}`),
        { kind: "api" },
      )
      .push([{ host: "x", time: 5 }]);
    expect(failures).toEqual([{ ...EXCEPTION, time: 5, description: "boom", "base-event": { host: "x", time: 5 } }]);
  });

  it("the innermost exception-stream catches", () => {
    const { tap } = run(
      `{:action :exception-stream
        :children [{:action :exception-stream
                    :children [{:action :increment} {:action :tap :params [:inner]}]}
                   {:action :tap :params [:outer]}]}`,
      [{ host: "x" }],
    );
    expect(tap("inner")).toHaveLength(1);
    expect(tap("outer")).toEqual([]);
  });

  it("takes exactly 2 children and no params", () => {
    expect(() => compileConfig(parseEdn("{:actions {:action :exception-stream :children [{:action :info}]}}"))).toThrow(
      "invalid stream config: actions: :exception-stream takes exactly 2 children, got 1",
    );
    expect(() =>
      compileConfig(
        parseEdn("{:actions {:action :exception-stream :params [1] :children [{:action :info} {:action :info}]}}"),
      ),
    ).toThrow("invalid stream config: actions: :exception-stream takes no params, got 1 param");
  });
});
