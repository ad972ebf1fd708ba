/**
 * One stream, one owner, events from every instance through JetStream (docs/cluster.md).
 *
 * 1. 100 000 events in batches of 500 pushed round-robin to the three instances go through a count
 *    window (fixed-time-window → coll-count → index) on the owner: the count is exact (none lost,
 *    none run twice).
 * 2. More pushes, from every instance, with the stream's owner SIGKILLed half-way: every push that
 *    a surviving instance acknowledged (sent after the kill) is run by the new owner (each event
 *    has a host of its own and appears in the new owner's index), and none is run twice there (a
 *    `by [:host]` → `fixed-event-window 2` branch indexes a "duplicate" entry for any host seen twice).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/until.js";
import { b64, call, clusterSkip, createCluster, type Instance, LEASE_MS, sleep } from "./harness.js";

const SKIP = clusterSkip("the cluster stream tests (test/cluster/streams.test.ts)");

const STREAM = "counted";
const EVENTS = 100_000;
const BATCH = 500;
const BATCHES = EVENTS / BATCH;
/** Event time of phase 1 (window [0, 1000)); the flush event at 1000 closes the window. */
const PHASE1_TIME = 100;
const FLUSH_TIME = 1_000;
/** Events per push in phase 2. */
const PHASE2_BATCH = 20;
/** Pushes completed before the owner is killed (about a third per instance). */
const PUSHES_BEFORE_KILL = 90;

// Phase 1: every event counted by the window; each batch indexed by its number (the last event of a
// batch, seq 499, shows the whole batch ran). Phase 2: each event indexed by its host, and an entry
// {host, service "duplicate"} for any host that reaches the stream twice.
const CONFIG = `{:actions
 {:action :sdo
  :children
  [{:action :where :params [[:= :phase 1]]
    :children [{:action :fixed-time-window :params [{:duration 1000}]
                :children [{:action :coll-count
                            :children [{:action :with :params [{:host "total"}]
                                        :children [{:action :index :params [[:host]]}]}]}]}
               {:action :index :params [[:batch]]}]}
   {:action :where :params [[:= :phase 2]]
    :children [{:action :index :params [[:host]]}
               {:action :by :params [{:fields [:host]}]
                :children [{:action :fixed-event-window :params [{:size 2}]
                            :children [{:action :coll-count
                                        :children [{:action :with :params [{:service "duplicate"}]
                                                    :children [{:action :index :params [[:host :service]]}]}]}]}]}]}]}}`;

interface IndexedEvent {
  readonly phase: number;
  readonly batch?: number | string;
  readonly seq?: number;
  readonly host?: string;
  readonly service?: string;
  readonly metric?: number;
}

/** Answers 503 "owner unavailable" seen while polling (allowed: the owner had 2 s to answer). */
const unavailable: string[] = [];

/**
 * The index of the stream searched on `instance` (POST, the query in the body); undefined on a 503
 * when `polling` (the owner busy or changing), an error on any other failure.
 */
async function search(instance: Instance, condition: string, polling = false): Promise<IndexedEvent[] | undefined> {
  const answer = await call(instance.baseUrl, "POST", `/api/v1/index/${STREAM}/search`, {
    body: { query: b64(condition) },
    timeoutMs: 20_000,
  });
  if (answer.status === 503 && polling) {
    unavailable.push(`${instance.id}: ${JSON.stringify(answer.body)}`);
    return undefined;
  }
  if (answer.status !== 200) {
    throw new Error(`search on ${instance.id}: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  return answer.body.events as IndexedEvent[];
}

describe.skipIf(SKIP !== undefined)("one stream fed by three instances through JetStream", () => {
  const cluster = createCluster({ instances: 3, balancer: false });
  beforeAll(async () => {
    await cluster.start();
    await cluster.waitForStable(3);
  }, 90_000);
  afterAll(() => cluster.stop(), 60_000);

  let owner: Instance | undefined;

  it("counts 100 000 events pushed in batches of 500 round-robin to the three instances exactly", async () => {
    const [a] = cluster.instances as [Instance];
    expect(await call(a.baseUrl, "POST", `/api/v1/stream/${STREAM}`, { body: { config: b64(CONFIG) } })).toEqual({
      status: 201,
      body: { message: "stream added" },
    });
    for (const instance of cluster.instances) {
      await until(
        async () =>
          (await call(instance.baseUrl, "GET", `/api/v1/stream/${STREAM}`)).status === 200 ? true : undefined,
        `stream ${STREAM} on ${instance.id}`,
        1_000,
      );
    }
    owner = await until(() => cluster.streamOwner(STREAM), `an owner of stream ${STREAM}`, 10_000);
    for (const instance of cluster.instances) expect((await cluster.streamOwner(STREAM, instance))?.id).toBe(owner.id);

    const statuses: Array<{ batch: number; instance: string; status: number | string }> = [];
    const started = Date.now();
    await Promise.all(
      cluster.instances.map(async (instance, lane) => {
        for (let batch = lane; batch < BATCHES; batch += cluster.instances.length) {
          const events = Array.from({ length: BATCH }, (_, seq) => ({
            phase: 1,
            batch,
            seq,
            metric: 1,
            time: PHASE1_TIME,
            ttl: 1e9,
          }));
          let status: number | string;
          try {
            status = (
              await call(instance.baseUrl, "PUT", `/api/v1/stream/${STREAM}`, { body: { events }, timeoutMs: 20_000 })
            ).status;
          } catch (error) {
            status = String(error);
          }
          statuses.push({ batch, instance: instance.id, status });
        }
      }),
    );
    const pushSeconds = (Date.now() - started) / 1000;
    const failed = statuses.filter((entry) => entry.status !== 200);
    expect(failed, `pushes not answered 200 (of ${statuses.length}, in ${pushSeconds} s)`).toEqual([]);

    // Every batch ran to its last event on the owner (searched through a non-owner: answered by the owner).
    const nonOwner = cluster.instances.find((instance) => instance !== owner) as Instance;
    let complete = 0;
    await until(
      async () => {
        const found = await search(nonOwner, "[:= :phase 1]", true);
        if (found === undefined) return undefined;
        complete = found.filter((event) => event.host === undefined && event.seq === BATCH - 1).length;
        return complete === BATCHES ? true : undefined;
      },
      `the ${BATCHES} batches to run on the owner`,
      30_000,
    ).catch((error) => {
      throw new Error(`${error}: ${complete} of ${BATCHES} batches complete; 503 answers: ${unavailable.length}`);
    });

    // Close the window: the event at 1000 emits [0, 1000) as one list, counted.
    const flush = { phase: 1, batch: "flush", seq: 0, metric: 1, time: FLUSH_TIME, ttl: 1e9 };
    expect(await call(owner.baseUrl, "PUT", `/api/v1/stream/${STREAM}`, { body: { event: flush } })).toEqual({
      status: 200,
      body: { message: "ok" },
    });
    const total = await until(
      async () => (await search(owner as Instance, '[:= :host "total"]', true))?.[0],
      "the count of the window",
      10_000,
    );
    expect(total.metric, `count of the window (pushes took ${pushSeconds} s)`).toBe(EVENTS);
    console.info(`streams: ${EVENTS} events pushed in ${pushSeconds} s, counted ${total.metric} on owner ${owner.id}`);
    expect(await call(nonOwner.baseUrl, "GET", `/api/v1/index/${STREAM}/current-time`)).toEqual({
      status: 200,
      body: { "current-time": FLUSH_TIME },
    });
  }, 120_000);

  it("counts every event of one window pushed round-robin, out of order, with :delay 0", async () => {
    // 20 000 events in batches of 200 over the three instances; each batch spans the whole window
    // [1980, 2040), so the owner sees events older than the latest one in every batch but the
    // first: all of them belong to the open window and count.
    const stream = "round-robin";
    const total = 20_000;
    const batch = 200;
    const batches = total / batch;
    const config = `{:actions {:action :fixed-time-window :params [{:duration 60 :delay 0}]
      :children [{:action :coll-count :children [{:action :with :params [{:host "total"}]
                  :children [{:action :index :params [[:host]]}]}]}]}}`;
    const [a] = cluster.instances as [Instance];
    expect((await call(a.baseUrl, "POST", `/api/v1/stream/${stream}`, { body: { config: b64(config) } })).status).toBe(
      201,
    );
    for (const instance of cluster.instances) {
      await until(
        async () =>
          (await call(instance.baseUrl, "GET", `/api/v1/stream/${stream}`)).status === 200 ? true : undefined,
        `stream ${stream} on ${instance.id}`,
        1_000,
      );
    }
    const streamOwner = await until(() => cluster.streamOwner(stream), `an owner of stream ${stream}`, 10_000);
    await Promise.all(
      cluster.instances.map(async (instance, lane) => {
        for (let number = lane; number < batches; number += cluster.instances.length) {
          const events = Array.from({ length: batch }, (_, seq) => ({ time: 2_000 + (seq * batches + number) / 1000 }));
          const answer = await call(instance.baseUrl, "PUT", `/api/v1/stream/${stream}`, {
            body: { events },
            timeoutMs: 20_000,
          });
          expect(answer.status, `batch ${number} on ${instance.id}`).toBe(200);
        }
      }),
    );
    // The pushes were acknowledged once in JetStream; the window closes at 2040 once they all ran.
    const flushed = async () => {
      await call(streamOwner.baseUrl, "PUT", `/api/v1/stream/${stream}`, { body: { event: { time: 2_040 } } });
      const found = await call(streamOwner.baseUrl, "POST", `/api/v1/index/${stream}/search`, {
        body: { query: b64('[:= :host "total"]') },
      });
      return found.status === 200 ? (found.body.events as IndexedEvent[])[0] : undefined;
    };
    const counted = await until(flushed, "the count of the round-robin window", 20_000);
    expect(counted.metric).toBe(total);
  }, 120_000);

  it("runs every push acknowledged by a survivor after the owner's SIGKILL on the new owner, none twice", async () => {
    expect(owner, "the first test found the owner").toBeDefined();
    const dead = owner as Instance;
    expect((await cluster.streamOwner(STREAM))?.id).toBe(dead.id);

    interface Push {
      readonly index: number;
      readonly instance: Instance;
      readonly hosts: readonly string[];
      readonly startedAt: number;
      status: number | string;
    }
    const pushes: Push[] = [];
    let next = 0;
    let stopping = false;
    let killedAt = Number.POSITIVE_INFINITY;

    const lane = async (instance: Instance): Promise<void> => {
      while (!stopping) {
        if (instance === dead && killedAt !== Number.POSITIVE_INFINITY) return;
        const index = next;
        next += 1;
        const hosts = Array.from({ length: PHASE2_BATCH }, (_, k) => `p2-${index}-${k}`);
        const events = hosts.map((host) => ({ phase: 2, host, service: "p2", metric: 1, time: FLUSH_TIME, ttl: 1e9 }));
        const push: Push = { index, instance, hosts, startedAt: Date.now(), status: "pending" };
        pushes.push(push);
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
    const lanes = Promise.all(cluster.instances.map(lane));

    await until(
      async () => (pushes.filter((push) => push.status !== "pending").length >= PUSHES_BEFORE_KILL ? true : undefined),
      `${PUSHES_BEFORE_KILL} pushes before the kill`,
      30_000,
    );
    const killStart = Date.now();
    killedAt = await cluster.kill(dead);
    const survivors = cluster.alive();
    // The pushes go on until a survivor owns the stream, and two seconds more.
    const newOwner = await until(
      async () => {
        const found = await cluster.streamOwner(STREAM, survivors[0]);
        return found !== undefined && found !== dead ? found : undefined;
      },
      `a survivor to own stream ${STREAM}`,
      LEASE_MS + 10_000,
    );
    const takeoverMs = Date.now() - killedAt;
    for (const survivor of survivors) expect((await cluster.streamOwner(STREAM, survivor))?.id).toBe(newOwner.id);
    await sleep(2_000);
    stopping = true;
    await lanes;

    const afterKill = pushes.filter((push) => push.instance !== dead && push.startedAt >= killedAt);
    const notAcknowledged = afterKill.filter((push) => push.status !== 200);
    expect(
      notAcknowledged.map((push) => `${push.instance.id}#${push.index}: ${push.status}`),
      `pushes to survivors after the kill not answered 200 (of ${afterKill.length}; NATS was up)`,
    ).toEqual([]);
    const acknowledged = afterKill.filter((push) => push.status === 200);
    expect(acknowledged.length).toBeGreaterThan(20);
    const expected = new Set(acknowledged.flatMap((push) => push.hosts));

    // All of them reach the new owner's index.
    let missing: string[] = [];
    const deadline = Date.now() + 20_000;
    for (;;) {
      const found = await search(newOwner, "[:= :phase 2]", true);
      const indexed = new Set((found ?? []).map((event) => event.host));
      missing = [...expected].filter((host) => !indexed.has(host));
      if (missing.length === 0 || Date.now() > deadline) break;
      await sleep(500);
    }
    expect(
      missing.length,
      `events of pushes acknowledged after the kill missing from ${newOwner.id}'s index (of ${expected.size}; e.g. ${missing
        .slice(0, 5)
        .join(
          ", ",
        )}; ${unavailable.length} answers 503 while polling; kill took ${killedAt - killStart} ms, takeover seen ${takeoverMs} ms after it)`,
    ).toBe(0);
    console.info(
      `streams: owner ${dead.id} killed after ${pushes.filter((push) => push.startedAt < killedAt).length} pushes; ` +
        `new owner ${newOwner.id} seen ${takeoverMs} ms after the kill; ${acknowledged.length} pushes (${expected.size} events) ` +
        `acknowledged by survivors after the kill, all in ${newOwner.id}'s index; 503 while polling: ${unavailable.length}`,
    );
    // None ran twice on the new owner.
    await sleep(1_000);
    const duplicates = (await search(newOwner, '[:= :service "duplicate"]')) ?? [];
    expect(
      duplicates.map((event) => event.host),
      "hosts that reached the new owner twice",
    ).toEqual([]);
    // What the dead owner received itself never went through JetStream: the new owner never saw it.
    const ownPushes = new Set(
      pushes.filter((push) => push.instance === dead && push.status === 200).flatMap((push) => push.hosts),
    );
    const indexed = ((await search(newOwner, "[:= :phase 2]")) ?? []).map((event) => event.host ?? "");
    expect(
      indexed.filter((host) => ownPushes.has(host)).slice(0, 5),
      "events pushed to the old owner directly, run again by the new one",
    ).toEqual([]);
  }, 120_000);
});
