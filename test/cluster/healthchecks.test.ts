/**
 * docs/cluster.md: 300 http checks at 2 s against a target that records the time of
 * each request, per check (one path each). Each check is requested once per interval, never twice
 * within 1.5 s; after a SIGKILL of one instance, every check is requested again within lease +
 * interval (+ 1 s of slack) of the kill, and still never twice within 1.5 s. `GET /result` on every
 * instance lists the 300 checks, fresh after the kill too.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/until.js";
import { call, clusterSkip, createCluster, type Instance, LEASE_MS, sleep } from "./harness.js";

const SKIP = clusterSkip("the cluster healthcheck tests (test/cluster/healthchecks.test.ts)");

const CHECKS = 300;
const INTERVAL_MS = 2_000;
/** A check is never requested twice within this, even across a takeover. */
const MIN_GAP_MS = 1_500;
/** "About once per interval": no gap longer than this while no instance is lost. */
const MAX_GAP_MS = 2_500;
/** Slack beyond lease + interval for the takeover (requests, database round trips). */
const TAKEOVER_SLACK_MS = 1_000;

const name = (index: number): string => `check-${String(index).padStart(3, "0")}`;
const path = (index: number): string => `/c/${index}`;

describe.skipIf(SKIP !== undefined)("300 http checks on three instances, one killed", () => {
  const cluster = createCluster({ instances: 3 });
  /** Request times (ms since the epoch) per path. */
  const requests = new Map<string, number[]>();
  let target: Server | undefined;
  let targetPort = 0;

  beforeAll(async () => {
    target = createServer((request, response) => {
      const at = Date.now();
      const key = request.url ?? "";
      const times = requests.get(key);
      if (times === undefined) requests.set(key, [at]);
      else times.push(at);
      response.writeHead(200, { "content-type": "text/plain" });
      response.end("ok");
    });
    await new Promise<void>((done) => target?.listen(0, "127.0.0.1", done));
    const address = target.address();
    targetPort = typeof address === "object" && address !== null ? address.port : 0;
    await cluster.start();
    await cluster.waitForStable(3);
  }, 90_000);

  afterAll(async () => {
    await cluster.stop();
    if (target !== undefined) {
      target.closeAllConnections();
      await new Promise<void>((done) => target?.close(() => done()));
    }
  }, 60_000);

  /** Times of the requests of check `index`, in order. */
  const timesOf = (index: number): number[] => [...(requests.get(path(index)) ?? [])].sort((x, y) => x - y);

  /** The gaps between consecutive requests of each check, with when they ended. */
  function gaps(from = 0): Array<{ check: number; gap: number; at: number }> {
    const all: Array<{ check: number; gap: number; at: number }> = [];
    for (let index = 0; index < CHECKS; index += 1) {
      const times = timesOf(index);
      for (let position = 1; position < times.length; position += 1) {
        const at = times[position] as number;
        if (at >= from) all.push({ check: index, gap: at - (times[position - 1] as number), at });
      }
    }
    return all;
  }

  /**
   * What the instances say of their own lateness (`healthcheck_lateness_seconds`): runs that started
   * more than 0.5 s after their schedule, per instance. Tells a late scheduler from a slow target.
   */
  async function lateness(instances: readonly Instance[]): Promise<string> {
    const parts: string[] = [];
    for (const instance of instances) {
      const text = (await call(instance.baseUrl, "GET", "/metrics")).body as string;
      const count = Number(/^healthcheck_lateness_seconds_count ([0-9.e+-]+)$/m.exec(text)?.[1] ?? Number.NaN);
      const onTime = Number(
        /^healthcheck_lateness_seconds_bucket\{le="0\.5"\} ([0-9.e+-]+)$/m.exec(text)?.[1] ?? Number.NaN,
      );
      parts.push(`${instance.id}: ${count - onTime} of ${count} runs over 0.5 s late`);
    }
    return parts.join("; ");
  }

  async function expectAllResults(instances: readonly Instance[], freshWithinMs?: number): Promise<void> {
    const names = Array.from({ length: CHECKS }, (_, index) => name(index));
    for (const instance of instances) {
      let last: unknown;
      await until(
        async () => {
          const answer = await call(instance.baseUrl, "GET", "/result");
          last = answer.status === 200 ? `${answer.body.length} results` : answer;
          if (answer.status !== 200) return undefined;
          const listed = (answer.body as Array<{ name: string }>).map((result) => result.name);
          if (listed.length !== CHECKS || listed.join() !== names.join()) return undefined;
          if (freshWithinMs !== undefined) {
            const now = Date.now();
            const stale = (answer.body as Array<{ timestamp: string }>).filter(
              (result) => now - Date.parse(result.timestamp) > freshWithinMs,
            );
            last = `${stale.length} results older than ${freshWithinMs} ms, e.g. ${JSON.stringify(stale[0])}`;
            if (stale.length > 0) return undefined;
          }
          return true;
        },
        `GET /result on ${instance.id} to list the ${CHECKS} checks`,
        6_000,
      ).catch((error) => {
        throw new Error(`${error}: ${JSON.stringify(last)}`);
      });
    }
  }

  it("runs each check once per interval on one instance, and on another within lease + interval after a SIGKILL", async () => {
    const definitions = Array.from({ length: CHECKS }, (_, index) => ({
      name: name(index),
      target: "127.0.0.1",
      port: targetPort,
      path: path(index),
      "valid-status": [200],
      timeout: "1s",
      interval: `${INTERVAL_MS / 1000}s`,
    }));
    expect(
      await call(cluster.balancer.url, "POST", "/healthcheck/bulk", { body: { "http-checks": definitions } }),
    ).toEqual({
      status: 201,
      body: { message: "Healthchecks successfully added" },
    });
    const created = Date.now();
    for (const instance of cluster.instances) {
      const listed = await until(
        async () => {
          const answer = await call(instance.baseUrl, "GET", "/healthcheck");
          return answer.status === 200 && answer.body.length === CHECKS ? answer.body : undefined;
        },
        `the ${CHECKS} checks listed on ${instance.id}`,
        2_000,
      );
      expect(listed.map((check: { name: string }) => check.name)).toEqual(definitions.map((check) => check.name));
    }

    // Every check runs within its first interval (+ the second the definition takes to reach its owner).
    await until(
      async () => (requests.size === CHECKS ? true : undefined),
      "every check's first request",
      INTERVAL_MS + 2_000,
    ).catch((error) => {
      throw new Error(
        `${error}: ${requests.size} of ${CHECKS} checks requested ${Date.now() - created} ms after creation`,
      );
    });
    const steadyFrom = Date.now();
    await sleep(5 * INTERVAL_MS);
    const steadyUntil = Date.now();

    // Once per interval: 5 intervals observed, each gap in [1.5 s, 2.5 s].
    const steady = gaps(steadyFrom).filter((entry) => entry.at <= steadyUntil);
    const lateBeforeKill = await lateness(cluster.instances);
    const tooShort = steady.filter((entry) => entry.gap < MIN_GAP_MS);
    const tooLong = steady.filter((entry) => entry.gap > MAX_GAP_MS);
    expect(tooShort, `gaps under ${MIN_GAP_MS} ms before the kill (${lateBeforeKill})`).toEqual([]);
    expect(tooLong, `gaps over ${MAX_GAP_MS} ms before the kill (${lateBeforeKill})`).toEqual([]);
    for (let index = 0; index < CHECKS; index += 1) {
      const count = timesOf(index).filter((at) => at >= steadyFrom && at < steadyUntil).length;
      expect(count, `requests of ${name(index)} in ${steadyUntil - steadyFrom} ms`).toBeGreaterThanOrEqual(4);
      expect(count, `requests of ${name(index)} in ${steadyUntil - steadyFrom} ms`).toBeLessThanOrEqual(6);
    }
    // Never twice within 1.5 s since they were created.
    expect(
      gaps().filter((entry) => entry.gap < MIN_GAP_MS),
      `gaps under ${MIN_GAP_MS} ms since creation (${lateBeforeKill})`,
    ).toEqual([]);
    await expectAllResults(cluster.instances);

    // SIGKILL the instance that owns the most shards (its checks must move).
    const views = await Promise.all(cluster.instances.map((instance) => cluster.clusterView(instance)));
    const biggest = [...(views[0]?.members ?? [])].sort((x, y) => y.shards - x.shards)[0];
    const victim = cluster.byId(biggest?.id ?? "b");
    const killedAt = await cluster.kill(victim);
    const deadline = LEASE_MS + INTERVAL_MS + TAKEOVER_SLACK_MS;
    await sleep(deadline + 3 * INTERVAL_MS);

    const lateAfterKill = await lateness(cluster.alive());
    const resumed = Array.from({ length: CHECKS }, (_, index) => {
      const next = timesOf(index).find((at) => at > killedAt);
      return { check: name(index), after: next === undefined ? Number.POSITIVE_INFINITY : next - killedAt };
    });
    const slowest = [...resumed].sort((x, y) => y.after - x.after);
    const allGaps = gaps().map((entry) => entry.gap);
    // The victim ran its share of the checks: those paused until a survivor took their shards.
    const moved = new Set(
      gaps(killedAt)
        .filter((entry) => entry.gap > MAX_GAP_MS)
        .map((entry) => entry.check),
    ).size;
    expect(moved, "checks paused by the kill (the victim's)").toBeGreaterThan(0);
    console.info(
      `healthchecks: ${lateBeforeKill} before the kill; ${lateAfterKill} after; killed ${victim.id} (${biggest?.shards} shards); slowest resumptions after the kill ${JSON.stringify(
        slowest.slice(0, 3),
      )}; ${moved} checks moved; gaps min ${Math.min(...allGaps)} ms, max ${Math.max(...allGaps)} ms over ${allGaps.length} gaps; shortest ${JSON.stringify(
        gaps()
          .sort((x, y) => x.gap - y.gap)
          .slice(0, 3)
          .map((entry) => ({ check: name(entry.check), gap: entry.gap, afterKill: entry.at - killedAt })),
      )}`,
    );
    const late = resumed.filter((entry) => entry.after > deadline);
    expect(
      late,
      `checks not requested within ${deadline} ms of the kill (slowest: ${JSON.stringify(slowest.slice(0, 3))}; ${late.length} late)`,
    ).toEqual([]);
    expect(
      gaps().filter((entry) => entry.gap < MIN_GAP_MS),
      `gaps under ${MIN_GAP_MS} ms, kill included (${lateAfterKill})`,
    ).toEqual([]);
    const afterTakeover = gaps(killedAt + deadline + INTERVAL_MS).filter((entry) => entry.gap > MAX_GAP_MS);
    expect(afterTakeover, `gaps over ${MAX_GAP_MS} ms after the takeover (${lateAfterKill})`).toEqual([]);

    // Every survivor lists all 300 results, each at most interval + 2 s old (the new owners write them).
    await expectAllResults(cluster.alive(), INTERVAL_MS + 2_000);
  }, 120_000);
});
