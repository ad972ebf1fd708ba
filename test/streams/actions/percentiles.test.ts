/**
 * percentiles (docs/streams.md, Actions): HdrHistogram quantiles per window of event time, with
 * Mirabelle v0.13's test case.
 */
import { describe, expect, it } from "vitest";
import { compileConfig } from "../../../src/streams/compiler.js";
import { parseEdn } from "../../../src/streams/edn.js";
import type { Event } from "../../../src/streams/event.js";
import { run } from "../harness.js";

function through(options: string, events: Event[]) {
  const before = structuredClone(events);
  const result = run(`{:action :percentiles :params [${options}] :children [{:action :tap :params [:t]}]}`, events);
  expect(events, "inputs are not modified").toEqual(before);
  return { out: result.tap("t") as Event[], drops: result.drops.get("s/percentiles") ?? 0 };
}

const compile = (options: string) => () =>
  compileConfig(parseEdn(`{:actions {:action :sdo :children [{:action :percentiles :params [${options}]}]}}`));

const points = (list: Array<[number, number]>): Event[] => list.map(([time, metric]) => ({ time, metric }));

describe("percentiles", () => {
  it("passes Mirabelle's test: 7 values, then t = 12 emits 100, 200, 800, 800 for [0 0.5 0.99 1]", () => {
    const input = points([
      [1, 100],
      [2, 200],
      [2, 200],
      [2, 200],
      [2, 200],
      [2, 200],
      [4, 800],
      [12, 800],
    ]);
    const { out } = through("{:percentiles [0 0.5 0.99 1] :duration 10 :nb-significant-digits 3}", input);
    expect(out).toEqual([
      { time: 12, metric: 100, quantile: 0 },
      { time: 12, metric: 200, quantile: 0.5 },
      { time: 12, metric: 800, quantile: 0.99 },
      { time: 12, metric: 800, quantile: 1 },
    ]);
  });

  it("copies the closing event, closes only strictly after start + D, and starts the next window at that event", () => {
    const { out } = through("{:percentiles [1] :duration 10}", [
      { host: "a", time: 100, metric: 5 },
      { host: "a", time: 110, metric: 7 }, // exactly start + D: same window
      { host: "b", time: 110.5, metric: 1, tags: ["x"] }, // closes [100, 110.5)
      { host: "a", time: 120, metric: 3 },
      { host: "a", time: 121, metric: 2 }, // closes the window started at 110.5
    ]);
    expect(out).toEqual([
      { host: "b", time: 110.5, metric: 7, tags: ["x"], quantile: 1 },
      { host: "a", time: 121, metric: 3, quantile: 1 },
    ]);
  });

  it("drops events older than the window start − delay, and records later late ones in the current window", () => {
    const input = points([
      [100, 10],
      [112, 20], // closes the first window; the next starts at 112
      [109, 30], // 112 − 5 ≤ 109: recorded
      [106, 40], // older than 112 − 5: dropped
      [130, 1],
    ]);
    const { out, drops } = through("{:percentiles [0 1] :duration 10 :delay 5}", input);
    expect(out.map((event) => [event.time, event.metric])).toEqual([
      [112, 10],
      [112, 10],
      [130, 20],
      [130, 30],
    ]);
    expect(drops).toBe(1);
    // Without :delay an event older than the window start is dropped.
    expect(through("{:percentiles [1] :duration 10}", input).drops).toBe(2);
  });

  it("truncates metrics to integers, as Mirabelle's HdrHistogram records longs", () => {
    const { out } = through(
      "{:percentiles [0 1] :duration 1}",
      points([
        [0, 1.9],
        [0.5, 0.7],
        [2, 0],
      ]),
    );
    expect(out.map((event) => event.metric)).toEqual([0, 1]);
  });

  it("reports values above 2 × 10^digits within the histogram's resolution", () => {
    const { out } = through(
      "{:percentiles [0 1] :duration 1}",
      points([
        [0, 10001],
        [2, 0],
      ]),
    );
    expect(out.map((event) => event.metric)).toEqual([10000, 10007]);
  });

  it("skips and counts events without time, without a finite metric ≥ 0, and lists", () => {
    const { out, drops } = through("{:percentiles [1] :duration 1}", [
      { time: 0, metric: 3 },
      { metric: 50 },
      { time: 5 },
      { time: 5, metric: -1 },
      { time: 5, metric: "9" },
      { time: 5, metric: 2 },
    ]);
    // The skipped events did not close the window: the event at 5 did, with only 3 recorded.
    expect(out).toEqual([{ time: 5, metric: 3, quantile: 1 }]);
    expect(drops).toBe(4);
    const listed = run(
      "{:action :fixed-event-window :params [{:size 1}] :children [{:action :percentiles :params [{:percentiles [1] :duration 1}]}]}",
      [{ time: 0, metric: 1 }],
    );
    expect(listed.drops.get("s/percentiles")).toBe(1);
  });

  it("skips and counts a metric above :highest-trackable-value; without it the range grows", () => {
    const fixed = through(
      "{:percentiles [1] :duration 1 :highest-trackable-value 1000}",
      points([
        [0, 1000],
        [0, 1001],
        [2, 5],
      ]),
    );
    expect(fixed.out.map((event) => event.metric)).toEqual([1000]);
    expect(fixed.drops).toBe(1);
    const growing = through(
      "{:percentiles [1] :duration 1}",
      points([
        [0, 1_000_000_000],
        [2, 5],
      ]),
    );
    expect(growing.drops).toBe(0);
    expect(Math.abs((growing.out[0]?.metric as number) / 1e9 - 1)).toBeLessThan(1e-3);
  });

  it("accepts Mirabelle's :lowest-discernible-value with :highest-trackable-value", () => {
    const { out } = through(
      "{:percentiles [1] :duration 1 :highest-trackable-value 100000 :lowest-discernible-value 1 :nb-significant-digits 2}",
      points([
        [0, 42],
        [2, 0],
      ]),
    );
    expect(out.map((event) => event.metric)).toEqual([42]);
  });

  it("keeps one histogram per by fork", () => {
    const { tap } = run(
      "{:action :by :params [[:host]] :children [{:action :percentiles :params [{:percentiles [1] :duration 10}] :children [{:action :tap :params [:t]}]}]}",
      [
        { host: "a", time: 0, metric: 100 },
        { host: "b", time: 5, metric: 1 },
        { host: "b", time: 16, metric: 1 }, // closes b's window, opened at 5
        { host: "a", time: 11, metric: 1 }, // closes a's window, opened at 0
      ],
    );
    expect(tap("t")).toEqual([
      { host: "b", time: 16, metric: 1, quantile: 1 },
      { host: "a", time: 11, metric: 100, quantile: 1 },
    ]);
  });

  it("refuses bad params, naming the node", () => {
    const node = "actions.children[0]";
    expect(compile("{:duration 10}")).toThrow(`${node}: :percentiles needs the option :percentiles`);
    expect(compile("{:percentiles [0.5]}")).toThrow(`${node}: :percentiles needs the option :duration`);
    for (const quantiles of ["[]", "[1.5]", "[-0.1]", '["0.5"]', "0.5"]) {
      expect(compile(`{:duration 10 :percentiles ${quantiles}}`), quantiles).toThrow(
        `${node}: :percentiles must be a non-empty vector of numbers from 0 to 1`,
      );
    }
    expect(compile("{:duration 0 :percentiles [0.5]}")).toThrow(`${node}: :duration must be a number of seconds`);
    expect(compile("{:duration 1 :percentiles [0.5] :delay -1}")).toThrow(`${node}: :delay must be a number`);
    expect(compile("{:duration 1 :percentiles [0.5] :highest-trackable-value 1}")).toThrow(
      `${node}: :highest-trackable-value must be an integer of at least 2`,
    );
    expect(compile("{:duration 1 :percentiles [0.5] :highest-trackable-value 10.5}")).toThrow(
      `${node}: :highest-trackable-value must be an integer`,
    );
    expect(compile("{:duration 1 :percentiles [0.5] :nb-significant-digits 6}")).toThrow(
      `${node}: :nb-significant-digits must be from 1 to 5`,
    );
    expect(compile("{:duration 1 :percentiles [0.5] :nb-significant-digits 0}")).toThrow(
      `${node}: :nb-significant-digits must be an integer of at least 1`,
    );
    expect(compile("{:duration 1 :percentiles [0.5] :lowest-discernible-value 10}")).toThrow(
      `${node}: :lowest-discernible-value needs :highest-trackable-value`,
    );
    expect(
      compile("{:duration 1 :percentiles [0.5] :lowest-discernible-value 10 :highest-trackable-value 15}"),
    ).toThrow(`${node}: :highest-trackable-value must be at least 2 × :lowest-discernible-value`);
    expect(compile("{:duration 1 :percentiles [0.5] :buckets 3}")).toThrow(`${node}: unknown option :buckets`);
  });
});
