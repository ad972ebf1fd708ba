import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("outputs and async queues through the API", () => {
  let server: VigieServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const start = async (streams: Record<string, unknown>) => {
    server = await startTestServer({ modules: [streamsModule], config: { streams } });
    return server;
  };
  const addStream = async (name: string, edn: string) => {
    const response = await (server as VigieServer).app.inject({
      method: "POST",
      url: `/api/v1/stream/${name}`,
      payload: { config: b64(edn) },
    });
    return { status: response.statusCode, body: response.json() };
  };
  const metrics = async () => (await (server as VigieServer).app.inject({ method: "GET", url: "/metrics" })).body;

  it("answers 400 for an undeclared output or async queue, 201 for declared ones", async () => {
    const directory = temporaryDirectory();
    await start({
      outputs: { archive: { type: "file", path: join(directory, "events.jsonl") } },
      "async-queues": { slow: { size: 10 } },
    });
    expect(await addStream("a", "{:actions {:action :output :params [:archive]}}")).toEqual({
      status: 201,
      body: { message: "stream added" },
    });
    expect(await addStream("b", "{:actions {:action :output :params [:pager]}}")).toEqual({
      status: 400,
      body: { error: "invalid stream config: actions: output pager is not declared (outputs or streams.outputs)" },
    });
    expect(
      await addStream("c", "{:actions {:action :async-queue :params [:fast] :children [{:action :info}]}}"),
    ).toEqual({
      status: 400,
      body: { error: "invalid stream config: actions: async queue fast is not declared in streams.async-queues" },
    });
  });

  it("refuses to start when a streams file names an undeclared output", async () => {
    const directory = temporaryDirectory();
    writeFileSync(join(directory, "s.edn"), "{:s {:actions {:action :output :params [:pager]}}}");
    await expect(start({ directories: [directory] })).rejects.toThrow(
      "stream s: invalid stream config: actions: output pager is not declared (outputs or streams.outputs)",
    );
  });

  it("runs async-queue children after the push answered, and shows backlog and drops in the metrics", async () => {
    await start({ "async-queues": { slow: { size: 2 } } });
    expect(
      await addStream(
        "s",
        "{:actions {:action :async-queue :params [:slow] :children [{:action :index :params [[:host]]}]}}",
      ),
    ).toMatchObject({ status: 201 });
    const pushed = await (server as VigieServer).app.inject({
      method: "PUT",
      url: "/api/v1/stream/s",
      payload: { events: [1, 2, 3].map((n) => ({ host: `h${n}`, time: n })) },
    });
    expect(pushed.statusCode).toBe(200);
    await nextTurn();
    const search = await (server as VigieServer).app.inject({
      method: "GET",
      url: `/api/v1/index/s/search?query=${encodeURIComponent(b64("[:always-true]"))}`,
    });
    expect(search.json().events).toEqual([
      { host: "h1", time: 1 },
      { host: "h2", time: 2 },
    ]);
    const text = await metrics();
    expect(text).toContain('stream_async_queue_dropped_total{queue="slow"} 1');
    expect(text).toContain('stream_async_queue_events{queue="slow"} 0');
  });
});
