/**
 * The bounds of a stream's state (docs/streams.md, State and its bounds): the index, the forks of
 * `by`, the events of time windows; what goes beyond is dropped and counted.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from "../../src/streams/action.js";
import { compileConfig } from "../../src/streams/compiler.js";
import { parseEdn } from "../../src/streams/edn.js";
import type { Event } from "../../src/streams/event.js";
import { streamsModule } from "../../src/streams/index.js";
import { startTestServer } from "../support/server.js";
import { run } from "./harness.js";

const limits = (changes: Partial<StreamLimits>): StreamLimits => ({ ...DEFAULT_STREAM_LIMITS, ...changes });
const hosts = (count: number): Event[] =>
  Array.from({ length: count }, (_, i) => ({ host: `h${i}`, metric: 1, time: i }));

describe("stream limits", () => {
  it("keeps at most max-index-size keys, still replacing known keys and advancing the clock", () => {
    const { stream, drops } = run(
      "{:action :index :params [[:host]]}",
      [...hosts(5), { host: "h1", time: 9 }],
      limits({ indexSize: 3 }),
    );
    expect(stream.index.size).toBe(3);
    expect(drops.get("s/index")).toBe(2);
    expect(stream.index.currentTime).toBe(9);
    expect(stream.index.search(() => true).map((event) => event.host)).toEqual(["h0", "h2", "h1"]);
  });

  it("gives by at most max-forks forks: an event needing one more is dropped", () => {
    const { tap, drops } = run(
      "{:action :by :params [[:host]] :children [{:action :tap :params [:seen]}]}",
      [...hosts(4), { host: "h0", time: 10 }],
      limits({ forks: 2 }),
    );
    expect((tap("seen") as Event[]).map((event) => event.host)).toEqual(["h0", "h1", "h0"]);
    expect(drops.get("s/by")).toBe(2);
  });

  it("holds at most max-window-events events in a fixed time window, dropping the later ones", () => {
    const { tap, drops } = run(
      "{:action :fixed-time-window :params [{:duration 10}] :children [{:action :tap :params [:w]}]}",
      [...hosts(5), { time: 10 }],
      limits({ windowEvents: 3 }),
    );
    expect((tap("w") as Event[][]).map((window) => window.map((event) => event.time))).toEqual([[0, 1, 2]]);
    expect(drops.get("s/fixed-time-window")).toBe(2);
  });

  it("keeps the latest max-window-events events in a moving time window, dropping the oldest", () => {
    const { tap, drops } = run(
      "{:action :moving-time-window :params [{:duration 100}] :children [{:action :tap :params [:w]}]}",
      hosts(5),
      limits({ windowEvents: 3 }),
    );
    const last = (tap("w") as Event[][]).at(-1) ?? [];
    expect(last.map((event) => event.time)).toEqual([2, 3, 4]);
    expect(drops.get("s/moving-time-window")).toBe(2);
  });

  it("refuses event windows larger than 1 000 000 events at compile time", () => {
    for (const action of ["fixed-event-window", "moving-event-window"]) {
      expect(() => compileConfig(parseEdn(`{:actions {:action :${action} :params [{:size 1000001}]}}`))).toThrow(
        `invalid stream config: actions: :size must be at most 1000000`,
      );
    }
  });

  it("reads the limits from streams.max-index-size, max-forks and max-window-events", async () => {
    const server = await startTestServer({
      modules: [streamsModule],
      config: { streams: { "max-index-size": 2, "max-forks": 5, "max-window-events": 7 } },
    });
    try {
      const config = Buffer.from("{:actions {:action :index :params [[:host]]}}").toString("base64");
      await server.app.inject({ method: "POST", url: "/api/v1/stream/s", payload: { config } });
      await server.app.inject({ method: "PUT", url: "/api/v1/stream/s", payload: { events: hosts(4) } });
      const metrics = (await server.app.inject({ method: "GET", url: "/metrics" })).body;
      expect(metrics).toContain('stream_index_size{stream="s"} 2');
      expect(metrics).toContain('stream_dropped_events_total{stream="s",action="index",reason="skipped"} 2');
    } finally {
      await server.close();
    }
  });
});
