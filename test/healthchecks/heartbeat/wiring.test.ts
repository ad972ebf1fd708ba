/**
 * The heartbeats' wiring (src/healthchecks/heartbeat/wiring.ts) with a store in memory: keys found
 * on every instance, pings applied by the instance that judges the heartbeat or stored for it
 * (never answered OK when they could not be stored), stored pings applied once, a heartbeat whose
 * shard moves away handing its last state over, and configuration-file keys generated once.
 */
import { describe, expect, it } from "vitest";
import type { Catalog, Registration } from "../../../src/healthchecks/catalog.js";
import { validateDefinition } from "../../../src/healthchecks/definition.js";
import type { AppliedPings, HeartbeatStore, StoredPing } from "../../../src/healthchecks/heartbeat/store.js";
import type { HeartbeatSnapshot, PingSignal } from "../../../src/healthchecks/heartbeat/tracker.js";
import { ModuleHeartbeats } from "../../../src/healthchecks/heartbeat/wiring.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };
const KEY = "abcdefghijklmnopqrstuv";

/** The store's queries, in memory. */
class MemoryStore {
  readonly snapshotRows = new Map<string, HeartbeatSnapshot | undefined>();
  readonly keys = new Map<string, string>();
  pings: StoredPing[] = [];
  failPings = false;
  failCommit = false;
  /** Runs while the pings are being read (before they are applied). */
  beforeApply: (() => void | Promise<void>) | undefined;
  #id = 0;

  async snapshots(names?: readonly string[]) {
    const found = new Map<string, HeartbeatSnapshot>();
    for (const [name, snapshot] of this.snapshotRows) {
      if (snapshot !== undefined && (names === undefined || names.includes(name))) found.set(name, snapshot);
    }
    return found;
  }
  async saveSnapshots(entries: ReadonlyArray<readonly [string, HeartbeatSnapshot | undefined]>) {
    for (const [name, snapshot] of entries) this.snapshotRows.set(name, snapshot);
  }
  async generatedKeys(candidates: ReadonlyMap<string, string>) {
    for (const [name, key] of candidates) if (!this.keys.has(name)) this.keys.set(name, key);
    return new Map([...candidates.keys()].map((name) => [name, this.keys.get(name) ?? ""]));
  }
  async addPing(name: string, signal: PingSignal, rid: string | undefined, body: string, timeMs: number) {
    if (this.failPings) throw new Error("database unavailable");
    this.pings.push({ id: ++this.#id, name, signal, body, timeMs, ...(rid === undefined ? {} : { rid }) });
  }
  /** Like the database: deletion, snapshots and given-back pings in one transaction. */
  async takePings(names: readonly string[], apply: (pings: StoredPing[]) => AppliedPings) {
    const taken = this.pings.filter((ping) => names.includes(ping.name));
    await this.beforeApply?.();
    const { snapshots, kept } = apply(taken);
    if (this.failCommit) throw new Error("commit failed");
    this.pings = [...this.pings.filter((ping) => !names.includes(ping.name)), ...kept].sort((a, b) => a.id - b.id);
    for (const [name, snapshot] of snapshots) this.snapshotRows.set(name, snapshot);
    return taken.length - kept.length;
  }
}

function registration(name: string, fields: Record<string, unknown> = {}): Registration {
  const definition = validateDefinition("heartbeat", { name, period: "1h", key: KEY, ...fields }, RULES, {
    unknownKeys: "ignore",
  });
  return { definition, source: "api", view: { name, kind: "heartbeat", source: "api" } } as unknown as Registration;
}

function setup(cluster = true, store = new MemoryStore()) {
  const registrations = new Map<string, Registration>();
  const recorded: Array<{ name: string; success: boolean; message: string }> = [];
  const published: string[][] = [];
  const catalog = {
    get: (name: string) => registrations.get(name),
    recordHeartbeat: (name: string, execution: { success: boolean; message: string }) =>
      recorded.push({ name, success: execution.success, message: execution.message }),
    setHeartbeatState: () => {},
  } as unknown as Catalog;
  const heartbeats = new ModuleHeartbeats({
    store: store as unknown as HeartbeatStore,
    catalog: () => catalog,
    logger: { warn: () => {}, error: () => {} },
    ...(cluster ? { cluster: { publish: (names: readonly string[]) => published.push([...names]) } } : {}),
  });
  heartbeats.start();
  const place = (entry: Registration, runsHere: boolean) => {
    registrations.set(entry.definition.name, entry);
    heartbeats.placed(entry, runsHere);
  };
  const remove = (entry: Registration) => {
    registrations.delete(entry.definition.name);
    heartbeats.removed(entry);
  };
  return { store, heartbeats, recorded, published, place, remove };
}

describe("the heartbeats' wiring", () => {
  it("applies a ping here when this instance judges the heartbeat", async () => {
    const { heartbeats, recorded, place, store } = setup();
    place(registration("job"), true);
    expect(await heartbeats.ping(KEY, { kind: "success" }, undefined, "")).toEqual({ kind: "ok" });
    expect(recorded).toEqual([{ name: "job", success: true, message: "success" }]);
    expect(store.pings).toEqual([]);
    expect(await heartbeats.ping("unknown-key-0000000000000", { kind: "success" }, undefined, "")).toEqual({
      kind: "unknown",
    });
    await heartbeats.close();
    expect(store.snapshotRows.get("job")).toMatchObject({ state: "up" });
  });

  it("stores a ping for the instance that judges the heartbeat, which applies it once", async () => {
    // Two instances on one database.
    const here = setup();
    const owner = setup(true, here.store);
    here.place(registration("job"), false);
    owner.place(registration("job"), true);
    expect(await here.heartbeats.ping(KEY, { kind: "fail" }, undefined, "disk full")).toEqual({ kind: "ok" });
    expect(here.recorded).toEqual([]);
    expect(here.published).toEqual([["job"]]);
    // The owner is told; it takes the stored ping (twice told, applied once).
    await owner.heartbeats.takePings(["job"]);
    await owner.heartbeats.takePings(undefined);
    expect(owner.recorded).toEqual([{ name: "job", success: false, message: "disk full" }]);
    expect(owner.heartbeats.stateOf("job")).toBe("down");
    await here.heartbeats.close();
    await owner.heartbeats.close();
  });

  it("keeps a stored ping whose heartbeat moved away while it was being taken", async () => {
    const here = setup();
    const owner = setup(true, here.store);
    const next = setup(true, here.store);
    const entry = registration("job");
    here.place(entry, false);
    owner.place(entry, true);
    await here.heartbeats.ping(KEY, { kind: "fail" }, undefined, "disk full");
    here.store.beforeApply = () => owner.heartbeats.placed(entry, false);
    await owner.heartbeats.takePings(["job"]);
    here.store.beforeApply = undefined;
    expect(owner.recorded).toEqual([]);
    expect(here.store.pings).toHaveLength(1);
    // The new owner applies it.
    next.place(entry, true);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(next.recorded).toEqual([{ name: "job", success: false, message: "disk full" }]);
    expect(here.store.pings).toEqual([]);
    expect(here.store.snapshotRows.get("job")).toMatchObject({ state: "down" });
    for (const instance of [here, owner, next]) await instance.heartbeats.close();
  });

  it("leaves taken pings in the table until their state is written, applied once", async () => {
    const here = setup();
    const owner = setup(true, here.store);
    const entry = registration("job");
    here.place(entry, false);
    owner.place(entry, true);
    await here.heartbeats.ping(KEY, { kind: "fail" }, undefined, "disk full");
    here.store.failCommit = true;
    await owner.heartbeats.takePings(["job"]);
    expect(here.store.pings).toHaveLength(1);
    here.store.failCommit = false;
    await owner.heartbeats.takePings(["job"]);
    expect(owner.recorded).toEqual([{ name: "job", success: false, message: "disk full" }]);
    expect(here.store.pings).toEqual([]);
    expect(here.store.snapshotRows.get("job")).toMatchObject({ state: "down" });
    await here.heartbeats.close();
    await owner.heartbeats.close();
  });

  it("does not overwrite the stored state when the shard moves away before it was read", async () => {
    const { heartbeats, store, place } = setup();
    const stored = { state: "up" as const, lastPingMs: 1_000, expectedMs: 3_601_000, runs: [] };
    store.snapshotRows.set("job", stored);
    const entry = registration("job");
    place(entry, true);
    heartbeats.placed(entry, false);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await heartbeats.close();
    expect(store.snapshotRows.get("job")).toEqual(stored);
  });

  it("never answers OK for a ping it could not store", async () => {
    const { heartbeats, store, place } = setup();
    place(registration("job"), false);
    store.failPings = true;
    await expect(heartbeats.ping(KEY, { kind: "success" }, undefined, "")).rejects.toThrow("database unavailable");
    await heartbeats.close();
  });

  it("hands the last state over when the heartbeat's shard moves away, and keeps it", async () => {
    const { heartbeats, store, place } = setup();
    const entry = registration("job");
    place(entry, true);
    await heartbeats.ping(KEY, { kind: "start" }, undefined, "");
    heartbeats.placed(entry, false);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(store.snapshotRows.get("job")).toMatchObject({ state: "started" });
    expect(heartbeats.tracker.has("job")).toBe(false);
    // Still registered, judged elsewhere: its stored state is not erased here.
    await heartbeats.close();
    expect(store.snapshotRows.get("job")).toMatchObject({ state: "started" });
  });

  it("forgets the state of a deleted heartbeat and its key", async () => {
    const { heartbeats, store, place, remove } = setup(false);
    const entry = registration("job");
    place(entry, true);
    await heartbeats.ping(KEY, { kind: "success" }, undefined, "");
    remove(entry);
    expect(heartbeats.nameOf(KEY)).toBeUndefined();
    expect(await heartbeats.ping(KEY, { kind: "success" }, undefined, "")).toEqual({ kind: "unknown" });
    await heartbeats.close();
    expect(store.snapshotRows.has("job")).toBe(true);
    expect(store.snapshotRows.get("job")).toBeUndefined();
  });

  it("generates a configuration-file heartbeat's key once", async () => {
    const { heartbeats } = setup(false);
    const definition = validateDefinition("heartbeat", { name: "file-job", period: "1h" }, RULES, {
      unknownKeys: "reject",
    });
    const first = await heartbeats.withKeys([{ definition, path: "healthchecks.heartbeat-checks[0]" }]);
    const second = await heartbeats.withKeys([{ definition, path: "healthchecks.heartbeat-checks[0]" }]);
    const keyOf = (checks: typeof first) =>
      checks[0]?.definition.kind === "heartbeat" ? checks[0].definition.key : "";
    expect(keyOf(first)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(keyOf(second)).toBe(keyOf(first));
    await heartbeats.close();
  });
});
