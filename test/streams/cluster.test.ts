import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { subjectToken } from "../../src/platform/cluster/nats.js";
import { InvalidError, UnavailableError } from "../../src/platform/errors.js";
import type { Flow } from "../../src/streams/action.js";
import { DEFAULT_STREAM_LIMITS } from "../../src/streams/action.js";
import { channelSubject, consumerName, EncodedAnswer, eventsSubject, querySubject } from "../../src/streams/cluster.js";
import { parseEdn, toEdn } from "../../src/streams/edn.js";
import { applySharedStreams, type Forwarder, StreamEngine } from "../../src/streams/engine.js";
import type { Event } from "../../src/streams/event.js";
import { partitionerOf } from "../../src/streams/partition.js";
import { answerQuery } from "../../src/streams/routes/streams.js";

const streamName = fc.stringMatching(/^[A-Za-z0-9._-]{1,128}$/);

/** Undoes subjectToken's escapes (`~XX`, hexadecimal). */
const unescapeToken = (token: string) =>
  token.replace(/~([0-9a-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/** What NATS accepts as one subject token and as a consumer name: no separator, wildcard or whitespace. */
const VALID_TOKEN = /^[^\s.*>/\\]+$/;

describe("subject helpers", () => {
  it("escapes dots and every other character outside letters, digits, _ and -", () => {
    expect(subjectToken("alerts")).toBe("alerts");
    expect(subjectToken("web_front-end2")).toBe("web_front-end2");
    expect(subjectToken("metrics.cpu")).toBe("metrics~2ecpu");
    expect(subjectToken("a.b.c")).toBe("a~2eb~2ec");
    expect(subjectToken("...")).toBe("~2e~2e~2e");
    expect(subjectToken("a*b>c d")).toBe("a~2ab~3ec~20d");
    expect(subjectToken("a~2eb")).toBe("a~7e2eb");
    expect(subjectToken("x/y")).toBe("x~2fy");
  });

  it("names the subjects and the consumer of a stream", () => {
    expect(eventsSubject("metrics.cpu")).toBe("vigie.events.metrics~2ecpu");
    expect(consumerName("metrics.cpu")).toBe("vigie-metrics~2ecpu");
    expect(querySubject("metrics.cpu")).toBe("vigie.query.metrics~2ecpu");
    expect(channelSubject("alerts.web")).toBe("vigie.channel.alerts~2eweb");
    expect(eventsSubject("alerts")).toBe("vigie.events.alerts");
    expect(consumerName("alerts")).toBe("vigie-alerts");
    // A partition's subjects add its number as one more token; its consumer escapes the #.
    expect(eventsSubject("metrics.cpu#7")).toBe("vigie.events.metrics~2ecpu.7");
    expect(querySubject("metrics.cpu#63")).toBe("vigie.query.metrics~2ecpu.63");
    expect(consumerName("metrics.cpu#7")).toBe("vigie-metrics~2ecpu~237");
    expect(consumerName("metrics.cpu#7")).not.toBe(consumerName("metrics.cpu-7"));
  });

  it("gives every stream name a valid, reversible token (property)", () => {
    fc.assert(
      fc.property(streamName, (name) => {
        const token = subjectToken(name);
        expect(token).toMatch(VALID_TOKEN);
        expect(token).not.toContain(".");
        expect(token).not.toContain("*");
        expect(token).not.toContain(">");
        expect(token).toMatch(/^[A-Za-z0-9_~-]+$/);
        expect(unescapeToken(token)).toBe(name);
        // The events subject has exactly three tokens; the consumer name is one token.
        expect(eventsSubject(name).split(".")).toEqual(["vigie", "events", token]);
        expect(consumerName(name)).toMatch(VALID_TOKEN);
      }),
      { numRuns: 2_000 },
    );
  });

  it("keeps every consumer name within JetStream's 255 characters (property)", () => {
    // nats-server refuses longer durable names: "consumer name is too long, maximum allowed is 255".
    expect(consumerName(".".repeat(128)).length).toBeLessThanOrEqual(255);
    fc.assert(
      fc.property(streamName, (name) => {
        expect(consumerName(name).length).toBeLessThanOrEqual(255);
      }),
      { numRuns: 2_000 },
    );
  });

  it("maps distinct names to distinct tokens (property)", () => {
    fc.assert(
      fc.property(streamName, streamName, (a, b) => {
        expect(subjectToken(a) === subjectToken(b)).toBe(a === b);
        expect(consumerName(a) === consumerName(b)).toBe(a === b);
      }),
      { numRuns: 2_000 },
    );
    // Names that differ only where escapes could collide.
    const tricky = ["a.b", "a_b", "a-b", "a~2eb", "a2eb", "a.2eb", "a..b", "a.~b", "-", "_", ".", "~2e"];
    const tokens = tricky.map(subjectToken);
    expect(new Set(tokens).size).toBe(tricky.length);
  });
});

interface Recorder {
  readonly log: string[];
  readonly forwarded: Array<{ name: string; json: string; wait: boolean }>;
}

/** A fake forwarder: `owned` decides ownership; forward resolves or rejects as `outcome` says. */
function fakeForwarder(
  owned: Set<string>,
  recorder: Recorder,
  outcome: (name: string) => Promise<void> = () => Promise.resolve(),
): Forwarder {
  return {
    owns: (name) => owned.has(name),
    forward: (name, events) => {
      recorder.log.push(`forward ${name}`);
      recorder.forwarded.push({ name, json: JSON.stringify(events), wait: true });
      return outcome(name);
    },
    send: (name, events) => {
      recorder.log.push(`send ${name}`);
      recorder.forwarded.push({ name, json: JSON.stringify(events), wait: false });
    },
    ask: async () => [],
  };
}

/** An engine whose taps log `tap <stream>` and mutate what reached them (as an action might). */
function engineWith(recorder: Recorder, mutate = true) {
  const taps = new Map<string, Flow[]>();
  const engine = new StreamEngine({
    tap: (stream, _name, value) => {
      recorder.log.push(`tap ${stream}`);
      taps.set(stream, [...(taps.get(stream) ?? []), structuredClone(value)]);
      if (mutate && !Array.isArray(value)) (value as Event).touched = `by ${stream}`;
    },
  });
  const tapStream = (name: string, extra = "") =>
    engine.add(name, parseEdn(`{${extra} :actions {:action :tap :params [:t]}}`), { kind: "api" });
  return { engine, taps, tapStream };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("StreamEngine.deliver in cluster mode", () => {
  it("hands each partition of a partitioned stream to JetStream in order, its own partitions too", async () => {
    const recorder: Recorder = { log: [], forwarded: [] };
    const { engine, taps } = engineWith(recorder, false);
    const stream = engine.add("p", parseEdn("{:partition-by [:host] :actions {:action :tap :params [:t]}}"), {
      kind: "api",
    });
    const partitionOf = partitionerOf([["host"]]);
    const events: Event[] = Array.from({ length: 40 }, (_, i) => ({ host: `h${i % 8}`, seq: i }));
    const mine = partitionOf({ host: "h0" });
    engine.forwarder = fakeForwarder(new Set([`p#${mine}`]), recorder);
    await engine.deliver([stream], events);
    // Run here, they could overtake events of the same host that another instance forwarded earlier.
    expect(taps.get("p")).toBeUndefined();
    const byKey = new Map<string, Event[]>();
    for (const event of events) {
      const k = partitionOf(event);
      byKey.set(`p#${k}`, [...(byKey.get(`p#${k}`) ?? []), event]);
    }
    expect(byKey.has(`p#${mine}`)).toBe(true);
    expect(recorder.forwarded.map((entry) => entry.name).sort()).toEqual([...byKey.keys()].sort());
    for (const entry of recorder.forwarded) expect(JSON.parse(entry.json)).toEqual(byKey.get(entry.name));
    expect(engine.leaseKeys()).toHaveLength(64);
  });

  it("pushes owned streams locally and forwards the others, forwards first, serialised at once", async () => {
    const recorder: Recorder = { log: [], forwarded: [] };
    const { engine, taps, tapStream } = engineWith(recorder);
    const streams = [tapStream("local-a"), tapStream("remote.b"), tapStream("local-c"), tapStream("remote-d")];
    engine.forwarder = fakeForwarder(new Set(["local-a", "local-c"]), recorder);
    const events: Event[] = [
      { host: "h1", metric: 1 },
      { host: "h2", metric: 2 },
    ];
    const original = JSON.stringify(events);
    const done = engine.deliver(streams, events);
    expect(done).toBeInstanceOf(Promise);
    await done;
    expect(recorder.log).toEqual([
      "forward remote.b",
      "forward remote-d",
      "tap local-a",
      "tap local-a",
      "tap local-c",
      "tap local-c",
    ]);
    // One message per target stream with the whole batch, as it was before any local action ran.
    expect(recorder.forwarded).toEqual([
      { name: "remote.b", json: original, wait: true },
      { name: "remote-d", json: original, wait: true },
    ]);
    // The local taps did touch the events afterwards (the mutation the serialisation escaped).
    expect(events[0]?.touched).toBeDefined();
    expect(taps.get("local-a")).toEqual([
      { host: "h1", metric: 1 },
      { host: "h2", metric: 2 },
    ]);
    expect(taps.get("remote.b")).toBeUndefined();
    expect(taps.get("remote-d")).toBeUndefined();
  });

  it("resolves only when every forward was acknowledged, and rejects when one could not be", async () => {
    const recorder: Recorder = { log: [], forwarded: [] };
    const { engine, taps, tapStream } = engineWith(recorder, false);
    const streams = [tapStream("a"), tapStream("b"), tapStream("c")];
    const acknowledgements = new Map<string, () => void>();
    engine.forwarder = fakeForwarder(
      new Set(["a"]),
      recorder,
      (name) => new Promise<void>((resolve) => acknowledgements.set(name, resolve)),
    );
    let settled = false;
    const done = (engine.deliver(streams, [{ n: 1 }]) as Promise<void>).then(() => {
      settled = true;
    });
    // The local push happened at once.
    expect(taps.get("a")).toEqual([{ n: 1 }]);
    acknowledgements.get("b")?.();
    await flush();
    expect(settled).toBe(false);
    acknowledgements.get("c")?.();
    await done;
    expect(settled).toBe(true);

    const failing = fakeForwarder(new Set(["a"]), recorder, (name) =>
      name === "c" ? Promise.reject(new UnavailableError("stream c is owned by another instance")) : Promise.resolve(),
    );
    engine.forwarder = failing;
    const rejected = engine.deliver(streams, [{ n: 2 }]) as Promise<void>;
    await expect(rejected).rejects.toMatchObject({ code: "VIGIE_ERR_UNAVAILABLE" });
    // The local push happened anyway.
    expect(taps.get("a")).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it("returns nothing to wait for when every stream is owned here, or without a forwarder", () => {
    const recorder: Recorder = { log: [], forwarded: [] };
    const { engine, taps, tapStream } = engineWith(recorder, false);
    const streams = [tapStream("a"), tapStream("b")];
    expect(engine.deliver(streams, [{ n: 1 }])).toBeUndefined();
    engine.forwarder = fakeForwarder(new Set(["a", "b"]), recorder);
    expect(engine.deliver(streams, [{ n: 2 }])).toBeUndefined();
    expect(engine.deliver([], [{ n: 3 }])).toBeUndefined();
    expect(recorder.forwarded).toEqual([]);
    expect(taps.get("a")).toEqual([{ n: 1 }, { n: 2 }]);
    expect(taps.get("b")).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it("sends without waiting when wait is false", () => {
    const recorder: Recorder = { log: [], forwarded: [] };
    const { engine, tapStream } = engineWith(recorder);
    const streams = [tapStream("a"), tapStream("b")];
    engine.forwarder = fakeForwarder(new Set(["a"]), recorder);
    const events = [{ n: 1 }];
    expect(engine.deliver(streams, events, false)).toBeUndefined();
    expect(recorder.log).toEqual(["send b", "tap a"]);
    expect(recorder.forwarded).toEqual([{ name: "b", json: '[{"n":1}]', wait: false }]);
  });

  it("routes pushDefault through the forwarder", () => {
    const recorder: Recorder = { log: [], forwarded: [] };
    const { engine, taps, tapStream } = engineWith(recorder, false);
    tapStream("d-here", ":default true");
    tapStream("d-there", ":default true");
    tapStream("not-default");
    engine.forwarder = fakeForwarder(new Set(["d-here", "not-default"]), recorder);
    engine.pushDefault([{ n: 1 }, { n: 2 }]);
    expect(recorder.forwarded).toEqual([{ name: "d-there", json: '[{"n":1},{"n":2}]', wait: false }]);
    expect(taps.get("d-here")).toEqual([{ n: 1 }, { n: 2 }]);
    expect(taps.get("d-there")).toBeUndefined();
    expect(taps.get("not-default")).toBeUndefined();
  });

  it("sends a reinjection into a stream owned elsewhere, runs it here otherwise", () => {
    const recorder: Recorder = { log: [], forwarded: [] };
    const { engine, taps, tapStream } = engineWith(recorder, false);
    engine.add("to-remote", parseEdn("{:actions {:action :reinject :params [:remote]}}"), { kind: "api" });
    engine.add("to-local", parseEdn("{:actions {:action :reinject :params [:local]}}"), { kind: "api" });
    engine.add("to-default", parseEdn("{:actions {:action :reinject! :params [:default]}}"), { kind: "api" });
    tapStream("remote");
    tapStream("local");
    tapStream("default-here", ":default true");
    tapStream("default-there", ":default true");
    engine.forwarder = fakeForwarder(
      new Set(["to-remote", "to-local", "to-default", "local", "default-here"]),
      recorder,
    );
    engine.get("to-remote")?.push([{ n: 1 }]);
    engine.get("to-local")?.push([{ n: 2 }]);
    engine.get("to-default")?.push([{ n: 3 }]);
    expect(recorder.forwarded).toEqual([
      { name: "remote", json: '[{"n":1}]', wait: false },
      { name: "default-there", json: '[{"n":3}]', wait: false },
    ]);
    expect(taps.get("remote")).toBeUndefined();
    expect(taps.get("local")).toEqual([{ n: 2 }]);
    expect(taps.get("default-here")).toEqual([{ n: 3 }]);
    expect(taps.get("default-there")).toBeUndefined();
  });

  it("keeps a reinjection into the stream itself local", () => {
    const recorder: Recorder = { log: [], forwarded: [] };
    const { engine, taps } = engineWith(recorder, false);
    engine.add(
      "loop",
      parseEdn("{:actions {:action :sdo :children [{:action :tap :params [:t]} {:action :reinject :params [nil]}]}}"),
      { kind: "api" },
    );
    // Even when the lease says another instance owns it (the push came through JetStream late).
    engine.forwarder = fakeForwarder(new Set(), recorder);
    engine.get("loop")?.push([{ n: 1 }]);
    expect(recorder.forwarded).toEqual([]);
    // The push itself and 16 nested reinjections, all here.
    expect(taps.get("loop")).toHaveLength(17);
  });
});

describe("applySharedStreams", () => {
  const logger = () => ({ error: vi.fn() });
  const config = (tap: string, extra = "") => `{${extra} :actions {:action :tap :params [:${tap}]}}`;
  /** The text the API stores for a configuration. */
  const stored = (name: string, text: string) => ({ name, config: toEdn(parseEdn(text)) });

  function engineWithStreams() {
    const engine = new StreamEngine();
    engine.add("file-a", parseEdn(config("fa")), { kind: "file", file: "/etc/vigie/streams/a.edn" });
    engine.add("api-keep", parseEdn(config("keep")), { kind: "api" });
    engine.add("api-change", parseEdn(config("before")), { kind: "api" });
    engine.add("api-gone", parseEdn(config("gone")), { kind: "api" });
    return engine;
  }

  it("adds, replaces and removes API streams, leaving file streams and unchanged ones alone", () => {
    const engine = engineWithStreams();
    const fileStream = engine.get("file-a");
    const kept = engine.get("api-keep");
    const log = logger();
    applySharedStreams(
      engine,
      [stored("api-keep", config("keep")), stored("api-change", config("after")), stored("api-new", config("new"))],
      undefined,
      log,
    );
    expect(engine.names()).toEqual(["api-change", "api-keep", "api-new", "file-a"]);
    expect(engine.get("file-a")).toBe(fileStream);
    // Unchanged: the same running stream, its state kept.
    expect(engine.get("api-keep")).toBe(kept);
    expect(toEdn(engine.get("api-change")?.config ?? null)).toBe(toEdn(parseEdn(config("after"))));
    expect(engine.get("api-change")?.origin).toEqual({ kind: "api" });
    expect(engine.get("api-new")?.origin).toEqual({ kind: "api" });
    expect(log.error).not.toHaveBeenCalled();
  });

  it("removes only among the names given", () => {
    const engine = engineWithStreams();
    applySharedStreams(engine, [], ["api-gone", "file-a", "unknown"], logger());
    expect(engine.names()).toEqual(["api-change", "api-keep", "file-a"]);
    applySharedStreams(engine, [], undefined, logger());
    expect(engine.names()).toEqual(["file-a"]);
  });

  it("logs a stored stream that no longer compiles and applies the others", () => {
    const engine = engineWithStreams();
    const log = logger();
    applySharedStreams(
      engine,
      [
        { name: "broken", config: "{:actions {:action :output :params [:undeclared]}}" },
        { name: "unparsable", config: "{:actions" },
        stored("fine", config("fine")),
      ],
      ["broken", "unparsable", "fine"],
      log,
    );
    expect(engine.get("broken")).toBeUndefined();
    expect(engine.get("unparsable")).toBeUndefined();
    expect(engine.get("fine")).toBeDefined();
    expect(log.error).toHaveBeenCalledTimes(2);
    const messages = log.error.mock.calls.map(([details, message]) => [details, message]);
    expect(messages[0]?.[0]).toEqual({ stream: "broken" });
    expect(String(messages[0]?.[1])).toContain("broken");
    expect(messages[1]?.[0]).toEqual({ stream: "unparsable" });
  });

  it("leaves a stream of the operator's files running when a stored one has its name, and logs it", () => {
    const engine = engineWithStreams();
    const fileStream = engine.get("file-a");
    const log = logger();
    applySharedStreams(engine, [stored("file-a", config("stored"))], ["file-a"], log);
    expect(engine.get("file-a")).toBe(fileStream);
    expect(log.error).toHaveBeenCalledWith(
      { stream: "file-a" },
      "stored stream file-a was not started: /etc/vigie/streams/a.edn defines it",
    );
  });

  it("runs a pushed event through the streams it applied", () => {
    const taps: string[] = [];
    const engine = new StreamEngine({ tap: (stream) => void taps.push(stream) });
    applySharedStreams(engine, [stored("s1", config("t", ":default true"))], undefined, logger());
    engine.pushDefault([{ n: 1 }]);
    expect(taps).toEqual(["s1"]);
  });
});

describe("answerQuery (what an owner answers another instance)", () => {
  const engine = new StreamEngine();
  const stream = engine.add("s", parseEdn("{:actions {:action :index :params [[:host]]}}"), { kind: "api" });
  stream.push([
    { host: "a", service: "cpu", time: 10 },
    { host: "b", service: "mem", time: 20 },
  ]);

  /** The JSON text of a search's answer, which the owner serialised already. */
  const jsonOf = (answer: unknown): string => {
    if (!(answer instanceof EncodedAnswer)) throw new Error("not an encoded answer");
    return Buffer.from(answer.json).toString("utf8");
  };

  it("searches with a where query, a Riemann query, or tells the current time", async () => {
    const where = Buffer.from('[:= :host "a"]').toString("base64");
    expect(jsonOf(await answerQuery(stream, { kind: "search", query: where }, DEFAULT_STREAM_LIMITS))).toBe(
      '{"value":[{"host":"a","service":"cpu","time":10}]}',
    );
    expect(
      jsonOf(await answerQuery(stream, { kind: "riemann-search", query: 'service = "mem"' }, DEFAULT_STREAM_LIMITS)),
    ).toBe('{"value":[{"host":"b","service":"mem","time":20}]}');
    expect(await answerQuery(stream, { kind: "current-time" }, DEFAULT_STREAM_LIMITS)).toBe(20);
  });

  it("refuses an invalid query with a 400", () => {
    expect(() => answerQuery(stream, { kind: "search", query: "not base64 edn (" }, DEFAULT_STREAM_LIMITS)).toThrow(
      InvalidError,
    );
    expect(() => answerQuery(stream, { kind: "riemann-search", query: 42 }, DEFAULT_STREAM_LIMITS)).toThrow(
      InvalidError,
    );
  });

  it("refuses a search matching more than max-query-results with a 400 naming the bound", async () => {
    const limits = { ...DEFAULT_STREAM_LIMITS, queryResults: 1 };
    await expect(
      answerQuery(stream, { kind: "search", query: Buffer.from("[:true]").toString("base64") }, limits),
    ).rejects.toThrow("index search matches more than 1 events (streams.max-query-results)");
    // A Riemann input's own limit travels with its query.
    const two = jsonOf(await answerQuery(stream, { kind: "riemann-search", query: "true", limit: 2 }, limits));
    expect(JSON.parse(two).value).toHaveLength(2);
    // The answer's bytes are bounded as on one instance.
    const small = { ...DEFAULT_STREAM_LIMITS, queryBytes: 50 };
    await expect(
      answerQuery(stream, { kind: "search", query: Buffer.from("[:true]").toString("base64") }, small),
    ).rejects.toThrow("index search answer is larger than 50 bytes (streams.max-query-bytes)");
  });
});
