/**
 * Watching running streams (docs/streams.md): `GET /api/v1/stream/<name>/graph` (JSON, SVG, 404,
 * the token guard) and the tap route `GET /api/v1/stream/<name>/tap` through a real server on
 * loopback (entry, `?query=`, `?point=`, 404s, a stream replaced while tapped, the token guard).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AnyModule } from "../../../src/platform/module.js";
import { createRegistryModule } from "../../../src/registry/index.js";
import type { VigieServer } from "../../../src/server.js";
import { streamsModule } from "../../../src/streams/index.js";
import { RegistryClient } from "../../registry/client.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";
import { refusedUpgrade, subscribe, type TestSubscriber } from "../../support/websocket.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

const CONFIG = `{:actions {:action :where :params [[:> :metric 3]] :tap-point "hot"
  :children [{:action :increment :children [{:action :index :params [[:host]]}]}]}}`;

let server: VigieServer | undefined;
const subscribers: TestSubscriber[] = [];
afterEach(async () => {
  for (const subscriber of subscribers.splice(0)) subscriber.socket.terminate();
  await server?.close();
  server = undefined;
});

async function start(config: Record<string, unknown> = {}, modules: readonly AnyModule[] = [streamsModule]) {
  const started = await startTestServer({ modules, config });
  server = started;
  await started.app.listen({ host: "127.0.0.1", port: 0 });
  const address = started.app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return { app: started.app, ws: (path: string) => `ws://127.0.0.1:${port}${path}` };
}

type App = Awaited<ReturnType<typeof start>>["app"];

async function call(app: App, method: "GET" | "POST" | "PUT", url: string, options: object = {}) {
  return app.inject({ method, url, ...options });
}

const post = (app: App, name: string, config: string, headers: Record<string, string> = {}) =>
  call(app, "POST", `/api/v1/stream/${name}`, { payload: { config: b64(config) }, headers });
const push = (app: App, name: string, events: unknown[], headers: Record<string, string> = {}) =>
  call(app, "PUT", `/api/v1/stream/${name}`, { payload: { events }, headers });

describe("GET /api/v1/stream/<name>/graph", () => {
  it("answers the action tree with per-action counts as JSON, and as SVG when asked", async () => {
    const { app } = await start();
    expect((await post(app, "cpu", CONFIG)).statusCode).toBe(201);
    await push(app, "cpu", [
      { host: "a", metric: 1, time: 1 },
      { host: "b", metric: 5, time: 1 },
      { host: "c", metric: 9, time: 1 },
    ]);
    const json = await call(app, "GET", "/api/v1/stream/cpu/graph");
    expect(json.statusCode).toBe(200);
    expect(json.headers["content-type"]).toMatch(/^application\/json/);
    expect(json.json()).toEqual({
      action: "where",
      params: ["[:> :metric 3]"],
      "tap-point": "hot",
      in: 3,
      out: 2,
      children: [
        {
          action: "increment",
          params: [],
          in: 2,
          out: 2,
          children: [{ action: "index", params: ["[:host]"], in: 2, out: 0, children: [] }],
        },
      ],
    });

    const svg = await call(app, "GET", "/api/v1/stream/cpu/graph", {
      headers: { accept: "text/html;q=0.9, image/svg+xml" },
    });
    expect(svg.statusCode).toBe(200);
    expect(svg.headers["content-type"]).toBe("image/svg+xml; charset=utf-8");
    expect(svg.body).toContain("<svg xmlns=");
    expect(svg.body).toContain("<title>stream cpu</title>");
    expect(svg.body).toContain("in 3 · out 2");
    expect(svg.body.match(/<rect /g)).toHaveLength(3);
  });

  it("answers 404 for an unknown stream", async () => {
    const { app } = await start();
    const answer = await call(app, "GET", "/api/v1/stream/nope/graph", { headers: { accept: "image/svg+xml" } });
    expect(answer.statusCode).toBe(404);
    expect(answer.json()).toEqual({ error: "stream nope not found" });
  });
});

describe("GET /api/v1/stream/<name>/tap", () => {
  it("sends the events entering the stream, or those a where-condition keeps, as JSON text frames", async () => {
    const { app, ws } = await start();
    await post(app, "cpu", CONFIG);
    const all = await subscribe(ws("/api/v1/stream/cpu/tap"));
    const hostB = await subscribe(ws(`/api/v1/stream/cpu/tap?query=${encodeURIComponent(b64('[:= :host "b"]'))}`));
    subscribers.push(all, hostB);
    const events = [
      { host: "a", metric: 1, time: 1 },
      { host: "b", metric: 5, time: 1 },
    ];
    await push(app, "cpu", events);
    expect(await all.received(2)).toEqual(events);
    expect(await hostB.received(1)).toEqual([events[1]]);
  });

  it("sends what leaves the action of a tap point, and keeps tapping a stream replaced meanwhile", async () => {
    const { app, ws } = await start();
    await post(app, "cpu", CONFIG);
    const hot = await subscribe(ws("/api/v1/stream/cpu/tap?point=hot"));
    subscribers.push(hot);
    await push(app, "cpu", [
      { host: "a", metric: 1, time: 1 },
      { host: "b", metric: 5, time: 1 },
    ]);
    expect(await hot.received(1)).toEqual([{ host: "b", metric: 5, time: 1 }]);
    // Replaced: the new stream's tap point starts watched.
    await post(app, "cpu", CONFIG.replace("[:> :metric 3]", "[:> :metric 0]"));
    await push(app, "cpu", [{ host: "c", metric: 1, time: 1 }]);
    expect(await hot.received(2)).toEqual([
      { host: "b", metric: 5, time: 1 },
      { host: "c", metric: 1, time: 1 },
    ]);
  });

  it("stops the tap when its last watcher leaves", async () => {
    const { app, ws } = await start();
    await post(app, "cpu", CONFIG);
    const first = await subscribe(ws("/api/v1/stream/cpu/tap"));
    const gauge = async () =>
      /stream_subscribers\{channel="tap\/cpu"\} (\d+)/.exec((await call(app, "GET", "/metrics")).body)?.[1];
    expect(await gauge()).toBe("1");
    await first.close();
    await until(async () => ((await gauge()) === undefined ? true : undefined), "the tap channel to be empty");
    // Taps of a stream nobody watches send nothing: a new watcher sees only what comes after it.
    await push(app, "cpu", [{ host: "a", metric: 1, time: 1 }]);
    const second = await subscribe(ws("/api/v1/stream/cpu/tap"));
    subscribers.push(second);
    await push(app, "cpu", [{ host: "b", metric: 2, time: 1 }]);
    expect(await second.received(1)).toEqual([{ host: "b", metric: 2, time: 1 }]);
  });

  it("refuses an unknown stream or tap point with 404, an invalid point or query with 400", async () => {
    const { app, ws } = await start();
    await post(app, "cpu", CONFIG);
    expect(await refusedUpgrade(ws("/api/v1/stream/nope/tap"))).toMatchObject({
      status: 404,
      body: { error: "stream nope not found" },
    });
    expect(await refusedUpgrade(ws("/api/v1/stream/cpu/tap?point=cold"))).toMatchObject({
      status: 404,
      body: { error: 'stream cpu has no :tap-point "cold"' },
    });
    expect((await refusedUpgrade(ws("/api/v1/stream/cpu/tap?point=a%20b"))).status).toBe(400);
    expect((await refusedUpgrade(ws("/api/v1/stream/cpu/tap?query=%5B%3A"))).status).toBe(400);
    const plain = await call(app, "GET", "/api/v1/stream/cpu/tap");
    expect(plain.statusCode).toBe(426);
  });
});

describe("with security.require-token", () => {
  it("needs an active user's token for the graph and the tap", async () => {
    const registry = createRegistryModule({
      environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
    });
    const { app, ws } = await start({ security: { "require-token": true } }, [registry, streamsModule]);
    const client = new RegistryClient(app);
    const admin = await client.token("root", "root-password");
    await client.user(admin, { name: "tina", password: "tina-password", role: "tech" });
    const tech = await client.token("tina", "tina-password");
    const headers = { authorization: `Bearer ${tech}` };
    expect((await post(app, "cpu", CONFIG, headers)).statusCode).toBe(201);

    expect((await call(app, "GET", "/api/v1/stream/cpu/graph")).statusCode).toBe(401);
    expect((await call(app, "GET", "/api/v1/stream/cpu/graph", { headers })).statusCode).toBe(200);
    expect(await refusedUpgrade(ws("/api/v1/stream/cpu/tap"))).toMatchObject({ status: 401 });
    // Authentication comes first: an anonymous caller cannot learn which streams exist.
    expect((await refusedUpgrade(ws("/api/v1/stream/nope/tap"))).status).toBe(401);

    const tapper = await subscribe(ws(`/api/v1/stream/cpu/tap?token=${tech}`));
    subscribers.push(tapper);
    await push(app, "cpu", [{ host: "a", metric: 4, time: 1 }], headers);
    expect(await tapper.received(1)).toEqual([{ host: "a", metric: 4, time: 1 }]);
  });
});
