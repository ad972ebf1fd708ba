/**
 * Streams of the operator's files and streams persisted through the API (docs/streams.md, API):
 * the API never changes a stream directory file (409 naming it), persisted streams live in their
 * own directory and survive a restart, files that earlier versions wrote for the API are moved
 * there.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import Fastify, { type InjectOptions } from "fastify";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/platform/config.js";
import { installErrorHandling } from "../../../src/platform/errors.js";
import { buildServer, type VigieServer } from "../../../src/server.js";
import { parseEdn } from "../../../src/streams/edn.js";
import { StreamEngine } from "../../../src/streams/engine.js";
import { streamsModule } from "../../../src/streams/index.js";
import { streamRoutes } from "../../../src/streams/routes/streams.js";
import { isLegacyApiFile, persistedText } from "../../../src/streams/storage.js";
import { temporaryDirectory } from "../../support/temporary.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const INDEXING = "{:actions {:action :index :params [[:host]]}}";
const PERSISTED = "{:persist true :actions {:action :index :params [[:host]]}}";
/** An operator's file named after one of the two streams it defines. */
const OPERATOR_FILE = `{:cpu ${INDEXING}\n :mem {:actions {:action :sdo}}}\n`;

describe("streams of the operator's files and of the API", () => {
  let server: VigieServer | undefined;
  let logged = "";
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /** Starts (or restarts) a server on `directory`, its log kept in `logged`. */
  async function start(directory: string): Promise<VigieServer> {
    await server?.close();
    logged = "";
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logged += chunk.toString();
        done();
      },
    });
    const modules = [streamsModule];
    const config = parseConfig(
      { database: { url: "sqlite::memory:" }, streams: { directories: [directory] } },
      {},
      modules,
    );
    server = await buildServer(config, { modules, logger: pino({ level: "info" }, sink) });
    return server;
  }
  const inject = async (options: InjectOptions) => {
    const response = await (server as VigieServer).app.inject(options);
    return { status: response.statusCode, body: response.body === "" ? undefined : response.json() };
  };
  const addStream = (name: string, edn: string) =>
    inject({ method: "POST", url: `/api/v1/stream/${name}`, payload: { config: b64(edn) } });
  const remove = (name: string) => inject({ method: "DELETE", url: `/api/v1/stream/${name}` });
  const names = async () => (await inject({ method: "GET", url: "/api/v1/stream" })).body.streams;

  it("never deletes or overwrites an operator's file holding two streams: 409 naming the file", async () => {
    const directory = temporaryDirectory("vigie-streams-");
    const file = join(directory, "cpu.edn");
    writeFileSync(file, OPERATOR_FILE);
    await start(directory);
    await inject({ method: "PUT", url: "/api/v1/stream/cpu", payload: { event: { host: "a", time: 5 } } });

    expect(await remove("cpu")).toEqual({
      status: 409,
      body: { error: `stream cpu is defined in the configuration file ${file}: delete it there and reload (SIGHUP)` },
    });
    expect((await remove("mem")).status).toBe(409);
    expect(await addStream("cpu", PERSISTED)).toEqual({
      status: 409,
      body: { error: `stream cpu is defined in the configuration file ${file}: replace it there and reload (SIGHUP)` },
    });
    // Without :persist too: the running stream stays the file's (a reload would bring it back).
    expect((await addStream("cpu", INDEXING)).status).toBe(409);
    expect((await addStream("mem", PERSISTED)).status).toBe(409);

    expect(readFileSync(file, "utf8")).toBe(OPERATOR_FILE);
    expect(readdirSync(directory)).toEqual(["cpu.edn"]);
    expect(await names()).toEqual(["cpu", "mem"]);
    // Nothing was replaced: the index is still there.
    expect((await inject({ method: "GET", url: "/api/v1/index/cpu/current-time" })).body).toEqual({
      "current-time": 5,
    });
  });

  it("persists API streams in <first directory>/.vigie-api, apart from the operator's, across restarts", async () => {
    const directory = temporaryDirectory("vigie-streams-");
    writeFileSync(join(directory, "cpu.edn"), OPERATOR_FILE);
    await start(directory);
    expect(await addStream("kept", PERSISTED)).toEqual({ status: 201, body: { message: "stream added" } });
    expect(await addStream("1m", PERSISTED)).toEqual({ status: 201, body: { message: "stream added" } });
    expect(await addStream("memory-only", INDEXING)).toEqual({ status: 201, body: { message: "stream added" } });
    const apiDirectory = join(directory, ".vigie-api");
    expect(readdirSync(directory).sort()).toEqual([".vigie-api", "cpu.edn"]);
    expect(readdirSync(apiDirectory).sort()).toEqual(["1m.edn", "kept.edn"]);
    expect(readFileSync(join(apiDirectory, "kept.edn"), "utf8")).toBe(`{:kept ${PERSISTED}}\n`);
    expect(readFileSync(join(apiDirectory, "1m.edn"), "utf8")).toBe(`{"1m" ${PERSISTED}}\n`);

    await start(directory);
    expect(await names()).toEqual(["1m", "cpu", "kept", "mem"]);
    // A reload leaves them running and starts no second copy.
    await inject({ method: "PUT", url: "/api/v1/stream/kept", payload: { event: { host: "a", time: 9 } } });
    expect(
      await (server as VigieServer).reload(parseConfig({ streams: { directories: [directory] } }, {}, [streamsModule])),
    ).toEqual([]);
    expect((await inject({ method: "GET", url: "/api/v1/index/kept/current-time" })).body).toEqual({
      "current-time": 9,
    });
    // They stay the API's: replaced without :persist (the file goes), deleted (the file goes).
    expect((await addStream("1m", INDEXING)).status).toBe(201);
    expect((await remove("kept")).status).toBe(200);
    expect(readdirSync(apiDirectory)).toEqual([]);
    expect(readFileSync(join(directory, "cpu.edn"), "utf8")).toBe(OPERATOR_FILE);
    await start(directory);
    expect(await names()).toEqual(["cpu", "mem"]);
  });

  it("moves the files earlier versions wrote for the API at start-up, and leaves hand-written ones", async () => {
    const directory = temporaryDirectory("vigie-streams-");
    const legacy = `{:old ${PERSISTED}}\n`;
    writeFileSync(join(directory, "old.edn"), legacy);
    writeFileSync(join(directory, "1m.edn"), `{"1m" ${PERSISTED}}\n`);
    // Hand-written: the same stream, formatted otherwise; and a file of two streams.
    const handWritten = `{:hand {:persist true\n        :actions {:action :index :params [[:host]]}}}\n`;
    writeFileSync(join(directory, "hand.edn"), handWritten);
    writeFileSync(join(directory, "cpu.edn"), OPERATOR_FILE);
    await start(directory);

    expect(readdirSync(directory).sort()).toEqual([".vigie-api", "cpu.edn", "hand.edn"]);
    expect(readFileSync(join(directory, ".vigie-api", "old.edn"), "utf8")).toBe(legacy);
    expect(logged).toContain(`stream file ${join(directory, "old.edn")}, written through the API, moved to`);
    expect(await names()).toEqual(["1m", "cpu", "hand", "mem", "old"]);
    expect((await remove("old")).status).toBe(200);
    expect(existsSync(join(directory, ".vigie-api", "old.edn"))).toBe(false);
    expect((await remove("hand")).status).toBe(409);
    expect(readFileSync(join(directory, "hand.edn"), "utf8")).toBe(handWritten);
  });

  it("lets the operator's file win over a persisted stream of the same name, which is kept and logged", async () => {
    const directory = temporaryDirectory("vigie-streams-");
    const apiDirectory = join(directory, ".vigie-api");
    mkdirSync(apiDirectory);
    writeFileSync(join(apiDirectory, "cpu.edn"), `{:cpu ${PERSISTED}}\n`);
    writeFileSync(join(directory, "cpu.edn"), OPERATOR_FILE);
    await start(directory);
    const read = await inject({ method: "GET", url: "/api/v1/stream/cpu" });
    expect(Buffer.from(read.body.config, "base64").toString("utf8")).not.toContain(":persist");
    expect(logged).toContain(
      `stream cpu of ${join(apiDirectory, "cpu.edn")} was not started: ${join(directory, "cpu.edn")} defines it`,
    );
    expect(existsSync(join(apiDirectory, "cpu.edn"))).toBe(true);

    // Once the operator's file no longer defines it, a reload starts the persisted one.
    writeFileSync(join(directory, "cpu.edn"), "{:mem {:actions {:action :sdo}}}");
    expect(
      await (server as VigieServer).reload(parseConfig({ streams: { directories: [directory] } }, {}, [streamsModule])),
    ).toEqual([]);
    const again = await inject({ method: "GET", url: "/api/v1/stream/cpu" });
    expect(Buffer.from(again.body.config, "base64").toString("utf8")).toContain(":persist true");
    expect((await remove("cpu")).status).toBe(200);
  });
});

describe("the stream routes in cluster mode", () => {
  it("refuse to replace or delete a stream of the operator's files before storing anything", async () => {
    const engine = new StreamEngine();
    engine.add("cpu", parseEdn(INDEXING), { kind: "file", file: "/etc/vigie/streams/cpu.edn" });
    const calls: string[] = [];
    const app = Fastify();
    installErrorHandling(app);
    await streamRoutes(app, {
      engine,
      persistDirectory: undefined,
      guard: undefined,
      cluster: {
        save: async (name, _config, apply) => {
          calls.push(`save ${name}`);
          apply();
        },
        remove: async (name, apply) => {
          calls.push(`remove ${name}`);
          apply();
        },
        owns: () => true,
        ask: async () => undefined,
      },
    });
    try {
      const post = (name: string) =>
        app.inject({ method: "POST", url: `/api/v1/stream/${name}`, payload: { config: b64(PERSISTED) } });
      const error = "stream cpu is defined in the configuration file /etc/vigie/streams/cpu.edn";
      expect((await post("cpu")).json()).toEqual({ error: `${error}: replace it there and reload (SIGHUP)` });
      const deleted = await app.inject({ method: "DELETE", url: "/api/v1/stream/cpu" });
      expect([deleted.statusCode, deleted.json()]).toEqual([
        409,
        { error: `${error}: delete it there and reload (SIGHUP)` },
      ]);
      expect(calls).toEqual([]);
      expect((await post("other")).statusCode).toBe(201);
      expect((await app.inject({ method: "DELETE", url: "/api/v1/stream/other" })).statusCode).toBe(200);
      expect(calls).toEqual(["save other", "remove other"]);
      expect(engine.names()).toEqual(["cpu"]);
    } finally {
      await app.close();
    }
  });
});

describe("isLegacyApiFile", () => {
  it("recognises the exact text the API wrote, for the file's own name only", () => {
    const config = parseEdn(PERSISTED);
    expect(isLegacyApiFile("kept.edn", persistedText("kept", config))).toBe(true);
    expect(isLegacyApiFile("1m.edn", persistedText("1m", config))).toBe(true);
    expect(isLegacyApiFile("other.edn", persistedText("kept", config))).toBe(false);
    expect(isLegacyApiFile("kept.edn", persistedText("kept", config).trimEnd())).toBe(false);
    expect(isLegacyApiFile("kept.edn", `{:kept ${PERSISTED} :more ${INDEXING}}\n`)).toBe(false);
    expect(isLegacyApiFile("kept.edn", `{:kept  ${PERSISTED}}\n`)).toBe(false);
    expect(isLegacyApiFile("kept.edn", `;; mine\n{:kept ${PERSISTED}}\n`)).toBe(false);
    expect(isLegacyApiFile("default.edn", persistedText("default", config))).toBe(false);
    expect(isLegacyApiFile("kept.edn", "{:kept")).toBe(false);
  });
});
