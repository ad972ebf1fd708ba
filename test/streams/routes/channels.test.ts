/**
 * The subscription route through a real server listening on loopback (docs/streams.md, Publish and
 * subscribe): what a `ws` client receives, every refusal before the upgrade (400, 401, 403, 421,
 * 426, 503) in the error format, the metrics, and that no token reaches the logs.
 */
import { Writable } from "node:stream";
import Fastify, { type FastifyInstance } from "fastify";
import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/platform/config.js";
import { installErrorHandling } from "../../../src/platform/errors.js";
import { createRegistryModule } from "../../../src/registry/index.js";
import { buildServer, type VigieServer } from "../../../src/server.js";
import { ChannelHub } from "../../../src/streams/channels.js";
import { streamsModule } from "../../../src/streams/index.js";
import { channelMetrics } from "../../../src/streams/metrics.js";
import { channelRoutes } from "../../../src/streams/routes/channels.js";
import { RegistryClient } from "../../registry/client.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";
import { rawUpgrade, refusedUpgrade, subscribe, type TestSubscriber } from "../../support/websocket.js";

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const query = (condition: string) => `query=${encodeURIComponent(b64(condition))}`;

/** Publishes every event on `alerts` and indexes it by host (so `cpu-index` gets it too). */
const PUBLISHING =
  "{:actions {:action :sdo :children [{:action :publish :params [:alerts]} {:action :index :params [[:host]]}]}}";
const ALLOWED_ORIGIN = "http://dashboard.test:8000";

describe("GET /api/v1/channel/<channel>", () => {
  let server: VigieServer | undefined;
  let port = 0;
  const subscribers: TestSubscriber[] = [];

  afterEach(async () => {
    for (const subscriber of subscribers.splice(0)) subscriber.socket.terminate();
    await server?.close();
    server = undefined;
  });

  async function start(config: Record<string, unknown> = {}, modules = [streamsModule]): Promise<VigieServer> {
    server = await startTestServer({
      modules,
      config: { http: { "allowed-origins": [ALLOWED_ORIGIN] }, ...config },
    });
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    const address = server.app.server.address();
    port = typeof address === "object" && address !== null ? address.port : 0;
    return server;
  }
  const running = (): VigieServer => {
    if (server === undefined) throw new Error("no server: call start() first");
    return server;
  };
  const ws = (path: string) => `ws://127.0.0.1:${port}${path}`;
  const open = async (path: string, headers: Record<string, string> = {}, localAddress?: string) => {
    const subscriber = await subscribe(ws(path), headers, localAddress === undefined ? {} : { localAddress });
    subscribers.push(subscriber);
    return subscriber;
  };
  const inject = async (method: "GET" | "POST" | "PUT", url: string, payload?: object, token?: string) => {
    const response = await running().app.inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload }),
      ...(token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }),
    });
    return { status: response.statusCode, body: response.body === "" ? undefined : response.json() };
  };
  const push = (stream: string, events: unknown[], token?: string) =>
    inject("PUT", `/api/v1/stream/${stream}`, { events }, token);
  const metrics = async () => (await running().app.inject({ method: "GET", url: "/metrics" })).body;

  it("sends published and index events, as text frames of their JSON, to subscribers whose query matches", async () => {
    await start();
    expect(await inject("POST", "/api/v1/stream/cpu", { config: b64(PUBLISHING) })).toMatchObject({ status: 201 });
    const all = await open("/api/v1/channel/alerts");
    const high = await open(`/api/v1/channel/alerts?${query("[:> :metric 10]")}`);
    const hostA = await open(`/api/v1/channel/cpu-index?${query('[:= :host "a"]')}`);
    const other = await open("/api/v1/channel/elsewhere");

    const events = [
      { host: "a", metric: 5, time: 1 },
      { host: "b", metric: 20, time: 2 },
      { host: "a", metric: 30, time: 3, tags: ["x"], nested: { é: "ü" } },
    ];
    expect(await push("cpu", events)).toEqual({ status: 200, body: { message: "ok" } });

    expect(await all.received(3)).toEqual(events);
    expect(await high.received(2)).toEqual([events[1], events[2]]);
    expect(await hostA.received(2)).toEqual([events[0], events[2]]);
    // Anything more would have come with the frames above, in order, on the same connections.
    await push("cpu", [{ host: "c", metric: 50, time: 4 }]);
    await all.received(4);
    await high.received(3);
    expect(hostA.events).toHaveLength(2);
    expect(other.events).toHaveLength(0);
    expect(all.binaryFrames + high.binaryFrames + hostA.binaryFrames).toBe(0);

    const text = await metrics();
    expect(text).toContain('stream_subscribers{channel="alerts"} 2');
    expect(text).toContain('stream_subscribers{channel="cpu-index"} 1');
    expect(text).toContain('stream_published_events_total{channel="alerts"} 4');
    expect(text).toContain('stream_published_events_total{channel="cpu-index"} 4');
    // Nobody listened to cpu's own channel name: nothing published there.
    expect(text).not.toContain('stream_published_events_total{channel="cpu"}');

    await all.close();
    await until(
      async () => ((await metrics()).includes('stream_subscribers{channel="alerts"} 1') ? true : undefined),
      "the gauge to drop",
    );
  });

  it("refuses an invalid channel or query with 400 before the upgrade", async () => {
    await start();
    const cases: Array<[string, string]> = [
      ["/api/v1/channel/bad%20name", "channel name must be 1 to 128 characters of A-Z a-z 0-9 . _ -"],
      [`/api/v1/channel/${"a".repeat(129)}`, "channel name must be 1 to 128 characters of A-Z a-z 0-9 . _ -"],
      ["/api/v1/channel/alerts?query=", "field query: must be a non-empty base64 string"],
      ["/api/v1/channel/alerts?query=%25%25", "field query: must be a non-empty base64 string"],
      [`/api/v1/channel/alerts?${query("[:> :metric")}`, "invalid query: "],
      [`/api/v1/channel/alerts?${query("[:frobnicate :metric 1]")}`, "invalid query: "],
      [`/api/v1/channel/alerts?${query('[:regex :host "(a)\\\\1"]')}`, "invalid query: "],
      ["/api/v1/channel/alerts?query=a&query=b", "field query: must be a non-empty base64 string"],
    ];
    for (const [path, message] of cases) {
      const refusal = await refusedUpgrade(ws(path));
      expect(refusal.status, path).toBe(400);
      expect(refusal.headers["content-type"]).toMatch(/^application\/json/);
      // Each message is the start of the answer; the parser's or compiler's reason follows.
      expect(refusal.body, path).toEqual({ error: expect.stringMatching(new RegExp(`^${escapeRegExp(message)}`)) });
    }
    expect(await metrics()).not.toContain("stream_subscribers{");
  });

  it("accepts the index channel of a stream whose name has 128 characters", async () => {
    await start();
    const name = "s".repeat(128);
    const subscriber = await subscribe(ws(`/api/v1/channel/${name}-index`));
    await subscriber.close();
    expect((await refusedUpgrade(ws(`/api/v1/channel/${"s".repeat(129)}-index`))).status).toBe(400);
  });

  it("answers a plain GET with 426 and Upgrade: websocket, after checking the channel", async () => {
    await start();
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/channel/alerts`);
    expect(response.status).toBe(426);
    expect(response.headers.get("upgrade")).toBe("websocket");
    expect(await response.json()).toEqual({
      error: "this route needs a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)",
    });
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/channel/a%20b`)).status).toBe(400);
  });

  it("refuses subscribers beyond streams.max-subscribers with 503, and accepts again once one left", async () => {
    await start({ streams: { "max-subscribers": 2 } });
    const first = await open("/api/v1/channel/a");
    // From another address: one client may hold a quarter of max-subscribers, at least one.
    await open("/api/v1/channel/b", {}, "127.0.0.2");
    const refusal = await refusedUpgrade(ws("/api/v1/channel/a"));
    expect(refusal.status).toBe(503);
    expect(refusal.body).toEqual({ error: "too many WebSocket subscribers: the server accepts no more for now" });
    await first.close();
    const again = await until(
      () =>
        subscribe(ws("/api/v1/channel/a")).then(
          (subscriber) => subscriber,
          () => undefined,
        ),
      "a free slot",
    );
    subscribers.push(again);
  });

  it("closes a subscription beyond streams.max-subscriptions-per-client with 1008 naming it, per client address", async () => {
    await start({ streams: { "max-subscriptions-per-client": 3 } });
    const publishing = b64(
      "{:actions {:action :sdo :children [{:action :publish :params [:c0]} {:action :publish :params [:c1]}]}}",
    );
    expect((await inject("POST", "/api/v1/stream/s", { config: publishing })).status).toBe(201);
    const held = [await open("/api/v1/channel/c0"), await open("/api/v1/channel/c1"), await open("/api/v1/channel/c1")];
    const fourth = await open("/api/v1/channel/c0");
    expect(await fourth.closed).toEqual({
      code: 1008,
      reason: "too many subscriptions from this client address: at most 3 (streams.max-subscriptions-per-client)",
    });
    // Another address is another client.
    const elsewhere = await open("/api/v1/channel/c0", {}, "127.0.0.2");
    await push("s", [{ host: "a", time: 1 }]);
    for (const subscriber of [...held, elsewhere])
      expect(await subscriber.received(1)).toEqual([{ host: "a", time: 1 }]);
    expect(await metrics()).toContain('stream_subscriptions_refused_total{bound="max-subscriptions-per-client"} 1');

    // Once one of its subscriptions is gone, the client may open another.
    await held[0]?.close();
    await until(
      async () => ((await metrics()).includes('stream_subscribers{channel="c0"} 1') ? true : undefined),
      "the subscription to be gone",
    );
    const again = await open("/api/v1/channel/c0");
    await push("s", [{ host: "b", time: 2 }]);
    expect(await again.received(1)).toEqual([{ host: "b", time: 2 }]);
    expect(await elsewhere.received(2)).toEqual([
      { host: "a", time: 1 },
      { host: "b", time: 2 },
    ]);
  });

  it("bounds a client to a quarter of streams.max-subscribers by default", async () => {
    await start({ streams: { "max-subscribers": 8 } });
    await open("/api/v1/channel/a");
    await open("/api/v1/channel/a");
    const third = await open("/api/v1/channel/b");
    expect(await third.closed).toEqual({
      code: 1008,
      reason: "too many subscriptions from this client address: at most 2 (streams.max-subscriptions-per-client)",
    });
  });

  it("keeps the platform's Host (421) and cross-origin WebSocket (403) checks on this route", async () => {
    await start();
    const refusal = await refusedUpgrade(ws("/api/v1/channel/alerts"), { origin: "http://evil.example" });
    expect(refusal).toMatchObject({
      status: 403,
      body: { error: "cross-origin request from http://evil.example refused" },
    });
    // The origin of a page on loopback is refused too: a page elsewhere may not read the events.
    expect((await refusedUpgrade(ws("/api/v1/channel/alerts"), { origin: "http://127.0.0.1:9" })).status).toBe(403);
    expect(await rawUpgrade(port, "/api/v1/channel/alerts", { host: "evil.example" })).toEqual({
      status: 421,
      body: JSON.stringify({ error: "host evil.example is not allowed" }),
    });
    await open("/api/v1/channel/alerts", { origin: ALLOWED_ORIGIN });
    await open("/api/v1/channel/alerts", { origin: `http://127.0.0.1:${port}` });
    expect((await rawUpgrade(port, "/api/v1/channel/alerts")).status).toBe(101);
  });

  it("closes subscribers with 1001 when the server stops, and registers @fastify/websocket once", async () => {
    const started = await start();
    // The plugin's dispatcher, and the route's bound on connections left idle after an upgrade.
    expect(started.app.server.listenerCount("upgrade")).toBe(2);
    const subscriber = await open("/api/v1/channel/alerts");
    await started.close();
    server = undefined;
    expect(await subscriber.closed).toEqual({ code: 1001, reason: "server stopping" });
  });

  it("drops events for a subscriber that does not read once its socket buffer is over 1 MiB, counted", async () => {
    await start();
    expect(
      await inject("POST", "/api/v1/stream/big", { config: b64("{:actions {:action :publish :params [:big]}}") }),
    ).toMatchObject({
      status: 201,
    });
    const stalled = await open("/api/v1/channel/big");
    // The client stops reading: the kernel buffers fill, then ws's own buffer grows past 1 MiB.
    stalled.socket.pause();
    const description = "x".repeat(64 * 1024);
    for (let round = 0; round < 40; round++) {
      await push(
        "big",
        Array.from({ length: 50 }, (_, i) => ({ host: "h", metric: i, description })),
      );
      if ((await metrics()).includes('stream_publish_dropped_total{channel="big"}')) break;
    }
    expect(await metrics()).toMatch(/stream_publish_dropped_total\{channel="big"\} [1-9]/);
  });
});

describe("GET /api/v1/channel/<channel> with security.require-token", () => {
  let server: VigieServer | undefined;
  let port = 0;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("needs a token of an active user, in Authorization or ?token=, before the upgrade", async () => {
    const registry = createRegistryModule({
      environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
    });
    server = await startTestServer({
      modules: [registry, streamsModule],
      config: { security: { "require-token": true } },
    });
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    const address = server.app.server.address();
    port = typeof address === "object" && address !== null ? address.port : 0;
    const url = `ws://127.0.0.1:${port}/api/v1/channel/alerts`;
    const client = new RegistryClient(server.app);
    const admin = await client.token("root", "root-password");
    await client.user(admin, { name: "tina", password: "tina-password", role: "tech" });
    await client.user(admin, { name: "gone", password: "gone-password", role: "tech" });
    const tech = await client.token("tina", "tina-password");
    const inactive = await client.token("gone", "gone-password");
    expect(
      (await client.call("POST", "/api/v1/registry/user/gone", { token: admin, body: { active: false } })).status,
    ).toBe(200);

    expect(await refusedUpgrade(url)).toMatchObject({ status: 401, body: { error: "missing token" } });
    expect(await refusedUpgrade(`${url}?token=vigie_${"A".repeat(43)}`)).toMatchObject({
      status: 401,
      body: { error: "invalid token" },
    });
    expect(await refusedUpgrade(url, { authorization: `Bearer ${inactive}` })).toMatchObject({
      status: 403,
      body: { error: "user is not active" },
    });
    expect(await refusedUpgrade(`${url}?token=${inactive}`)).toMatchObject({ status: 403 });
    // Authentication comes first: an anonymous caller learns nothing of the channel rules.
    expect((await refusedUpgrade(`ws://127.0.0.1:${port}/api/v1/channel/a%20b`)).status).toBe(401);

    const byHeader = await subscribe(url, { authorization: `Bearer ${tech}` });
    const byQuery = await subscribe(`${url}?token=${tech}&${query('[:= :host "a"]')}`);
    const config = b64("{:actions {:action :publish :params [:alerts]}}");
    const headers = { authorization: `Bearer ${tech}` };
    expect(
      (await server.app.inject({ method: "POST", url: "/api/v1/stream/s", headers, payload: { config } })).statusCode,
    ).toBe(201);
    const events = [
      { host: "a", time: 1 },
      { host: "b", time: 2 },
    ];
    expect(
      (await server.app.inject({ method: "PUT", url: "/api/v1/stream/s", headers, payload: { events } })).statusCode,
    ).toBe(200);
    expect(await byHeader.received(2)).toEqual(events);
    expect(await byQuery.received(1)).toEqual([events[0]]);
    byHeader.socket.terminate();
    byQuery.socket.terminate();
  });

  it("bounds the subscriptions of each token, however it is sent, whatever the address", async () => {
    const registry = createRegistryModule({
      environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
    });
    server = await startTestServer({
      modules: [registry, streamsModule],
      config: { security: { "require-token": true }, streams: { "max-subscriptions-per-client": 2 } },
    });
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    const address = server.app.server.address();
    port = typeof address === "object" && address !== null ? address.port : 0;
    const url = `ws://127.0.0.1:${port}/api/v1/channel/alerts`;
    const client = new RegistryClient(server.app);
    const admin = await client.token("root", "root-password");
    await client.user(admin, { name: "tina", password: "tina-password", role: "tech" });
    // Two tokens of one user: two clients.
    const first = await client.token("tina", "tina-password");
    const second = await client.token("tina", "tina-password");
    const opened: TestSubscriber[] = [];
    const open = async (target: string, headers: Record<string, string> = {}, localAddress?: string) => {
      const subscriber = await subscribe(target, headers, localAddress === undefined ? {} : { localAddress });
      opened.push(subscriber);
      return subscriber;
    };
    try {
      const byHeader = await open(url, { authorization: `Bearer ${first}` });
      const byQuery = await open(`${url}?token=${first}`, {}, "127.0.0.2");
      const beyond = await open(url, { authorization: `Bearer ${first}` }, "127.0.0.3");
      expect(await beyond.closed).toEqual({
        code: 1008,
        reason: "too many subscriptions for this token: at most 2 (streams.max-subscriptions-per-client)",
      });
      const other = [await open(url, { authorization: `Bearer ${second}` }), await open(`${url}?token=${second}`)];
      const config = b64("{:actions {:action :publish :params [:alerts]}}");
      const headers = { authorization: `Bearer ${first}` };
      expect(
        (await server.app.inject({ method: "POST", url: "/api/v1/stream/s", headers, payload: { config } })).statusCode,
      ).toBe(201);
      const events = [{ host: "a", time: 1 }];
      expect(
        (await server.app.inject({ method: "PUT", url: "/api/v1/stream/s", headers, payload: { events } })).statusCode,
      ).toBe(200);
      for (const subscriber of [byHeader, byQuery, ...other]) expect(await subscriber.received(1)).toEqual(events);
    } finally {
      for (const subscriber of opened) subscriber.socket.terminate();
    }
  });

  it("never writes the token of the URL to the logs, even at trace level", async () => {
    let logged = "";
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logged += chunk.toString();
        done();
      },
    });
    const registry = createRegistryModule({
      environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
    });
    const modules = [registry, streamsModule];
    const config = parseConfig(
      { database: { url: "sqlite::memory:" }, security: { "require-token": true }, "log-level": "trace" },
      {},
      modules,
    );
    server = await buildServer(config, { modules, logger: pino({ level: "trace" }, sink) });
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    const address = server.app.server.address();
    port = typeof address === "object" && address !== null ? address.port : 0;
    const client = new RegistryClient(server.app);
    const token = await client.token("root", "root-password");
    const secretLooking = `vigie_${"Z".repeat(43)}`;
    const base = `ws://127.0.0.1:${port}/api/v1/channel`;

    const accepted = await subscribe(`${base}/alerts?token=${token}`);
    await refusedUpgrade(`${base}/alerts?token=${secretLooking}`);
    await refusedUpgrade(`${base}/a%20b?token=${token}`);
    await refusedUpgrade(`${base}/alerts?token=${token}&query=%25`);
    await fetch(`http://127.0.0.1:${port}/api/v1/channel/alerts?token=${token}`);
    accepted.socket.terminate();
    await accepted.closed;

    expect(logged).not.toBe("");
    expect(logged).not.toContain(token);
    expect(logged).not.toContain(secretLooking);
  });
});

describe("the route on its own", () => {
  it("serves app.injectWS() too, where the connection is a stream pair and nothing is corked", async () => {
    const app = Fastify();
    installErrorHandling(app);
    const hub: ChannelHub = new ChannelHub({
      metrics: channelMetrics(new Registry(), () => hub.subscriberCounts()),
      maxSubscribers: 10,
    });
    // The plugin decorates the context it is registered in: injectWS lives there.
    let routes: FastifyInstance | undefined;
    await app.register(async (child) => {
      await channelRoutes(child, { hub, guard: undefined });
      routes = child;
    });
    try {
      await app.ready();
      if (routes === undefined) throw new Error("the routes' context was not captured");
      const socket = await routes.injectWS(`/api/v1/channel/alerts?${query("[:> :metric 1]")}`);
      const received = new Promise<unknown>((resolve) =>
        socket.once("message", (data) => resolve(JSON.parse(String(data)))),
      );
      hub.publisher("alerts")([
        { host: "a", metric: 1 },
        { host: "a", metric: 2 },
      ]);
      expect(await received).toEqual({ host: "a", metric: 2 });
      socket.terminate();
    } finally {
      await app.close();
    }
  });

  it("keeps a real client that answers pings subscribed, and terminates one that does not", async () => {
    const pingMs = 100;
    const app = Fastify();
    installErrorHandling(app);
    const hub: ChannelHub = new ChannelHub({
      metrics: channelMetrics(new Registry(), () => hub.subscriberCounts()),
      maxSubscribers: 10,
      pingIntervalMs: pingMs,
    });
    await app.register(async (child) => channelRoutes(child, { hub, guard: undefined }));
    try {
      await app.listen({ host: "127.0.0.1", port: 0 });
      const address = app.server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      const url = `ws://127.0.0.1:${port}/api/v1/channel/c`;
      const answering = await subscribe(url);
      // ws answers pings by itself; without autoPong the client receives them and stays silent.
      const silent = await subscribe(url, {}, { autoPong: false });
      const subscribedAt = performance.now();
      expect(hub.size).toBe(2);

      // Pinged at the hub's next round, terminated at the one after: no closing handshake (1006).
      const stillOpen = new Promise<string>((resolve) => setTimeout(() => resolve("still open"), 20 * pingMs));
      expect(await Promise.race([silent.closed, stillOpen])).toEqual({ code: 1006, reason: "" });
      expect(performance.now() - subscribedAt).toBeLessThan(6 * pingMs);
      expect(silent.pings).toBeGreaterThanOrEqual(1);
      expect(hub.size).toBe(1);

      // Each pong keeps the other one for the next round, however many rounds pass.
      await until(async () => (answering.pings >= 5 ? true : undefined), "five pings", 5_000);
      hub.publisher("c")({ n: 1 });
      expect(await answering.received(1)).toEqual([{ n: 1 }]);
      expect(hub.size).toBe(1);
      await answering.close();
    } finally {
      await app.close();
    }
  });

  it("are destroyed once idle when another route answered them, and kept while subscribed", async () => {
    const app = Fastify();
    installErrorHandling(app);
    app.get("/plain", async () => ({ ok: true }));
    const hub: ChannelHub = new ChannelHub({
      metrics: channelMetrics(new Registry(), () => hub.subscriberCounts()),
      maxSubscribers: 10,
    });
    await app.register(async (child) => channelRoutes(child, { hub, guard: undefined, idleUpgradeMs: 1_000 }));
    try {
      await app.listen({ host: "127.0.0.1", port: 0 });
      const address = app.server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      const connections = () =>
        new Promise<number>((resolve, reject) =>
          app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
        );
      const subscriber = await subscribe(`ws://127.0.0.1:${port}/api/v1/channel/c`);
      // Answered with plain HTTP by a route that is not a WebSocket: Node no longer reads the
      // connection, so it would stay open after the client left without the idle bound.
      expect(await rawUpgrade(port, "/plain")).toEqual({ status: 200, body: '{"ok":true}' });
      expect(await rawUpgrade(port, "/nowhere")).toMatchObject({ status: 404 });
      expect(await connections()).toBe(3);
      await until(
        async () => ((await connections()) === 1 ? true : undefined),
        "idle connections to be destroyed",
        5_000,
      );
      // The subscription outlived the idle time.
      hub.publisher("c")({ n: 1 });
      expect(await subscriber.received(1)).toEqual([{ n: 1 }]);
      await subscriber.close();
    } finally {
      await app.close();
    }
  });
});
