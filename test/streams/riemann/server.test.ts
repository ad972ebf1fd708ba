import { writeFileSync } from "node:fs";
import { connect as connectTcp, createServer, type Socket } from "node:net";
import { join } from "node:path";
import fc from "fast-check";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { Duration } from "../../../src/platform/duration.js";
import type { RiemannSettings } from "../../../src/streams/config.js";
import { parseEdn } from "../../../src/streams/edn.js";
import { StreamEngine } from "../../../src/streams/engine.js";
import type { RiemannClosure, RiemannMetrics, RiemannRefusal } from "../../../src/streams/metrics.js";
import { EVENTS_PER_SLICE } from "../../../src/streams/riemann/handler.js";
import { type EncodableEvent, encodeMsg } from "../../../src/streams/riemann/protocol.js";
import { CLOSE_GRACE_MS, RiemannServer } from "../../../src/streams/riemann/server.js";
import { generateCertificates, OPENSSL_MISSING } from "../../healthchecks/certificates.js";
import { frameOf, RiemannClient, withLength } from "../../support/riemann.js";
import { temporaryDirectory } from "../../support/temporary.js";
import { until } from "../../support/until.js";
import { recordingEngine } from "../harness.js";

const INDEX_ALL = "{:default true :actions {:action :index :params [[:host :service]]}}";

function recordingMetrics() {
  const counts = { connections: 0, ok: 0, error: 0, events: 0 };
  /** What the bounds did: connections refused and closed by reason, bytes held for clients. */
  const bounds = {
    refused: {} as Partial<Record<RiemannRefusal, number>>,
    closed: {} as Partial<Record<RiemannClosure, number>>,
    buffered: 0,
  };
  const metrics: RiemannMetrics = {
    connections: (delta) => {
      counts.connections += delta;
    },
    message: (outcome) => {
      counts[outcome] += 1;
    },
    events: (count) => {
      counts.events += count;
    },
    refused: (reason) => {
      bounds.refused[reason] = (bounds.refused[reason] ?? 0) + 1;
    },
    closed: (reason) => {
      bounds.closed[reason] = (bounds.closed[reason] ?? 0) + 1;
    },
    buffered: (delta) => {
      bounds.buffered += delta;
    },
  };
  return { counts, bounds, metrics };
}

/** A duration setting of `milliseconds`, as the configuration gives it. */
const ms = (milliseconds: number): Duration => ({ text: `${milliseconds}ms`, milliseconds });

/** Settings as the configuration gives them, on 127.0.0.1 and any port, with `changes`. */
function settingsOf(changes: Partial<RiemannSettings> = {}): RiemannSettings {
  return {
    enabled: true,
    host: "127.0.0.1",
    port: 0,
    "udp-port": undefined,
    "tls-cert": undefined,
    "tls-key": undefined,
    "tls-ca": undefined,
    "max-frame-size": 1024 * 1024,
    "max-connections": 1000,
    "max-connections-per-address": 50,
    "max-buffered-bytes": 256 * 1024 * 1024,
    "handshake-timeout": { text: "10s", milliseconds: 10_000 },
    "frame-timeout": { text: "30s", milliseconds: 30_000 },
    "max-query-results": 10_000,
    "query-stream": undefined,
    ...changes,
  };
}

const servers: RiemannServer[] = [];
const clients: RiemannClient[] = [];
const sockets: Socket[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/**
 * A server on 127.0.0.1, any port, over `engine`; `logs` collects its warnings.
 * @param frameTimeoutMs the frame deadline (default: the setting's)
 */
async function serve(engine: StreamEngine, settings: Partial<RiemannSettings> = {}, frameTimeoutMs?: number) {
  const { counts, bounds, metrics } = recordingMetrics();
  const logs: Array<{ msg: string }> = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => logs.push(JSON.parse(line)) });
  const server = new RiemannServer(
    settingsOf({ ...settings, ...(frameTimeoutMs === undefined ? {} : { "frame-timeout": ms(frameTimeoutMs) }) }),
    engine,
    { metrics, logger },
  );
  servers.push(server);
  const port = await server.listen();
  const connect = async (tls?: Parameters<typeof RiemannClient.connect>[1], localAddress?: string) => {
    const client = await RiemannClient.connect(port, tls, localAddress);
    clients.push(client);
    return client;
  };
  return { server, port, counts, bounds, logs, connect };
}

/**
 * A bare TCP connection to 127.0.0.1:`port` that keeps its side open when the server ends its own
 * (as a client that neither speaks nor closes), destroyed after the test.
 */
async function rawConnect(port: number): Promise<Socket> {
  const socket = connectTcp({ host: "127.0.0.1", port, allowHalfOpen: true });
  sockets.push(socket);
  socket.on("error", () => {});
  // Reads (and drops) what the server sends, so that its end is seen.
  socket.resume();
  await new Promise((resolve) => socket.once("connect", resolve));
  return socket;
}

/** Resolves when the server ended or closed `socket`; rejects after `timeoutMs`. */
async function serverEnded(socket: Socket, timeoutMs: number): Promise<void> {
  if (socket.readableEnded || socket.destroyed) return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the server did not close the socket within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    socket.once("end", done);
    socket.once("close", done);
  });
}

/** A server on 127.0.0.1, any port, over a recording engine with the given streams (EDN by name). */
async function start(
  streams: Record<string, string> = { main: INDEX_ALL },
  settings: Partial<RiemannSettings> = {},
  frameTimeoutMs?: number,
) {
  const recorder = recordingEngine();
  for (const [name, config] of Object.entries(streams)) recorder.engine.add(name, parseEdn(config), { kind: "api" });
  return { ...recorder, ...(await serve(recorder.engine, settings, frameTimeoutMs)) };
}

/**
 * An engine whose `tap` actions count what reaches them by name and call `onTap` with the name,
 * with the given streams (EDN by name).
 */
function tappingEngine(streams: Record<string, string>, onTap: (name: string) => void) {
  const tapped = new Map<string, number>();
  const engine = new StreamEngine({
    tap: (_stream, name) => {
      tapped.set(name, (tapped.get(name) ?? 0) + 1);
      onTap(name);
    },
  });
  for (const [name, config] of Object.entries(streams)) engine.add(name, parseEdn(config), { kind: "api" });
  return { engine, tapped };
}

const delay = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

const indexed = (engine: StreamEngine, stream = "main") => engine.get(stream)?.index.search(() => true) ?? [];

describe("the Riemann input over TCP", () => {
  it("pushes a message's events into the default streams and answers ok", async () => {
    const { engine, counts, connect } = await start();
    const client = await connect();
    const reply = await client.send({
      events: [
        { host: "a", service: "cpu", metricD: 0.5, time: 100, attributes: [{ key: "plugin", value: "cpu" }] },
        { host: "b", service: "cpu", metricSint64: 2, timeMicros: 101_500_000, tags: ["prod"] },
      ],
    });
    expect(reply).toEqual({ ok: true, events: [] });
    expect(indexed(engine)).toEqual([
      { host: "a", service: "cpu", metric: 0.5, time: 100, plugin: "cpu" },
      { host: "b", service: "cpu", metric: 2, time: 101.5, tags: ["prod"] },
    ]);
    expect(counts).toEqual({ connections: 1, ok: 1, error: 0, events: 2 });
    expect(await client.send({})).toEqual({ ok: true, events: [] });
    client.destroy();
    await until(async () => (counts.connections === 0 ? true : undefined), "the connection to be counted out");
  });

  it("routes by the stream attribute, `default` meaning the default streams", async () => {
    const { engine, connect, tap } = await start({
      main: INDEX_ALL,
      other: "{:actions {:action :tap :params [:other]}}",
    });
    const client = await connect();
    const routed = (host: string, stream?: string) => ({
      host,
      time: 1,
      ...(stream === undefined ? {} : { attributes: [{ key: "stream", value: stream }] }),
    });
    expect(
      await client.send({ events: [routed("a", "other"), routed("b"), routed("c", "default"), routed("d", "other")] }),
    ).toMatchObject({ ok: true });
    expect(tap("other")).toEqual([
      { host: "a", time: 1 },
      { host: "d", time: 1 },
    ]);
    expect(indexed(engine).map((event) => event.host)).toEqual(["b", "c"]);
  });

  it("answers a message for a stream owned by another instance once JetStream has it (cluster mode), or with an error", async () => {
    const { engine, connect } = await start({
      main: INDEX_ALL,
      other: "{:actions {:action :tap :params [:other]}}",
    });
    const forwarded: Array<{ name: string; hosts: unknown[] }> = [];
    let acknowledge: (() => void) | undefined;
    let failure: Error | undefined;
    engine.forwarder = {
      owns: (name) => name !== "other",
      forward: (name, events) => {
        forwarded.push({ name, hosts: events.map((event) => event.host) });
        if (failure !== undefined) return Promise.reject(failure);
        return new Promise((resolve) => {
          acknowledge = resolve;
        });
      },
      send: () => {},
      ask: async () => [],
    };
    const client = await connect();
    const routed = (host: string) => ({ host, time: 1, attributes: [{ key: "stream", value: "other" }] });
    let answered = false;
    const reply = client.send({ events: [{ host: "local", time: 1 }, routed("far")] }).then((value) => {
      answered = true;
      return value;
    });
    await until(async () => (acknowledge === undefined ? undefined : true), "the forward");
    await new Promise((resume) => setTimeout(resume, 50));
    expect(answered).toBe(false);
    acknowledge?.();
    expect(await reply).toMatchObject({ ok: true });
    expect(forwarded).toEqual([{ name: "other", hosts: ["far"] }]);
    expect(indexed(engine).map((event) => event.host)).toEqual(["local"]);

    failure = new Error("stream other is owned by another instance, and NATS is unreachable");
    expect(await client.send({ events: [routed("lost")] })).toMatchObject({
      ok: false,
      error: "stream other is owned by another instance, and NATS is unreachable",
    });
  });

  it("pushes none of a message's events when one names an unknown stream", async () => {
    const { engine, counts, connect } = await start();
    const client = await connect();
    const reply = await client.send({
      events: [
        { host: "a", time: 1 },
        { host: "b", time: 1, attributes: [{ key: "stream", value: "nope" }] },
      ],
    });
    expect(reply).toEqual({
      ok: false,
      error: 'unknown stream "nope": no event of the message was pushed',
      events: [],
    });
    expect(indexed(engine)).toEqual([]);
    expect(counts).toMatchObject({ ok: 0, error: 1, events: 0 });
    // The connection goes on.
    expect(await client.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
    expect(indexed(engine)).toHaveLength(1);
  });

  it("handles the messages of one connection in order, one reply each", async () => {
    const { connect, tap, counts } = await start({ ordered: "{:actions {:action :tap :params [:seen]}}" });
    const client = await connect();
    const count = 3_000;
    const frames = Array.from({ length: count }, (_, i) =>
      frameOf({ events: [{ metricSint64: i, attributes: [{ key: "stream", value: "ordered" }] }] }),
    );
    // In odd-sized slices, so that frames straddle TCP chunks.
    const bytes = Buffer.concat(frames);
    for (let offset = 0; offset < bytes.length; offset += 997) client.write(bytes.subarray(offset, offset + 997));
    const replies = [];
    for (let i = 0; i < count; i++) replies.push(await client.reply());
    expect(replies.every((reply) => reply.ok === true)).toBe(true);
    expect(tap("seen").map((event) => (event as { metric: number }).metric)).toEqual(
      Array.from({ length: count }, (_, i) => i),
    );
    expect(counts).toMatchObject({ ok: count, events: count });
  });

  it("handles a large message a slice per turn, keeping the connection's order and the loop free", async () => {
    const { connect, tap, counts } = await start({ ordered: "{:actions {:action :tap :params [:seen]}}" });
    const client = await connect();
    const routed = (i: number) => ({ metricSint64: i, attributes: [{ key: "stream", value: "ordered" }] });
    const large = 5 * EVENTS_PER_SLICE + 7;
    // Turns of the event loop counted while the large message is handled: it must not hold the loop.
    let turns = 0;
    let counting = true;
    const tick = () => {
      turns += 1;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    client.write(
      Buffer.concat([
        frameOf({ events: Array.from({ length: large }, (_, i) => routed(i)) }),
        frameOf({ events: [routed(large)] }),
      ]),
    );
    expect(await client.reply()).toEqual({ ok: true, events: [] });
    expect(await client.reply()).toEqual({ ok: true, events: [] });
    counting = false;
    expect(turns).toBeGreaterThanOrEqual(5);
    expect(tap("seen").map((event) => (event as { metric: number }).metric)).toEqual(
      Array.from({ length: large + 1 }, (_, i) => i),
    );
    expect(counts).toMatchObject({ ok: 2, events: large + 1 });
  });

  it("pushes none of a large message's events when its last one names an unknown stream", async () => {
    const { engine, connect, counts } = await start();
    const client = await connect();
    const events: EncodableEvent[] = Array.from({ length: 2 * EVENTS_PER_SLICE + 1 }, (_, i) => ({
      host: `h${i}`,
      time: 1,
    }));
    events[events.length - 1] = { host: "lost", time: 1, attributes: [{ key: "stream", value: "nope" }] };
    expect(await client.send({ events, query: "true" })).toEqual({
      ok: false,
      error: 'unknown stream "nope": no event of the message was pushed',
      events: [],
    });
    expect(indexed(engine)).toEqual([]);
    expect(counts).toMatchObject({ events: 0, error: 1 });
    // A large message and its query: the events first, then the query sees them.
    const fine = Array.from({ length: EVENTS_PER_SLICE + 1 }, (_, i) => ({ host: `h${i}`, service: "s", time: i }));
    const reply = await client.send({ events: fine, query: 'host = "h4096"' });
    expect(reply).toMatchObject({ ok: true, events: [{ host: "h4096", service: "s", time: 4096 }] });
    expect(indexed(engine)).toHaveLength(EVENTS_PER_SLICE + 1);
  });

  it("answers an error naming a stream removed while a large message was handled", async () => {
    // The first event's tap schedules the removal of `x` for the next turn: after the first slice
    // is pushed, before the second (setImmediate callbacks run in order, the handler's after it).
    const { engine, tapped } = tappingEngine(
      {
        trigger: "{:actions {:action :tap :params [:trigger]}}",
        x: "{:actions {:action :tap :params [:x]}}",
        y: "{:actions {:action :tap :params [:y]}}",
      },
      (name) => {
        if (name === "trigger") setImmediate(() => engine.remove("x"));
      },
    );
    const { connect, counts } = await serve(engine);
    const client = await connect();
    const to = (stream: string) => ({ time: 1, attributes: [{ key: "stream", value: stream }] });
    const events = [to("trigger"), ...Array.from({ length: 3 * EVENTS_PER_SLICE }, (_, i) => to(i % 2 ? "x" : "y"))];
    const reply = await client.send({ events, query: "true" });
    // x got its events of the first slice (every other one of the 4095 after the trigger), then was removed.
    const pushedToX = Math.floor((EVENTS_PER_SLICE - 1) / 2);
    expect(tapped.get("x")).toBe(pushedToX);
    expect(reply).toEqual({
      ok: false,
      error: `stream "x" was removed while the message was handled: ${(3 * EVENTS_PER_SLICE) / 2 - pushedToX} of its events were not pushed`,
      events: [],
    });
    // The other streams got all theirs.
    expect(tapped.get("y")).toBe((3 * EVENTS_PER_SLICE) / 2);
    expect(counts).toMatchObject({ ok: 0, error: 1, events: 1 + pushedToX + (3 * EVENTS_PER_SLICE) / 2 });
    // The connection goes on.
    expect(await client.send({ events: [to("y")] })).toMatchObject({ ok: true });
  });

  it("answers an error when a stream's own action removes another mid-message", async () => {
    const { engine, tapped } = tappingEngine(
      {
        trigger: "{:actions {:action :tap :params [:trigger]}}",
        x: "{:actions {:action :tap :params [:x]}}",
      },
      (name) => {
        if (name === "trigger") engine.remove("x");
      },
    );
    const { connect } = await serve(engine);
    const client = await connect();
    const to = (stream: string) => ({ time: 1, attributes: [{ key: "stream", value: stream }] });
    expect(await client.send({ events: [to("x"), to("trigger"), to("x"), to("x")] })).toEqual({
      ok: false,
      error: 'stream "x" was removed while the message was handled: 2 of its events were not pushed',
      events: [],
    });
    expect(tapped.get("x")).toBe(1);
  });

  it("stops reading a client that does not read its replies, and goes on when it does", async () => {
    const { engine, counts, connect } = await start();
    // 100 events of 1 KiB each: every query answer is about 100 KiB.
    engine.get("main")?.push(
      Array.from({ length: 100 }, (_, i) => ({
        host: `h${i}`,
        service: "s",
        time: i,
        description: "x".repeat(1024),
      })),
    );
    const client = await connect();
    client.socket.pause();
    const queries = 400;
    const query = frameOf({ query: "true" });
    for (let i = 0; i < queries; i++) client.write(query);
    // The server answers until the socket buffers are full, then waits for the client.
    let handled = -1;
    await until(async () => {
      const now = counts.ok;
      const stable = now === handled && now > 0;
      handled = now;
      await new Promise((resolve) => setTimeout(resolve, 200));
      return stable ? true : undefined;
    }, "the server to stop handling queries");
    expect(handled).toBeLessThan(queries);
    // What is waiting on the server's side is bounded by the socket buffers, not by the 40 MiB of answers.
    expect(handled * 100 * 1024).toBeLessThan(32 * 1024 * 1024);
    client.socket.resume();
    let events = 0;
    for (let i = 0; i < queries; i++) {
      const reply = await client.reply(15_000);
      expect(reply.ok).toBe(true);
      events += reply.events.length;
    }
    expect(events).toBe(queries * 100);
    expect(counts.ok).toBe(queries);
  });
});

describe("queries over the Riemann input", () => {
  it("asks the owner of a query stream another instance owns (cluster mode), and merges with the local index", async () => {
    const started = await populated();
    const asked: Array<{ name: string; query: string }> = [];
    started.engine.forwarder = {
      owns: (name) => name !== "second",
      forward: async () => {},
      send: () => {},
      ask: async (name, query) => {
        asked.push({ name, query: query.query });
        // What the owner's index holds: this instance's copy of `second` is not consulted.
        return [{ host: "remote-1", service: "mem", metric: 3, time: 5 }];
      },
    };
    const client = await started.connect();
    const reply = await client.send({ query: 'service = "mem" or service = "cpu"' });
    expect(asked).toEqual([{ name: "second", query: 'service = "mem" or service = "cpu"' }]);
    expect(reply.ok).toBe(true);
    expect(reply.events.map((event) => event.host)).toEqual(["remote-1", "web-2", "web-1"]);
    // An invalid query is refused here, without asking the owner.
    expect((await client.send({ query: "service =" })).ok).toBe(false);
    expect(asked).toHaveLength(1);
  });

  async function populated(settings: Partial<RiemannSettings> = {}) {
    const started = await start(
      {
        main: INDEX_ALL,
        second: "{:default true :actions {:action :index :params [[:host]]}}",
        other: "{:actions {:action :index :params [[:host]]}}",
      },
      settings,
    );
    started.engine.get("main")?.push([
      { host: "web-1", service: "cpu", metric: 0.95, time: 30, tags: ["prod"], state: "critical", plugin: "cpu" },
      { host: "web-2", service: "cpu", metric: 0.5, time: 10, state: "ok" },
      { host: "db-1", service: "disk", metric: 0, time: 20, description: "idle" },
    ]);
    started.engine.get("second")?.push([{ host: "web-3", service: "mem", metric: 7, time: 15 }]);
    started.engine.get("other")?.push([{ host: "elsewhere", time: 1 }]);
    return started;
  }

  it("searches the merged indexes of the default streams, sorted by time", async () => {
    const { connect } = await populated();
    const client = await connect();
    const hosts = async (query: string) => {
      const reply = await client.send({ query });
      expect(reply.ok, reply.error).toBe(true);
      return reply.events.map((event) => event.host);
    };
    expect(await hosts("true")).toEqual(["web-2", "web-3", "db-1", "web-1"]);
    expect(await hosts('service = "cpu" and metric > 0.9')).toEqual(["web-1"]);
    expect(await hosts('host =~ "web%"')).toEqual(["web-2", "web-3", "web-1"]);
    expect(await hosts('host ~= "b-[0-9]"')).toEqual(["web-2", "web-3", "db-1", "web-1"]);
    expect(await hosts('tagged "prod"')).toEqual(["web-1"]);
    expect(await hosts('state != "ok"')).toEqual(["web-3", "db-1", "web-1"]);
    expect(await hosts('not state = "ok" and metric')).toEqual(["web-3", "db-1", "web-1"]);
    expect(await hosts("metric = 0")).toEqual(["db-1"]);
    expect(await hosts('metric = "0"')).toEqual([]);
    expect(await hosts("description = null or time >= 20")).toEqual(["web-2", "web-3", "db-1", "web-1"]);
    expect(await hosts("(metric < 1 and time > 15) or false")).toEqual(["db-1", "web-1"]);
    expect(await hosts('plugin = "cpu"')).toEqual(["web-1"]);
  });

  it("answers events with their standard fields and string attributes", async () => {
    const { connect } = await populated();
    const client = await connect();
    const reply = await client.send({ query: 'host = "web-1"' });
    expect(reply).toEqual({
      ok: true,
      events: [
        {
          host: "web-1",
          service: "cpu",
          state: "critical",
          metricD: 0.95,
          metricF: expect.closeTo(0.95, 6),
          time: 30,
          timeMicros: 30_000_000,
          tags: ["prod"],
          attributes: [{ key: "plugin", value: "cpu" }],
        },
      ],
    });
  });

  it("searches query-stream when it is set", async () => {
    const { connect } = await populated({ "query-stream": "other" });
    const client = await connect();
    expect((await client.send({ query: "true" })).events.map((event) => event.host)).toEqual(["elsewhere"]);
    const missing = await populated({ "query-stream": "gone" });
    const lost = await missing.connect();
    expect(await lost.send({ query: "true" })).toEqual({
      ok: false,
      error: 'the query stream "gone" does not exist',
      events: [],
    });
  });

  it("runs a message's events before its query and answers both in one reply", async () => {
    const { connect } = await populated();
    const client = await connect();
    const reply = await client.send({
      events: [{ host: "new", service: "cpu", metricD: 0.99, time: 40 }],
      query: 'service = "cpu" and metric > 0.9',
    });
    expect(reply.ok).toBe(true);
    expect(reply.events.map((event) => event.host)).toEqual(["web-1", "new"]);
  });

  it("refuses a query matching more than max-query-results, naming the bound and the setting", async () => {
    // The default streams hold 4 events (3 in main, 1 in second).
    const { connect, counts } = await populated({ "max-query-results": 3 });
    const client = await connect();
    expect(await client.send({ query: "true" })).toEqual({
      ok: false,
      error: "query matches more than 3 events (streams.riemann.max-query-results)",
      events: [],
    });
    // As many as the limit is fine, and the connection goes on.
    expect((await client.send({ query: 'host =~ "web%"' })).events).toHaveLength(3);
    expect(counts).toMatchObject({ ok: 1, error: 1 });
    // The limit holds for query-stream too.
    const single = await populated({ "max-query-results": 2, "query-stream": "main" });
    const other = await single.connect();
    expect((await other.send({ query: "true" })).error).toBe(
      "query matches more than 2 events (streams.riemann.max-query-results)",
    );
    expect((await other.send({ query: 'service = "cpu"' })).events).toHaveLength(2);
  });

  it("answers an invalid query with its offset and keeps the connection", async () => {
    const { connect, counts } = await populated();
    const client = await connect();
    expect(await client.send({ query: 'host = "a" and' })).toEqual({
      ok: false,
      error: "invalid query at offset 14: expected a condition, a field name or a value, found end of query",
      events: [],
    });
    expect((await client.send({ query: 'host ~= "(a)\\\\1"' })).error).toMatch(
      /^invalid query at offset 8: invalid regular/,
    );
    expect((await client.send({ query: 'host = "web-2"' })).events).toHaveLength(1);
    expect(counts).toMatchObject({ error: 2 });
  });
});

describe("bad input", () => {
  it("answers an undecodable frame and keeps the connection", async () => {
    const { connect, counts } = await start();
    const client = await connect();
    client.write(withLength(Buffer.from([0x32, 0x10, 0x01, 0x02])));
    const reply = await client.reply();
    expect(reply.ok).toBe(false);
    expect(reply.error).toMatch(/^undecodable message: /);
    expect(await client.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
    expect(counts).toMatchObject({ ok: 1, error: 1 });
  });

  it("answers a frame over max-frame-size, then closes the connection", async () => {
    const { connect, counts, bounds } = await start(undefined, { "max-frame-size": 1000 });
    const client = await connect();
    client.write(withLength(encodeMsg({ events: [{ description: "x".repeat(2000) }] })));
    const reply = await client.reply();
    expect(reply).toEqual({
      ok: false,
      error:
        "frame of 2006 bytes is over the limit of 1000 bytes (streams.riemann.max-frame-size): closing the connection",
      events: [],
    });
    await client.closed;
    expect(counts).toMatchObject({ events: 0, error: 1 });
    expect(bounds.closed).toEqual({ "max-frame-size": 1 });
    await until(async () => (counts.connections === 0 ? true : undefined), "the connection to be counted out");
  });

  it("closes on garbage: an HTTP request reads as a huge length", async () => {
    const { connect } = await start();
    const client = await connect();
    client.write(Buffer.from("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    expect((await client.reply()).error).toMatch(/^frame of 1195725856 bytes is over the limit/);
    await client.closed;
  });

  it("answers a frame truncated by the client's end, then closes", async () => {
    const { connect, counts } = await start();
    const client = await connect();
    const frame = frameOf({ events: [{ host: "a", time: 1 }] });
    client.socket.end(frame.subarray(0, frame.length - 3));
    expect(await client.reply()).toEqual({
      ok: false,
      error: `truncated frame: the connection ended after ${frame.length - 3} bytes of ${frame.length - 4} bytes and its 4-byte length`,
      events: [],
    });
    await client.closed;
    expect(counts.events).toBe(0);
  });

  it("cleans up after a client that vanishes mid-frame", async () => {
    const { connect, counts, port } = await start();
    const client = await connect();
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(100_000);
    client.write(Buffer.concat([prefix, Buffer.alloc(5_000)]));
    await until(async () => (counts.connections === 1 ? true : undefined), "the connection");
    client.socket.resetAndDestroy();
    await until(async () => (counts.connections === 0 ? true : undefined), "the connection to be cleaned up");
    const next = await RiemannClient.connect(port);
    clients.push(next);
    expect(await next.send({})).toMatchObject({ ok: true });
  });

  it("closes a connection whose frame is not completed in time, with an error reply", async () => {
    const { connect, counts, bounds } = await start(undefined, {}, 200);
    const client = await connect();
    const frame = frameOf({ events: [{ host: "a", time: 1 }] });
    const started = Date.now();
    client.write(frame.subarray(0, frame.length - 1));
    expect(await client.reply()).toEqual({
      ok: false,
      error: "frame not completed within 200ms (streams.riemann.frame-timeout): closing the connection",
      events: [],
    });
    await client.closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(counts).toMatchObject({ ok: 0, error: 1, events: 0 });
    expect(bounds.closed).toEqual({ "frame-timeout": 1 });
    await until(async () => (counts.connections === 0 ? true : undefined), "the connection to be counted out");
  });

  it("does not extend a frame's deadline for a client that trickles its bytes", async () => {
    const { connect, counts } = await start(undefined, {}, 300);
    const client = await connect();
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(100_000);
    const started = Date.now();
    client.write(prefix);
    const trickle = setInterval(() => {
      if (!client.socket.destroyed && client.socket.writable) client.write(Buffer.alloc(1));
    }, 50);
    try {
      expect((await client.reply()).error).toBe(
        "frame not completed within 300ms (streams.riemann.frame-timeout): closing the connection",
      );
      await client.closed;
    } finally {
      clearInterval(trickle);
    }
    // Closed by the deadline of the first bytes, whatever came after them.
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(counts.error).toBe(1);
  });

  it("destroys a connection whose frame is not completed in time even when its client keeps its side open", async () => {
    const { port, counts, server } = await start(undefined, {}, 200);
    const socket = await rawConnect(port);
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(100_000);
    socket.write(Buffer.concat([prefix, Buffer.alloc(50_000)]));
    await until(async () => (server.buffered === 50_004 ? true : undefined), "the partial frame to be held");
    const started = Date.now();
    // The client reads the error reply and the server's end, and never ends its own side.
    await serverEnded(socket, 5_000);
    expect(server.buffered).toBe(0);
    await until(
      async () => (counts.connections === 0 ? true : undefined),
      "the connection to be destroyed",
      CLOSE_GRACE_MS + 3_000,
    );
    expect(Date.now() - started).toBeLessThan(CLOSE_GRACE_MS + 3_000);
    expect(socket.destroyed).toBe(false);
  });

  it("gives each frame its own deadline and keeps idle connections open", async () => {
    const { connect, counts, tap } = await start({ seen: "{:actions {:action :tap :params [:seen]}}" }, {}, 300);
    const client = await connect();
    const frame = (i: number) =>
      frameOf({ events: [{ metricSint64: i, attributes: [{ key: "stream", value: "seen" }] }] });
    const [first, second] = [frame(1), frame(2)];
    // Each frame completes within 300 ms of its first bytes, the two together take 400 ms.
    client.write(first.subarray(0, 5));
    await delay(200);
    client.write(Buffer.concat([first.subarray(5), second.subarray(0, 5)]));
    expect(await client.reply()).toEqual({ ok: true, events: [] });
    await delay(200);
    client.write(second.subarray(5));
    expect(await client.reply()).toEqual({ ok: true, events: [] });
    // Idle with nothing buffered, several deadlines long: still open.
    await delay(1_000);
    expect(
      await client.send({ events: [{ metricSint64: 3, attributes: [{ key: "stream", value: "seen" }] }] }),
    ).toEqual({
      ok: true,
      events: [],
    });
    expect(tap("seen")).toHaveLength(3);
    expect(counts).toMatchObject({ ok: 3, error: 0, connections: 1 });
  });

  it("survives random bytes in random chunks (fast-check, seeded)", async () => {
    const { port, counts } = await start(undefined, { "max-frame-size": 4096 });
    const seed = Number(process.env.FUZZ_SEED ?? 20_240_611);
    const chunks = fc.array(fc.uint8Array({ minLength: 0, maxLength: 300 }), { minLength: 1, maxLength: 8 });
    // Half the runs put a plausible length first, so that bytes reach the protobuf decoder.
    const framedGarbage = fc.uint8Array({ minLength: 0, maxLength: 600 }).map((body) => [withLength(body)]);
    try {
      await fc.assert(
        fc.asyncProperty(fc.oneof(chunks, framedGarbage), async (parts) => {
          const client = await RiemannClient.connect(port);
          clients.push(client);
          for (const part of parts) client.write(part);
          client.socket.end();
          await client.closed;
        }),
        { seed, numRuns: 60 },
      );
    } catch (error) {
      throw new Error(`fuzz failed with seed ${seed}: ${error}`);
    }
    await until(async () => (counts.connections === 0 ? true : undefined), "every connection to be cleaned up");
    const client = await RiemannClient.connect(port);
    clients.push(client);
    expect(await client.send({ events: [{ host: "after", time: 1 }] })).toMatchObject({ ok: true });
  });
});

describe("max-buffered-bytes", () => {
  /** The first `bytes` bytes of a frame that declares `declared` bytes of body. */
  const unfinished = (declared: number, bytes: number) => {
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(declared);
    return Buffer.concat([prefix, Buffer.alloc(bytes)]);
  };

  it("closes the connection whose unfinished frame waited longest, with an error reply, and serves the others", async () => {
    const limit = 1024 * 1024;
    const { connect, counts, bounds, server, engine } = await start(undefined, {
      "max-frame-size": limit,
      "max-buffered-bytes": limit,
    });
    const idle = await connect();
    const slow = await connect();
    const fast = await connect();
    slow.write(unfinished(1_000_000, 600_000));
    await until(async () => (server.buffered === 600_004 ? true : undefined), "the slow client's bytes");
    // About 930 kB of events: 600 kB held for the slow client and 500 kB of this one go over 1 MiB.
    const frame = frameOf({
      events: Array.from({ length: 3_000 }, (_, i) => ({ host: "h".repeat(300), service: `s${i}`, time: 1 })),
    });
    expect(frame.length).toBeLessThan(limit);
    fast.write(frame.subarray(0, 500_000));
    expect(await slow.reply()).toEqual({
      ok: false,
      error: `the input holds more than ${limit} bytes for its clients (streams.riemann.max-buffered-bytes) and this connection's unfinished frame waited longest: closing the connection`,
      events: [],
    });
    await slow.closed;
    expect(bounds.closed).toEqual({ "max-buffered-bytes": 1 });
    fast.write(frame.subarray(500_000));
    expect(await fast.reply()).toEqual({ ok: true, events: [] });
    expect(indexed(engine)).toHaveLength(3_000);
    expect(await idle.send({ events: [{ host: "idle", time: 2 }] })).toMatchObject({ ok: true });
    expect(server.buffered).toBe(0);
    expect(bounds.buffered).toBe(0);
    await until(async () => (counts.connections === 2 ? true : undefined), "the slow client to be counted out");
  });

  it("destroys a client that does not read its replies once they hold more than the limit", async () => {
    const { server, engine, connect, bounds, counts } = await start(undefined, { "max-buffered-bytes": 1024 * 1024 });
    // About 9 MB of answer: more than the loopback's socket buffers take.
    const description = "x".repeat(60_000);
    engine
      .get("main")
      ?.push(Array.from({ length: 150 }, (_, i) => ({ host: "h", service: `s${i}`, time: 1, description })));
    const client = await connect();
    client.socket.pause();
    client.write(frameOf({ query: "true" }));
    // The client does not read, so it does not see the end: the server's count shows it.
    await until(async () => (counts.connections === 0 ? true : undefined), "the connection to be destroyed", 5_000);
    expect(bounds.closed).toEqual({ "max-buffered-bytes": 1 });
    expect(server.buffered).toBe(0);
    const other = await connect();
    expect(await other.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
  });
});

describe("listening and closing", () => {
  it("rejects with the address when the port is taken", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const address = blocker.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    try {
      const { engine } = recordingEngine();
      const server = new RiemannServer(settingsOf({ port }), engine, {
        metrics: recordingMetrics().metrics,
        logger: pino({ level: "silent" }),
      });
      await expect(server.listen()).rejects.toThrow(`streams.riemann: cannot listen on 127.0.0.1:${port}: `);
      await server.close();
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it("closes connections beyond max-connections as they arrive", async () => {
    const { connect, counts } = await start(undefined, { "max-connections": 2 });
    const first = await connect();
    const second = await connect();
    await until(async () => (counts.connections === 2 ? true : undefined), "two connections");
    const third = await connect();
    await third.closed;
    expect(counts.connections).toBe(2);
    expect(await first.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
    second.destroy();
    await until(async () => (counts.connections === 1 ? true : undefined), "one connection");
    const fourth = await connect();
    expect(await fourth.send({ events: [{ host: "b", time: 2 }] })).toMatchObject({ ok: true });
  });

  it("closes connections beyond max-connections-per-address as they arrive, each address counted apart", async () => {
    const { connect, counts, bounds, logs } = await start(undefined, { "max-connections-per-address": 3 });
    const mine = [await connect(), await connect(), await connect()];
    await until(async () => (counts.connections === 3 ? true : undefined), "three connections");
    const fourth = await connect();
    const fifth = await connect();
    await Promise.all([fourth.closed, fifth.closed]);
    expect(counts.connections).toBe(3);
    expect(bounds.refused).toEqual({ "max-connections-per-address": 2 });
    // Logged once, not once per refusal.
    expect(logs.map((entry) => entry.msg)).toEqual([
      "riemann: connection refused, streams.riemann.max-connections-per-address reached (logged at most once a minute)",
    ]);
    // Another client (another loopback address) is served.
    const other = await connect(undefined, "127.0.0.2");
    expect(await other.send({ events: [{ host: "b", time: 2 }] })).toMatchObject({ ok: true });
    // The first ones are served, and a slot freed by one of them can be taken again.
    expect(await mine[0]?.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
    mine[1]?.destroy();
    await until(async () => (counts.connections === 3 ? true : undefined), "one connection fewer");
    const again = await connect();
    expect(await again.send({ events: [{ host: "c", time: 3 }] })).toMatchObject({ ok: true });
  });

  it("ends open connections on close, after the frame being handled", async () => {
    const { server, connect, counts } = await start();
    const first = await connect();
    const second = await connect();
    expect(await first.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
    // Half a frame: dropped, unanswered, when the server closes.
    second.write(frameOf({ events: [{ host: "b" }] }).subarray(0, 6));
    await until(async () => (counts.connections === 2 ? true : undefined), "both connections");
    await server.close();
    await Promise.all([first.closed, second.closed]);
    expect(counts.connections).toBe(0);
    expect(counts.events).toBe(1);
  });

  it("stops a large message at its next slice when the server closes, unanswered", async () => {
    let server: RiemannServer | undefined;
    let scheduled = false;
    // The first tap closes the server on the next turn: after the first slice is pushed, before the
    // second (afterEach awaits the close).
    const { engine, tapped } = tappingEngine({ seen: "{:actions {:action :tap :params [:seen]}}" }, () => {
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => void server?.close());
    });
    const served = await serve(engine);
    server = served.server;
    const client = await served.connect();
    client.write(
      frameOf({
        events: Array.from({ length: 5 * EVENTS_PER_SLICE }, () => ({
          attributes: [{ key: "stream", value: "seen" }],
        })),
      }),
    );
    await expect(client.reply()).rejects.toThrow("the connection closed before a reply");
    await client.closed;
    await until(async () => (served.counts.connections === 0 ? true : undefined), "the connection to be counted out");
    expect(tapped.get("seen")).toBe(EVENTS_PER_SLICE);
    // Nothing more is pushed afterwards either.
    await delay(50);
    expect(tapped.get("seen")).toBe(EVENTS_PER_SLICE);
    expect(served.counts).toMatchObject({ ok: 0, error: 0, events: EVENTS_PER_SLICE });
  });

  it("closes a connection whose client never reads within the grace period", async () => {
    const { server, engine, connect } = await start();
    engine.get("main")?.push([{ host: "big", service: "s", time: 1, description: "x".repeat(500_000) }]);
    const client = await connect();
    client.socket.pause();
    for (let i = 0; i < 100; i++) client.write(frameOf({ query: "true" }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe.skipIf(OPENSSL_MISSING !== undefined)("the Riemann input over TLS", () => {
  it("requires a client certificate signed by tls-ca", async () => {
    const certificates = generateCertificates();
    const { connect, port } = await start(undefined, {
      "tls-cert": certificates.serverCert,
      "tls-key": certificates.serverKey,
      "tls-ca": certificates.caCert,
    });
    const ca = certificates.read(certificates.caCert);
    const client = await connect({
      ca,
      cert: certificates.read(certificates.clientCert),
      key: certificates.read(certificates.clientKey),
    });
    expect(await client.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
    expect((await client.send({ query: 'host = "a"' })).events).toHaveLength(1);

    // Without a certificate the handshake fails (TLS 1.3 reports it on the first read).
    const refused = await RiemannClient.connect(port, { ca }).then(
      async (anonymous) => {
        clients.push(anonymous);
        anonymous.write(frameOf({}));
        return anonymous.reply(3_000).then(
          () => false,
          () => true,
        );
      },
      () => true,
    );
    expect(refused).toBe(true);
  });

  it("ends handshakes still in progress when it closes", async () => {
    const certificates = generateCertificates();
    const { server, port } = await start(undefined, {
      "tls-cert": certificates.serverCert,
      "tls-key": certificates.serverKey,
    });
    // A TCP connection that never starts its TLS handshake.
    const silent = connectTcp({ host: "127.0.0.1", port });
    await new Promise((resolve) => silent.once("connect", resolve));
    const ended = new Promise((resolve) => silent.once("close", resolve));
    silent.on("error", () => {});
    const started = Date.now();
    await server.close();
    await ended;
    expect(Date.now() - started).toBeLessThan(CLOSE_GRACE_MS + 1_000);
  });

  it("destroys sockets whose handshake times out, so that max-connections frees for real clients", async () => {
    const certificates = generateCertificates();
    const { connect, port, bounds } = await start(undefined, {
      "tls-cert": certificates.serverCert,
      "tls-key": certificates.serverKey,
      "max-connections": 20,
      "handshake-timeout": ms(300),
    });
    // Every slot taken by TCP connections that never start TLS; half of them ended their side (the
    // server's end of those sits in CLOSE-WAIT).
    const silent = await Promise.all(Array.from({ length: 20 }, () => rawConnect(port)));
    silent.forEach((socket, i) => {
      if (i % 2 === 1) socket.end();
    });
    // Each sees the server close its connection; none closes its own.
    await Promise.all(silent.map((socket) => serverEnded(socket, 5_000)));
    expect(bounds.refused).toEqual({ "handshake-timeout": 20 });
    const client = await connect({ ca: certificates.read(certificates.caCert) });
    expect(await client.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
  });

  it("destroys a socket whose handshake fails at once, before the handshake timeout", async () => {
    const certificates = generateCertificates();
    const { port, bounds } = await start(undefined, {
      "tls-cert": certificates.serverCert,
      "tls-key": certificates.serverKey,
    });
    const socket = await rawConnect(port);
    socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await serverEnded(socket, 3_000);
    expect(bounds.refused).toEqual({ "tls-handshake": 1 });
  });

  it("counts handshakes in progress against max-connections-per-address", async () => {
    const certificates = generateCertificates();
    const ca = certificates.read(certificates.caCert);
    const { connect, port, bounds } = await start(undefined, {
      "tls-cert": certificates.serverCert,
      "tls-key": certificates.serverKey,
      "max-connections-per-address": 2,
    });
    await rawConnect(port);
    await rawConnect(port);
    const refused = await RiemannClient.connect(port, { ca }).then(
      (client) => {
        clients.push(client);
        return false;
      },
      () => true,
    );
    expect(refused).toBe(true);
    expect(bounds.refused).toEqual({ "max-connections-per-address": 1 });
    const other = await connect({ ca }, "127.0.0.2");
    expect(await other.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
  });

  it("serves TLS without client certificates when tls-ca is not set", async () => {
    const certificates = generateCertificates();
    const { connect } = await start(undefined, {
      "tls-cert": certificates.serverCert,
      "tls-key": certificates.serverKey,
    });
    const client = await connect({ ca: certificates.read(certificates.caCert) });
    expect(await client.send({ events: [{ host: "a", time: 1 }] })).toMatchObject({ ok: true });
  });

  it("rejects with the file name when a TLS file is missing or invalid", async () => {
    const certificates = generateCertificates();
    const { engine } = recordingEngine();
    const options = { metrics: recordingMetrics().metrics, logger: pino({ level: "silent" }) };
    const base = settingsOf();
    const missing = join(temporaryDirectory(), "missing.pem");
    await expect(
      new RiemannServer({ ...base, "tls-cert": missing, "tls-key": certificates.serverKey }, engine, options).listen(),
    ).rejects.toThrow(`streams.riemann.tls-cert: cannot read ${missing}: ENOENT`);
    const garbage = join(temporaryDirectory(), "garbage.pem");
    writeFileSync(garbage, "not a certificate\n");
    await expect(
      new RiemannServer({ ...base, "tls-cert": certificates.serverCert, "tls-key": garbage }, engine, options).listen(),
    ).rejects.toThrow(`streams.riemann: invalid TLS files (tls-cert ${certificates.serverCert}, tls-key ${garbage}): `);
  });
});
