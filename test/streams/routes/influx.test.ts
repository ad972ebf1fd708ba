/**
 * The InfluxDB line protocol routes through `inject()` (docs/inputs.md): both paths, `db`/`bucket`,
 * precisions, gzip, partial writes with a 400 naming the line, bounds, tokens.
 */
import { gzipSync } from "node:zlib";
import type { InjectOptions } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createRegistryModule } from "../../../src/registry/index.js";
import type { VigieServer } from "../../../src/server.js";
import { streamsModule } from "../../../src/streams/index.js";
import { RegistryClient } from "../../registry/client.js";
import { startTestServer } from "../../support/server.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("InfluxDB line protocol routes", () => {
  let server: VigieServer;
  beforeEach(async () => {
    server = await startTestServer({
      modules: [streamsModule],
      config: { streams: { "ingestion-body-limit": "64KiB", "max-event-fields": 8 } },
    });
    const config = b64("{:default true :actions {:action :index :params [[:host :service]]}}");
    for (const name of ["metrics", "other"]) {
      await server.app.inject({ method: "POST", url: `/api/v1/stream/${name}`, payload: { config } });
    }
  });
  afterEach(() => server.close());

  const inject = (options: InjectOptions) => server.app.inject(options);
  const indexed = async (name: string) =>
    (await inject({ method: "GET", url: `/api/v1/index/${name}/search?query=${b64("[:true]")}` })).json()
      .events as Array<Record<string, unknown>>;
  const write = (url: string, payload: string | Buffer, headers: Record<string, string> = {}) =>
    inject({ method: "POST", url, payload, headers: { "content-type": "text/plain; charset=utf-8", ...headers } });

  it("writes one event per field into the stream named by db, and answers 204", async () => {
    const response = await write(
      "/api/v1/influx/write?db=metrics",
      'cpu,host=web-1,cpu=cpu0 usage_user=12.5,usage_system=3i 1700000000000000000\nmem,host=web-1 used="lots"\n',
    );
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe("");
    const events = await indexed("metrics");
    expect(events).toHaveLength(3);
    expect(events).toEqual(
      expect.arrayContaining([
        { host: "web-1", cpu: "cpu0", service: "cpu.usage_user", metric: 12.5, time: 1_700_000_000 },
        { host: "web-1", cpu: "cpu0", service: "cpu.usage_system", metric: 3, time: 1_700_000_000 },
        expect.objectContaining({ host: "web-1", service: "mem.used", description: "lots" }),
      ]),
    );
    expect(await indexed("other")).toEqual([]);
    expect((await inject({ method: "GET", url: "/metrics" })).body).toContain('influx_lines_total{outcome="ok"} 2');
  });

  it("sends to every default stream without db, and reads bucket and precision on the v2 path", async () => {
    expect((await write("/api/v1/influx/write", "m,host=a f=1 1700000000")).statusCode).toBe(204);
    expect((await indexed("metrics")).map((event) => event.time)).toEqual([1.7]);
    expect(await indexed("other")).toHaveLength(1);
    const v2 = await write("/api/v1/influx/api/v2/write?org=any&bucket=other&precision=s", "m,host=b f=2 1700000000");
    expect(v2.statusCode).toBe(204);
    expect((await indexed("other")).find((event) => event.host === "b")).toMatchObject({ time: 1_700_000_000 });
    expect((await indexed("metrics")).map((event) => event.host)).toEqual(["a"]);
    const ms = await write("/api/v1/influx/write?db=metrics&precision=ms", "m,host=c f=3 1700000000500");
    expect(ms.statusCode).toBe(204);
    expect((await indexed("metrics")).find((event) => event.host === "c")).toMatchObject({ time: 1_700_000_000.5 });
  });

  it("accepts a gzipped body, and any content type", async () => {
    const gzipped = await write("/api/v1/influx/write?db=metrics", gzipSync("m,host=g f=1"), {
      "content-encoding": "gzip",
    });
    expect(gzipped.statusCode).toBe(204);
    const form = await write("/api/v1/influx/write?db=metrics", "m,host=h f=1", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(form.statusCode).toBe(204);
    expect((await indexed("metrics")).map((event) => event.host).sort()).toEqual(["g", "h"]);
  });

  it("writes the valid lines of a body with malformed ones and answers 400 naming the first", async () => {
    const response = await write(
      "/api/v1/influx/write?db=metrics",
      "m,host=a f=1\nm,host=b f=abc\nm,host=c f=2\nbroken\n",
    );
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error:
        'invalid line protocol: line 2: field "f": invalid value "abc" (and 1 more malformed lines); the valid lines were written',
    });
    expect((await indexed("metrics")).map((event) => event.host).sort()).toEqual(["a", "c"]);
    expect((await inject({ method: "GET", url: "/metrics" })).body).toContain(
      'influx_lines_total{outcome="malformed"} 2',
    );
  });

  it("refuses an unknown stream, an unknown precision, a bad encoding, and bodies over the limit", async () => {
    const unknown = await write("/api/v1/influx/write?db=nope", "m f=1");
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: "stream nope not found" });
    const precision = await write("/api/v1/influx/write?precision=d", "m f=1");
    expect(precision.statusCode).toBe(400);
    expect(precision.json().error).toMatch(/^query parameter precision: must be one of ns, n, us/);
    expect((await write("/api/v1/influx/write?precision=constructor", "m f=1")).statusCode).toBe(400);
    expect((await write("/api/v1/influx/write?db=a&db=b", "m f=1")).statusCode).toBe(400);
    expect((await write("/api/v1/influx/write", "m f=1", { "content-encoding": "br" })).statusCode).toBe(415);
    expect((await write("/api/v1/influx/write", "not gzip", { "content-encoding": "gzip" })).statusCode).toBe(400);
    const big = `${"m f=1\n".repeat(12_000)}`;
    expect((await write("/api/v1/influx/write", big)).statusCode).toBe(413);
    const bomb = gzipSync(Buffer.alloc(1024 * 1024, 32));
    expect((await write("/api/v1/influx/write", bomb, { "content-encoding": "gzip" })).statusCode).toBe(413);
    expect(await indexed("metrics")).toEqual([]);
  });

  it("drops and counts events over the event bounds", async () => {
    const tags = Array.from({ length: 10 }, (_, i) => `t${i}=v`).join(",");
    const response = await write("/api/v1/influx/write?db=metrics", `m,host=big,${tags} f=1\nm,host=small f=1`);
    expect(response.statusCode).toBe(204);
    expect((await indexed("metrics")).map((event) => event.host)).toEqual(["small"]);
    expect((await inject({ method: "GET", url: "/metrics" })).body).toContain(
      'stream_dropped_events_total{stream="metrics",action="influx",reason="max-event-fields"} 1',
    );
  });

  it("reads a large body a slice at a time with the same result", async () => {
    await server.close();
    server = await startTestServer({
      modules: [streamsModule],
      config: { streams: { "max-index-size": 100_000, "max-query-results": 100_000 } },
    });
    const config = b64("{:default true :actions {:action :index :params [[:host :service]]}}");
    await inject({ method: "POST", url: "/api/v1/stream/metrics", payload: { config } });
    const lines = Array.from({ length: 20_000 }, (_, i) => `m,host=h${i} f=${i}`).join("\n");
    const response = await write("/api/v1/influx/write?db=metrics", lines);
    expect(response.statusCode, response.body).toBe(204);
    const found = await inject({ method: "GET", url: `/api/v1/index/metrics/search?query=${b64("[:true]")}` });
    expect(found.statusCode, found.body.slice(0, 300)).toBe(200);
    expect(found.json().events).toHaveLength(20_000);
  });
});

describe("InfluxDB line protocol routes with security.require-token", () => {
  it("take a registry token as Bearer on both paths, and as InfluxDB 2.x's Token on the 2.x path", async () => {
    const registry = createRegistryModule({
      environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
    });
    const server = await startTestServer({
      modules: [registry, streamsModule],
      config: { security: { "require-token": true } },
    });
    try {
      const client = new RegistryClient(server.app);
      const admin = await client.token("root", "root-password");
      await client.user(admin, { name: "tina", password: "tina-password", role: "tech" });
      const tech = await client.token("tina", "tina-password");
      const post = (url: string, authorization: string) =>
        server.app.inject({ method: "POST", url, payload: "m f=1", headers: { authorization } });
      expect((await post("/api/v1/influx/write", `Bearer ${tech}`)).statusCode).toBe(204);
      expect((await post("/api/v1/influx/api/v2/write", `Bearer ${tech}`)).statusCode).toBe(204);
      expect((await post("/api/v1/influx/api/v2/write", `Token ${tech}`)).statusCode).toBe(204);
      expect((await post("/api/v1/influx/api/v2/write", `token ${tech}`)).statusCode).toBe(204);
      // The 1.x path takes only what every route takes.
      expect((await post("/api/v1/influx/write", `Token ${tech}`)).statusCode).toBe(401);
      expect((await post("/api/v1/influx/api/v2/write", "Token wrong")).statusCode).toBe(401);
    } finally {
      await server.close();
    }
  });

  it("requires a token on both paths", async () => {
    const server = await startTestServer({ modules: [streamsModule], config: { security: { "require-token": true } } });
    try {
      for (const url of ["/api/v1/influx/write", "/api/v1/influx/api/v2/write"]) {
        const response = await server.app.inject({ method: "POST", url, payload: "m f=1" });
        expect(response.statusCode, url).toBe(401);
        expect(response.json()).toEqual({ error: "missing token" });
      }
    } finally {
      await server.close();
    }
  });
});
