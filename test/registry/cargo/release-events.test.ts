/**
 * The Cargo registry's changes as stream events (docs/cargo.md, "Release announcements"): the
 * event's fields, and publish, yank, unyank, owner-add and owner-remove going through the platform's
 * event sink into a real streams module, in `registry.streams` only.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../../src/platform/config.js";
import { type ReleaseChange, ReleasePublisher, releaseEvent } from "../../../src/registry/cargo/release-events.js";
import { createRegistryModule } from "../../../src/registry/index.js";
import type { VigieServer } from "../../../src/server.js";
import { streamsModule } from "../../../src/streams/index.js";
import { startTestServer } from "../../support/server.js";
import { temporaryDirectory } from "../../support/temporary.js";
import { publication } from "./frames.js";

const ROOT_PASSWORD = "root-password-1";
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("registry changes as stream events", () => {
  it("have service crate, host the crate, the version, the user, the action and a sentence", () => {
    expect(
      releaseEvent({ action: "publish", crate: "mycrate", version: "0.2.0", user: "alice", timeMs: 1_767_225_600_250 }),
    ).toEqual({
      service: "crate",
      host: "mycrate",
      action: "publish",
      version: "0.2.0",
      user: "alice",
      description: "alice published mycrate 0.2.0",
      time: 1_767_225_600.25,
      tags: ["registry", "publish"],
    });
    const owners: ReleaseChange = { action: "owner-add", crate: "c", owners: ["bob", "carol"], user: "a", timeMs: 0 };
    expect(releaseEvent(owners)).toMatchObject({
      owners: ["bob", "carol"],
      description: "a added bob, carol as owners of c",
    });
    expect(releaseEvent(owners)).not.toHaveProperty("version");
    expect(releaseEvent({ ...owners, action: "owner-remove", owners: ["bob"] }).description).toBe(
      "a removed bob from the owners of c",
    );
    expect(releaseEvent({ action: "yank", crate: "c", version: "1.0.0", user: "a", timeMs: 0 }).description).toBe(
      "a yanked c 1.0.0",
    );
    expect(releaseEvent({ action: "unyank", crate: "c", version: "1.0.0", user: "a", timeMs: 0 }).description).toBe(
      "a unyanked c 1.0.0",
    );
  });

  it("go to every configured stream, and nowhere without one", () => {
    const pushed: Array<[string, unknown]> = [];
    const sink = { push: (stream: string, events: readonly unknown[]) => pushed.push([stream, events[0]]) };
    const change: ReleaseChange = { action: "publish", crate: "c", version: "1.0.0", user: "a", timeMs: 0 };
    new ReleasePublisher(sink, []).publish(change);
    expect(pushed).toEqual([]);
    new ReleasePublisher(sink, ["one", "two"]).publish(change);
    expect(pushed.map(([stream]) => stream)).toEqual(["one", "two"]);
  });

  it("are configured by registry.streams, a list of stream names (none by default)", () => {
    const registry = (section: Record<string, unknown>) =>
      parseConfig({ registry: section }, {}, [createRegistryModule()]).modules.registry as Record<string, unknown>;
    expect(registry({}).streams).toEqual([]);
    expect(registry({ streams: ["release-announcements", "all.crates"] }).streams).toEqual([
      "release-announcements",
      "all.crates",
    ]);
    let message = "";
    try {
      registry({ streams: ["no spaces"] });
    } catch (error) {
      if (error instanceof ConfigError) message = error.message;
    }
    expect(message).toContain("registry.streams[0]: must be a stream name");
  });

  let server: VigieServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("reach registry.streams on publish, yank, unyank and owner changes, not on refusals", async () => {
    const directory = temporaryDirectory();
    writeFileSync(
      join(directory, "releases.edn"),
      "{:releases {:actions {:action :index :params [[:host :time :action]]}}}",
    );
    server = await startTestServer({
      modules: [
        createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: ROOT_PASSWORD } }),
        streamsModule,
      ],
      config: {
        streams: { directories: [directory] },
        http: { "public-url": "http://registry.test" },
        registry: {
          enabled: true,
          streams: ["releases"],
          cargo: { enabled: true, storage: join(directory, "crates") },
        },
      },
    });
    const app: FastifyInstance = server.app;
    const call = async (method: "GET" | "PUT" | "DELETE" | "POST", url: string, token?: string, payload?: unknown) =>
      app.inject({
        method,
        url,
        headers: {
          ...(token === undefined ? {} : { authorization: token }),
          ...(Buffer.isBuffer(payload) ? {} : { "content-type": "application/json" }),
        },
        ...(payload === undefined ? {} : { payload: Buffer.isBuffer(payload) ? payload : JSON.stringify(payload) }),
      });
    const created = await call("POST", "/api/v1/registry/token", undefined, {
      name: "t",
      user: "root",
      password: ROOT_PASSWORD,
    });
    const root = created.json().token as string;
    expect(
      (
        await call("POST", "/api/v1/registry/user", `Bearer ${root}`, {
          name: "bob",
          password: "bob-password-1",
          description: "Bob",
          role: "tech",
          active: true,
        })
      ).statusCode,
    ).toBe(201);
    const publish = async (vers: string) =>
      (await call("PUT", "/api/v1/crates/new", root, (await publication("My_crate", vers)).body)).statusCode;
    expect(await publish("0.1.0")).toBe(200);
    expect(await publish("0.2.0")).toBe(200);
    // Refused (409): no event.
    expect(await publish("0.2.0")).toBe(409);
    expect((await call("DELETE", "/api/v1/crates/my-crate/0.1.0/yank", root, Buffer.alloc(0))).statusCode).toBe(200);
    // Yanked already: 200 again, and no second event.
    expect((await call("DELETE", "/api/v1/crates/my-crate/0.1.0/yank", root, Buffer.alloc(0))).statusCode).toBe(200);
    expect((await call("PUT", "/api/v1/crates/my-crate/0.1.0/unyank", root, Buffer.alloc(0))).statusCode).toBe(200);
    expect(
      (await call("PUT", "/api/v1/crates/my-crate/owners", root, Buffer.from('{"users":["bob"]}'))).statusCode,
    ).toBe(200);
    expect(
      (await call("DELETE", "/api/v1/crates/my-crate/owners", root, Buffer.from('{"users":["bob"]}'))).statusCode,
    ).toBe(200);
    // Refused (404): no event.
    expect((await call("DELETE", "/api/v1/crates/my-crate/9.9.9/yank", root, Buffer.alloc(0))).statusCode).toBe(404);

    const search = await call(
      "GET",
      `/api/v1/index/releases/search?query=${encodeURIComponent(b64('[:= :service "crate"]'))}`,
    );
    expect(search.statusCode, search.body).toBe(200);
    const events = search.json().events as Array<Record<string, unknown>>;
    expect(events.map((event) => event.description)).toEqual([
      "root published My_crate 0.1.0",
      "root published My_crate 0.2.0",
      "root yanked My_crate 0.1.0",
      "root unyanked My_crate 0.1.0",
      "root added bob as owner of My_crate",
      "root removed bob from the owners of My_crate",
    ]);
    expect(events[0]).toMatchObject({
      service: "crate",
      host: "My_crate",
      action: "publish",
      version: "0.1.0",
      user: "root",
    });
    expect(typeof events[0]?.time).toBe("number");
  });
});
