import { describe, expect, it } from "vitest";
import type { Event } from "../../../src/streams/event.js";
import { run } from "../harness.js";

const through = (action: string, events: Event[]) =>
  run(`{:action ${action} :children [{:action :tap :params [:t]}]}`, events);

describe("filters", () => {
  it("tagged-all needs every tag", () => {
    expect(through(':tagged-all :params [["a" "b"]]', [{ tags: ["a"] }, { tags: ["b", "a"] }]).tap("t")).toEqual([
      { tags: ["b", "a"] },
    ]);
    expect(through(':tagged-all :params ["a"]', [{ tags: ["a"] }, {}]).tap("t")).toEqual([{ tags: ["a"] }]);
  });

  it("over and under compare the metric", () => {
    expect(through(":over :params [5]", [{ metric: 5 }, { metric: 6 }]).tap("t")).toEqual([{ metric: 6 }]);
    expect(through(":under :params [5]", [{ metric: 5 }, { metric: 4 }]).tap("t")).toEqual([{ metric: 4 }]);
  });

  it("changed forwards an event when the field differs from the previous one, starting from init", () => {
    const states = ["ok", "ok", "critical", "critical", "ok"].map((state, time) => ({ state, time }));
    const { tap } = through(':changed :params [{:field :state :init "ok"}]', states);
    expect(tap("t")).toEqual([
      { state: "critical", time: 2 },
      { state: "ok", time: 4 },
    ]);
  });

  it("throttle forwards at most n events per D seconds of event time", () => {
    const events = [0, 1, 2, 5, 10, 11, 12].map((time) => ({ time }));
    const { tap } = through(":throttle :params [{:count 2 :duration 10}]", events);
    expect((tap("t") as Event[]).map((event) => event.time)).toEqual([0, 1, 10, 11]);
  });

  it("expired and not-expired use the largest time seen as clock and the default TTL of 120 s", () => {
    const events: Event[] = [
      { host: "a", time: 0 },
      { host: "b", time: 200 },
      { host: "c", time: 100 },
      { host: "d", time: 50, ttl: 500 },
      { host: "e", state: "expired" },
    ];
    const hosts = (action: string) => (through(action, events).tap("t") as Event[]).map((event) => event.host);
    expect(hosts(":expired")).toEqual(["e"]);
    expect(hosts(":not-expired")).toEqual(["a", "b", "c", "d"]);
    // At clock 200, "a" (time 0, ttl 120) would be expired: order matters, the clock only moves forward.
    const later = through(":expired", [{ time: 200 }, { host: "a", time: 0 }, { host: "c", time: 80 }]);
    expect((later.tap("t") as Event[]).map((event) => event.host)).toEqual(["a"]);
  });

  it("the *-dt family forwards once the condition held for more than D seconds, and resets", () => {
    const events = [
      [0, 50],
      [5, 60],
      [11, 70],
      [12, 10],
      [13, 80],
      [20, 80],
      [24, 80],
    ].map(([time, metric]) => ({ time, metric }));
    for (const action of [":above-dt", ":cond-dt", ":critical-dt", ":between-dt", ":outside-dt", ":below-dt"]) {
      const { tap } = through(`${action} :params [[:> :metric 40] 10]`, events);
      expect((tap("t") as Event[]).map((event) => event.time)).toEqual([11, 24]);
    }
  });
});
