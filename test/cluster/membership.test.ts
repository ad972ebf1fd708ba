/**
 * The members (docs/cluster.md): `GET /cluster` on each instance shows three members, two after a
 * SIGKILL (once the lease ran out), three after a restart, with the 256 healthcheck shards split
 * 86/85/85 (± 1) once stable; a graceful stop removes the member at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/until.js";
import {
  type ClusterView,
  call,
  clusterSkip,
  createCluster,
  HEARTBEAT_MS,
  type Instance,
  LEASE_MS,
  SHARDS,
  shardBounds,
  sleep,
} from "./harness.js";

const SKIP = clusterSkip("the cluster membership tests (test/cluster/membership.test.ts)");

/** The sum of every sample of `vigie_cluster_rebalances_total` (whatever its labels); NaN when absent. */
function rebalanceTotal(text: string): number {
  const samples = [...text.matchAll(/^vigie_cluster_rebalances_total(?:\{[^}]*\})? ([0-9.e+-]+)$/gm)];
  return samples.length === 0 ? Number.NaN : samples.reduce((sum, sample) => sum + Number(sample[1]), 0);
}

/** The value of a metric without labels in a Prometheus text exposition (undefined when absent). */
function metric(text: string, name: string): number | undefined {
  const line = new RegExp(`^${name} ([0-9.e+-]+)$`, "m").exec(text);
  return line?.[1] === undefined ? undefined : Number(line[1]);
}

describe.skipIf(SKIP !== undefined)("cluster membership (3 instances, one nats-server, one PostgreSQL)", () => {
  const cluster = createCluster({ instances: 3, balancer: false });
  beforeAll(() => cluster.start(), 90_000);
  afterAll(() => cluster.stop(), 60_000);

  /** Checks what every view must hold: the same members, with the instance's own id, shards split evenly. */
  function checkViews(views: ClusterView[], live: Instance[]): void {
    const ids = live.map((instance) => instance.id).sort();
    const bounds = shardBounds(ids.length);
    views.forEach((view, index) => {
      expect(view.instance).toBe(live[index]?.id);
      expect(view.members.map((member) => member.id)).toEqual(ids);
      for (const member of view.members) {
        expect(member.url).toBe(cluster.byId(member.id).baseUrl);
        expect(Number.isNaN(Date.parse(member["started-at"])), member["started-at"]).toBe(false);
        expect(Number.isNaN(Date.parse(member["heartbeat-at"])), member["heartbeat-at"]).toBe(false);
        // Alive means a heartbeat within the lease (same machine: the database's clock is ours).
        expect(Date.now() - Date.parse(member["heartbeat-at"])).toBeLessThan(LEASE_MS + 1_000);
        expect(member.shards).toBeGreaterThanOrEqual(bounds.min);
        expect(member.shards).toBeLessThanOrEqual(bounds.max);
        expect(Array.isArray(member.streams)).toBe(true);
      }
      expect(view.members.reduce((sum, member) => sum + member.shards, 0)).toBe(SHARDS);
    });
  }

  /** 86/85/85 (± 1 each), largest first. */
  function expectSplit(view: ClusterView | undefined): void {
    const shards = (view?.members ?? []).map((member) => member.shards).sort((x, y) => y - x);
    const expected = [86, 85, 85];
    expect(shards.length, JSON.stringify(view)).toBe(3);
    shards.forEach((count, index) => {
      expect(Math.abs(count - (expected[index] ?? 0)), `shards ${shards.join("/")}`).toBeLessThanOrEqual(1);
    });
  }

  /** The last `vigie_cluster_rebalances_total` (summed over its labels) seen per instance. */
  const rebalances = new Map<string, number>();

  /**
   * The metrics of each live instance agree with `GET /cluster`: members, and the shards it owns
   * (the gauges may lag by a few heartbeats: polled for up to 2 s, the last values reported).
   */
  async function checkMetrics(live: Instance[]): Promise<void> {
    for (const instance of live) {
      let seen = "";
      const deadline = Date.now() + 2_000;
      for (;;) {
        const text = (await call(instance.baseUrl, "GET", "/metrics")).body as string;
        const view = await cluster.clusterView(instance);
        const own = view.members.find((member) => member.id === instance.id)?.shards;
        const members = metric(text, "vigie_cluster_members");
        const shards = metric(text, "vigie_cluster_shards_owned");
        rebalances.set(instance.id, rebalanceTotal(text));
        seen = `vigie_cluster_members ${members} (GET /cluster: ${view.members.length}), vigie_cluster_shards_owned ${shards} (GET /cluster: ${own})`;
        if (members === live.length && view.members.length === live.length && shards === own) break;
        if (Date.now() > deadline) {
          expect.fail(`metrics of ${instance.id} disagree with GET /cluster for 2 s: ${seen}`);
        }
        await sleep(100);
      }
    }
  }

  it("shows 3 members, then 2 after a SIGKILL, then 3 after a restart, shards 86/85/85 (±1) once stable", async () => {
    const three = await cluster.waitForStable(3);
    checkViews(three, cluster.alive());
    expectSplit(three[0]);
    await checkMetrics(cluster.alive());
    // Each instance gained shards at start-up: at least one rebalance each.
    for (const instance of cluster.alive()) {
      expect(rebalances.get(instance.id), `vigie_cluster_rebalances_total on ${instance.id}`).toBeGreaterThanOrEqual(1);
    }
    const beforeKill = new Map(rebalances);

    const victim = cluster.byId("c");
    const firstStart = three[0]?.members.find((member) => member.id === "c")?.["started-at"];
    const killedAt = await cluster.kill(victim);
    const survivors = cluster.alive();
    // Gone from every survivor's view once its lease ran out (its last heartbeat was at most one
    // heartbeat before the kill): lease + 1 s of slack for the requests.
    await until(
      async () => {
        const views = await Promise.all(survivors.map((instance) => cluster.clusterView(instance)));
        return views.every((view) => view.members.every((member) => member.id !== "c")) ? true : undefined;
      },
      "the killed member to leave every view",
      LEASE_MS + 1_000,
    );
    const goneAfter = Date.now() - killedAt;
    expect(goneAfter).toBeGreaterThanOrEqual(LEASE_MS - HEARTBEAT_MS - 200);
    const two = await cluster.waitForStable(2, 15_000);
    checkViews(two, survivors);
    await checkMetrics(survivors);
    // The survivors took the dead member's shards: a rebalance each.
    for (const instance of survivors) {
      expect(
        rebalances.get(instance.id),
        `vigie_cluster_rebalances_total on ${instance.id} after the kill`,
      ).toBeGreaterThan(beforeKill.get(instance.id) ?? Number.NaN);
    }

    await cluster.restart(victim);
    const again = await cluster.waitForStable(3, 20_000);
    checkViews(again, cluster.alive());
    expectSplit(again[0]);
    const secondStart = again[0]?.members.find((member) => member.id === "c")?.["started-at"];
    expect(Date.parse(secondStart ?? "")).toBeGreaterThan(Date.parse(firstStart ?? ""));
    await checkMetrics(cluster.alive());
  }, 90_000);

  it("removes a gracefully stopped member at once (SIGTERM: exit 0, row deleted before any lease runs out)", async () => {
    await cluster.waitForStable(3);
    const leaving = cluster.byId("b");
    const exited = leaving.process?.exited;
    const stoppedAt = await cluster.kill(leaving, "SIGTERM");
    expect(await exited).toBe(0);
    const survivors = cluster.alive();
    // Polled beyond the bound, to report the real delay when it is missed.
    let views: ClusterView[] = [];
    let goneAfter = Number.POSITIVE_INFINITY;
    while (Date.now() - stoppedAt < LEASE_MS + 2_000) {
      views = await Promise.all(survivors.map((instance) => cluster.clusterView(instance)));
      if (views.every((view) => view.members.map((member) => member.id).join() === "a,c")) {
        goneAfter = Date.now() - stoppedAt;
        break;
      }
      await sleep(50);
    }
    expect(
      goneAfter,
      `ms after b's exit before every survivor's view left it out (views then: ${JSON.stringify(views)})`,
    ).toBeLessThanOrEqual(1_000);
    const two = await cluster.waitForStable(2, 15_000);
    checkViews(two, survivors);
  }, 60_000);
});
