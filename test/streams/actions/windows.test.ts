import { describe, expect, it } from "vitest";
import type { Event } from "../../../src/streams/event.js";
import { run } from "../harness.js";

const at = (...times: number[]): Event[] => times.map((time) => ({ time }));
const times = (lists: unknown[]) => (lists as Event[][]).map((list) => list.map((event) => event.time));

describe("fixed-time-window", () => {
  it("emits [0 1 3] [5 7 9] [10] [29] for times 0 1 3 5 7 9 10 29 31 with D = 5 (streams.md §4)", () => {
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

  it("sum with D = 10 emits 11 (time 7), 12 (time 19), 6 (time 23), 1 (time 60) (streams.md §4)", () => {
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
