import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { InjectOptions } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/platform/config.js";
import type { VigieServer } from "../../../src/server.js";
import { parseEdn } from "../../../src/streams/edn.js";
import { streamsModule } from "../../../src/streams/index.js";
import { startTestServer } from "../../support/server.js";
import { temporaryDirectory } from "../../support/temporary.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const unb64 = (text: string) => Buffer.from(text, "base64").toString("utf8");

const INDEXING = "{:actions {:action :index :params [[:host :service]]}}";

describe("streams API", () => {
  let server: VigieServer | undefined;
  let directory: string;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(config: Record<string, unknown> = {}) {
    directory = temporaryDirectory("vigie-streams-");
    server = await startTestServer({
      modules: [streamsModule],
      config: { streams: { directories: [directory] }, ...config },
    });
    return server;
  }
  const inject = async (options: InjectOptions) => {
    const response = await (server as VigieServer).app.inject(options);
    return { status: response.statusCode, body: response.body === "" ? undefined : response.json() };
  };
  const addStream = (name: string, edn: string) =>
    inject({ method: "POST", url: `/api/v1/stream/${name}`, payload: { config: b64(edn) } });

  it("searches every partition of a partitioned stream, and takes the largest clock", async () => {
    await start();
    expect(
      await addStream("hot", "{:partition-by [:host] :actions {:action :index :params [[:host :service]]}}"),
    ).toEqual({ status: 201, body: { message: "stream added" } });
    const events = Array.from({ length: 100 }, (_, i) => ({ host: `h${i}`, service: "cpu", time: 1_000 - i }));
    expect(await inject({ method: "PUT", url: "/api/v1/stream/hot", payload: { events } })).toEqual({
      status: 200,
      body: { message: "ok" },
    });
    const found = await inject({
      method: "POST",
      url: "/api/v1/index/hot/search",
      payload: { query: b64("[:always-true]") },
    });
    expect(found.status).toBe(200);
    // Merged from the partitions, sorted by time.
    expect(found.body.events).toEqual([...events].reverse());
    expect(await inject({ method: "GET", url: "/api/v1/index/hot/current-time" })).toEqual({
      status: 200,
      body: { "current-time": 1_000 },
    });
    expect((await inject({ method: "GET", url: "/api/v1/stream/hot" })).body["current-time"]).toBe(1_000);
    expect(await addStream("bad", "{:partition-by :host :actions {:action :sdo}}")).toMatchObject({ status: 201 });
    expect(await addStream("bad", "{:partition-by [1] :actions {:action :sdo}}")).toMatchObject({ status: 400 });
  });

  it("adds, lists, reads and removes streams with the exact bodies of docs/streams.md (API)", async () => {
    await start();
    expect(await addStream("cpu", INDEXING)).toEqual({ status: 201, body: { message: "stream added" } });
    expect(await addStream("alpha", '{:actions {:action :sdo} :default true :owner "ops"}')).toEqual({
      status: 201,
      body: { message: "stream added" },
    });
    expect(await inject({ method: "GET", url: "/api/v1/stream" })).toEqual({
      status: 200,
      body: { streams: ["alpha", "cpu"] },
    });
    expect(await inject({ method: "GET", url: "/api/v1/stream/" })).toEqual({
      status: 200,
      body: { streams: ["alpha", "cpu"] },
    });

    const cpu = await inject({ method: "GET", url: "/api/v1/stream/cpu" });
    expect(cpu.status).toBe(200);
    expect(cpu.body["current-time"]).toBe(0);
    // :default is filled in; other keys of the top map are kept.
    expect(parseEdn(unb64(cpu.body.config))).toEqual(
      parseEdn(`{:actions {:action :index :params [[:host :service]]} :default false}`),
    );
    const alpha = await inject({ method: "GET", url: "/api/v1/stream/alpha" });
    expect(unb64(alpha.body.config)).toContain(':owner "ops"');

    expect(await inject({ method: "DELETE", url: "/api/v1/stream/cpu" })).toEqual({
      status: 200,
      body: { message: "stream removed" },
    });
    expect(await inject({ method: "GET", url: "/api/v1/stream" })).toEqual({
      status: 200,
      body: { streams: ["alpha"] },
    });
  });

  it("answers 404 for an unknown stream on every route", async () => {
    await start();
    const missing = { error: "stream nope not found" };
    expect(await inject({ method: "GET", url: "/api/v1/stream/nope" })).toEqual({ status: 404, body: missing });
    expect(await inject({ method: "DELETE", url: "/api/v1/stream/nope" })).toEqual({ status: 404, body: missing });
    expect(await inject({ method: "PUT", url: "/api/v1/stream/nope", payload: { event: {} } })).toEqual({
      status: 404,
      body: missing,
    });
    expect(await inject({ method: "GET", url: `/api/v1/index/nope/search?query=${b64("[:true]")}` })).toEqual({
      status: 404,
      body: missing,
    });
    expect(await inject({ method: "GET", url: "/api/v1/index/nope/current-time" })).toEqual({
      status: 404,
      body: missing,
    });
  });

  it("answers 400 for bad base64, bad EDN, a value that is not a map and compile errors", async () => {
    await start();
    const bad = async (config: unknown) =>
      inject({ method: "POST", url: "/api/v1/stream/s", payload: config === undefined ? {} : { config } });
    expect(await bad("%%%")).toEqual({
      status: 400,
      body: { error: "field config: must be a non-empty base64 string" },
    });
    expect(await bad(undefined)).toEqual({
      status: 400,
      body: { error: "field config: must be a non-empty base64 string" },
    });
    expect((await bad(b64("{:actions"))).body.error).toMatch(/^invalid stream config: invalid EDN/);
    expect(await bad(b64("[1 2]"))).toEqual({
      status: 400,
      body: { error: "invalid stream config: the configuration must be an EDN map" },
    });
    expect(await bad(b64("{:actions {:action :sdo :children [{:action :fooo}]}}"))).toEqual({
      status: 400,
      body: { error: "invalid stream config: actions.children[0]: unknown action :fooo" },
    });
    expect(await bad(b64("{:actions {:action :where :params []}}"))).toEqual({
      status: 400,
      body: { error: "invalid stream config: actions: :where takes 1 param [condition], got 0 params" },
    });
    expect(await bad(b64("{:actions {:action :increment :params [1]}}"))).toEqual({
      status: 400,
      body: { error: "invalid stream config: actions: :increment takes no params, got 1 param" },
    });
    expect((await inject({ method: "GET", url: "/api/v1/stream" })).body).toEqual({ streams: [] });
    expect(
      (await inject({ method: "POST", url: "/api/v1/stream/bad name!", payload: { config: b64(INDEXING) } })).status,
    ).toBe(400);
  });

  it("pushes {event} and {events}, stamps events without time, and searches the index three ways", async () => {
    await start();
    await addStream("cpu", INDEXING);
    const before = Date.now() / 1000;
    expect(
      await inject({
        method: "PUT",
        url: "/api/v1/stream/cpu",
        payload: { event: { host: "a", service: "cpu", metric: 1 } },
      }),
    ).toEqual({ status: 200, body: { message: "ok" } });
    expect(
      await inject({
        method: "PUT",
        url: "/api/v1/stream/cpu",
        payload: {
          events: [
            { host: "b", service: "cpu", time: 10, metric: 2 },
            { host: "c", service: "cpu", time: 5 },
          ],
        },
      }),
    ).toEqual({ status: 200, body: { message: "ok" } });

    const all = b64("[:always-true]");
    const viaQuery = await inject({ method: "GET", url: `/api/v1/index/cpu/search?query=${encodeURIComponent(all)}` });
    expect(viaQuery.body.events.map((event: { host: string }) => event.host)).toEqual(["c", "b", "a"]);
    const stamped = viaQuery.body.events[2];
    expect(stamped.time).toBeGreaterThanOrEqual(before);
    expect(Object.keys(stamped).sort()).toEqual(["host", "metric", "service", "time"]);

    const query = b64("[:> :metric 1]");
    const viaPost = await inject({ method: "POST", url: "/api/v1/index/cpu/search", payload: { query } });
    expect(viaPost.body).toEqual({ events: [{ host: "b", service: "cpu", time: 10, metric: 2 }] });
    const viaGetBody = await inject({
      method: "GET",
      url: "/api/v1/index/cpu/search",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ query }),
    });
    expect(viaGetBody.body).toEqual(viaPost.body);

    const time = await inject({ method: "GET", url: "/api/v1/index/cpu/current-time" });
    expect(time.body["current-time"]).toBeGreaterThanOrEqual(before);
    expect((await inject({ method: "GET", url: "/api/v1/stream/cpu" })).body["current-time"]).toBe(
      time.body["current-time"],
    );
  });

  it("refuses malformed pushes and queries with 400", async () => {
    await start();
    await addStream("cpu", INDEXING);
    const put = (payload: unknown) => inject({ method: "PUT", url: "/api/v1/stream/cpu", payload: payload as object });
    expect((await put({})).status).toBe(400);
    expect(await put({ events: [{}, 3] })).toEqual({
      status: 400,
      body: { error: "field events[1]: must be an object" },
    });
    expect(await put({ event: { time: "now" } })).toEqual({
      status: 400,
      body: { error: "field event.time: must be a number of seconds" },
    });
    expect((await inject({ method: "POST", url: "/api/v1/index/cpu/search", payload: {} })).status).toBe(400);
    expect(
      (await inject({ method: "POST", url: "/api/v1/index/cpu/search", payload: { query: b64("[:foo :x]") } })).body,
    ).toEqual({ error: "invalid query: unknown condition operator :foo" });
  });

  it("routes pushes to `default` to every default stream, and none is fine", async () => {
    await start();
    expect(await inject({ method: "PUT", url: "/api/v1/stream/default", payload: { event: { host: "x" } } })).toEqual({
      status: 200,
      body: { message: "ok" },
    });
    await addStream("d1", "{:default true :actions {:action :index :params [[:host]]}}");
    await addStream("d2", "{:default true :actions {:action :index :params [[:host]]}}");
    await addStream("other", "{:actions {:action :index :params [[:host]]}}");
    await inject({ method: "PUT", url: "/api/v1/stream/default", payload: { event: { host: "x", time: 1 } } });
    const search = async (name: string) =>
      (await inject({ method: "GET", url: `/api/v1/index/${name}/search?query=${b64("[:true]")}` })).body.events;
    expect(await search("d1")).toEqual([{ host: "x", time: 1 }]);
    expect(await search("d2")).toEqual([{ host: "x", time: 1 }]);
    expect(await search("other")).toEqual([]);
    expect((await addStream("default", INDEXING)).status).toBe(400);
  });

  it("replacing a stream resets its state and index", async () => {
    await start();
    await addStream("cpu", INDEXING);
    await inject({ method: "PUT", url: "/api/v1/stream/cpu", payload: { event: { host: "a", time: 5 } } });
    await addStream("cpu", INDEXING);
    expect((await inject({ method: "GET", url: "/api/v1/index/cpu/current-time" })).body).toEqual({
      "current-time": 0,
    });
  });

  it("persists streams with :persist true to <first directory>/.vigie-api and removes the file on DELETE", async () => {
    await start();
    const config = "{:persist true :actions {:action :index :params [[:host]]}}";
    expect((await addStream("kept", config)).status).toBe(201);
    const file = join(directory, ".vigie-api", "kept.edn");
    expect(parseEdn(readFileSync(file, "utf8"))).toEqual(parseEdn(`{:kept ${config}}`));
    // Replacing it with a stream that is not persisted removes the file.
    await addStream("kept", INDEXING);
    expect(existsSync(file)).toBe(false);
    await addStream("kept", config);
    expect(existsSync(file)).toBe(true);
    await inject({ method: "DELETE", url: "/api/v1/stream/kept" });
    expect(existsSync(file)).toBe(false);
  });

  it("bounds nesting: events at 32 levels, EDN of configurations and queries at 128, with a 400 naming the limit", async () => {
    await start();
    await addStream("cpu", INDEXING);
    const nestedObject = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;
    const push = (body: string) =>
      inject({
        method: "PUT",
        url: "/api/v1/stream/cpu",
        headers: { "content-type": "application/json" },
        payload: body,
      });
    expect((await push(`{"event": {"host": "a", "time": 1, "n": ${nestedObject(31)}}}`)).status).toBe(200);
    expect(await push(`{"event": {"host": "a", "time": 1, "n": ${nestedObject(32)}}}`)).toEqual({
      status: 400,
      body: { error: "field event: must not nest objects and arrays more than 32 levels deep" },
    });
    expect(
      await push(`{"events": [{"host": "b", "time": 2}, {"n": ${"[".repeat(10_000)}${"]".repeat(10_000)}}]}`),
    ).toEqual({
      status: 400,
      body: { error: "field events[1]: must not nest objects and arrays more than 32 levels deep" },
    });
    // Nothing of a refused push went through: the index holds the first event only.
    const search = await inject({ method: "GET", url: `/api/v1/index/cpu/search?query=${b64("[:true]")}` });
    expect(search.body.events).toHaveLength(1);

    const deepQuery = `${"[:not ".repeat(5_000)}[:true]${"]".repeat(5_000)}`;
    expect(
      await inject({ method: "POST", url: "/api/v1/index/cpu/search", payload: { query: b64(deepQuery) } }),
    ).toEqual({
      status: 400,
      body: { error: "invalid query: invalid EDN: collections nested deeper than 128 levels at line 1, column 769" },
    });
    const deepActions = `{:actions ${"{:action :sdo :children [".repeat(3_000)}{:action :sdo}${"]}".repeat(3_000)}}`;
    expect(await addStream("deep", deepActions)).toEqual({
      status: 400,
      body: {
        error: "invalid stream config: invalid EDN: collections nested deeper than 128 levels at line 1, column 1610",
      },
    });
    // 60 levels of actions is within the limit.
    const fine = `{:actions ${"{:action :sdo :children [".repeat(60)}{:action :sdo}${"]}".repeat(60)}}`;
    expect((await addStream("fine", fine)).status).toBe(201);
  });

  it("refuses :persist without a stream directory, leaving a running stream of that name as it was", async () => {
    server = await startTestServer({ modules: [streamsModule] });
    expect(await addStream("kept", "{:persist true :actions {:action :sdo}}")).toEqual({
      status: 400,
      body: { error: "invalid stream config: :persist needs streams.directories to be configured" },
    });
    expect((await inject({ method: "GET", url: "/api/v1/stream" })).body).toEqual({ streams: [] });
    await addStream("running", INDEXING);
    await inject({ method: "PUT", url: "/api/v1/stream/running", payload: { event: { host: "a", time: 5 } } });
    expect((await addStream("running", "{:persist true :actions {:action :sdo}}")).status).toBe(400);
    expect((await inject({ method: "GET", url: "/api/v1/index/running/current-time" })).body).toEqual({
      "current-time": 5,
    });
  });

  it("creates a missing stream directory on the first persisted stream", async () => {
    const parent = temporaryDirectory("vigie-streams-");
    const missing = join(parent, "not", "yet");
    server = await startTestServer({ modules: [streamsModule], config: { streams: { directories: [missing] } } });
    try {
      expect((await addStream("kept", "{:persist true :actions {:action :sdo}}")).status).toBe(201);
      expect(existsSync(join(missing, ".vigie-api", "kept.edn"))).toBe(true);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it("loads stream directories at start-up and reloads them, keeping untouched streams' state", async () => {
    directory = temporaryDirectory("vigie-streams-");
    const keep = "{:actions {:action :index :params [[:host]]}}";
    writeFileSync(join(directory, "a.edn"), `{:kept ${keep} :changed ${keep} :dropped ${keep}}`);
    writeFileSync(join(directory, "notes.txt"), "not a streams file");
    server = await startTestServer({ modules: [streamsModule], config: { streams: { directories: [directory] } } });
    await addStream("api-only", keep);
    for (const name of ["kept", "changed", "dropped", "api-only"]) {
      await inject({ method: "PUT", url: `/api/v1/stream/${name}`, payload: { event: { host: "h", time: 7 } } });
    }
    writeFileSync(
      join(directory, "a.edn"),
      `{:kept ${keep} :changed {:actions {:action :index :params [[:service]]}} :added ${keep}}`,
    );
    const config = parseConfig({ streams: { directories: [directory] } }, {}, [streamsModule]);
    expect(await server.reload(config)).toEqual([]);
    expect((await inject({ method: "GET", url: "/api/v1/stream" })).body).toEqual({
      streams: ["added", "api-only", "changed", "kept"],
    });
    const time = async (name: string) =>
      (await inject({ method: "GET", url: `/api/v1/index/${name}/current-time` })).body;
    expect(await time("kept")).toEqual({ "current-time": 7 });
    expect(await time("changed")).toEqual({ "current-time": 0 });
    expect(await time("api-only")).toEqual({ "current-time": 7 });

    // An invalid file changes nothing.
    writeFileSync(join(directory, "b.edn"), "{:broken {:actions {:action :fooo}}}");
    const failures = await server.reload(config);
    expect(failures).toHaveLength(1);
    expect(String(failures[0]?.error)).toContain("unknown action :fooo");
    expect((await inject({ method: "GET", url: "/api/v1/stream" })).body.streams).toContain("kept");
  });

  it("loads configurations produced by Mirabelle's compiler", async () => {
    await start();
    const mirabelle = `{:actions {:action :sdo
                                  :description {:message "Forward events to children"}
                                  :children ({:action :where
                                              :description {:message "Filter events based on the provided condition" :params "[:> :metric 10]"}
                                              :params [[:> :metric 10]]
                                              :children ({:action :fixed-time-window
                                                          :description {:message "Build 60 seconds fixed time windows"}
                                                          :params [{:duration 60 :aggr-fn :fixed-time-window}]
                                                          :children ({:action :coll-count :children nil :description {:message "Count events"}})})})}}`;
    expect(await addStream("mira", mirabelle)).toEqual({ status: 201, body: { message: "stream added" } });
  });

  it("exposes the stream metrics of docs/streams.md (Metrics and performance)", async () => {
    await start();
    await addStream("cpu", "{:actions {:action :increment :children [{:action :index :params [[:host]]}]}}");
    await inject({
      method: "PUT",
      url: "/api/v1/stream/cpu",
      payload: { events: [{ host: "a", metric: 1 }, { host: "b" }] },
    });
    const metrics = (await (server as VigieServer).app.inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toContain('stream_events_total{stream="cpu"} 2');
    expect(metrics).toContain('stream_dropped_events_total{stream="cpu",action="increment",reason="skipped"} 1');
    expect(metrics).toContain('stream_index_size{stream="cpu"} 1');
    await inject({ method: "DELETE", url: "/api/v1/stream/cpu" });
    const after = (await (server as VigieServer).app.inject({ method: "GET", url: "/metrics" })).body;
    expect(after).not.toContain('stream="cpu"');
  });

  it("requires a registry token on every route with security.require-token", async () => {
    server = await startTestServer({ modules: [streamsModule], config: { security: { "require-token": true } } });
    for (const [method, url] of [
      ["GET", "/api/v1/stream"],
      ["POST", "/api/v1/stream/s"],
      ["PUT", "/api/v1/stream/default"],
      ["GET", "/api/v1/index/s/current-time"],
      ["POST", "/api/v1/tsdb/remote-write/default"],
      ["POST", "/api/v1/opentelemetry/v1/traces/default"],
    ] as const) {
      expect(await inject({ method, url, payload: {} }), `${method} ${url}`).toEqual({
        status: 401,
        body: { error: "missing token" },
      });
    }
    expect((await (server as VigieServer).app.inject({ method: "GET", url: "/metrics" })).statusCode).toBe(200);
  });
});
