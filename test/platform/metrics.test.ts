import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { TalliedCounter } from "../../src/platform/metrics.js";

const NAME = "things_total";

function tallied() {
  const registry = new Registry();
  const counter = new TalliedCounter(registry, NAME, "Things counted.", ["stream", "reason"]);
  return { registry, counter };
}

/** The samples of `things_total` in the exposition text, in order. */
async function samples(registry: Registry): Promise<string[]> {
  return (await registry.metrics()).split("\n").filter((line) => line.startsWith(`${NAME}{`));
}

describe("TalliedCounter", () => {
  it("adds what was counted since the last scrape to its series at each scrape", async () => {
    const { registry, counter } = tallied();
    const tally = counter.tally("a", "late");
    tally.add();
    tally.add(4);
    expect(await samples(registry)).toEqual(['things_total{stream="a",reason="late"} 5']);
    tally.add(2);
    expect(await samples(registry)).toEqual(['things_total{stream="a",reason="late"} 7']);
    expect(await samples(registry)).toEqual(['things_total{stream="a",reason="late"} 7']);
  });

  it("shows no series before its first add, and a series at 0 after an add of 0", async () => {
    const { registry, counter } = tallied();
    const tally = counter.tally("a", "late");
    expect(await samples(registry)).toEqual([]);
    tally.add(0);
    expect(await samples(registry)).toEqual(['things_total{stream="a",reason="late"} 0']);
  });

  it("gives the same tally for the same label values, another for others", async () => {
    const { registry, counter } = tallied();
    expect(counter.tally("a", "late")).toBe(counter.tally("a", "late"));
    counter.tally("a", "late").add(1);
    counter.tally("a", "late").add(1);
    counter.tally("b", "late").add(3);
    expect(await samples(registry)).toEqual([
      'things_total{stream="a",reason="late"} 2',
      'things_total{stream="b",reason="late"} 3',
    ]);
  });

  it("forgets a removed series, and what its old tally counts afterwards", async () => {
    const { registry, counter } = tallied();
    const old = counter.tally("a", "late");
    old.add(5);
    counter.tally("b", "late").add(1);
    expect(await samples(registry)).toHaveLength(2);
    old.add(1);
    counter.remove("a", "late");
    old.add(1);
    expect(await samples(registry)).toEqual(['things_total{stream="b",reason="late"} 1']);
    counter.tally("a", "late").add(2);
    expect(await samples(registry)).toEqual([
      'things_total{stream="b",reason="late"} 1',
      'things_total{stream="a",reason="late"} 2',
    ]);
  });

  it("is read by getSingleMetric as by a scrape", async () => {
    const { registry, counter } = tallied();
    counter.tally("a", "late").add(3);
    const metric = await registry.getSingleMetric(NAME)?.get();
    expect(metric?.values).toEqual([{ value: 3, labels: { stream: "a", reason: "late" } }]);
  });
});
