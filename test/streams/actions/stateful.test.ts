/**
 * project, coalesce, stable, smax, smin (docs/streams.md, Actions), with the reference
 * implementation Mirabelle v0.13's own test cases (action_test.clj, stream_test.clj) where the
 * documentation is silent.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_STREAM_LIMITS } from "../../../src/streams/action.js";
import { compileConfig } from "../../../src/streams/compiler.js";
import { parseEdn } from "../../../src/streams/edn.js";
import type { Event } from "../../../src/streams/event.js";
import { run } from "../harness.js";

/** Runs `action` with a tap `t` as its only child; also checks that the inputs come out untouched. */
function through(action: string, events: Event[], limits = DEFAULT_STREAM_LIMITS) {
  const before = structuredClone(events);
  const result = run(`{:action ${action} :children [{:action :tap :params [:t]}]}`, events, limits);
  expect(events, "inputs are not modified").toEqual(before);
  return { out: result.tap("t"), drops: result.drops };
}

const compile = (action: string) => () => compileConfig(parseEdn(`{:actions {:action :sdo :children [${action}]}}`));

/** Compares lists of events as sets (Mirabelle's coalesce tests do). */
const asSets = (lists: unknown[]) =>
  (lists as Event[][]).map((list) => list.map((event) => JSON.stringify(event)).sort());

describe("project", () => {
  const conditions = '[[[:= :service "foo"] [:= :service "bar"]]]';

  it("passes Mirabelle's test: 11 inputs, 10 outputs, nothing when every slot is empty", () => {
    const input: Event[] = [
      { time: 1, service: "foo", ttl: 10 },
      { time: 2, service: "foo", ttl: 10 },
      { time: 3, service: "bar", ttl: 10 },
      { time: 2, service: "foo", ttl: 10 },
      { time: 2, service: "bar", ttl: 10 },
      { time: 4, service: "trololo", ttl: 10 },
      { time: 30, service: "trololo", ttl: 10 },
      { time: 31, service: "foo", ttl: 10 },
      { time: 20, service: "bar", ttl: 10 },
      { time: 29, service: "bar", ttl: 10 },
      { metric: 10, service: "bar", ttl: 10 },
    ];
    const foo2 = { time: 2, service: "foo", ttl: 10 };
    const bar3 = { time: 3, service: "bar", ttl: 10 };
    const foo31 = { time: 31, service: "foo", ttl: 10 };
    const bar29 = { time: 29, service: "bar", ttl: 10 };
    const { out, drops } = through(`:project :params ${conditions}`, input);
    expect(out).toEqual([
      [{ time: 1, service: "foo", ttl: 10 }],
      [foo2],
      [foo2, bar3],
      [foo2, bar3],
      [foo2, bar3],
      [foo2, bar3],
      [foo31],
      [foo31],
      [foo31, bar29],
      [foo31, bar29],
    ]);
    // The time-less and the expired events prune and emit: they are applied, not dropped.
    expect(drops.get("s/project")).toBeUndefined();
  });

  it("reuses a slot emptied by expiry (Mirabelle loses it) and emits the slots in condition order", () => {
    const { out } = through(`:project :params ${conditions}`, [
      { time: 0, service: "bar", ttl: 5 },
      { time: 1, service: "foo", ttl: 100 },
      { metric: 1 }, // no time: prunes nothing yet
      { time: 10, service: "other", state: "expired" }, // prunes bar@0
      { time: 11, service: "bar", ttl: 5 },
    ]);
    expect(out).toEqual([
      [{ time: 0, service: "bar", ttl: 5 }],
      [
        { time: 1, service: "foo", ttl: 100 },
        { time: 0, service: "bar", ttl: 5 },
      ],
      [
        { time: 1, service: "foo", ttl: 100 },
        { time: 0, service: "bar", ttl: 5 },
      ],
      [{ time: 1, service: "foo", ttl: 100 }],
      [
        { time: 1, service: "foo", ttl: 100 },
        { time: 11, service: "bar", ttl: 5 },
      ],
    ]);
  });

  it("lets one event fill several slots, keeps the occupant on a time tie, fills an empty slot with an older event", () => {
    const first = { time: 5, metric: 3 };
    const older = { time: 2, metric: 20, host: "b" };
    const { out } = through(':project :params [[[:> :metric 0] [:< :metric 10] [:= :host "b"]]]', [
      first,
      { time: 5, metric: 4 },
      older,
    ]);
    expect(out).toEqual([
      [first, first],
      [first, first],
      [first, first, older],
    ]);
  });

  it("stores no expired event: an event with state expired only prunes", () => {
    const { out } = through(`:project :params ${conditions}`, [
      { time: 1, service: "foo", state: "expired" },
      { time: 2, service: "foo" },
    ]);
    expect(out).toEqual([[{ time: 2, service: "foo" }]]);
  });

  it("counts a list as dropped", () => {
    const { tap, drops } = run(
      `{:action :fixed-event-window :params [{:size 1}] :children [{:action :project :params ${conditions} :children [{:action :tap :params [:t]}]}]}`,
      [{ time: 1, service: "foo" }],
    );
    expect(tap("t")).toEqual([]);
    expect(drops.get("s/project")).toBe(1);
  });

  it("refuses bad params, naming the node", () => {
    expect(compile("{:action :project}")).toThrow("actions.children[0]: :project takes 1 param");
    expect(compile("{:action :project :params [[]]}")).toThrow(
      "actions.children[0]: :project takes a non-empty vector of conditions",
    );
    expect(compile("{:action :project :params [[[:foo :bar]]]}")).toThrow("actions.children[0].params[0][0]");
  });
});

describe("coalesce", () => {
  const coalesce = (fields: string) => `:coalesce :params [{:duration 5 :fields ${fields}}]`;

  it("passes Mirabelle's test 1 (compared as sets)", () => {
    const e = (host: string, service: string, time: number) => ({ host, service, metric: 1, time, ttl: 10 });
    const { out, drops } = through(coalesce("[:host :service]"), [
      e("1", "foo", 0),
      e("1", "bar", 5),
      e("2", "foo", 5),
      e("2", "foo", 11),
      e("2", "foo", 14),
      e("2", "foo", 12),
      e("3", "foo", 16),
    ]);
    expect(asSets(out)).toEqual(
      asSets([
        [e("1", "foo", 0), e("1", "bar", 5)],
        [e("2", "foo", 11), e("1", "bar", 5)],
        [e("2", "foo", 14), e("3", "foo", 16)],
      ]),
    );
    expect(drops.get("s/coalesce")).toBeUndefined();
  });

  it("passes Mirabelle's tests 2 to 4, nested fields included", () => {
    const e = (host: string, service: string, time: number, ttl: number) => ({ host, service, metric: 1, time, ttl });
    expect(asSets(through(coalesce("[:host :service]"), [e("1", "foo", 0, 10), e("1", "bar", 5, 10)]).out)).toEqual(
      asSets([[e("1", "foo", 0, 10), e("1", "bar", 5, 10)]]),
    );
    const three = [e("1", "foo", 0, 20), e("1", "baz", 1, 20), e("1", "bar", 12, 20)];
    expect(asSets(through(coalesce("[:host :service]"), three).out)).toEqual(asSets([three]));
    const nested = three.map(({ service, ...rest }) => ({ ...rest, nested: { service } }));
    expect(asSets(through(coalesce("[:host [:nested :service]]"), nested).out)).toEqual(asSets([nested]));
  });

  it("keys on every field, a missing value included (Mirabelle mixes {:host a} and {:service a})", () => {
    const { out } = through(coalesce("[:host :service]"), [
      { host: "a", time: 0 },
      { service: "a", time: 1 },
      { host: "a", service: null, time: 2 },
      { host: 1, time: 3 },
      { host: "1", time: 4 },
      { time: 5 },
    ]);
    expect((out[0] as Event[]).map((event) => event.time)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("emits in the order keys first arrived; a replaced event keeps its key's place", () => {
    const { out } = through(coalesce("[:host]"), [
      { host: "b", time: 0 },
      { host: "a", time: 1 },
      { host: "b", time: 2 },
      { host: "c", time: 6 },
    ]);
    expect(out).toEqual([
      [
        { host: "b", time: 2 },
        { host: "a", time: 1 },
        { host: "c", time: 6 },
      ],
    ]);
  });

  it("counts events without time and events expired at the clock as dropped, without moving the clock", () => {
    const { out, drops } = through(coalesce("[:host]"), [
      { host: "a", time: 0 },
      { host: "b" },
      { host: "c", time: 9, state: "expired" }, // would reach the tick if it moved the clock
      { host: "d", time: 1 },
      { host: "e", time: 300, ttl: 10 },
      { host: "f", time: 2, ttl: 10 }, // expired at 300
    ]);
    expect(drops.get("s/coalesce")).toBe(3);
    expect(out).toEqual([[{ host: "e", time: 300, ttl: 10 }]]);
  });

  it("handles time going backwards: an older event never replaces a newer one of its key", () => {
    const { out } = through(coalesce("[:host]"), [
      { host: "a", time: 10, metric: 2 },
      { host: "a", time: 8, metric: 1 },
      { host: "a", time: 10, metric: 3 }, // a tie: the new one wins (Mirabelle)
      { host: "b", time: 15 },
    ]);
    expect(out).toEqual([
      [
        { host: "a", time: 10, metric: 3 },
        { host: "b", time: 15 },
      ],
    ]);
  });

  it("holds at most max-window-events keys: a new key beyond is dropped, counted, and still moves the clock", () => {
    const { out, drops } = through(
      coalesce("[:host]"),
      [
        { host: "a", time: 0, ttl: 3 },
        { host: "b", time: 1 },
        { host: "c", time: 2 },
        { host: "a", time: 3, ttl: 3 },
        { host: "d", time: 5 },
        { host: "e", time: 10 }, // a@3 has expired: room again
      ],
      { ...DEFAULT_STREAM_LIMITS, windowEvents: 2 },
    );
    expect(drops.get("s/coalesce")).toBe(2);
    expect(out).toEqual([
      [
        { host: "a", time: 3, ttl: 3 },
        { host: "b", time: 1 },
      ],
      [
        { host: "b", time: 1 },
        { host: "e", time: 10 },
      ],
    ]);
  });

  it("refuses bad params, naming the node", () => {
    expect(compile("{:action :coalesce :params [{:duration 5}]}")).toThrow(
      "actions.children[0]: :coalesce needs the option :fields",
    );
    expect(compile("{:action :coalesce :params [{:duration 0 :fields [:host]}]}")).toThrow(
      "actions.children[0]: :duration must be a number of seconds greater than 0",
    );
    expect(compile("{:action :coalesce :params [{:duration 5 :fields []}]}")).toThrow(
      "actions.children[0]: :fields of :coalesce must be a non-empty vector of fields",
    );
    expect(compile('{:action :coalesce :params [{:duration 5 :fields ["host"]}]}')).toThrow(
      "actions.children[0].params[0].fields[0]",
    );
    expect(compile("{:action :coalesce :params [{:duration 5 :fields [:host] :every 3}]}")).toThrow(
      "unknown option :every of :coalesce",
    );
  });
});

describe("stable", () => {
  it("passes Mirabelle's test (D = 10 on :state)", () => {
    const input: Event[] = [
      ["critical", 1],
      ["critical", 9],
      ["critical", 12],
      ["critical", 13],
      ["ok", 1],
      ["ok", 14],
      ["ok", 1],
      ["ok", 15],
      ["ok", 25],
      ["critical", 28],
      ["ok", 29],
      ["ok", 38],
      ["ok", 40],
      ["critical", 40],
      ["ok", 41],
      ["ok", 52],
    ].map(([state, time]) => ({ state, time }));
    const { out, drops } = through(":stable :params [10 :state]", input);
    expect(out).toEqual(
      [
        ["critical", 1],
        ["critical", 9],
        ["critical", 12],
        ["critical", 13],
        ["ok", 14],
        ["ok", 15],
        ["ok", 25],
        ["ok", 29],
        ["ok", 38],
        ["ok", 40],
        ["ok", 41],
        ["ok", 52],
      ].map(([state, time]) => ({ state, time })),
    );
    // ok@1, twice: older than the largest time seen.
    expect(drops.get("s/stable")).toBe(2);
  });

  it("passes Mirabelle's nested test", () => {
    const input = [1, 9, 12, 13].map((time) => ({ nested: { state: "critical" }, time }));
    expect(through(":stable :params [10 [:nested :state]]", input).out).toEqual(input);
  });

  it("needs more than D seconds, compares values by content, and treats a missing field as nil", () => {
    const { out } = through(":stable :params [5 :value]", [
      { value: { a: 1 }, time: 0 },
      { value: { a: 1 }, time: 5 }, // exactly D: still buffered
      { value: { a: 1 }, time: 6 },
      { time: 7 },
      { value: null, time: 13 },
    ]);
    expect(out).toEqual([
      { value: { a: 1 }, time: 0 },
      { value: { a: 1 }, time: 5 },
      { value: { a: 1 }, time: 6 },
      { time: 7 },
      { value: null, time: 13 },
    ]);
  });

  it("counts events without time, and lists, as dropped", () => {
    const { out, drops } = through(":stable :params [1 :state]", [
      { state: "ok", time: 0 },
      { state: "ok" },
      { state: "ok", time: 2 },
    ]);
    expect(out).toEqual([
      { state: "ok", time: 0 },
      { state: "ok", time: 2 },
    ]);
    expect(drops.get("s/stable")).toBe(1);
  });

  it("buffers at most max-window-events events; later ones are dropped and counted", () => {
    const { out, drops } = through(
      ":stable :params [10 :state]",
      [0, 1, 2, 3, 11].map((time) => ({ state: "ok", time })),
      { ...DEFAULT_STREAM_LIMITS, windowEvents: 2 },
    );
    expect(out).toEqual([0, 1, 11].map((time) => ({ state: "ok", time })));
    expect(drops.get("s/stable")).toBe(2);
  });

  it("refuses bad params, naming the node", () => {
    expect(compile("{:action :stable :params [10]}")).toThrow("actions.children[0]: :stable takes 2 params [D field]");
    expect(compile("{:action :stable :params [0 :state]}")).toThrow(
      "actions.children[0].params[0]: D must be a number of seconds greater than 0",
    );
    expect(compile('{:action :stable :params [10 "state"]}')).toThrow(
      "actions.children[0].params[1]: a field must be a keyword or a vector of keywords",
    );
  });
});

describe("smax and smin", () => {
  it("pass Mirabelle's smax test", () => {
    const input = [
      { time: 0, metric: 10 },
      { time: 7, metric: 1 },
      { time: 11, metric: 20 },
      { time: 14, metric: 12 },
    ];
    expect(through(":smax", input).out).toEqual([input[0], input[0], input[2], input[2]]);
  });

  it("pass Mirabelle's smin test", () => {
    const input = [
      { time: 0, metric: 10 },
      { time: 7, metric: 1 },
      { time: 11, metric: 20 },
      { time: 14, metric: 12 },
      { time: 12, metric: -1 },
      { time: 20, metric: 2 },
    ];
    expect(through(":smin", input).out).toEqual([input[0], input[1], input[1], input[1], input[4], input[4]]);
  });

  it("keep the earlier event on a tie, and count events without a numeric metric as dropped", () => {
    const input: Event[] = [{ metric: 3, host: "a" }, { host: "x" }, { metric: "7" }, { metric: 3, host: "b" }];
    const { out, drops } = through(":smax", input);
    expect(out).toEqual([input[0], input[0]]);
    expect(drops.get("s/smax")).toBe(2);
    expect(through(":smin", input).out).toEqual([input[0], input[0]]);
  });

  it("take no params", () => {
    expect(compile("{:action :smax :params [1]}")).toThrow("actions.children[0]: :smax takes no params, got 1 param");
    expect(compile("{:action :smin :params [{}]}")).toThrow("actions.children[0]: :smin takes no params, got 1 param");
  });
});
