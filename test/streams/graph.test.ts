/**
 * A running stream's graph (the compiled action tree with per-action `in`/`out` counts), its tap
 * points (`:tap-point`), and the SVG drawing of the graph.
 */
import { describe, expect, it } from "vitest";
import type { Flow } from "../../src/streams/action.js";
import { compileConfig } from "../../src/streams/compiler.js";
import { parseEdn } from "../../src/streams/edn.js";
import { StreamEngine } from "../../src/streams/engine.js";
import { graphSvg, xmlText } from "../../src/streams/graph-svg.js";
import { compileErrorOf, run } from "./harness.js";

const events = (metrics: readonly number[]) => metrics.map((metric, i) => ({ host: "a", metric, time: i }));

describe("graph counts", () => {
  it("counts what each action receives and emits", () => {
    const { stream } = run(
      `{:action :where :params [[:> :metric 3]]
        :children [{:action :increment :children [{:action :index :params [[:host]]}]}
                   {:action :scale :params [2]}]}`,
      events([1, 5, 7, 2, 9]),
    );
    expect(stream.graph()).toEqual({
      action: "where",
      params: ["[:> :metric 3]"],
      in: 5,
      out: 3,
      children: [
        {
          action: "increment",
          params: [],
          in: 3,
          out: 3,
          // A leaf action emits nothing.
          children: [{ action: "index", params: ["[:host]"], in: 3, out: 0, children: [] }],
        },
        // Without children: a counter behind it counts what it emits.
        { action: "scale", params: ["2"], in: 3, out: 3, children: [] },
      ],
    });
  });

  it("counts a window's list once, and sums the children of split", () => {
    const { stream } = run(
      `{:action :split :params [[[:> :metric 5] [:> :metric 2]]]
        :children [{:action :fixed-event-window :params [{:size 2}] :children [{:action :coll-count}]}
                   {:action :sdo}]}`,
      events([6, 3, 8, 1, 7, 9, 4]),
    );
    const graph = stream.graph();
    expect(graph.in).toBe(7);
    // 6 8 7 9 → the first child, 3 4 → the second, 1 → none.
    expect(graph.out).toBe(6);
    expect(graph.children.map((child) => child.in)).toEqual([4, 2]);
    const [window] = graph.children;
    expect(window?.out).toBe(2);
    expect(window?.children[0]).toMatchObject({ action: "coll-count", in: 2, out: 2 });
  });

  it("counts each fork of by into the same node", () => {
    const { stream } = run(
      "{:action :by :params [{:fields [:host]}] :children [{:action :changed :params [{:field :state :init nil}]}]}",
      [
        { host: "a", state: "ok" },
        { host: "b", state: "ok" },
        { host: "a", state: "ok" },
        { host: "b", state: "critical" },
      ],
    );
    expect(stream.graph()).toMatchObject({
      in: 4,
      out: 4,
      children: [{ action: "changed", params: ["{:field :state :init nil}"], in: 4, out: 3 }],
    });
  });

  it("counts from zero again when the stream is replaced", () => {
    const { engine, stream } = run("{:action :increment}", events([1, 2]));
    expect(stream.graph().in).toBe(2);
    const replaced = engine.add("s", parseEdn("{:actions {:action :increment}}"), { kind: "api" });
    expect(replaced.graph()).toMatchObject({ in: 0, out: 0 });
  });
});

describe(":tap-point", () => {
  /** An engine whose taps are all watched from the start, recording what each sends. */
  function watched(actions: string) {
    const seen = new Map<string, Flow[]>();
    const engine = new StreamEngine({
      tapSink: (_stream, point) => (value) => {
        const key = point ?? "(entry)";
        seen.set(key, [...(seen.get(key) ?? []), value]);
      },
    });
    const stream = engine.add("s", parseEdn(`{:actions ${actions}}`), { kind: "api" });
    return { stream, seen: (key: string) => seen.get(key) ?? [] };
  }

  it("taps what leaves the action, and the entry taps what enters the stream", () => {
    const { stream, seen } = watched(
      `{:action :where :params [[:> :metric 3]] :tap-point "hot"
        :children [{:action :increment :tap-point :incremented :children [{:action :sdo} {:action :sdo}]}]}`,
    );
    stream.push(events([1, 5, 7]));
    expect(seen("(entry)")).toEqual(events([1, 5, 7]));
    expect(seen("hot")).toEqual([
      { host: "a", metric: 5, time: 1 },
      { host: "a", metric: 7, time: 2 },
    ]);
    // Two children receive each event: tapped once.
    expect(seen("incremented")).toEqual([
      { host: "a", metric: 6, time: 1 },
      { host: "a", metric: 8, time: 2 },
    ]);
  });

  it("taps an action without children, and each route of split", () => {
    const { stream, seen } = watched(
      `{:action :sdo :children [{:action :where :params [[:< :metric 3]] :tap-point "low"}
        {:action :split :params [[[:> :metric 5] [:> :metric 2]]] :tap-point "split"
         :children [{:action :sdo} {:action :sdo}]}]}`,
    );
    stream.push(events([1, 6, 4]));
    expect(seen("low")).toEqual(events([1]));
    expect(seen("split")).toEqual([
      { host: "a", metric: 6, time: 1 },
      { host: "a", metric: 4, time: 2 },
    ]);
  });

  it("counts and taps the events of every partition of a partitioned stream", () => {
    const seen = new Map<string, Flow[]>();
    const engine = new StreamEngine({
      tapSink: (_stream, point) => (value) => {
        const key = point ?? "(entry)";
        seen.set(key, [...(seen.get(key) ?? []), value]);
      },
    });
    const stream = engine.add(
      "s",
      parseEdn('{:partition-by [:host] :actions {:action :increment :tap-point "inc" :children [{:action :sdo}]}}'),
      { kind: "api" },
    );
    const hosts = ["a", "b", "c", "d", "e", "f"];
    const pushed = hosts.map((host, time) => ({ host, metric: 1, time }));
    stream.push(pushed);
    // The hosts land in several partitions, and one action tree counts them all.
    expect(new Set(pushed.map((event) => stream.partitionOf?.(event))).size).toBeGreaterThan(1);
    expect(stream.graph()).toMatchObject({ action: "increment", in: 6, out: 6 });
    expect(seen.get("(entry)")).toEqual(pushed);
    expect(
      seen
        .get("inc")
        ?.map((value) => (value as { host: string }).host)
        .sort(),
    ).toEqual(hosts);
  });

  it("sends nothing while nobody watches, and starts and stops with watch()", () => {
    const stream = new StreamEngine().add(
      "s",
      parseEdn('{:actions {:action :increment :tap-point "inc" :children [{:action :sdo}]}}'),
      { kind: "api" },
    );
    const seen: Flow[] = [];
    stream.push(events([1]));
    expect(stream.watch("inc", (value) => seen.push(value))).toBe(true);
    expect(stream.watch("nope", () => {})).toBe(false);
    stream.push(events([2]));
    stream.watch("inc", undefined);
    stream.push(events([3]));
    expect(seen).toEqual([{ host: "a", metric: 3, time: 0 }]);
  });

  it("is a string or a keyword following the stream-name rule, unique, never on a leaf", () => {
    expect(compileConfig(parseEdn("{:actions {:action :sdo :tap-point :a.b_c-1}}")).tapPoints).toEqual(["a.b_c-1"]);
    expect(compileErrorOf('{:action :sdo :tap-point "a b"}')).toBe(
      "invalid stream config: actions.children[0]: :tap-point must be 1 to 128 characters of A-Z a-z 0-9 . _ -, as a string or a keyword",
    );
    expect(compileErrorOf("{:action :sdo :tap-point 3}")).toMatch(/:tap-point must be/);
    expect(compileErrorOf('{:action :sdo :tap-point "x" :children [{:action :sdo :tap-point "x"}]}')).toBe(
      'invalid stream config: actions.children[0].children[0]: :tap-point "x" is already used at actions.children[0]',
    );
    expect(compileErrorOf('{:action :index :params [[:host]] :tap-point "x"}')).toMatch(
      /:tap-point on a leaf action: nothing leaves it/,
    );
  });
});

describe("graph SVG", () => {
  it("draws one box per action with its counts, XML-escaped", async () => {
    const { stream } = run(
      `{:action :where :params [[:regex :host "<a&b>.*\\"'"]] :tap-point "t"
        :children [{:action :with :params [{:note "\u0001 ok"}]}]}`,
      [{ host: "<a&b>x\"'", metric: 1 }],
    );
    const svg = await graphSvg(stream.graph(), "stream <s>");
    expect(svg).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).toContain("<title>stream &lt;s&gt;</title>");
    expect(svg).toContain("[:regex :host &quot;&lt;a&amp;b&gt;.*\\&quot;&apos;&quot;]");
    expect(svg).toContain("tap-point t");
    expect(svg).toContain("in 1 · out 1");
    expect(svg.match(/<rect /g)).toHaveLength(2);
    expect(svg.match(/class="edge"/g)).toHaveLength(1);
    // No raw control character, no unescaped user markup.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is looked for
    expect(svg).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/);
    expect(svg).not.toContain("<a&b>");
  });

  it("replaces what XML cannot hold, and cuts long params on a code point", async () => {
    expect(xmlText("a\u0000b\uD800c\uD83D\uDE00<")).toBe("a\uFFFDb\uFFFDc\uD83D\uDE00&lt;");
    const long = `"${"\uD83D\uDE00".repeat(100)}"`;
    const { stream } = run(`{:action :with :params [{:x ${long}}]}`, []);
    const svg = await graphSvg(stream.graph(), "s");
    expect(svg).toContain("…");
    expect(svg).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });
});
