/**
 * docs/cluster.md, heartbeat checks with several instances: a ping to any instance counts, the owner
 * of the heartbeat's shard judges its deadlines, and a ping answered 200 is never lost (a ping
 * received by another instance is stored, then applied by the owner exactly once).
 *
 * 12 heartbeats created through the first instance; each is pinged through every instance in
 * turn: its state is `up` on every instance, and each `/log` ping (a unique body) is in its history
 * exactly once. Then half of them stop pinging: they turn `down` (seen on every instance), the
 * others stay `up`. Then an instance is killed: a failure ping to a survivor for a heartbeat it
 * owned still counts once its shard is taken over.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/until.js";
import { call, clusterSkip, createCluster, type Instance, LEASE_MS, sleep } from "./harness.js";

const SKIP = clusterSkip("the cluster heartbeat tests (test/cluster/heartbeats.test.ts)");

const COUNT = 12;
const name = (index: number): string => `beat-${String(index).padStart(2, "0")}`;
const NAMES = Array.from({ length: COUNT }, (_, index) => name(index));

const cluster = createCluster({ instances: 3, config: { healthchecks: { "min-interval": "100ms" } } });
const keys = new Map<string, string>();

/** Sends a ping through `instance`; its status and plain-text answer. */
async function ping(instance: Instance, key: string, suffix = "", body?: string): Promise<[number, string]> {
  const response = await fetch(`${instance.baseUrl}/ping/${key}${suffix}`, {
    method: body === undefined ? "GET" : "POST",
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(10_000),
  });
  return [response.status, await response.text()];
}

/** The states of every heartbeat as `instance` shows them, by name. */
async function states(instance: Instance): Promise<Record<string, string>> {
  const answer = await call(instance.baseUrl, "GET", "/healthcheck");
  const found: Record<string, string> = {};
  for (const check of answer.body as Array<{ name: string; state?: string }>) {
    if (check.state !== undefined) found[check.name] = check.state;
  }
  return found;
}

/** Waits until every live instance shows `expected` states. */
async function expectStates(expected: Record<string, string>, what: string, timeoutMs = 15_000): Promise<void> {
  let last: unknown;
  await until(
    async () => {
      for (const instance of cluster.alive()) {
        const shown = await states(instance);
        last = { [instance.id]: shown };
        for (const [check, state] of Object.entries(expected)) if (shown[check] !== state) return undefined;
      }
      return true;
    },
    what,
    timeoutMs,
  ).catch((error) => {
    throw new Error(`${error}: ${JSON.stringify(last)}\n${cluster.outputs(2_000)}`);
  });
}

describe.skipIf(SKIP !== undefined)("heartbeat checks on three instances", () => {
  beforeAll(async () => {
    await cluster.start();
    await cluster.waitForStable(3);
  }, 120_000);
  afterAll(() => cluster.stop(), 60_000);

  it("counts a ping to any instance, exactly once, and judges deadlines on the owner", async () => {
    const [first] = cluster.instances;
    if (first === undefined) throw new Error("no instance");
    for (const check of NAMES) {
      const answer = await call(first.baseUrl, "POST", "/healthcheck/heartbeat", {
        body: { name: check, period: "3s", grace: "1s" },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      keys.set(check, answer.body.key);
    }
    // Every instance knows every key within a second (the definitions' change feed).
    await expectStates(Object.fromEntries(NAMES.map((check) => [check, "new"])), "the heartbeats on every instance");

    // Each heartbeat pinged through each instance; each log ping a unique body.
    for (const [index, check] of NAMES.entries()) {
      const key = keys.get(check) ?? "";
      for (const [turn, instance] of cluster.instances.entries()) {
        expect(await ping(instance, key)).toEqual([200, "OK\n"]);
        expect(await ping(instance, key, "/log", `log ${index} via ${turn}`)).toEqual([200, "OK\n"]);
      }
    }
    await expectStates(Object.fromEntries(NAMES.map((check) => [check, "up"])), "every heartbeat up");
    for (const [index, check] of NAMES.entries()) {
      const logs = await until(async () => {
        const answer = await call(first.baseUrl, "GET", `/result/${check}/history`);
        const found = (answer.body.results as Array<{ message: string; log?: boolean }>).filter((entry) => entry.log);
        return found.length >= cluster.instances.length ? found : undefined;
      }, `the log pings of ${check} in its history`);
      expect(logs.map((entry) => entry.message).sort()).toEqual(
        cluster.instances.map((_instance, turn) => `log ${index} via ${turn}`),
      );
    }

    // Half keep pinging (through every instance in turn), half stop: those turn down.
    const silent = NAMES.filter((_check, index) => index % 2 === 0);
    const alive = NAMES.filter((_check, index) => index % 2 === 1);
    const deadline = Date.now() + 6_000;
    let turn = 0;
    while (Date.now() < deadline) {
      for (const check of alive) {
        const instance = cluster.instances[turn++ % cluster.instances.length] as Instance;
        expect((await ping(instance, keys.get(check) ?? ""))[0]).toBe(200);
      }
      await sleep(500);
    }
    await expectStates(
      Object.fromEntries([...silent.map((check) => [check, "down"]), ...alive.map((check) => [check, "up"])]),
      "the silent heartbeats down, the others up",
    );
    const missed = await call(first.baseUrl, "GET", `/result/${silent[0]}`);
    expect(missed.body).toMatchObject({ success: false, state: "down" });
    expect(missed.body.message).toMatch(/^no ping: one was expected at /);
  }, 120_000);

  it("keeps counting pings after the owner of a heartbeat is killed", async () => {
    const [first, second] = cluster.instances;
    if (first === undefined || second === undefined) throw new Error("no instance");
    // A longer period, so that the take-over (up to the lease and 2 s) does not make them late.
    for (const check of NAMES) {
      const answer = await call(first.baseUrl, "POST", "/healthcheck/heartbeat", {
        body: { name: check, period: "1m", grace: "1m" },
      });
      expect(answer.body.key).toBe(keys.get(check));
    }
    // Every heartbeat up first, so that only the failure pings below can turn them down.
    for (const check of NAMES) expect((await ping(first, keys.get(check) ?? ""))[0]).toBe(200);
    await expectStates(Object.fromEntries(NAMES.map((check) => [check, "up"])), "every heartbeat up before the kill");
    await sleep(1_500);
    await cluster.kill(second);
    const survivors = cluster.alive();
    // Failure pings to the survivors while the dead instance's shards wait for their lease: stored,
    // then applied by the new owner (only they can turn the heartbeats down).
    for (const check of NAMES) {
      const instance = survivors[0] as Instance;
      expect(await ping(instance, keys.get(check) ?? "", "/fail", "disk full")).toEqual([200, "OK\n"]);
    }
    await sleep(LEASE_MS);
    await expectStates(Object.fromEntries(NAMES.map((check) => [check, "down"])), "every failure applied", 30_000);
    for (const check of NAMES) {
      const result = await until(async () => {
        const answer = await call((survivors[0] as Instance).baseUrl, "GET", `/result/${check}`);
        return answer.body.message === "disk full" ? answer.body : undefined;
      }, `the failure ping of ${check}`);
      expect(result, check).toMatchObject({ success: false, state: "down" });
    }
  }, 120_000);
});
