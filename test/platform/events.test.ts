import { Counter, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { EventRouter, type SinkEvent } from "../../src/platform/events.js";

function router(now = () => 0) {
  const registry = new Registry();
  const dropped = new Counter({ name: "dropped", help: "-", labelNames: ["stream"] as const, registers: [registry] });
  const warnings: Array<{ details: object; message: string }> = [];
  const events = new EventRouter(dropped, { warn: (details, message) => warnings.push({ details, message }) }, now);
  const count = async (stream: string) =>
    (await dropped.get()).values.find((value) => value.labels.stream === stream)?.value ?? 0;
  return { events, warnings, count };
}

describe("the event router (modules hand events to streams through it)", () => {
  it("delivers to the connected receiver", () => {
    const { events, warnings } = router();
    const received: Array<[string, readonly SinkEvent[]]> = [];
    events.connect((stream, batch) => {
      received.push([stream, batch]);
      return true;
    });
    events.push("checks", [{ service: "a" }]);
    events.push("default", [{ service: "b" }]);
    expect(received).toEqual([
      ["checks", [{ service: "a" }]],
      ["default", [{ service: "b" }]],
    ]);
    expect(warnings).toEqual([]);
  });

  it("counts and logs, once a minute per name, what no stream receives", async () => {
    let clock = 0;
    const { events, warnings, count } = router(() => clock);
    events.connect((stream) => stream === "known");
    events.push("lost", [{}, {}]);
    events.push("lost", [{}]);
    events.push("other", [{}]);
    expect(await count("lost")).toBe(3);
    expect(await count("other")).toBe(1);
    expect(warnings.map((warning) => warning.message)).toEqual([
      "events for stream lost dropped: no stream has that name",
      "events for stream other dropped: no stream has that name",
    ]);
    clock = 60_000;
    events.push("lost", [{}]);
    expect(warnings).toHaveLength(3);
  });

  it("drops and counts everything while the streams module is not connected", async () => {
    const { events, warnings, count } = router();
    events.push("checks", [{}]);
    expect(await count("checks")).toBe(1);
    expect(warnings[0]?.message).toBe("events for stream checks dropped: the streams module is not enabled");
  });

  it("never throws: a receiver that fails counts as a drop", async () => {
    const { events, count } = router();
    events.connect(() => {
      throw new Error("bug");
    });
    expect(() => events.push("checks", [{}])).not.toThrow();
    expect(await count("checks")).toBe(1);
  });
});
