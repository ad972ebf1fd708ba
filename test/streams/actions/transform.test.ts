import { describe, expect, it } from "vitest";
import type { Event } from "../../../src/streams/event.js";
import { run } from "../harness.js";

const through = (action: string, events: Event[]) =>
  run(`{:action ${action} :children [{:action :tap :params [:t]}]}`, events);

describe("field actions", () => {
  it("with sets fields, nested ones included, without touching the original", () => {
    const original: Event = { host: "a", labels: { dc: "x" } };
    const { tap } = through(':with :params [{:state "critical" [:labels :team] "ops" :tags ["x"]}]', [original]);
    expect(tap("t")).toEqual([{ host: "a", labels: { dc: "x", team: "ops" }, state: "critical", tags: ["x"] }]);
    expect(original).toEqual({ host: "a", labels: { dc: "x" } });
  });

  it("default sets a field only when it is missing or null", () => {
    const { tap } = through(":default :params [:ttl 60]", [{}, { ttl: null }, { ttl: 10 }]);
    expect(tap("t")).toEqual([{ ttl: 60 }, { ttl: 60 }, { ttl: 10 }]);
  });

  it("tag puts the new tags in front of the existing ones, without duplicates", () => {
    expect(through(':tag :params ["foo"]', [{ tags: ["bar"] }]).tap("t")).toEqual([{ tags: ["foo", "bar"] }]);
    expect(through(':tag :params [["a" "b" "a"]]', [{ tags: ["b", "c", "c"] }, {}, { tags: ["a"] }]).tap("t")).toEqual([
      { tags: ["a", "b", "c"] },
      { tags: ["a", "b"] },
      { tags: ["a", "b"] },
    ]);
  });

  it("untag removes tags, and gives an event without :tags an empty list", () => {
    expect(through(':untag :params ["a"]', [{ tags: ["a", "b"] }, { host: "x" }]).tap("t")).toEqual([
      { tags: ["b"] },
      { host: "x", tags: [] },
    ]);
  });

  it("rename-keys, keep-keys and sdissoc work on top-level fields", () => {
    expect(through(":rename-keys :params [{:host :source}]", [{ host: "a", metric: 1 }]).tap("t")).toEqual([
      { source: "a", metric: 1 },
    ]);
    expect(through(":keep-keys :params [[:host :metric]]", [{ host: "a", metric: 1, x: 2 }]).tap("t")).toEqual([
      { host: "a", metric: 1 },
    ]);
    expect(through(":sdissoc :params [[:x]]", [{ host: "a", x: 2 }]).tap("t")).toEqual([{ host: "a" }]);
  });
});

describe("metric actions", () => {
  it("increment, decrement and scale change the metric, and drop events without one", () => {
    expect(through(":increment", [{ metric: 1 }]).tap("t")).toEqual([{ metric: 2 }]);
    expect(through(":decrement", [{ metric: 1 }]).tap("t")).toEqual([{ metric: 0 }]);
    expect(through(":scale :params [0.5]", [{ metric: 3 }]).tap("t")).toEqual([{ metric: 1.5 }]);
    const { tap, drops } = through(":increment", [{ host: "a" }, { metric: "1" }]);
    expect(tap("t")).toEqual([]);
    expect(drops.get("s/increment")).toBe(2);
  });

  it("ddt gives the rate of change and emits nothing for the first event", () => {
    const events = [
      { time: 0, metric: 10 },
      { time: 2, metric: 14 },
      { time: 4, metric: 12 },
    ];
    expect(through(":ddt", events).tap("t")).toEqual([
      { time: 2, metric: 2 },
      { time: 4, metric: -1 },
    ]);
    expect(through(":ddt-pos", events).tap("t")).toEqual([{ time: 2, metric: 2 }]);
  });

  it("ddt drops events with no elapsed time", () => {
    const { tap, drops } = through(":ddt", [
      { time: 1, metric: 1 },
      { time: 1, metric: 2 },
    ]);
    expect(tap("t")).toEqual([]);
    expect(drops.get("s/ddt")).toBe(1);
  });

  it("ewma-timeless averages from 0", () => {
    const { tap } = through(":ewma-timeless :params [0.5]", [{ metric: 10 }, { metric: 10 }, { metric: 2 }]);
    expect((tap("t") as Event[]).map((event) => event.metric)).toEqual([5, 7.5, 4.75]);
  });
});
