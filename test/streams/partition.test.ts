/**
 * Partitioned streams on one instance: the hash (FNV-1a 32-bit, known vectors), the declaration,
 * and the property that `by` on the partition fields under a partitioned stream emits what one
 * unpartitioned stream emits on the same events (per key: the same events in the same order).
 * fast-check runs seeded; `PROPERTY_SEED=<n>` overrides the seed, and a failure prints it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Flow } from "../../src/streams/action.js";
import { parseEdn } from "../../src/streams/edn.js";
import type { Event } from "../../src/streams/event.js";
import { fnv1a, PARTITION_COUNT, parsePartitionKey, partitionerOf, partitionKey } from "../../src/streams/partition.js";
import { recordingEngine } from "./harness.js";

const SEED = Number(process.env.PROPERTY_SEED ?? 20261127);

/** The reference: FNV-1a 32-bit over the UTF-8 bytes, byte by byte. */
function referenceFnv(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash >>> 0;
}

describe("FNV-1a 32-bit", () => {
  it("matches the published test vectors", () => {
    // From the FNV reference test suite (http://www.isthe.com/chongo/tech/comp/fnv/).
    expect(fnv1a("")).toBe(0x811c9dc5);
    expect(fnv1a("a")).toBe(0xe40c292c);
    expect(fnv1a("b")).toBe(0xe70c2de5);
    expect(fnv1a("foobar")).toBe(0xbf9cf968);
    expect(fnv1a("chongo was here!\n")).toBe(0xd49930d5);
  });

  it("hashes the UTF-8 bytes of any text, surrogate pairs and lone surrogates included (property)", () => {
    expect(fnv1a("é€😀")).toBe(referenceFnv("é€😀"));
    expect(fnv1a("a\ud800b")).toBe(referenceFnv("a\ud800b"));
    expect(fnv1a("\udc00")).toBe(referenceFnv("\udc00"));
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => fnv1a(text) === referenceFnv(text)),
      { seed: SEED, numRuns: 300 },
    );
  });

  it("joins several fields' values with NUL, a missing field as empty text", () => {
    const partitionOf = partitionerOf([["host"], ["attributes", "zone"]]);
    expect(partitionOf({ host: "web-1", attributes: { zone: "eu" } })).toBe(
      referenceFnv("web-1\u0000eu") % PARTITION_COUNT,
    );
    expect(partitionOf({ attributes: { zone: "eu" } })).toBe(referenceFnv("\u0000eu") % PARTITION_COUNT);
    expect(partitionOf({ host: "web-1" })).toBe(referenceFnv("web-1\u0000") % PARTITION_COUNT);
    const one = partitionerOf([["host"]]);
    expect(one({ host: "web-1" })).toBe(referenceFnv("web-1") % PARTITION_COUNT);
    expect(one({})).toBe(referenceFnv("") % PARTITION_COUNT);
    expect(one({ host: null })).toBe(referenceFnv("") % PARTITION_COUNT);
    expect(one({ host: 12 })).toBe(referenceFnv("12") % PARTITION_COUNT);
  });

  it("names partitions s#k and reads the names back", () => {
    expect(partitionKey("metrics.cpu", 7)).toBe("metrics.cpu#7");
    expect(parsePartitionKey("metrics.cpu#7")).toEqual({ stream: "metrics.cpu", partition: 7 });
    expect(parsePartitionKey("metrics.cpu")).toEqual({ stream: "metrics.cpu", partition: undefined });
  });
});

describe("a partitioned stream on one instance", () => {
  it("is declared with :partition-by, and refuses a declaration that is not a vector of fields", () => {
    const { engine } = recordingEngine();
    const stream = engine.add("p", parseEdn("{:partition-by [:host] :actions {:action :index :params [[:host]]}}"), {
      kind: "api",
    });
    expect(stream.parts.map((part) => part.key)).toEqual(Array.from({ length: 64 }, (_, k) => `p#${k}`));
    expect(engine.leaseKeys()).toContain("p#63");
    expect(() => engine.compile(parseEdn("{:partition-by 3 :actions {:action :sdo}}"))).toThrow(/:partition-by/);
    expect(() => engine.compile(parseEdn("{:partition-by [] :actions {:action :sdo}}"))).toThrow(/at least one field/);
    expect(engine.add("plain", parseEdn("{:actions {:action :sdo}}"), { kind: "api" }).parts).toHaveLength(1);
  });

  it("keeps one state per partition: a window outside by counts per partition", () => {
    const { engine, tap } = recordingEngine();
    const config = `{:partition-by [:host] :actions {:action :fixed-event-window :params [{:size 2}]
      :children [{:action :coll-count :children [{:action :tap :params [:n]}]}]}}`;
    const stream = engine.add("p", parseEdn(config), { kind: "api" });
    const partitionOf = partitionerOf([["host"]]);
    // Two hosts in different partitions: one event each never fills a window of 2.
    const hosts = ["a", "b", "c", "d", "e"];
    const [first, second] = hosts.filter(
      (host, i) => hosts.findIndex((h) => partitionOf({ host: h }) === partitionOf({ host })) === i,
    );
    stream.push([{ host: first }, { host: second }]);
    expect(tap("n")).toEqual([]);
    stream.push([{ host: first }]);
    expect(tap("n")).toEqual([{ host: first, metric: 2 }]);
  });

  it("indexes per partition; searches and the clock cover every partition", () => {
    const { engine } = recordingEngine();
    const stream = engine.add("p", parseEdn("{:partition-by [:host] :actions {:action :index :params [[:host]]}}"), {
      kind: "api",
    });
    const events = Array.from({ length: 200 }, (_, i) => ({ host: `h${i}`, time: i }));
    stream.push(events);
    expect(stream.indexSize).toBe(200);
    expect(stream.currentTime).toBe(199);
    const found = stream.parts.flatMap((part) => part.index.search(() => true));
    expect(found).toHaveLength(200);
    expect(stream.parts.filter((part) => part.index.size > 0).length).toBeGreaterThan(32);
    // Starting one partition again empties it alone.
    const busy = stream.parts.findIndex((part) => part.index.size > 0);
    const size = stream.parts[busy]?.index.size ?? 0;
    stream.resetPart(busy);
    expect(stream.indexSize).toBe(200 - size);
  });

  it("runs `by` on the partition fields exactly as one unpartitioned stream (property)", () => {
    const actions = `{:action :by :params [{:fields [:host]}] :children [
      {:action :sdo :children [
        {:action :moving-event-window :params [{:size 3}] :children [{:action :coll-sum :children [{:action :tap :params [:sum]}]}]}
        {:action :changed :params [{:field :state :init "ok"}] :children [{:action :tap :params [:changed]}]}
        {:action :fixed-time-window :params [{:duration 5}] :children [{:action :coll-count :children [{:action :tap :params [:count]}]}]}]}]}`;
    const event = fc.record({
      host: fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h", "web-1", "web-2", "é"),
      state: fc.constantFrom("ok", "warning", "critical"),
      metric: fc.integer({ min: -5, max: 5 }),
      step: fc.integer({ min: 0, max: 3 }),
    });
    const byHost = (flows: readonly Flow[]) => {
      const grouped = new Map<string, Flow[]>();
      for (const flow of flows) {
        const base = Array.isArray(flow) ? flow.at(-1) : flow;
        const host = String((base as Event | undefined)?.host);
        grouped.set(host, [...(grouped.get(host) ?? []), flow]);
      }
      return grouped;
    };
    fc.assert(
      fc.property(fc.array(event, { maxLength: 300 }), fc.integer({ min: 1, max: 50 }), (raw, batch) => {
        let time = 0;
        const events: Event[] = raw.map(({ step, ...rest }) => {
          time += step;
          return { ...rest, time };
        });
        const plain = recordingEngine();
        const partitioned = recordingEngine();
        const one = plain.engine.add("s", parseEdn(`{:actions ${actions}}`), { kind: "api" });
        const many = partitioned.engine.add("s", parseEdn(`{:partition-by [:host] :actions ${actions}}`), {
          kind: "api",
        });
        for (let i = 0; i < events.length; i += batch) {
          one.push(events.slice(i, i + batch));
          many.push(events.slice(i, i + batch));
        }
        for (const tap of ["sum", "changed", "count"]) {
          // Per key: the same emitted values in the same order.
          expect(byHost(partitioned.tap(tap))).toEqual(byHost(plain.tap(tap)));
        }
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});
