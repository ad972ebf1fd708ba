import { describe, expect, it } from "vitest";
import { parseEdn } from "../../../src/streams/edn.js";
import type { Event } from "../../../src/streams/event.js";
import { recordingEngine, run } from "../harness.js";

describe("index", () => {
  it("keeps the latest event per key, removes expired keys and keeps the largest time as clock", () => {
    const { stream } = run("{:action :index :params [[:host :service]]}", [
      { host: "a", service: "cpu", time: 10, metric: 1 },
      { host: "a", service: "cpu", time: 12, metric: 2 },
      { host: "b", service: "cpu", time: 11 },
      { host: "c", time: 9 },
      { host: "a", service: "mem", time: 8 },
      { host: "b", service: "cpu", time: 5, state: "expired" },
      { host: "d", service: "cpu" },
    ]);
    const found = stream.index.search(() => true);
    expect(found).toEqual([
      { host: "a", service: "mem", time: 8 },
      { host: "c", time: 9 },
      { host: "a", service: "cpu", time: 12, metric: 2 },
    ]);
    expect(stream.index.currentTime).toBe(12);
    expect(stream.index.size).toBe(3);
  });

  it("sorts by time then key", () => {
    const { stream } = run("{:action :index :params [[:host]]}", [
      { host: "b", time: 1 },
      { host: "a", time: 1 },
      { host: "c", time: 0 },
    ]);
    expect(stream.index.search(() => true).map((event) => event.host)).toEqual(["c", "a", "b"]);
  });

  it("refuses children", () => {
    expect(() => run("{:action :index :params [[:host]] :children [{:action :sdo}]}", [])).toThrow(
      "invalid stream config: actions: :index is a leaf action and takes no children",
    );
  });
});

describe("reaper and reinject", () => {
  it("reaper removes expired events every D seconds and pushes them with state expired", () => {
    const { engine, tap } = recordingEngine();
    engine.add(
      "s",
      parseEdn(`{:actions {:action :sdo :children [{:action :where :params [[:not= :state "expired"]]
                                                     :children [{:action :index :params [[:host]]}]}
                                                    {:action :reaper :params [5 :alerts]}]}}`),
      { kind: "api" },
    );
    engine.add("alerts", parseEdn("{:actions {:action :tap :params [:expired]}}"), { kind: "api" });
    const stream = engine.get("s");
    stream?.push([
      { host: "a", time: 0, ttl: 10 }, // starts the reaper's clock: next run at 5
      { host: "b", time: 1, ttl: 100 },
      { host: "c", time: 4, ttl: 10 },
    ]);
    expect(tap("expired")).toEqual([]);
    stream?.push([{ host: "d", time: 12, ttl: 10 }]); // run at clock 12: "a" is expired (12 − 0 > 10)
    expect(tap("expired")).toEqual([{ host: "a", time: 0, ttl: 10, state: "expired" }]);
    stream?.push([{ host: "e", time: 15, ttl: 10 }]); // next run at 17: nothing yet
    expect(tap("expired")).toHaveLength(1);
    stream?.push([{ host: "f", time: 18, ttl: 10 }]); // run at 18: "c" (4) is expired, "d" (12) is not
    expect(tap("expired")).toEqual([
      { host: "a", time: 0, ttl: 10, state: "expired" },
      { host: "c", time: 4, ttl: 10, state: "expired" },
    ]);
    expect(stream?.index.search(() => true).map((event) => event.host)).toEqual(["b", "d", "e", "f"]);
  });

  it("reinject sends events to another stream, to the default streams, or to this stream with a depth limit", () => {
    const { engine, tap, drops } = recordingEngine();
    engine.add("first", parseEdn("{:actions {:action :reinject :params [:second]}}"), { kind: "api" });
    engine.add("second", parseEdn("{:actions {:action :tap :params [:second]}}"), { kind: "api" });
    engine.add("d1", parseEdn("{:default true :actions {:action :tap :params [:d1]}}"), { kind: "api" });
    engine.add("toDefault", parseEdn("{:actions {:action :reinject! :params [:default]}}"), { kind: "api" });
    engine.add(
      "loop",
      parseEdn(
        "{:actions {:action :sdo :children [{:action :tap :params [:loop]} {:action :reinject :params [nil]}]}}",
      ),
      { kind: "api" },
    );
    engine.add("lost", parseEdn('{:actions {:action :reinject :params ["nowhere"]}}'), { kind: "api" });
    engine.get("first")?.push([{ n: 1 }]);
    engine.get("toDefault")?.push([{ n: 2 }]);
    engine.get("loop")?.push([{ n: 3 }]);
    engine.get("lost")?.push([{ n: 4 }]);
    expect(tap("second")).toEqual([{ n: 1 }]);
    expect(tap("d1")).toEqual([{ n: 2 }]);
    expect(tap("loop")).toHaveLength(17); // the push itself and 16 nested reinjections
    expect(drops.get("loop/reinject")).toBe(1);
    expect(drops.get("lost/reinject")).toBe(1);
  });
});

describe("logging and tap", () => {
  it("info, debug and error log and forward", () => {
    const { logs, tap } = run("{:action :info :children [{:action :error :children [{:action :tap :params [:t]}]}]}", [
      { host: "a" },
    ] as Event[]);
    expect(logs).toEqual([
      { level: "info", stream: "s", value: { host: "a" } },
      { level: "error", stream: "s", value: { host: "a" } },
    ]);
    expect(tap("t")).toEqual([{ host: "a" }]);
  });
});
