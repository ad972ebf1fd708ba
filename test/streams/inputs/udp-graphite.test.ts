/**
 * The Riemann UDP input and the Graphite plaintext input (docs/inputs.md) with real sockets on
 * loopback: node `dgram` sending encoded Riemann messages, node `net` sending Graphite lines, good
 * and bad.
 */
import { createSocket } from "node:dgram";
import { connect, type Socket } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { compileLinearRegex } from "../../../src/platform/regex.js";
import type { GraphiteSettings } from "../../../src/streams/config.js";
import { parseEdn } from "../../../src/streams/edn.js";
import type { StreamEngine } from "../../../src/streams/engine.js";
import { graphiteEvent } from "../../../src/streams/graphite/line.js";
import { GraphiteServer } from "../../../src/streams/graphite/server.js";
import type { DatagramOutcome, GraphiteClosure, RiemannMetrics } from "../../../src/streams/metrics.js";
import { RiemannHandler } from "../../../src/streams/riemann/handler.js";
import { encodeMsg } from "../../../src/streams/riemann/protocol.js";
import { RiemannUdpServer } from "../../../src/streams/riemann/udp.js";
import { until } from "../../support/until.js";
import { recordingEngine } from "../harness.js";

const INDEX_ALL = "{:default true :actions {:action :index :params [[:host :service]]}}";
const logger = pino({ level: "silent" });

/** An engine with the streams given (EDN by name). */
function engineWith(streams: Record<string, string> = { main: INDEX_ALL }): StreamEngine {
  const { engine } = recordingEngine();
  for (const [name, config] of Object.entries(streams)) engine.add(name, parseEdn(config), { kind: "api" });
  return engine;
}

const indexed = (engine: StreamEngine, stream = "main") => engine.get(stream)?.index.search(() => true) ?? [];

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe("the Riemann input over UDP", () => {
  async function serveUdp(engine: StreamEngine) {
    const outcomes: Record<DatagramOutcome, number> = { ok: 0, error: 0, busy: 0 };
    const messages = { ok: 0, error: 0 };
    const metrics: RiemannMetrics = {
      connections: () => {},
      message: (outcome) => {
        messages[outcome]++;
      },
      events: () => {},
      refused: () => {},
      closed: () => {},
      buffered: () => {},
    };
    const handler = new RiemannHandler({ "query-stream": undefined, "max-query-results": undefined }, engine, metrics);
    const server = new RiemannUdpServer({
      host: "127.0.0.1",
      port: 0,
      handler,
      metrics: (outcome) => {
        outcomes[outcome]++;
      },
      logger,
    });
    const port = await server.listen();
    closers.push(() => server.close());
    const client = createSocket("udp4");
    closers.push(() => {
      client.close();
    });
    const send = (datagram: Uint8Array) =>
      new Promise<void>((resolve, reject) =>
        client.send(datagram, port, "127.0.0.1", (error) => (error ? reject(error) : resolve())),
      );
    return { outcomes, messages, send };
  }

  it("maps a datagram's events as over TCP, without a reply", async () => {
    const engine = engineWith({ main: INDEX_ALL, other: "{:actions {:action :index :params [[:host]]}}" });
    const { outcomes, send } = await serveUdp(engine);
    await send(
      encodeMsg({
        events: [
          {
            host: "web-1",
            service: "cpu",
            state: "ok",
            description: "fine",
            tags: ["prod"],
            ttl: 60,
            metricD: 0.5,
            timeMicros: 1_700_000_000_250_000,
            attributes: [{ key: "dc", value: "eu" }],
          },
          { host: "web-2", service: "load", metricSint64: 3 },
          { host: "routed", service: "x", attributes: [{ key: "stream", value: "other" }] },
        ],
      }),
    );
    await until(async () => (outcomes.ok === 1 ? true : undefined), "outcomes.ok === 1");
    expect(indexed(engine)).toEqual(
      expect.arrayContaining([
        {
          host: "web-1",
          service: "cpu",
          state: "ok",
          description: "fine",
          tags: ["prod"],
          ttl: 60,
          metric: 0.5,
          time: 1_700_000_000.25,
          dc: "eu",
        },
        expect.objectContaining({ host: "web-2", service: "load", metric: 3 }),
      ]),
    );
    expect(indexed(engine)).toHaveLength(2);
    expect(indexed(engine, "other").map((event) => event.host)).toEqual(["routed"]);
  });

  it("drops and counts malformed datagrams and unknown streams, and keeps serving", async () => {
    const engine = engineWith();
    const { outcomes, messages, send } = await serveUdp(engine);
    await send(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]));
    await send(Buffer.from("not protobuf at all"));
    await send(encodeMsg({ events: [{ host: "lost", attributes: [{ key: "stream", value: "nope" }] }] }));
    await send(encodeMsg({ events: [{ host: "after", service: "s" }], query: { string: "true" } }));
    await until(
      async () => (outcomes.ok + outcomes.error === 4 ? true : undefined),
      "outcomes.ok + outcomes.error === 4",
    );
    expect(outcomes).toEqual({ ok: 1, error: 3, busy: 0 });
    expect(messages).toEqual({ ok: 1, error: 3 });
    expect(indexed(engine).map((event) => event.host)).toEqual(["after"]);
  });

  it("refuses to start on a port in use, naming the setting", async () => {
    const taken = createSocket("udp4");
    closers.push(() => {
      taken.close();
    });
    await new Promise<void>((resolve) => taken.bind(0, "127.0.0.1", () => resolve()));
    const port = taken.address().port;
    const handler = { handle: () => Buffer.alloc(0) };
    const server = new RiemannUdpServer({ host: "127.0.0.1", port, handler, metrics: () => {}, logger });
    await expect(server.listen()).rejects.toThrow(`streams.riemann.udp-port: cannot listen on 127.0.0.1:${port}: `);
  });

  it("handles a datagram of more events than a slice", async () => {
    const engine = engineWith();
    const { outcomes, send } = await serveUdp(engine);
    const events = Array.from({ length: 5000 }, (_, i) => ({ host: `h${i}` }));
    const datagram = encodeMsg({ events });
    expect(datagram.length).toBeLessThan(65_507);
    await send(datagram);
    await until(async () => (outcomes.ok === 1 ? true : undefined), "outcomes.ok === 1");
    expect(indexed(engine)).toHaveLength(5000);
  });
});

describe("Graphite lines", () => {
  it.each<[string, Record<string, unknown> | undefined]>([
    ["servers.web-1.cpu.load 0.5 1700000000", { service: "servers.web-1.cpu.load", metric: 0.5, time: 1_700_000_000 }],
    ["a.b -3 1700000000.5\r", { service: "a.b", metric: -3, time: 1_700_000_000.5 }],
    ["a.b\t1e3\t1700000000", { metric: 1000 }],
    ["  a.b   1   2  ", { service: "a.b", metric: 1, time: 2 }],
    ["a.b 1", undefined],
    ["a.b 1 2 3", undefined],
    ["a.b nan 2", undefined],
    ["a.b inf 2", undefined],
    ["a.b 0x10 2", undefined],
    ["a.b 1 -5", undefined],
    ["a.b 1 N", undefined],
    ["", undefined],
  ])("%j", (line, expected) => {
    const event = graphiteEvent(line, "10.0.0.1", undefined);
    if (expected === undefined) expect(event).toBeUndefined();
    else expect(event).toMatchObject({ host: "10.0.0.1", ...expected });
  });

  it("takes the host from host-pattern's first group, else the peer", () => {
    const pattern = compileLinearRegex("^servers\\.([^.]+)\\.");
    expect(graphiteEvent("servers.web-1.cpu 1 2", "peer", pattern)?.host).toBe("web-1");
    expect(graphiteEvent("other.web-1.cpu 1 2", "peer", pattern)?.host).toBe("peer");
    expect(graphiteEvent("x 1 2", "peer", compileLinearRegex("(y)?x"))?.host).toBe("peer");
  });
});

/** Settings as the configuration gives them, on 127.0.0.1 and any port, with `changes`. */
function graphiteSettings(changes: Partial<GraphiteSettings> = {}): GraphiteSettings {
  return {
    enabled: true,
    host: "127.0.0.1",
    port: 0,
    stream: undefined,
    "host-pattern": undefined,
    "max-connections": 100,
    "max-line-length": 4096,
    ...changes,
  };
}

describe("the Graphite plaintext input", () => {
  async function serveGraphite(engine: StreamEngine, settings: Partial<GraphiteSettings> = {}) {
    const counts = { connections: 0, ok: 0, malformed: 0 };
    const closed: Partial<Record<GraphiteClosure, number>> = {};
    const server = new GraphiteServer(graphiteSettings(settings), engine, {
      metrics: {
        connections: (delta) => {
          counts.connections += delta;
        },
        lines: (outcome, count) => {
          counts[outcome] += count;
        },
        closed: (reason) => {
          closed[reason] = (closed[reason] ?? 0) + 1;
        },
      },
      logger,
    });
    const port = await server.listen();
    closers.push(() => server.close());
    const open = async () => {
      const socket = connect({ host: "127.0.0.1", port });
      closers.push(() => {
        socket.destroy();
      });
      socket.on("error", () => {});
      await new Promise((resolve) => socket.once("connect", resolve));
      return socket;
    };
    return { counts, closed, open };
  }

  const ended = (socket: Socket) =>
    new Promise<void>((resolve) => {
      if (socket.destroyed) resolve();
      else socket.once("close", () => resolve());
    });

  it("pushes one event per line, lines split across writes, host from the peer", async () => {
    const engine = engineWith();
    const { counts, open } = await serveGraphite(engine);
    const socket = await open();
    socket.write("a.cpu 1.5 1700000000\r\nb.cp");
    await until(async () => (counts.ok === 1 ? true : undefined), "counts.ok === 1");
    socket.write("u 2 1700000001\n");
    await until(async () => (counts.ok === 2 ? true : undefined), "counts.ok === 2");
    expect(indexed(engine)).toEqual([
      { host: "127.0.0.1", service: "a.cpu", metric: 1.5, time: 1_700_000_000 },
      { host: "127.0.0.1", service: "b.cpu", metric: 2, time: 1_700_000_001 },
    ]);
    expect(counts.connections).toBe(1);
  });

  it("skips and counts malformed lines and goes on; sends to the configured stream with host-pattern", async () => {
    const engine = engineWith({ main: INDEX_ALL, graphite: INDEX_ALL.replace(":default true ", "") });
    const { counts, open } = await serveGraphite(engine, {
      stream: "graphite",
      "host-pattern": "^servers\\.([^.]+)\\.",
    });
    const socket = await open();
    socket.write("garbage\nservers.web-7.load 0.25 10\n\u0000\u0001\u0002 x y\n\nother.x 1 20\n");
    await until(async () => (counts.ok === 2 ? true : undefined), "counts.ok === 2");
    expect(counts.malformed).toBe(2);
    expect(indexed(engine, "graphite")).toEqual([
      { host: "web-7", service: "servers.web-7.load", metric: 0.25, time: 10 },
      { host: "127.0.0.1", service: "other.x", metric: 1, time: 20 },
    ]);
    expect(indexed(engine)).toEqual([]);
    expect(socket.destroyed).toBe(false);
  });

  it("closes a connection that sends a line over max-line-length, after taking the lines before it", async () => {
    const engine = engineWith();
    const { counts, closed, open } = await serveGraphite(engine, { "max-line-length": 64 });
    const socket = await open();
    socket.write(`ok.line 1 10\n${"x".repeat(100)}`);
    await ended(socket);
    expect(closed["max-line-length"]).toBe(1);
    expect(counts.ok).toBe(1);
    // A long line without its end, sent a piece at a time, is refused as well.
    const slow = await open();
    for (let i = 0; i < 4; i++) slow.write("y".repeat(20));
    await ended(slow);
    expect(closed["max-line-length"]).toBe(2);
    await until(async () => (counts.connections === 0 ? true : undefined), "counts.connections === 0");
    const fresh = await open();
    fresh.write("after 1 10\n");
    await until(async () => (counts.ok === 2 ? true : undefined), "counts.ok === 2");
  });

  it("refuses to start on a port in use, naming the section", async () => {
    const engine = engineWith();
    const metrics = { connections: () => {}, lines: () => {}, closed: () => {} };
    const first = new GraphiteServer(graphiteSettings(), engine, { metrics, logger });
    const port = await first.listen();
    closers.push(() => first.close());
    const second = new GraphiteServer(graphiteSettings({ port }), engine, { metrics, logger });
    await expect(second.listen()).rejects.toThrow(`streams.graphite: cannot listen on 127.0.0.1:${port}: `);
  });

  it("closes connections beyond max-connections", async () => {
    const engine = engineWith();
    const { counts, closed, open } = await serveGraphite(engine, { "max-connections": 2 });
    await open();
    await open();
    await until(async () => (counts.connections === 2 ? true : undefined), "counts.connections === 2");
    const third = await open();
    await ended(third);
    expect(closed["max-connections"]).toBe(1);
  });

  it("takes every line of a large burst, read a chunk at a time", async () => {
    const engine = engineWith({ main: "{:default true :actions {:action :index :params [[:service]]}}" });
    const { counts, open } = await serveGraphite(engine);
    const socket = await open();
    const total = 50_000;
    let text = "";
    for (let i = 0; i < total; i++) text += `m.${i} ${i} ${i}\n`;
    socket.write(text);
    await until(async () => (counts.ok === total ? true : undefined), "every line", 20_000);
    const metrics = indexed(engine).map((event) => event.metric);
    expect(metrics).toHaveLength(Math.min(total, engine.limits.indexSize));
  });
});
