import { type AddressInfo, createServer, type Socket } from "node:net";
import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Catalog } from "../../src/healthchecks/catalog.js";
import { type Definition, type Kind, validateDefinition } from "../../src/healthchecks/definition.js";
import { Executor } from "../../src/healthchecks/execute.js";
import { HealthcheckMetrics } from "../../src/healthchecks/metrics.js";
import { ResultStore } from "../../src/healthchecks/results.js";
import { Scheduler } from "../../src/healthchecks/scheduler.js";
import { HealthcheckStore, healthcheckMigrations } from "../../src/healthchecks/storage.js";
import { type Database, openDatabase, platformMigrations } from "../../src/platform/database.js";
import { Exposition } from "../../src/platform/metrics.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

function define(kind: Kind, fields: Record<string, unknown>): Definition {
  return validateDefinition(kind, fields, RULES, { unknownKeys: "ignore" });
}

const quiet = (fields: Record<string, unknown> = {}) =>
  define("command", { name: "check", command: "true", timeout: "1s", interval: "1h", ...fields });

describe("Catalog", () => {
  let database: Database;
  let scheduler: Scheduler;
  let catalog: Catalog;
  let results: ResultStore;
  const executor = new Executor();
  beforeEach(async () => {
    database = await openDatabase("sqlite::memory:", { ...platformMigrations, ...healthcheckMigrations });
    scheduler = new Scheduler({ maxConcurrency: 4 });
    results = new ResultStore();
    catalog = new Catalog({
      storage: new HealthcheckStore(database),
      scheduler,
      results,
      metrics: new HealthcheckMetrics(new Registry(), new Exposition(), () => scheduler.size),
      executor,
      logger: pino({ level: "silent" }),
      rules: RULES,
    });
    await catalog.start([]);
  });
  afterEach(async () => {
    catalog.stop();
    await database.close();
  });

  it("changes nothing when an identical definition is posted again: no restart, no new jitter", async () => {
    const add = vi.spyOn(scheduler, "add");
    await catalog.upsert(quiet({ labels: { a: "1", b: "2" } }));
    const firstRun = scheduler.nextRun("check");
    expect(add).toHaveBeenCalledTimes(1);
    // The same definition, parsed again from JSON with its keys in another order.
    await catalog.upsert(
      define("command", { interval: "1h", labels: { b: "2", a: "1" }, timeout: "1s", command: "true", name: "check" }),
    );
    expect(add).toHaveBeenCalledTimes(1);
    expect(scheduler.nextRun("check")).toBe(firstRun);
    // In bulk too.
    await catalog.replaceApiChecks([quiet({ labels: { a: "1", b: "2" } })]);
    expect(add).toHaveBeenCalledTimes(1);
    // A different definition restarts the schedule.
    await catalog.upsert(quiet({ labels: { a: "1", b: "3" } }));
    expect(add).toHaveBeenCalledTimes(2);
    // The same text means the same duration, but `60m` is not `1h` as given: a restart.
    await catalog.upsert(quiet({ labels: { a: "1", b: "3" }, interval: "60m" }));
    expect(add).toHaveBeenCalledTimes(3);
  });

  it("keeps the schedule when a configuration check becomes an identical API check", async () => {
    await catalog.reload([{ definition: quiet(), path: "healthchecks.command-checks[0]" }]);
    const firstRun = scheduler.nextRun("check");
    expect(catalog.get("check")?.source).toBe("configuration");
    await catalog.upsert(quiet());
    expect(catalog.get("check")?.source).toBe("api");
    expect(catalog.get("check")?.view.source).toBe("api");
    expect(scheduler.nextRun("check")).toBe(firstRun);
  });

  it("shows the new source in the kept result when a check changes source", async () => {
    await catalog.reload([{ definition: quiet({ interval: "1s" }), path: "healthchecks.command-checks[0]" }]);
    await vi.waitFor(() => expect(results.get("check")).toBeDefined(), { timeout: 10_000 });
    expect(results.get("check")?.configuration.source).toBe("configuration");
    await catalog.upsert(quiet({ interval: "1s" }));
    expect(results.get("check")?.configuration).toEqual(catalog.get("check")?.view);
    expect(results.get("check")?.configuration.source).toBe("api");
  });

  it("records results of runs and forgets them when the check is replaced or deleted", async () => {
    await catalog.upsert(quiet({ interval: "1s" }));
    await vi.waitFor(() => expect(results.get("check")).toBeDefined(), { timeout: 10_000 });
    await catalog.upsert(quiet({ interval: "1s", description: "changed" }));
    expect(results.get("check")).toBeUndefined();
    await vi.waitFor(() => expect(results.get("check")?.configuration.description).toBe("changed"), {
      timeout: 10_000,
    });
    expect(await catalog.delete("check")).toBe(true);
    expect(results.get("check")).toBeUndefined();
    expect(scheduler.has("check")).toBe(false);
    expect(await catalog.delete("check")).toBe(false);
  });

  it("records nothing of the runs that the module's stop cuts short", async () => {
    // A server that takes the request and never answers: the http run is in flight at the stop.
    const sockets: Socket[] = [];
    const server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
    const { port } = server.address() as AddressInfo;
    const recorded: string[] = [];
    // Every first run at once.
    const runs = new Scheduler({ maxConcurrency: 4, spread: () => 0 });
    const watched = new Catalog({
      storage: new HealthcheckStore(database),
      scheduler: runs,
      results,
      metrics: new HealthcheckMetrics(new Registry(), new Exposition(), () => 0),
      executor,
      logger: pino({ level: "silent" }),
      rules: RULES,
      onResult: (_registration, result) => recorded.push(`${result.name}: ${result.message}`),
    });
    try {
      await watched.start([
        {
          definition: define("http", {
            name: "hangs",
            target: "127.0.0.1",
            port,
            "valid-status": [200],
            interval: "1m",
            timeout: "30s",
          }),
          path: "healthchecks.http-checks[0]",
        },
        {
          definition: quiet({ name: "sleeps", command: "sleep", arguments: ["30"], timeout: "30s", interval: "1m" }),
          path: "p",
        },
      ]);
      // Both runs in flight: the request reached the server, the command is sleeping.
      await vi.waitFor(() => expect(sockets).toHaveLength(1), { timeout: 5_000 });
      expect(runs.running).toBe(2);
      watched.stop();
      // Both runs ended (the request closed, the command killed) and recorded nothing.
      await vi.waitFor(() => expect(runs.running).toBe(0), { timeout: 5_000 });
      expect(recorded).toEqual([]);
      expect(results.get("hangs")).toBeUndefined();
      expect(results.get("sleeps")).toBeUndefined();
    } finally {
      watched.stop();
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => server.close(closed));
    }
  });

  it("reports a reload as added, changed, removed and shadowed names", async () => {
    const at = (index: number) => `healthchecks.command-checks[${index}]`;
    expect(
      await catalog.reload([
        { definition: quiet({ name: "a" }), path: at(0) },
        { definition: quiet({ name: "b" }), path: at(1) },
      ]),
    ).toEqual({ added: ["a", "b"], changed: [], removed: [], shadowed: [] });
    await catalog.upsert(quiet({ name: "c" }));
    expect(
      await catalog.reload([
        { definition: quiet({ name: "a", description: "new" }), path: at(0) },
        { definition: quiet({ name: "c" }), path: at(1) },
      ]),
    ).toEqual({ added: [], changed: ["a"], removed: ["b"], shadowed: ["c"] });
  });
});
