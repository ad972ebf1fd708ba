import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Catalog, type Registration, type ShardOwnership } from "../../src/healthchecks/catalog.js";
import { differingChecks, fingerprintOf } from "../../src/healthchecks/cluster.js";
import type { ConfiguredCheck } from "../../src/healthchecks/config.js";
import { type Definition, type Kind, validateDefinition } from "../../src/healthchecks/definition.js";
import type { Execution, Executor } from "../../src/healthchecks/execute.js";
import { HealthcheckMetrics } from "../../src/healthchecks/metrics.js";
import { type HealthcheckResult, ResultStore } from "../../src/healthchecks/results.js";
import { Scheduler, spreadOf, type Task, wallClockPhaseDelay } from "../../src/healthchecks/scheduler.js";
import { HealthcheckStore, healthcheckMigrations } from "../../src/healthchecks/storage.js";
import { shardOf } from "../../src/platform/cluster/index.js";
import { type Database, openDatabase, platformMigrations } from "../../src/platform/database.js";
import { Exposition } from "../../src/platform/metrics.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };

/** Distance between two values modulo `modulus` (0 when they are congruent). */
function modularDistance(a: number, b: number, modulus: number): number {
  const difference = (((a - b) % modulus) + modulus) % modulus;
  return Math.min(difference, modulus - difference);
}

describe("wallClockPhaseDelay", () => {
  const intervals = [1_000, 2_000, 10_000, 60_000, 3_600_000, 86_400_000];
  const nows = [0, 1, 999, 1_700_000_000_000, 1_700_000_001_234, 1_767_225_600_000 + 12_345];

  it("is a delay in [0, interval)", () => {
    for (let index = 0; index < 200; index++) {
      for (const interval of intervals) {
        for (const now of nows) {
          const delay = wallClockPhaseDelay(`check-${index}`, interval, now + index * 37);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThan(interval);
        }
      }
    }
  });

  it("lands on the same wall-clock phase whatever the time it is computed at", () => {
    for (let index = 0; index < 100; index++) {
      const key = `web-${index}`;
      for (const interval of intervals) {
        const phase = spreadOf(key) * interval;
        const runs = nows.map((now) => now + wallClockPhaseDelay(key, interval, now));
        for (const run of runs) {
          // run ≡ spreadOf(key) × interval (mod interval)
          expect(modularDistance(run, phase, interval)).toBeLessThan(1e-3);
          expect(modularDistance(run, runs[0] as number, interval)).toBeLessThan(1e-3);
        }
      }
    }
  });

  it("is the next such time: a check moved to another instance neither runs twice nor skips an interval", () => {
    const interval = 10_000;
    const key = "moving-check";
    const start = 1_700_000_000_000;
    const first = start + wallClockPhaseDelay(key, interval, start);
    // Another instance takes the check 3.3 intervals later: its first run is the next slot.
    const later = first + 3.3 * interval;
    const next = later + wallClockPhaseDelay(key, interval, later);
    expect(next - first).toBeCloseTo(4 * interval, 3);
    // Right after a slot: almost a whole interval; right before: almost none.
    expect(wallClockPhaseDelay(key, interval, first + 1)).toBeCloseTo(interval - 1, 3);
    expect(wallClockPhaseDelay(key, interval, first - 1)).toBeCloseTo(1, 3);
  });

  it("uses Date.now() by default", () => {
    const before = Date.now();
    const delay = wallClockPhaseDelay("k", 60_000);
    const after = Date.now();
    const phase = spreadOf("k") * 60_000;
    const candidates = [before, after].map((now) => modularDistance(now + delay, phase, 60_000));
    expect(Math.min(...candidates)).toBeLessThanOrEqual(after - before + 1e-3);
  });

  it("replaces the first-run spread of a scheduler given as firstRunDelay", () => {
    const wall = 1_700_000_000_123;
    const monotonic = 5_000;
    const scheduler = new Scheduler({
      maxConcurrency: 1,
      now: () => monotonic,
      firstRunDelay: (key, interval) => wallClockPhaseDelay(key, interval, wall),
    });
    scheduler.add("a", 3_600_000, async () => {});
    scheduler.add("b", 2_000, async () => {});
    expect(scheduler.nextRun("a")).toBe(monotonic + wallClockPhaseDelay("a", 3_600_000, wall));
    expect(scheduler.nextRun("b")).toBe(monotonic + wallClockPhaseDelay("b", 2_000, wall));
    scheduler.stop();
  });
});

/** A configuration-file check, as configuredChecks() gives it. */
function configured(kind: Kind, fields: Record<string, unknown>, index = 0): ConfiguredCheck {
  const path = `healthchecks.${kind}-checks[${index}]`;
  return {
    definition: validateDefinition(kind, fields, RULES, { unknownKeys: "reject", tlsFiles: "paths" }, path),
    path: `healthchecks.${kind}-checks[${index}]`,
  };
}

const SECRET = "Bearer sEcReT-0a1b2c3d4e";

const web = (fields: Record<string, unknown> = {}) =>
  configured("http", {
    name: "web",
    target: "example.org",
    port: 443,
    protocol: "https",
    "valid-status": [200],
    timeout: "5s",
    interval: "30s",
    headers: { Authorization: SECRET, "X-Api-Key": "k3y-v4lue-9f8e" },
    ...fields,
  });
const ping = (fields: Record<string, unknown> = {}) =>
  configured("tcp", { name: "db", target: "db.internal", port: 5432, timeout: "2s", interval: "10s", ...fields });
const script = (fields: Record<string, unknown> = {}) =>
  configured("command", { name: "disk", command: "/bin/true", timeout: "2s", interval: "1m", ...fields });

describe("fingerprintOf and differingChecks", () => {
  it("finds nothing when both instances loaded the same checks, in any order", () => {
    const mine = fingerprintOf([web(), ping(), script()]);
    const theirs = fingerprintOf([script(), web(), ping()]);
    expect(differingChecks(mine, theirs)).toEqual([]);
    expect(differingChecks(mine, mine)).toEqual([]);
    expect(differingChecks(fingerprintOf([]), fingerprintOf([]))).toEqual([]);
    expect(Object.keys(JSON.parse(mine)).sort()).toEqual(["db", "disk", "web"]);
  });

  it("names the checks whose definitions differ, sorted", () => {
    const mine = fingerprintOf([web(), ping(), script()]);
    expect(differingChecks(mine, fingerprintOf([web(), ping({ port: 5433 }), script()]))).toEqual(["db"]);
    expect(
      differingChecks(mine, fingerprintOf([web({ interval: "1m" }), ping(), script({ arguments: ["-x"] })])),
    ).toEqual(["disk", "web"]);
    // The same duration written otherwise is another definition (durations keep their text).
    expect(differingChecks(mine, fingerprintOf([web({ interval: "30000ms" }), ping(), script()]))).toEqual(["web"]);
    // A change of a secret is a difference too, though the secret is not in the fingerprint.
    expect(
      differingChecks(mine, fingerprintOf([web({ headers: { Authorization: "Bearer other" } }), ping(), script()])),
    ).toEqual(["web"]);
  });

  it("names the checks present on one side only", () => {
    const mine = fingerprintOf([web(), ping(), script()]);
    expect(differingChecks(mine, fingerprintOf([web(), script()]))).toEqual(["db"]);
    expect(differingChecks(fingerprintOf([web()]), mine)).toEqual(["db", "disk"]);
    expect(differingChecks(fingerprintOf([]), mine)).toEqual(["db", "disk", "web"]);
    expect(differingChecks(fingerprintOf([ping({ name: "db2" })]), fingerprintOf([ping()]))).toEqual(["db", "db2"]);
  });

  it("carries no secret, nor any other value of the definitions", () => {
    const text = fingerprintOf([
      web(),
      configured("http", {
        name: "with-password",
        target: "example.org",
        port: 80,
        "valid-status": [200],
        timeout: "5s",
        interval: "30s",
        path: "/login?password=pa55-w0rd-secret",
        body: "token=b0dy-t0ken-secret",
      }),
    ]);
    for (const value of [
      "sEcReT",
      "0a1b2c3d4e",
      "k3y-v4lue",
      "pa55-w0rd",
      "b0dy-t0ken",
      "example.org",
      "Authorization",
    ]) {
      expect(text).not.toContain(value);
    }
    const entries = JSON.parse(text) as Record<string, string>;
    expect(Object.keys(entries).sort()).toEqual(["web", "with-password"]);
    for (const digest of Object.values(entries)) expect(digest).toMatch(/^[A-Za-z0-9_-]{8,64}$/);
  });

  it("finds nothing to compare in a fingerprint that does not parse", () => {
    expect(differingChecks("not json", fingerprintOf([web()]))).toEqual([]);
    expect(differingChecks(fingerprintOf([web()]), "{")).toEqual([]);
  });
});

function define(kind: Kind, fields: Record<string, unknown>): Definition {
  return validateDefinition(kind, fields, RULES, { unknownKeys: "ignore" });
}

const command = (name: string, fields: Record<string, unknown> = {}) =>
  define("command", { name, command: "true", timeout: "1s", interval: "1h", ...fields });

/** Check names that fall into `count` different shards. */
function namesInDistinctShards(count: number, prefix: string): string[] {
  const names: string[] = [];
  const shards = new Set<number>();
  for (let index = 0; names.length < count; index++) {
    const name = `${prefix}-${index}`;
    if (shards.has(shardOf(name))) continue;
    shards.add(shardOf(name));
    names.push(name);
  }
  return names;
}

describe("Catalog in cluster mode", () => {
  let database: Database;
  let scheduler: Scheduler;
  let catalog: Catalog;
  let results: ResultStore;
  /** The storage of "another instance" on the same database. */
  let elsewhere: HealthcheckStore;
  let owned: Set<number>;
  let executions: string[];
  let stored: Array<readonly string[] | undefined>;
  let appliedWhenStored: boolean[];
  let periodic: Array<[Registration, HealthcheckResult]>;
  const executor = {
    start: (definition: Definition, _options: unknown, onEnd: (execution: Execution) => void) => {
      executions.push(definition.name);
      const time = Date.now();
      queueMicrotask(() =>
        onEnd({ success: true, message: "success", duration: 1.5, timestamp: new Date(time).toISOString(), time }),
      );
    },
    close: async () => {},
  } as unknown as Executor;

  const build = async (configuredChecks: readonly ConfiguredCheck[] = [], options: { scheduler?: Scheduler } = {}) => {
    // First runs a minute away at the earliest: no run starts by itself during a test.
    scheduler = options.scheduler ?? new Scheduler({ maxConcurrency: 4, spread: () => 0.999 });
    const ownership: ShardOwnership = { shardOf, owns: (shard) => owned.has(shard) };
    catalog = new Catalog({
      storage: new HealthcheckStore(database),
      scheduler,
      results,
      metrics: new HealthcheckMetrics(new Registry(), new Exposition(), () => scheduler.size),
      executor,
      logger: pino({ level: "silent" }),
      rules: RULES,
      ownership,
      onStored: (names) => {
        stored.push(names);
        appliedWhenStored.push((names ?? []).every((name) => catalog.get(name) !== undefined));
      },
      onResult: (registration, result) => periodic.push([registration, result]),
    });
    await catalog.start(configuredChecks);
  };

  beforeEach(async () => {
    database = await openDatabase("sqlite::memory:", { ...platformMigrations, ...healthcheckMigrations });
    elsewhere = new HealthcheckStore(database);
    results = new ResultStore();
    owned = new Set();
    executions = [];
    stored = [];
    appliedWhenStored = [];
    periodic = [];
  });
  afterEach(async () => {
    catalog?.stop();
    await database.close();
  });

  it("registers every check but schedules only those of the shards it owns", async () => {
    const [mine, theirs, api] = namesInDistinctShards(3, "svc");
    owned = new Set([shardOf(mine as string)]);
    await elsewhere.save(command(api as string));
    await build([
      { definition: command(mine as string), path: "healthchecks.command-checks[0]" },
      { definition: command(theirs as string), path: "healthchecks.command-checks[1]" },
    ]);
    expect(catalog.list().map((registration) => registration.definition.name)).toEqual([mine, theirs, api].sort());
    for (const name of [mine, theirs, api] as string[]) expect(catalog.get(name)?.shard).toBe(shardOf(name));
    expect(scheduler.has(mine as string)).toBe(true);
    expect(scheduler.has(theirs as string)).toBe(false);
    expect(scheduler.has(api as string)).toBe(false);
    expect(catalog.runsHere(mine as string)).toBe(true);
    expect(catalog.runsHere(theirs as string)).toBe(false);
    expect(catalog.runsHere("unknown")).toBe(false);

    // An API check of a shard owned elsewhere: stored and listed, not scheduled here.
    const [created] = namesInDistinctShards(1, "new").filter((name) => !owned.has(shardOf(name)));
    await catalog.upsert(command(created as string));
    expect(catalog.get(created as string)?.source).toBe("api");
    expect(scheduler.has(created as string)).toBe(false);
    expect((await elsewhere.list([created as string])).map((row) => row.name)).toEqual([created]);
  });

  it("schedules and unschedules on rebalance() after the shard leases changed", async () => {
    const names = namesInDistinctShards(4, "chk");
    const [a, b, c, d] = names as [string, string, string, string];
    owned = new Set([shardOf(a), shardOf(b)]);
    await build(
      names.map((name, index) => ({ definition: command(name), path: `healthchecks.command-checks[${index}]` })),
    );
    expect(names.map((name) => scheduler.has(name))).toEqual([true, true, false, false]);
    const keptRun = scheduler.nextRun(a);
    const add = vi.spyOn(scheduler, "add");
    const remove = vi.spyOn(scheduler, "remove");

    owned = new Set([shardOf(a), shardOf(c), shardOf(d)]);
    catalog.rebalance();
    expect(names.map((name) => scheduler.has(name))).toEqual([true, false, true, true]);
    expect(names.map((name) => catalog.runsHere(name))).toEqual([true, false, true, true]);
    // What stayed keeps its schedule: only the moved checks were touched.
    expect(scheduler.nextRun(a)).toBe(keptRun);
    expect(add.mock.calls.map(([key]) => key).sort()).toEqual([c, d].sort());
    // (Scheduler.add removes its key first: c and d show up there too.)
    expect(remove.mock.calls.map(([key]) => key).sort()).toEqual([b, c, d].sort());

    // Nothing changed: nothing touched.
    add.mockClear();
    remove.mockClear();
    catalog.rebalance();
    expect(add).not.toHaveBeenCalled();
    expect(remove).not.toHaveBeenCalled();

    owned = new Set();
    catalog.rebalance();
    expect(scheduler.size).toBe(0);
    expect(catalog.size).toBe(4);
  });

  it("schedules a check that moves here at its wall-clock slot", async () => {
    const wall = 1_700_000_000_000;
    const [name] = namesInDistinctShards(1, "slot");
    const slotted = new Scheduler({
      maxConcurrency: 1,
      now: () => 42,
      firstRunDelay: (key, interval) => wallClockPhaseDelay(key, interval, wall),
    });
    await build([{ definition: command(name as string, { interval: "10s" }), path: "p" }], { scheduler: slotted });
    expect(slotted.has(name as string)).toBe(false);
    owned = new Set([shardOf(name as string)]);
    catalog.rebalance();
    expect(slotted.nextRun(name as string)).toBe(42 + wallClockPhaseDelay(name as string, 10_000, wall));
  });

  /** One run of a scheduled task, as the scheduler runs it: ends when the task calls `done`. */
  const runTask = (task: Task) =>
    new Promise<void>((resolve, reject) => {
      void task((error) => (error === undefined ? resolve() : reject(error)))?.then(resolve, reject);
    });

  it("does not run a check whose shard is no longer owned when its run comes", async () => {
    const [name] = namesInDistinctShards(1, "run");
    owned = new Set([shardOf(name as string)]);
    await build();
    const tasks = new Map<string, Task>();
    const add = scheduler.add.bind(scheduler);
    vi.spyOn(scheduler, "add").mockImplementation((key, interval, task) => {
      tasks.set(key, task);
      add(key, interval, task);
    });
    await catalog.upsert(command(name as string));
    const task = tasks.get(name as string) as Task;
    expect(task).toBeDefined();

    await runTask(task);
    expect(executions).toEqual([name]);
    expect(results.get(name as string)?.success).toBe(true);
    expect(periodic).toHaveLength(1);

    // The lease lapsed (or moved) and no rebalance happened yet: the run does nothing.
    results.delete(name as string);
    owned = new Set();
    await runTask(task);
    expect(executions).toEqual([name]);
    expect(results.get(name as string)).toBeUndefined();
    expect(periodic).toHaveLength(1);

    // Owned again: it runs.
    owned = new Set([shardOf(name as string)]);
    await runTask(task);
    expect(executions).toEqual([name, name]);
  });

  it("applies what another instance stored on sync(names): added, replaced, removed", async () => {
    const [fromFile, added, other] = namesInDistinctShards(3, "sync");
    const file = command(fromFile as string, { description: "from the file" });
    owned = new Set([shardOf(fromFile as string), shardOf(added as string)]);
    await build([{ definition: file, path: "healthchecks.command-checks[0]" }]);
    expect(catalog.get(fromFile as string)?.source).toBe("configuration");

    // Added elsewhere.
    await elsewhere.save(command(added as string, { description: "v1" }));
    await elsewhere.save(command(other as string));
    await catalog.sync([added as string]);
    expect(catalog.get(added as string)?.definition.description).toBe("v1");
    expect(catalog.get(added as string)?.source).toBe("api");
    expect(scheduler.has(added as string)).toBe(true);
    // Only the names given are read.
    expect(catalog.get(other as string)).toBeUndefined();

    // Replaced elsewhere.
    await elsewhere.save(command(added as string, { description: "v2" }));
    await catalog.sync([added as string]);
    expect(catalog.get(added as string)?.definition.description).toBe("v2");

    // The file's check replaced through the API elsewhere, then deleted there: the file's is back.
    await elsewhere.save(command(fromFile as string, { description: "from the API" }));
    await catalog.sync([fromFile as string]);
    expect(catalog.get(fromFile as string)?.source).toBe("api");
    expect(catalog.get(fromFile as string)?.definition.description).toBe("from the API");
    expect(await elsewhere.delete(fromFile as string)).toBe(true);
    await catalog.sync([fromFile as string]);
    expect(catalog.get(fromFile as string)?.source).toBe("configuration");
    expect(catalog.get(fromFile as string)?.definition).toEqual(file);
    expect(scheduler.has(fromFile as string)).toBe(true);

    // Removed elsewhere.
    await elsewhere.delete(added as string);
    await catalog.sync([added as string]);
    expect(catalog.get(added as string)).toBeUndefined();
    expect(scheduler.has(added as string)).toBe(false);

    // Applying others' changes tells nobody.
    expect(stored).toEqual([]);
  });

  it("re-reads every stored check on sync(undefined)", async () => {
    const [kept, gone, fresh] = namesInDistinctShards(3, "all");
    owned = new Set([kept, gone, fresh].map((name) => shardOf(name as string)));
    await build();
    await catalog.upsert(command(kept as string));
    await catalog.upsert(command(gone as string));
    const keptRun = scheduler.nextRun(kept as string);
    await elsewhere.delete(gone as string);
    await elsewhere.save(command(fresh as string));
    await catalog.sync(undefined);
    expect(catalog.list().map((registration) => registration.definition.name)).toEqual([kept, fresh].sort());
    // The unchanged one keeps its schedule.
    expect(scheduler.nextRun(kept as string)).toBe(keptRun);
    expect(scheduler.has(gone as string)).toBe(false);
    expect(scheduler.has(fresh as string)).toBe(true);
  });

  it("calls onStored after each change it stored: upsert, delete, replace", async () => {
    await build();
    await catalog.upsert(command("x"));
    expect(stored).toEqual([["x"]]);
    await catalog.upsert(command("x", { description: "changed" }));
    await catalog.upsert(command("y"));
    expect(stored).toEqual([["x"], ["x"], ["y"]]);
    expect(await catalog.delete("x")).toBe(true);
    expect(stored).toEqual([["x"], ["x"], ["y"], ["x"]]);
    // Nothing deleted: nothing to tell.
    expect(await catalog.delete("nothing")).toBe(false);
    expect(stored).toHaveLength(4);
    await catalog.replaceApiChecks([command("z")]);
    expect(stored).toEqual([["x"], ["x"], ["y"], ["x"], undefined]);
    // Told once applied here (and stored: the database has it).
    expect(appliedWhenStored.slice(0, 3)).toEqual([true, true, true]);
    expect((await elsewhere.list()).map((row) => row.name)).toEqual(["z"]);
  });

  it("does not call onStored when the store failed", async () => {
    await build();
    const storage = new HealthcheckStore(database);
    vi.spyOn(HealthcheckStore.prototype, "save").mockRejectedValueOnce(new Error("database down"));
    await expect(catalog.upsert(command("x"))).rejects.toThrow("database down");
    expect(stored).toEqual([]);
    expect(catalog.get("x")).toBeUndefined();
    expect(await storage.list()).toEqual([]);
    vi.restoreAllMocks();
  });
});
