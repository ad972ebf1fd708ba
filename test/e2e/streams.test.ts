import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const CPU_FILE = "{:cpu {:default true :actions {:action :index :params [[:host]]}}}";

describe("streams against the real process", () => {
  let vigie: VigieProcess | undefined;
  afterEach(() => {
    vigie?.child.kill("SIGKILL");
    vigie = undefined;
  });

  it("pushes, searches, reloads stream directories on SIGHUP and keeps persisted streams across a restart", async () => {
    const directory = temporaryDirectory();
    const streams = join(directory, "streams");
    mkdirSync(streams);
    writeFileSync(join(streams, "cpu.edn"), CPU_FILE);
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, `http:\n  port: ${port}\nstreams:\n  directories: [${streams}]\n`);
    vigie = await startVigie({ configFile, port, cwd: directory });
    const url = (path: string) => `${vigie?.baseUrl}${path}`;
    const json = async (path: string, init?: RequestInit) => {
      const response = await fetch(url(path), init);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const send = (method: string, path: string, body: unknown) =>
      json(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

    expect(await send("PUT", "/api/v1/stream/default", { events: [{ host: "a", metric: 1, time: 100 }] })).toEqual({
      status: 200,
      body: { message: "ok" },
    });
    expect((await json(`/api/v1/index/cpu/search?query=${encodeURIComponent(b64("[:true]"))}`)).body).toEqual({
      events: [{ host: "a", metric: 1, time: 100 }],
    });

    expect(
      await send("POST", "/api/v1/stream/kept", {
        config: b64("{:persist true :actions {:action :index :params [[:host]]}}"),
      }),
    ).toEqual({ status: 201, body: { message: "stream added" } });

    // The operator's file is the operator's: the API neither deletes nor overwrites it.
    const cpuFile = join(streams, "cpu.edn");
    expect(await json("/api/v1/stream/cpu", { method: "DELETE" })).toEqual({
      status: 409,
      body: {
        error: `stream cpu is defined in the configuration file ${cpuFile}: delete it there and reload (SIGHUP)`,
      },
    });
    expect(
      (await send("POST", "/api/v1/stream/cpu", { config: b64("{:persist true :actions {:action :sdo}}") })).status,
    ).toBe(409);
    expect(readFileSync(cpuFile, "utf8")).toBe(CPU_FILE);
    expect(readdirSync(join(streams, ".vigie-api"))).toEqual(["kept.edn"]);

    writeFileSync(join(streams, "more.edn"), "{:extra {:actions {:action :sdo}}}");
    vigie.child.kill("SIGHUP");
    const deadline = Date.now() + 10_000;
    let names: string[] = [];
    while (Date.now() < deadline) {
      names = (await json("/api/v1/stream")).body.streams as string[];
      if (names.includes("extra")) break;
      await new Promise((wait) => setTimeout(wait, 100));
    }
    expect(names).toEqual(["cpu", "extra", "kept"]);
    // cpu was untouched by the reload: its index is still there.
    expect((await json("/api/v1/index/cpu/current-time")).body).toEqual({ "current-time": 100 });

    vigie.child.kill("SIGTERM");
    expect(await vigie.exited).toBe(0);
    vigie = await startVigie({ configFile, port, cwd: directory });
    expect((await json("/api/v1/stream")).body).toEqual({ streams: ["cpu", "extra", "kept"] });
    const metrics = await (await fetch(url("/metrics"))).text();
    expect(metrics).toContain("stream_events_total");
  });
});
