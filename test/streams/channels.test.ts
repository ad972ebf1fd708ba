/**
 * The channel hub with fake sockets (docs/streams.md, Publish and subscribe): publishing and query
 * filters, the slow subscriber rule on a fake clock, pings on fake timers, the subscriber limit,
 * close, metrics.
 */
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  ChannelHub,
  type ChannelHubOptions,
  CloseCode,
  defaultSubscriptionsPerClient,
  type SubscriberSocket,
} from "../../src/streams/channels.js";
import { Taps } from "../../src/streams/channels-tap.js";
import { compileCondition } from "../../src/streams/condition.js";
import { parseEdn } from "../../src/streams/edn.js";
import { StreamEngine } from "../../src/streams/engine.js";
import type { Event } from "../../src/streams/event.js";
import { channelMetrics } from "../../src/streams/metrics.js";

const MIB = 1024 * 1024;

/** A socket that records what the hub does to it; `pong()` and `disconnect()` play the client. */
class FakeSocket implements SubscriberSocket {
  bufferedAmount = 0;
  readonly frames: Buffer[] = [];
  pings = 0;
  closedWith: { code: number; reason: string } | undefined;
  terminated = false;
  readonly #listeners: Record<"pong" | "close", Array<() => void>> = { pong: [], close: [] };

  send(data: Buffer, options: { readonly binary: boolean }): void {
    if (options.binary) throw new Error("a binary frame was sent");
    this.frames.push(data);
  }
  ping(): void {
    this.pings++;
  }
  close(code: number, reason: string): void {
    this.closedWith = { code, reason };
  }
  terminate(): void {
    this.terminated = true;
  }
  on(event: "pong" | "close", listener: () => void): this {
    this.#listeners[event].push(listener);
    return this;
  }
  pong(): void {
    for (const listener of this.#listeners.pong) listener();
  }
  disconnect(): void {
    for (const listener of this.#listeners.close) listener();
  }
  /** The events received, parsed. */
  get events(): unknown[] {
    return this.frames.map((frame) => JSON.parse(frame.toString("utf8")));
  }
}

/** A socket that can cork, as a TCP connection can: frames sent while corked are held. */
class CorkingSocket extends FakeSocket {
  depth = 0;
  /** The frames of each write that reached the "kernel": one entry per uncork that flushed. */
  readonly writes: number[] = [];
  #held = 0;

  override send(data: Buffer, options: { readonly binary: boolean }): void {
    super.send(data, options);
    if (this.depth > 0) this.#held++;
    else this.writes.push(1);
  }
  cork(): void {
    this.depth++;
  }
  uncork(): void {
    this.depth--;
    if (this.depth === 0 && this.#held > 0) {
      this.writes.push(this.#held);
      this.#held = 0;
    }
  }
}

/** Resolves after the hub's flush (its `setImmediate`, queued before this one). */
const flushed = () => new Promise<void>((resolve) => setImmediate(resolve));

const where = (condition: string) => compileCondition(parseEdn(condition), "query");

describe("ChannelHub", () => {
  let registry: Registry;
  let now = 0;
  let hub: ChannelHub;

  function makeHub(options: Partial<ChannelHubOptions> = {}): ChannelHub {
    hub = new ChannelHub({
      metrics: channelMetrics(registry, () => hub.subscriberCounts()),
      maxSubscribers: 100,
      clock: () => now,
      ...options,
    });
    return hub;
  }
  async function metric(name: string, channel: string): Promise<number | undefined> {
    const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
    return values.find((value) => value.labels.channel === channel)?.value;
  }

  beforeEach(() => {
    registry = new Registry();
    now = 1_000_000;
  });
  afterEach(() => {
    hub?.close();
    vi.useRealTimers();
  });

  it("sends each event once as a text frame to every subscriber whose query matches, lists included", async () => {
    makeHub();
    const all = new FakeSocket();
    const high = new FakeSocket();
    const elsewhere = new FakeSocket();
    hub.subscribe("alerts", all);
    hub.subscribe("alerts", high, where("[:> :metric 10]"));
    hub.subscribe("other", elsewhere);
    expect(hub.size).toBe(3);
    const publish = hub.publisher("alerts");

    const low: Event = { host: "a", metric: 5 };
    const high20: Event = { host: "b", metric: 20, tags: ["x"], text: "é \ud800" };
    publish(low);
    publish([high20]);
    publish([]);

    expect(all.events).toEqual([low, high20]);
    expect(high.events).toEqual([high20]);
    expect(elsewhere.frames).toEqual([]);
    // Serialised once: both subscribers got the same Buffer.
    expect(high.frames[0]).toBe(all.frames[1]);
    // Valid UTF-8, as a text frame needs (RFC 6455 §5.6): JSON escapes the lone surrogate.
    expect(new TextDecoder("utf-8", { fatal: true }).decode(all.frames[1])).toContain("é \\ud800");

    expect(await metric("stream_published_events_total", "alerts")).toBe(2);
    expect(await metric("stream_subscribers", "alerts")).toBe(2);
    expect(await metric("stream_subscribers", "other")).toBe(1);
    expect([...hub.subscriberCounts()].sort()).toEqual([
      ["alerts", 2],
      ["other", 1],
    ]);
  });

  it("costs a map lookup when nobody listens, reaches later subscribers, and makes series only when publishing", async () => {
    makeHub();
    const publish = hub.publisher("late");
    publish({ host: "a" });
    expect(await metric("stream_published_events_total", "late")).toBeUndefined();
    const socket = new FakeSocket();
    hub.subscribe("late", socket);
    // Subscribing alone makes no series: any client may name any channel.
    expect(await metric("stream_published_events_total", "late")).toBeUndefined();
    expect(await metric("stream_publish_dropped_total", "late")).toBeUndefined();
    publish({ host: "b" });
    expect(socket.events).toEqual([{ host: "b" }]);
    expect(await metric("stream_published_events_total", "late")).toBe(1);
  });

  it("forgets a subscriber when its socket closes, and a channel once empty", async () => {
    makeHub();
    const first = new FakeSocket();
    const second = new FakeSocket();
    const third = new FakeSocket();
    for (const socket of [first, second, third]) hub.subscribe("c", socket);
    second.disconnect();
    second.disconnect();
    expect(hub.size).toBe(2);
    hub.publisher("c")({ n: 1 });
    expect(first.events).toEqual([{ n: 1 }]);
    expect(second.events).toEqual([]);
    expect(third.events).toEqual([{ n: 1 }]);
    first.disconnect();
    third.disconnect();
    expect(hub.size).toBe(0);
    expect([...hub.subscriberCounts()]).toEqual([]);
    expect(await metric("stream_subscribers", "c")).toBeUndefined();
  });

  it("skips an event that is not JSON, counted once, and sends the rest of the list", async () => {
    makeHub();
    const socket = new FakeSocket();
    hub.subscribe("c", socket);
    const cyclic: Event = { host: "loop" };
    cyclic.self = cyclic;
    expect(() => hub.publisher("c")([{ n: 1 }, cyclic, { n: 2 }])).not.toThrow();
    expect(socket.events).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await metric("stream_publish_dropped_total", "c")).toBe(1);
  });

  it("corks sockets until the loop's check phase, so a batch leaves in one write per subscriber", async () => {
    makeHub();
    const corking = new CorkingSocket();
    const plain = new FakeSocket();
    hub.subscribe("c", corking);
    hub.subscribe("c", plain);
    const publish = hub.publisher("c");
    publish({ n: 1 });
    publish([{ n: 2 }, { n: 3 }]);
    expect(corking.depth).toBe(1);
    expect(corking.writes).toEqual([]);
    await flushed();
    expect(corking.depth).toBe(0);
    expect(corking.writes).toEqual([3]);
    expect(corking.events).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(plain.events).toEqual(corking.events);

    // A large batch is written in chunks of about 64 KiB rather than held until the flush.
    publish({ n: 4 });
    corking.bufferedAmount = 64 * 1024;
    publish({ n: 5 });
    expect(corking.writes).toEqual([3, 1]);
    // The kernel took what was held.
    corking.bufferedAmount = 0;
    publish({ n: 6 });
    await flushed();
    expect(corking.writes).toEqual([3, 1, 2]);
    expect(corking.depth).toBe(0);
  });

  it("uncorks a subscriber closed in the middle of a batch, so its close frame leaves", async () => {
    makeHub({ slowCloseMs: 0 });
    const corking = new CorkingSocket();
    hub.subscribe("c", corking);
    const publish = hub.publisher("c");
    publish({ n: 1 });
    corking.bufferedAmount = 2 * MIB;
    publish({ n: 2 });
    publish({ n: 3 });
    expect(corking.closedWith?.code).toBe(CloseCode.policyViolation);
    await flushed();
    expect(corking.depth).toBe(0);
  });

  describe("slow subscribers", () => {
    it("miss events while their buffer is over the limit, counted, and get them again once under", async () => {
      makeHub();
      const slow = new FakeSocket();
      const fast = new FakeSocket();
      hub.subscribe("c", slow);
      hub.subscribe("c", fast);
      const publish = hub.publisher("c");
      slow.bufferedAmount = MIB;
      publish({ n: 1 });
      slow.bufferedAmount = MIB + 1;
      publish({ n: 2 });
      publish({ n: 3 });
      slow.bufferedAmount = 10;
      now += 40_000;
      publish({ n: 4 });
      expect(slow.events).toEqual([{ n: 1 }, { n: 4 }]);
      expect(fast.events).toHaveLength(4);
      expect(await metric("stream_publish_dropped_total", "c")).toBe(2);
      // Under the limit again, the 30 s count started over: not closed.
      expect(slow.closedWith).toBeUndefined();
    });

    it("are closed with 1008 once over the limit for 30 s", async () => {
      makeHub();
      const slow = new FakeSocket();
      hub.subscribe("c", slow);
      const publish = hub.publisher("c");
      slow.bufferedAmount = 2 * MIB;
      publish({ n: 1 });
      now += 29_999;
      publish({ n: 2 });
      expect(slow.closedWith).toBeUndefined();
      now += 1;
      publish({ n: 3 });
      expect(slow.closedWith).toEqual({ code: CloseCode.policyViolation, reason: expect.stringContaining("too slow") });
      expect(hub.size).toBe(0);
      publish({ n: 4 });
      expect(await metric("stream_publish_dropped_total", "c")).toBe(3);
      expect(slow.frames).toEqual([]);
    });

    it("are closed by the timer when nothing is published, and the limit and delay are options", () => {
      vi.useFakeTimers();
      makeHub({ bufferLimitBytes: 100, slowCloseMs: 5_000, pingIntervalMs: 1_000 });
      const slow = new FakeSocket();
      hub.subscribe("c", slow);
      slow.bufferedAmount = 101;
      for (let second = 0; second < 5; second++) {
        now += 1_000;
        vi.advanceTimersByTime(1_000);
        slow.pong();
      }
      expect(slow.closedWith).toBeUndefined();
      now += 1_000;
      vi.advanceTimersByTime(1_000);
      expect(slow.closedWith?.code).toBe(CloseCode.policyViolation);
    });
  });

  describe("pings", () => {
    it("pings every 30 s from one timer for the hub and terminates a subscriber that did not answer", () => {
      vi.useFakeTimers();
      makeHub();
      expect(vi.getTimerCount()).toBe(0);
      const answering = new FakeSocket();
      const silent = new FakeSocket();
      hub.subscribe("a", answering);
      hub.subscribe("b", silent);
      expect(vi.getTimerCount()).toBe(1);

      vi.advanceTimersByTime(29_999);
      expect(answering.pings + silent.pings).toBe(0);
      vi.advanceTimersByTime(1);
      expect([answering.pings, silent.pings]).toEqual([1, 1]);
      answering.pong();

      vi.advanceTimersByTime(30_000);
      expect(answering.pings).toBe(2);
      expect(answering.terminated).toBe(false);
      expect(silent.terminated).toBe(true);
      expect(silent.pings).toBe(1);
      expect([...hub.subscriberCounts()]).toEqual([["a", 1]]);
      hub.publisher("b")({ n: 1 });
      expect(silent.frames).toEqual([]);
    });
  });

  it("closes with 1013 beyond maxSubscribers, and says so beforehand", () => {
    makeHub({ maxSubscribers: 2 });
    hub.subscribe("a", new FakeSocket());
    expect(hub.hasRoom()).toBe(true);
    const second = new FakeSocket();
    hub.subscribe("b", second);
    expect(hub.hasRoom()).toBe(false);
    const third = new FakeSocket();
    hub.subscribe("a", third);
    expect(third.closedWith?.code).toBe(CloseCode.tryAgainLater);
    expect(hub.size).toBe(2);
    second.disconnect();
    expect(hub.hasRoom()).toBe(true);
  });

  describe("the bound per client", () => {
    const token = (id: string) => ({ kind: "token", id }) as const;
    const address = (id: string) => ({ kind: "address", id }) as const;
    async function refused(bound: string): Promise<number | undefined> {
      const values = (await registry.getSingleMetric("stream_subscriptions_refused_total")?.get())?.values ?? [];
      return values.find((value) => value.labels.bound === bound)?.value;
    }

    it("is a quarter of maxSubscribers by default, at most 100 and at least 1", () => {
      expect(defaultSubscriptionsPerClient(10_000)).toBe(100);
      expect(defaultSubscriptionsPerClient(400)).toBe(100);
      expect(defaultSubscriptionsPerClient(399)).toBe(99);
      expect(defaultSubscriptionsPerClient(8)).toBe(2);
      expect(defaultSubscriptionsPerClient(3)).toBe(1);
      expect(defaultSubscriptionsPerClient(1)).toBe(1);
      makeHub({ maxSubscribers: 8 });
      const sockets = [new FakeSocket(), new FakeSocket(), new FakeSocket()];
      for (const socket of sockets) hub.subscribe("a", socket, undefined, address("10.0.0.1"));
      expect(sockets.map((socket) => socket.closedWith?.code)).toEqual([undefined, undefined, 1008]);
    });

    it("closes a client's subscription beyond it with 1008 naming the bound, counting every channel", async () => {
      makeHub({ maxSubscriptionsPerClient: 2 });
      const first = new FakeSocket();
      hub.subscribe("a", first, undefined, token("t1"));
      hub.subscribe("b", new FakeSocket(), undefined, token("t1"));
      const third = new FakeSocket();
      hub.subscribe("c", third, undefined, token("t1"));
      expect(third.closedWith).toEqual({
        code: CloseCode.policyViolation,
        reason: "too many subscriptions for this token: at most 2 (streams.max-subscriptions-per-client)",
      });
      expect(hub.size).toBe(2);
      // Other clients are counted apart, a token and an address of the same id too.
      const others = [new FakeSocket(), new FakeSocket(), new FakeSocket(), new FakeSocket()];
      hub.subscribe("a", others[0] as FakeSocket, undefined, token("t2"));
      hub.subscribe("a", others[1] as FakeSocket, undefined, address("t1"));
      hub.subscribe("a", others[2] as FakeSocket, undefined, address("t1"));
      hub.subscribe("a", others[3] as FakeSocket, undefined, address("t1"));
      expect(others.map((socket) => socket.closedWith?.reason)).toEqual([
        undefined,
        undefined,
        undefined,
        "too many subscriptions from this client address: at most 2 (streams.max-subscriptions-per-client)",
      ]);
      expect(await refused("max-subscriptions-per-client")).toBe(2);
      // Once one closes, the client has room again; once all close, it is forgotten.
      first.disconnect();
      first.disconnect();
      const again = new FakeSocket();
      hub.subscribe("c", again, undefined, token("t1"));
      expect(again.closedWith).toBeUndefined();
      const last = new FakeSocket();
      hub.subscribe("c", last, undefined, token("t1"));
      expect(last.closedWith?.code).toBe(1008);
      expect(hub.size).toBe(5);
    });

    it("is freed by every way a subscriber leaves: slow, silent, server stop", () => {
      vi.useFakeTimers();
      makeHub({ maxSubscriptionsPerClient: 1, pingIntervalMs: 1_000 });
      const silent = new FakeSocket();
      hub.subscribe("a", silent, undefined, address("x"));
      vi.advanceTimersByTime(2_000);
      expect(silent.terminated).toBe(true);
      const next = new FakeSocket();
      hub.subscribe("a", next, undefined, address("x"));
      expect(next.closedWith).toBeUndefined();
      hub.close();
      expect(hub.size).toBe(0);
    });
  });

  it("closes every subscriber with 1001 on close, stops its timer and refuses later subscriptions", () => {
    vi.useFakeTimers();
    makeHub();
    const sockets = [new FakeSocket(), new FakeSocket(), new FakeSocket()];
    for (const [index, socket] of sockets.entries()) hub.subscribe(index < 2 ? "a" : "b", socket);
    hub.close();
    for (const socket of sockets) expect(socket.closedWith).toEqual({ code: 1001, reason: "server stopping" });
    expect(vi.getTimerCount()).toBe(0);
    expect(hub.size).toBe(0);
    expect(hub.hasRoom()).toBe(false);
    const late = new FakeSocket();
    hub.subscribe("a", late);
    expect(late.closedWith?.code).toBe(1001);
    expect(hub.size).toBe(0);
    hub.close();
  });
});

describe("stream taps on the hub", () => {
  it("start with the first watcher, stop with the last, and drop (counted) what a slow watcher cannot take", async () => {
    const registry = new Registry();
    let engine: StreamEngine | undefined;
    const taps = new Taps(
      () => hub,
      () => {
        if (engine === undefined) throw new Error("no engine yet");
        return engine;
      },
    );
    const hub: ChannelHub = new ChannelHub({
      metrics: channelMetrics(registry, () => hub.subscriberCounts()),
      maxSubscribers: 10,
      onActivity: (channel, active) => taps.activity(channel, active),
    });
    engine = new StreamEngine({ tapSink: (stream, point) => taps.sinkFor(stream, point) });
    const stream = engine.add(
      "s",
      parseEdn('{:actions {:action :increment :tap-point "inc" :children [{:action :sdo}]}}'),
      {
        kind: "api",
      },
    );
    const dropped = async () =>
      (await registry.getSingleMetric("stream_publish_dropped_total")?.get())?.values.find(
        (value) => value.labels.channel === "tap/s",
      )?.value;

    const entry = new FakeSocket();
    const inc = new FakeSocket();
    hub.subscribe(taps.channelOf("s", undefined), entry);
    hub.subscribe(taps.channelOf("s", "inc"), inc);
    expect(() => taps.channelOf("s", "nope")).toThrow('stream s has no :tap-point "nope"');
    expect(() => taps.channelOf("t", undefined)).toThrow("stream t not found");
    stream.push([{ metric: 1 }]);
    expect(entry.events).toEqual([{ metric: 1 }]);
    expect(inc.events).toEqual([{ metric: 2 }]);

    // Over the buffer limit: missed and counted, nothing buffered.
    entry.bufferedAmount = 2 * MIB;
    stream.push([{ metric: 5 }, { metric: 6 }]);
    expect(entry.events).toHaveLength(1);
    expect(await dropped()).toBe(2);

    // The last watcher gone: the stream's tap stops (watch() sets no sink), a new one starts it again.
    entry.disconnect();
    expect(hub.hasSubscribers("tap/s")).toBe(false);
    expect(taps.sinkFor("s", undefined)).toBeUndefined();
    stream.push([{ metric: 7 }]);
    const again = new FakeSocket();
    hub.subscribe("tap/s", again);
    stream.push([{ metric: 8 }]);
    expect(again.events).toEqual([{ metric: 8 }]);
    hub.close();
  });
});
