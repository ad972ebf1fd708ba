/**
 * Matching published events against subscribers' queries is bounded (channels.ts): a per-turn
 * budget of matching time, and a per-evaluation allowance of characters read by regular
 * expressions (condition.ts, matchWithin); beyond either, the subscriber misses the event, counted.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ChannelHub, type SubscriberSocket } from "../../src/streams/channels.js";
import { compileCondition, matchWithin, type Predicate, RegexAllowanceError } from "../../src/streams/condition.js";
import { parseEdn } from "../../src/streams/edn.js";
import { channelMetrics } from "../../src/streams/metrics.js";

/** A socket that counts the frames it is sent. */
class CountingSocket implements SubscriberSocket {
  bufferedAmount = 0;
  frames = 0;
  send(): void {
    this.frames++;
  }
  ping(): void {}
  close(): void {}
  terminate(): void {}
  on(): this {
    return this;
  }
}

const where = (condition: string) => compileCondition(parseEdn(condition), "query");
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function hub(options: { matchBudgetMs?: number; regexAllowance?: number; clock?: () => number }) {
  const registry = new Registry();
  const channels = new ChannelHub({ metrics: channelMetrics(registry, () => []), maxSubscribers: 100, ...options });
  const dropped = async () => {
    const metric = await registry.getSingleMetricAsString("stream_publish_dropped_total");
    const match = /stream_publish_dropped_total\{channel="c"\} (\d+)/.exec(metric);
    return match === null ? 0 : Number(match[1]);
  };
  return { channels, dropped };
}

describe("matching bounds of the channel hub", () => {
  it("stops matching for the rest of the turn once the budget is spent; subscribers without a query go on", async () => {
    let now = 0;
    const { channels, dropped } = hub({ matchBudgetMs: 20, clock: () => now });
    // Each evaluation of this query takes 15 ms of the fake clock.
    const slow: Predicate = () => {
      now += 15;
      return true;
    };
    const filtered = [new CountingSocket(), new CountingSocket()];
    const open = new CountingSocket();
    for (const socket of filtered) channels.subscribe("c", socket, slow);
    channels.subscribe("c", open);
    const publish = channels.publisher("c");
    for (let i = 0; i < 3; i++) publish({ n: i });
    // 15 ms, then 30 ms (over 20): the four evaluations after the second are skipped.
    expect(filtered.map((socket) => socket.frames).reduce((a, b) => a + b)).toBe(2);
    expect(open.frames).toBe(3);
    expect(await dropped()).toBe(4);
    await nextTurn();
    publish({ n: 3 });
    expect(filtered.map((socket) => socket.frames).reduce((a, b) => a + b)).toBe(4);
    channels.close();
  });

  it("stops an evaluation whose regular expressions read more than the allowance", async () => {
    const { channels, dropped } = hub({ regexAllowance: 10_000 });
    const patterns = Array.from({ length: 8 }, (_, i) => `[:regex :description ".*${i}"]`).join(" ");
    const many = new CountingSocket();
    const one = new CountingSocket();
    channels.subscribe("c", many, where(`[:or ${patterns}]`));
    channels.subscribe("c", one, where('[:regex :description ".*7"]'));
    const publish = channels.publisher("c");
    // 8 patterns over 2 000 characters: 16 000 to read, more than 10 000.
    publish({ description: `${"x".repeat(1999)}7` });
    expect([many.frames, one.frames]).toEqual([0, 1]);
    expect(await dropped()).toBe(1);
    // Short values are remembered, not counted.
    publish({ description: "7" });
    expect([many.frames, one.frames]).toEqual([1, 2]);
    channels.close();
  });
});

describe("matchWithin", () => {
  it("lets a query read as many characters as allowed, and stops it beyond", () => {
    const query = where('[:and [:regex :a "x*"] [:regex :b "y*"]]');
    const event = { a: "x".repeat(600), b: "y".repeat(600) };
    expect(matchWithin(query, event, 1200)).toBe(true);
    expect(() => matchWithin(query, event, 1199)).toThrow(new RegexAllowanceError(1199).message);
    // Outside matchWithin (a stream's own where), nothing is counted.
    expect(query(event)).toBe(true);
  });
});
