import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_STREAM_LIMITS } from "../../../src/streams/action.js";
import type { Event } from "../../../src/streams/event.js";
import type { GraphNode } from "../../../src/streams/graph.js";
import { run } from "../harness.js";

const at = (...times: number[]): Event[] => times.map((time) => ({ time }));
/** Events (time:metric) of the sum example of docs/streams.md (`fixed-time-window`), plus 71:1 to close [60, 70). */
const input: Event[] = [
  [0, 10],
  [7, 1],
  [11, 3],
  [19, 1],
  [14, 8],
  [20, 2],
  [23, 4],
  [60, 1],
  [71, 1],
].map(([time, metric]) => ({ time, metric }));
/** The graph's counts (in, out), depth first. */
const counts = (node: GraphNode): number[] => [node.in, node.out, ...node.children.flatMap(counts)];
const times = (lists: unknown[]) => (lists as Event[][]).map((list) => list.map((event) => event.time));

describe("fixed-time-window", () => {
  it("emits [0 1 3] [5 7 9] [10] [29] for times 0 1 3 5 7 9 10 29 31 with D = 5, 31 still open", () => {
    const { tap } = run(
      "{:action :fixed-time-window :params [{:duration 5}] :children [{:action :tap :params [:w]}]}",
      at(0, 1, 3, 5, 7, 9, 10, 29, 31),
    );
    expect(times(tap("w"))).toEqual([[0, 1, 3], [5, 7, 9], [10], [29]]);
  });

  it("lets late events within the delay join their window and drops later ones", () => {
    const { tap, drops } = run(
      "{:action :fixed-time-window :params [{:duration 10 :delay 5}] :children [{:action :tap :params [:w]}]}",
      at(1, 12, 8, 14, 15, 3, 26),
    );
    // 8 arrives after 12 but within the delay: it joins [0, 10); 15 closes [0, 10); 3 is too late.
    expect(times(tap("w"))).toEqual([
      [1, 8],
      [12, 14, 15],
    ]);
    expect(drops.get("s/fixed-time-window")).toBe(1);
  });

  it("aligns windows on the Unix epoch and accepts Mirabelle's :aggr-fn", () => {
    const { tap } = run(
      "{:action :fixed-time-window :params [{:duration 10 :aggr-fn :fixed-time-window}] :children [{:action :tap :params [:w]}]}",
      at(1_700_000_003, 1_700_000_009, 1_700_000_010),
    );
    expect(times(tap("w"))).toEqual([[1_700_000_003, 1_700_000_009]]);
  });

  it("without :delay keeps only the latest window, as :delay 0 does (any times, full windows)", () => {
    // Without :delay a lighter implementation runs (one open window); :delay 0 runs the general one.
    const time = fc.oneof(
      fc.integer({ min: -30, max: 60 }),
      fc.double({ min: -30, max: 60, noNaN: true }),
      fc.constantFrom(undefined, Number.NaN, Number.POSITIVE_INFINITY, "12"),
    );
    const limits = { ...DEFAULT_STREAM_LIMITS, windowEvents: 3 };
    fc.assert(
      fc.property(fc.array(time, { maxLength: 40 }), (times) => {
        const events: Event[] = times.map((t, metric) => (t === undefined ? { metric } : { time: t, metric }));
        const through = (options: string) =>
          run(
            `{:action :sdo :children [{:action :fixed-time-window :params [{:duration 10${options}}] :children [{:action :tap :params [:w]}]}
              {:action :fixed-time-window :params [{:duration 10${options}}] :children [{:action :coll-count :children [{:action :tap :params [:c]}]}]}]}`,
            events,
            limits,
          );
        const latest = through("");
        const general = through(" :delay 0");
        expect(latest.tap("w")).toEqual(general.tap("w"));
        expect(latest.tap("c")).toEqual(general.tap("c"));
        expect([...latest.drops]).toEqual([...general.drops]);
        expect(counts(latest.stream.graph())).toEqual(counts(general.stream.graph()));
      }),
      { numRuns: 300, seed: 36 },
    );
  });

  it("without :delay drops events beyond streams.max-window-events and those of an earlier window", () => {
    const { tap, drops } = run(
      "{:action :fixed-time-window :params [{:duration 10}] :children [{:action :tap :params [:w]}]}",
      at(1, 2, 3, 9, 5, 12, 4, 25),
      { ...DEFAULT_STREAM_LIMITS, windowEvents: 3 },
    );
    // 9 and 5 find [0, 10) full; 4 comes after 12 closed [0, 10).
    expect(times(tap("w"))).toEqual([[1, 2, 3], [12]]);
    expect(drops.get("s/fixed-time-window")).toBe(3);
  });

  it("counts events without time as dropped", () => {
    const { tap, drops } = run(
      "{:action :fixed-time-window :params [{:duration 10}] :children [{:action :tap :params [:w]}]}",
      [{ metric: 1 }],
    );
    expect(tap("w")).toEqual([]);
    expect(drops.get("s/fixed-time-window")).toBe(1);
  });
});

describe("sum, mean, top, bottom, rate", () => {
  it("sum with D = 10 emits 11 (time 7), 12 (time 19), 6 (time 23), 1 (time 60); late 14 counts", () => {
    const { tap } = run("{:action :sum :params [{:duration 10}] :children [{:action :tap :params [:s]}]}", input);
    expect(tap("s")).toEqual([
      { time: 7, metric: 11 },
      { time: 19, metric: 12 },
      { time: 23, metric: 6 },
      { time: 60, metric: 1 },
    ]);
  });

  it("mean, top, bottom and rate use the same windows", () => {
    const metrics = (action: string) =>
      (
        run(`{:action ${action} :params [{:duration 10}] :children [{:action :tap :params [:s]}]}`, input).tap(
          "s",
        ) as Event[]
      ).map((event) => event.metric);
    expect(metrics(":mean")).toEqual([5.5, 4, 3, 1]);
    expect(metrics(":top")).toEqual([10, 8, 4, 1]);
    expect(metrics(":bottom")).toEqual([1, 1, 2, 1]);
    expect(metrics(":rate")).toEqual([0.2, 0.3, 0.2, 0.1]);
  });
});

describe("late events inside the open window (Mirabelle v0.13 aggregation*)", () => {
  const metrics = (actions: string, events: Event[]) =>
    (run(`${actions.slice(0, -1)} :children [{:action :tap :params [:t]}]}`, events).tap("t") as Event[]).map(
      (event) => event.metric,
    );

  it("sum {:duration 10 :delay 0} counts 14:8, late but in the open window [10, 20): 11, 12, 6, 1", () => {
    const { tap, drops } = run(
      "{:action :sum :params [{:duration 10 :delay 0}] :children [{:action :tap :params [:t]}]}",
      input,
    );
    expect(tap("t")).toEqual([
      { time: 7, metric: 11 },
      { time: 19, metric: 12 },
      { time: 23, metric: 6 },
      { time: 60, metric: 1 },
    ]);
    expect(drops.get("s/sum")).toBeUndefined();
  });

  it("rate {:duration 10 :delay 0} over times 0 7 11 14 19 20 21 21 24 22 31 emits 0.2, 0.3, 0.5", () => {
    expect(
      metrics("{:action :rate :params [{:duration 10 :delay 0}]}", at(0, 7, 11, 14, 19, 20, 21, 21, 24, 22, 31)),
    ).toEqual([0.2, 0.3, 0.5]);
    // Each on the most recent event of its window (t7, t19, t24: the late 22 is not the most recent).
    const { tap, drops } = run(
      "{:action :rate :params [{:duration 10 :delay 0}] :children [{:action :tap :params [:t]}]}",
      at(0, 7, 11, 14, 19, 20, 21, 21, 24, 22, 31),
    );
    expect(tap("t")).toEqual([
      { time: 7, metric: 0.2 },
      { time: 19, metric: 0.3 },
      { time: 24, metric: 0.5 },
    ]);
    expect([...drops]).toEqual([]);
  });

  it("every fixed time window counts the late 22 of that vector in [20, 30), whatever :delay", () => {
    const vector = at(0, 7, 11, 14, 19, 20, 21, 21, 24, 22, 31);
    for (const delay of ["", " :delay 0", " :delay 1"]) {
      const windows = run(
        `{:action :fixed-time-window :params [{:duration 10${delay}}] :children [{:action :tap :params [:w]}]}`,
        vector,
      );
      expect(times(windows.tap("w"))).toEqual([
        [0, 7],
        [11, 14, 19],
        [20, 21, 21, 24, 22],
      ]);
      const sorted = run(
        `{:action :ssort :params [{:duration 10 :field :time${delay}}] :children [{:action :tap :params [:s]}]}`,
        vector,
      );
      expect((sorted.tap("s") as Event[]).map((event) => event.time)).toEqual([0, 7, 11, 14, 19, 20, 21, 21, 22, 24]);
      const ratio = run(
        `{:action :ratio :params [{:duration 10 :conditions [[:>= :time 21] [:true]]${delay}}] :children [{:action :tap :params [:r]}]}`,
        vector,
      );
      // [20, 30): 21 21 24 22 of 20 21 21 24 22.
      expect((ratio.tap("r") as Event[]).map((event) => event.metric)).toEqual([0, 0, 0.8]);
      // Metric = time: [20, 30) sums 20 + 21 + 21 + 24 + 22 = 108 (86 without the late 22).
      const metric = (action: string) =>
        (
          run(
            `{:action :${action} :params [{:duration 10${delay}}] :children [{:action :tap :params [:a]}]}`,
            vector.map((event) => ({ ...event, metric: event.time })),
          ).tap("a") as Event[]
        ).map((event) => event.metric);
      expect(metric("sum")).toEqual([7, 44, 108]);
      expect(metric("mean")).toEqual([3.5, 44 / 3, 21.6]);
    }
  });

  it("judges an event of an earlier, still open window against the latest time − delay", () => {
    // [0, 10) stays open until 15 with :delay 5; after 12, 8 joins it (8 ≥ 12 − 5) and 6 does not.
    const { tap, drops } = run(
      "{:action :fixed-time-window :params [{:duration 10 :delay 5}] :children [{:action :tap :params [:w]}]}",
      at(1, 12, 8, 6, 11, 15),
    );
    expect(times(tap("w"))).toEqual([[1, 8]]);
    expect(drops.get("s/fixed-time-window")).toBe(1);
    // With :delay 0 an event of an earlier window is always too late.
    expect(
      times(
        run(
          "{:action :fixed-time-window :params [{:duration 10 :delay 0}] :children [{:action :tap :params [:w]}]}",
          at(1, 12, 8, 11, 20),
        ).tap("w"),
      ),
    ).toEqual([[1], [12, 11]]);
  });

  // Every fixed time window whose output does not depend on arrival order, and how to compare it.
  const orderFree: Array<[string, (flows: unknown[]) => unknown]> = [
    [
      ":fixed-time-window",
      (flows) => (flows as Event[][]).map((list) => (times([list])[0] as number[]).sort((a, b) => a - b)),
    ],
    [":sum", (flows) => flows],
    [":mean", (flows) => flows],
    [":top", (flows) => flows],
    [":bottom", (flows) => flows],
    [":rate", (flows) => flows],
    [":ssort :params [{:duration 10 :field :time}]", (flows) => flows],
    [":ratio :params [{:duration 10 :conditions [[:> :metric 50] [:true]]}]", (flows) => flows],
  ];

  it.each(orderFree)("%s: any order of one window's events gives the in-order result", (action, normalise) => {
    const window = fc.integer({ min: -1_000, max: 1_000 });
    // Distinct times (the most recent event is then one event), integer metrics (sums exact).
    const events = fc.uniqueArray(fc.integer({ min: 0, max: 9_999 }), { minLength: 1, maxLength: 40 });
    const delay = fc.constantFrom(undefined, 0, 3, 25);
    fc.assert(
      fc.property(window, events, delay, fc.infiniteStream(fc.nat()), (k, offsets, lateness, order) => {
        const inOrder: Event[] = [...offsets]
          .sort((a, b) => a - b)
          .map((offset) => ({
            time: k * 10 + offset / 1000,
            metric: (offset * 7919) % 100,
          }));
        const shuffled = [...inOrder];
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = (order.next().value as number) % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j] as Event, shuffled[i] as Event];
        }
        const options = lateness === undefined ? "{:duration 10}" : `{:duration 10 :delay ${lateness}}`;
        const node = action.includes(":params")
          ? `{:action ${action.replace("{:duration 10", options.slice(0, -1))}}`
          : `{:action ${action} :params [${options}]}`;
        const closing = { time: (k + 1) * 10 + (lateness ?? 0), metric: 0 };
        const through = (list: Event[]) =>
          run(`${node.slice(0, -1)} :children [{:action :tap :params [:t]}]}`, [...list, closing]);
        const expected = through(inOrder);
        const actual = through(shuffled);
        expect(expected.tap("t").length).toBeGreaterThan(0);
        expect(normalise(actual.tap("t"))).toEqual(normalise(expected.tap("t")));
        expect([...actual.drops]).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});

describe("event windows and moving windows", () => {
  it("fixed-event-window emits every n events", () => {
    const { tap } = run(
      "{:action :fixed-event-window :params [{:size 2}] :children [{:action :tap :params [:w]}]}",
      at(1, 2, 3, 4, 5),
    );
    expect(times(tap("w"))).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });

  it("moving-event-window emits the last n events on every event", () => {
    const { tap } = run(
      "{:action :moving-event-window :params [{:size 2}] :children [{:action :tap :params [:w]}]}",
      at(1, 2, 3),
    );
    expect(times(tap("w"))).toEqual([[1], [1, 2], [2, 3]]);
  });

  it("moving-time-window emits the events of the last D seconds", () => {
    const { tap } = run(
      "{:action :moving-time-window :params [{:duration 10}] :children [{:action :tap :params [:w]}]}",
      at(0, 5, 10, 12, 30),
    );
    expect(times(tap("w"))).toEqual([[0], [0, 5], [5, 10], [5, 10, 12], [30]]);
  });
});

describe("coll-* actions", () => {
  const windowed = (action: string, events: Event[]) =>
    run(
      `{:action :fixed-event-window :params [{:size 3}] :children [{:action ${action} :children [{:action :tap :params [:c]}]}]}`,
      events,
    );
  const events: Event[] = [
    { host: "a", time: 3, metric: 2 },
    { host: "b", time: 5, metric: 6 },
    { host: "c", time: 4, metric: 1 },
  ];

  it("turn a list into its most recent event with the aggregate as metric", () => {
    expect(windowed(":coll-count", events).tap("c")).toEqual([{ host: "b", time: 5, metric: 3 }]);
    expect(windowed(":coll-sum", events).tap("c")).toEqual([{ host: "b", time: 5, metric: 9 }]);
    expect(windowed(":coll-mean", events).tap("c")).toEqual([{ host: "b", time: 5, metric: 3 }]);
    expect(windowed(":coll-max", events).tap("c")).toEqual([{ host: "b", time: 5, metric: 6 }]);
    expect(windowed(":coll-min", events).tap("c")).toEqual([{ host: "b", time: 5, metric: 1 }]);
    expect(windowed(":coll-rate", events).tap("c")).toEqual([{ host: "b", time: 5, metric: 4.5 }]);
  });

  it("coll-where filters the list", () => {
    const { tap } = run(
      "{:action :fixed-event-window :params [{:size 3}] :children [{:action :coll-where :params [[:> :metric 1]] :children [{:action :tap :params [:c]}]}]}",
      events,
    );
    expect(tap("c")).toEqual([[events[0], events[1]]]);
  });

  it("skip single events and count them as dropped", () => {
    const { tap, drops } = run("{:action :coll-count :children [{:action :tap :params [:c]}]}", events);
    expect(tap("c")).toEqual([]);
    expect(drops.get("s/coll-count")).toBe(3);
  });
});
