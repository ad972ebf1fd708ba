import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { Flow } from "../../../src/streams/action.js";
import { AsyncQueues } from "../../../src/streams/async-queues.js";
import { compileConfig } from "../../../src/streams/compiler.js";
import { parseEdn } from "../../../src/streams/edn.js";
import { type Declarations, detachedIo, type StreamIo, testIo } from "../../../src/streams/io.js";
import { recordingEngine } from "../harness.js";

const declared: Declarations = { outputs: new Set(["alerts", "tsdb"]), asyncQueues: new Set(["slow"]) };

const compile =
  (actions: string, declarations = declared) =>
  () =>
    compileConfig(parseEdn(`{:actions ${actions}}`), declarations);

/** An I/O that records what outputs and channels receive, and runs async queues through `queues`. */
function recordingIo(queues?: AsyncQueues) {
  const sent: Array<{ kind: "output" | "publish"; name: string; stream: string; value: Flow }> = [];
  const io: StreamIo = {
    declarations: declared,
    output: (name, stream) => (value) => sent.push({ kind: "output", name, stream, value }),
    publish: (name, stream) => (value) => sent.push({ kind: "publish", name, stream, value }),
    asyncQueue: (name, stream) => queues?.enqueuer(name, stream) ?? ((next, value) => next(value)),
    runsIo: true,
  };
  return { io, sent };
}

describe("compiling the I/O actions", () => {
  it("accepts declared outputs and queues, plain or with a trailing !", () => {
    expect(compile("{:action :output :params [:alerts]}")).not.toThrow();
    expect(compile('{:action :output! :params ["tsdb"]}')).not.toThrow();
    expect(compile("{:action :publish! :params [:errors]}")).not.toThrow();
    expect(compile("{:action :async-queue! :params [:slow] :children [{:action :info}]}")).not.toThrow();
    expect(compile("{:action :io :children [{:action :output :params [:alerts]}]}")).not.toThrow();
  });

  it("refuses an undeclared output or async queue, naming the node", () => {
    expect(compile("{:action :sdo :children [{:action :output :params [:pager]}]}")).toThrow(
      "invalid stream config: actions.children[0]: output pager is not declared (outputs or streams.outputs)",
    );
    expect(compile("{:action :async-queue :params [:fast] :children [{:action :info}]}")).toThrow(
      "invalid stream config: actions: async queue fast is not declared in streams.async-queues",
    );
  });

  it("refuses bad params and children of leaf actions", () => {
    expect(compile("{:action :output}")).toThrow(
      "invalid stream config: actions: :output takes 1 param [:output-name], got 0 params",
    );
    expect(compile("{:action :publish :params [12]}")).toThrow(
      "invalid stream config: actions: :publish takes a keyword or string channel",
    );
    expect(compile("{:action :output :params [:alerts] :children [{:action :info}]}")).toThrow(
      "invalid stream config: actions: :output is a leaf action and takes no children",
    );
    expect(compile('{:action :publish :params ["no spaces"]}')).toThrow(
      "invalid stream config: actions: the channel must be 1 to 128 characters of A-Z a-z 0-9 . _ -",
    );
    expect(compile("{:action :io :params [1]}")).toThrow(
      "invalid stream config: actions: :io takes no params, got 1 param",
    );
  });
});

describe("output and publish", () => {
  it("hand events and lists to the output sink and the channel publisher of their stream", () => {
    const { io, sent } = recordingIo();
    const { engine } = recordingEngine(undefined, io);
    const stream = engine.add(
      "cpu",
      parseEdn(`{:actions {:action :sdo :children [{:action :output :params [:alerts]}
                                                    {:action :publish :params [:errors]}
                                                    {:action :fixed-event-window :params [{:size 2}]
                                                     :children [{:action :output! :params [:tsdb]}]}]}}`),
      { kind: "api" },
    );
    stream.push([{ metric: 1 }, { metric: 2 }]);
    expect(sent).toEqual([
      { kind: "output", name: "alerts", stream: "cpu", value: { metric: 1 } },
      { kind: "publish", name: "errors", stream: "cpu", value: { metric: 1 } },
      { kind: "output", name: "alerts", stream: "cpu", value: { metric: 2 } },
      { kind: "publish", name: "errors", stream: "cpu", value: { metric: 2 } },
      { kind: "output", name: "tsdb", stream: "cpu", value: [{ metric: 1 }, { metric: 2 }] },
    ]);
  });

  it("index publishes every event it stores, or removes, on <stream>-index", () => {
    const { io, sent } = recordingIo();
    const { engine } = recordingEngine(undefined, io);
    const stream = engine.add("web", parseEdn("{:actions {:action :index :params [[:host]]}}"), { kind: "api" });
    stream.push([{ host: "a", time: 1 }, { host: "b" }, { host: "a", time: 2, state: "expired" }]);
    // The event without a time is not indexed, so not published.
    expect(sent).toEqual([
      { kind: "publish", name: "web-index", stream: "web", value: { host: "a", time: 1 } },
      { kind: "publish", name: "web-index", stream: "web", value: { host: "a", time: 2, state: "expired" } },
    ]);
  });
});

describe("io", () => {
  const config = parseEdn(
    "{:actions {:action :sdo :children [{:action :io :children [{:action :tap :params [:inside]}]} {:action :tap :params [:beside]}]}}",
  );

  it("forwards to its children on a server", () => {
    const { engine, tap } = recordingEngine(undefined, detachedIo(declared));
    engine.add("s", config, { kind: "api" }).push([{ metric: 1 }]);
    expect(tap("inside")).toEqual([{ metric: 1 }]);
    expect(tap("beside")).toEqual([{ metric: 1 }]);
  });

  it("discards under vigie stream test", () => {
    const taps: Array<[string, Flow]> = [];
    const { engine, tap } = recordingEngine(
      undefined,
      testIo(declared, (_stream, name, value) => taps.push([name, value])),
    );
    engine.add("s", config, { kind: "api" }).push([{ metric: 1 }]);
    expect(tap("inside")).toEqual([]);
    expect(tap("beside")).toEqual([{ metric: 1 }]);
  });
});

describe("under vigie stream test", () => {
  it("output and publish record into the tap of their name, async queues run inline", () => {
    const taps: Array<[string, string, Flow]> = [];
    const { engine } = recordingEngine(
      undefined,
      testIo(declared, (stream, name, value) => taps.push([stream, name, value])),
    );
    engine
      .add(
        "s",
        parseEdn(`{:actions {:action :async-queue :params [:slow]
                             :children [{:action :output :params [:alerts]}
                                        {:action :fixed-event-window :params [{:size 2}]
                                         :children [{:action :publish :params [:errors]}]}]}}`),
        { kind: "api" },
      )
      .push([{ metric: 1 }, { metric: 2 }]);
    // Synchronously: nothing is left queued under test.
    expect(taps).toEqual([
      ["s", "alerts", { metric: 1 }],
      ["s", "alerts", { metric: 2 }],
      ["s", "errors", [{ metric: 1 }, { metric: 2 }]],
    ]);
  });
});

describe("async-queue", () => {
  function queued(size: number) {
    const dropped = new Map<string, number>();
    const failed = new Map<string, number>();
    const queues = new AsyncQueues(
      { slow: { size } },
      {
        dropped: (queue) => () => dropped.set(queue, (dropped.get(queue) ?? 0) + 1),
        failed: (stream) => () => failed.set(stream, (failed.get(stream) ?? 0) + 1),
      },
    );
    const { io } = recordingIo(queues);
    const recorder = recordingEngine(undefined, io);
    return { ...recorder, queues, dropped, failed };
  }

  it("runs its children later, in order, and returns at once", async () => {
    const { engine, tap, queues } = queued(100);
    const stream = engine.add(
      "s",
      parseEdn(`{:actions {:action :sdo :children [{:action :async-queue :params [:slow]
                                                     :children [{:action :tap :params [:later]}]}
                                                    {:action :tap :params [:now]}]}}`),
      { kind: "api" },
    );
    stream.push([{ metric: 1 }, { metric: 2 }, { metric: 3 }]);
    expect(tap("now")).toHaveLength(3);
    expect(tap("later")).toEqual([]);
    expect([...queues.backlog()]).toEqual([["slow", 3]]);
    await nextTurn();
    expect(tap("later")).toEqual([{ metric: 1 }, { metric: 2 }, { metric: 3 }]);
    expect([...queues.backlog()]).toEqual([["slow", 0]]);
  });

  it("keeps one order across the streams sharing a queue", async () => {
    const { engine, tap } = queued(100);
    const config = parseEdn(
      "{:actions {:action :async-queue :params [:slow] :children [{:action :tap :params [:later]}]}}",
    );
    const a = engine.add("a", config, { kind: "api" });
    const b = engine.add("b", config, { kind: "api" });
    a.push([{ n: 1 }]);
    b.push([{ n: 2 }]);
    a.push([{ n: 3 }]);
    await nextTurn();
    expect(tap("later")).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it("drops and counts what a full queue cannot hold", async () => {
    const { engine, tap, dropped } = queued(2);
    const stream = engine.add(
      "s",
      parseEdn("{:actions {:action :async-queue :params [:slow] :children [{:action :tap :params [:later]}]}}"),
      { kind: "api" },
    );
    stream.push([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    expect(dropped.get("slow")).toBe(2);
    await nextTurn();
    expect(tap("later")).toEqual([{ n: 1 }, { n: 2 }]);
    // Room again once drained.
    stream.push([{ n: 5 }]);
    await nextTurn();
    expect(tap("later")).toEqual([{ n: 1 }, { n: 2 }, { n: 5 }]);
  });

  it("counts a child that throws against its stream and goes on with the next entry", async () => {
    const { queues, failed } = queued(10);
    const enqueue = queues.enqueuer("slow", "s");
    const ran: Flow[] = [];
    enqueue(
      () => {
        throw new Error("bug");
      },
      { n: 1 },
    );
    enqueue((value) => ran.push(value), { n: 2 });
    await nextTurn();
    expect(failed.get("s")).toBe(1);
    expect(ran).toEqual([{ n: 2 }]);
  });

  it("drains a long backlog over several turns of the event loop, in order", async () => {
    const { queues } = queued(10_000);
    const enqueue = queues.enqueuer("slow", "s");
    const ran: number[] = [];
    for (let n = 0; n < 10_000; n++) enqueue((value) => ran.push((value as { n: number }).n), { n });
    await nextTurn();
    // One turn runs a bounded share, so that sockets and timers get their turn in between.
    expect(ran.length).toBeGreaterThan(0);
    expect(ran.length).toBeLessThan(10_000);
    for (let turn = 0; turn < 10 && ran.length < 10_000; turn++) await nextTurn();
    expect(ran).toEqual(Array.from({ length: 10_000 }, (_, n) => n));
  });

  it("close runs everything waiting, and what it enqueues, at once, then drops what comes later (graceful stop)", () => {
    const { queues, dropped } = queued(100);
    const enqueue = queues.enqueuer("slow", "s");
    const ran: number[] = [];
    enqueue(() => {
      ran.push(1);
      enqueue(() => ran.push(3), {});
    }, {});
    enqueue(() => ran.push(2), {});
    queues.close();
    expect(ran).toEqual([1, 2, 3]);
    expect([...queues.backlog()]).toEqual([["slow", 0]]);
    enqueue(() => ran.push(4), {});
    expect(ran).toEqual([1, 2, 3]);
    expect(dropped.get("slow")).toBe(1);
  });

  it("close ends even when a queue feeds itself, dropping and counting what is left", async () => {
    const { engine, queues, dropped, tap } = queued(10);
    // Every event the queue runs goes back into the stream, and so into the queue: a cycle.
    const stream = engine.add(
      "s",
      parseEdn(`{:actions {:action :async-queue :params [:slow]
                           :children [{:action :tap :params [:ran]} {:action :reinject}]}}`),
      { kind: "api" },
    );
    stream.push([{ n: 1 }]);
    queues.close();
    // At most as many entries as the queues hold together ran; the one left was dropped.
    expect(tap("ran").length).toBeLessThanOrEqual(10);
    expect(tap("ran").length).toBeGreaterThan(1);
    expect(dropped.get("slow")).toBe(1);
    await nextTurn();
    expect([...queues.backlog()]).toEqual([["slow", 0]]);
  });
});
