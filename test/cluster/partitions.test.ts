/**
 * A partitioned stream across instances (docs/cluster.md, "Partitioned streams"): its 64
 * partitions are leased one by one, so they spread over the members; every event of one host
 * reaches its partition's owner in order, whichever instance received it; index searches and
 * current-time merge every owner's answer; a killed owner's partitions are taken over and no push
 * acknowledged by a survivor is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PARTITION_COUNT, partitionerOf } from "../../src/streams/partition.js";
import { until } from "../support/until.js";
import { b64, call, clusterSkip, createCluster, type Instance, LEASE_MS, sleep } from "./harness.js";

const SKIP = clusterSkip("the partitioned stream tests (test/cluster/partitions.test.ts)");

const STREAM = "hot";
/** Hosts per group; groups push in parallel, each group's rounds one after the other. */
const HOSTS = 50;
const GROUPS = 4;
const ROUNDS = 12;
/** Events per host per round. */
const PER_ROUND = 5;

// Phase 1: each host's latest event indexed (service "last"); an event of a host whose seq is lower
// than the host's previous event's indexes {host, service "disorder"} (metric = -seq, so that
// coll-increase over the last two events is > 0 exactly when they came out of order); an event
// seen twice indexes {host, seq, service "duplicate"}. Phase 2: each event indexed by its host.
const CONFIG = `{:partition-by [:host]
 :actions
 {:action :sdo
  :children
  [{:action :where :params [[:= :phase 1]]
    :children [{:action :with :params [{:service "last"}] :children [{:action :index :params [[:host :service]]}]}
               {:action :by :params [{:fields [:host]}]
                :children [{:action :moving-event-window :params [{:size 2}]
                            :children [{:action :coll-increase
                                        :children [{:action :with :params [{:service "disorder"}]
                                                    :children [{:action :index :params [[:host :service]]}]}]}]}]}
               {:action :by :params [{:fields [:host :seq]}]
                :children [{:action :fixed-event-window :params [{:size 2}]
                            :children [{:action :coll-count
                                        :children [{:action :with :params [{:service "duplicate"}]
                                                    :children [{:action :index :params [[:host :seq :service]]}]}]}]}]}]}
   {:action :where :params [[:= :phase 2]] :children [{:action :index :params [[:host]]}]}]}}`;

interface IndexedEvent {
  readonly host?: string;
  readonly seq?: number;
  readonly service?: string;
  readonly phase?: number;
}

/** The stream's index searched on `instance`; undefined on a 503 (an owner changing) when polling. */
async function search(instance: Instance, condition: string, polling = false): Promise<IndexedEvent[] | undefined> {
  const answer = await call(instance.baseUrl, "POST", `/api/v1/index/${STREAM}/search`, {
    body: { query: b64(condition) },
    timeoutMs: 20_000,
  });
  if (answer.status === 503 && polling) return undefined;
  if (answer.status !== 200)
    throw new Error(`search on ${instance.id}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.events as IndexedEvent[];
}

const partitionOf = partitionerOf([["host"]]);

describe.skipIf(SKIP !== undefined)("a partitioned stream across three instances", () => {
  const cluster = createCluster({ instances: 3, balancer: false });
  beforeAll(async () => {
    await cluster.start();
    await cluster.waitForStable(3);
  }, 90_000);
  afterAll(() => cluster.stop(), 60_000);

  /** Partition k → owner id, from GET /cluster. */
  const owners = async (on: Instance): Promise<Map<number, string>> => {
    const view = await cluster.clusterView(on);
    const found = new Map<number, string>();
    for (const member of view.members) {
      for (const key of member.streams) {
        const match = /^hot#(\d+)$/.exec(key);
        if (match !== null) found.set(Number(match[1]), member.id);
      }
    }
    return found;
  };

  it("spreads the partitions over the members, keeps each host's order, and merges searches", async () => {
    const [a] = cluster.instances as [Instance];
    expect((await call(a.baseUrl, "POST", `/api/v1/stream/${STREAM}`, { body: { config: b64(CONFIG) } })).status).toBe(
      201,
    );
    // Every partition owned, spread evenly (64 over 3: 22, 21, 21), seen alike by every instance.
    const spread = await until(
      async () => {
        const found = await owners(a);
        if (found.size !== PARTITION_COUNT) return undefined;
        const counts = [...new Set(found.values())].map((id) => [...found.values()].filter((o) => o === id).length);
        return counts.length === 3 && counts.every((count) => count >= 21 && count <= 22) ? found : undefined;
      },
      "the 64 partitions of stream hot spread over the three members",
      LEASE_MS * 4,
    );
    for (const instance of cluster.instances) expect(await owners(instance)).toEqual(spread);
    const view = await cluster.clusterView(a);
    expect(view.members.every((member) => !member.streams.includes(STREAM))).toBe(true);

    // Each round of a group goes to another instance, after the previous round was acknowledged.
    await Promise.all(
      Array.from({ length: GROUPS }, async (_, group) => {
        for (let round = 0; round < ROUNDS; round++) {
          const instance = cluster.instances[(round + group) % cluster.instances.length] as Instance;
          const events = [];
          for (let step = 0; step < PER_ROUND; step++) {
            const seq = round * PER_ROUND + step;
            for (let h = 0; h < HOSTS; h++) {
              events.push({ phase: 1, host: `g${group}-h${h}`, seq, metric: -seq, time: 100, ttl: 1e9 });
            }
          }
          const answer = await call(instance.baseUrl, "PUT", `/api/v1/stream/${STREAM}`, {
            body: { events },
            timeoutMs: 20_000,
          });
          expect(answer.status, `group ${group} round ${round} on ${instance.id}`).toBe(200);
        }
      }),
    );
    const hosts = GROUPS * HOSTS;
    const lastSeq = ROUNDS * PER_ROUND - 1;
    for (const instance of cluster.instances) {
      // Merged over the three owners: every host's latest event is its last one.
      let seen: IndexedEvent[] | undefined;
      const last = await until(
        async () => {
          const found = await search(instance, '[:= :service "last"]', true);
          seen = found ?? seen;
          return found?.length === hosts && found.every((event) => event.seq === lastSeq) ? found : undefined;
        },
        `the latest event of the ${hosts} hosts through ${instance.id}`,
        20_000,
      ).catch(async (error) => {
        const behind = (seen ?? []).filter((event) => event.seq !== lastSeq);
        const now = await owners(instance);
        const moved = [...now].filter(([k, id]) => spread.get(k) !== id).map(([k]) => k);
        throw new Error(
          `${error}: ${seen?.length} hosts found, ${behind.length} behind (e.g. ${JSON.stringify(behind.slice(0, 3))}); partitions moved since: ${JSON.stringify(moved)}\n${cluster.outputs(1_500)}`,
        );
      });
      const holders = new Set(last.map((event) => spread.get(partitionOf({ host: event.host }))));
      expect(holders.size, "owners whose partitions answered").toBe(3);
    }
    expect(await search(a, '[:= :service "disorder"]'), "hosts whose events came out of order").toEqual([]);
    expect(await search(a, '[:= :service "duplicate"]'), "events run twice").toEqual([]);
    for (const instance of cluster.instances) {
      expect(await call(instance.baseUrl, "GET", `/api/v1/index/${STREAM}/current-time`)).toEqual({
        status: 200,
        body: { "current-time": 100 },
      });
    }
  }, 120_000);

  it("moves a killed owner's partitions and loses no push a survivor acknowledged", async () => {
    const before = await owners(cluster.instances[0] as Instance);
    const dead = cluster.byId(before.get(0) ?? "");
    const survivors = cluster.instances.filter((instance) => instance !== dead);
    let next = 0;
    let stopping = false;
    let killedAt = Number.POSITIVE_INFINITY;
    const pushes: Array<{ hosts: string[]; startedAt: number; status: number | string; via: Instance }> = [];
    const lane = async (instance: Instance) => {
      while (!stopping) {
        const index = next++;
        const hosts = Array.from({ length: 20 }, (_, k) => `p2-${index}-${k}`);
        const push = { hosts, startedAt: Date.now(), status: "pending" as number | string, via: instance };
        pushes.push(push);
        const events = hosts.map((host) => ({ phase: 2, host, time: 200, ttl: 1e9 }));
        try {
          push.status = (
            await call(instance.baseUrl, "PUT", `/api/v1/stream/${STREAM}`, { body: { events }, timeoutMs: 15_000 })
          ).status;
        } catch (error) {
          push.status = String(error);
        }
        await sleep(20);
      }
    };
    const lanes = Promise.all(survivors.map(lane));
    await sleep(1_000);
    killedAt = await cluster.kill(dead);
    // Every partition owned by a survivor again.
    await until(
      async () => {
        const found = await owners(survivors[0] as Instance);
        return found.size === PARTITION_COUNT && [...found.values()].every((id) => id !== dead.id) ? true : undefined;
      },
      "the survivors to own the 64 partitions",
      LEASE_MS + 10_000,
    );
    await sleep(1_000);
    stopping = true;
    await lanes;
    const afterKill = pushes.filter((push) => push.startedAt >= killedAt);
    expect(
      afterKill.filter((push) => push.status !== 200).map((push) => `${push.via.id}: ${push.status}`),
      "pushes to survivors after the kill not answered 200",
    ).toEqual([]);
    expect(afterKill.length).toBeGreaterThan(10);
    const expected = new Set(afterKill.flatMap((push) => push.hosts));
    let missing: string[] = [];
    await until(
      async () => {
        const found = await search(survivors[0] as Instance, "[:= :phase 2]", true);
        const indexed = new Set((found ?? []).map((event) => event.host));
        missing = [...expected].filter((host) => !indexed.has(host));
        return missing.length === 0 ? true : undefined;
      },
      "every acknowledged event in the survivors' indexes",
      20_000,
    ).catch((error) => {
      throw new Error(
        `${error}: ${missing.length} of ${expected.size} missing, e.g. ${missing.slice(0, 5).join(", ")}, in partitions ${JSON.stringify([...new Set(missing.map((host) => partitionOf({ host })))])}, owned before the kill by ${JSON.stringify([...new Set(missing.map((host) => before.get(partitionOf({ host }))))])}; first push after the kill ${JSON.stringify(afterKill[0]?.hosts.slice(0, 2))}\n${cluster.outputs(6_000)}`,
      );
    });
    console.info(
      `partitions: ${dead.id} killed; ${afterKill.length} pushes (${expected.size} events) acknowledged by survivors after it, all indexed`,
    );
  }, 120_000);
});
