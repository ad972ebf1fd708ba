/**
 * docs/alerts.md, "Exactly once", with several instances: 30 http checks at 1 s on three instances,
 * each with one alert to a `webhook` output pointing at a local receiver, notifications never
 * grouped (one request per notification). The checks' target is switched between failing (503) and
 * succeeding (200):
 *
 * - failing, then succeeding: exactly one trigger, then exactly one resolve, per alert, whatever
 *   instance runs the check;
 * - failing, one instance SIGKILLed once the triggers are out, its checks taken over and still
 *   failing for more than the failure threshold, then succeeding: no second trigger (the new owner
 *   continues from the stored state), and exactly one resolve per alert;
 * - failing again on the two survivors, the killed instance started again and given shards back
 *   while the checks still fail, then succeeding: the same, across that hand-over.
 *
 * `GET /alerts` on every instance lists the triggered alerts, `GET /alerts/history` every delivered
 * notification once.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { until } from "../support/until.js";
import { call, clusterSkip, createCluster, type Instance, LEASE_MS, sleep } from "./harness.js";

const SKIP = clusterSkip("the cluster alert tests (test/cluster/alerts.test.ts)");

const CHECKS = 30;
const INTERVAL_MS = 1_000;
const FAILURE_THRESHOLD = 3;
const SUCCESS_THRESHOLD = 2;
const OUTPUT = "hook";
/** How long to wait for the notifications of a transition: the thresholds' runs and some slack. */
const TRANSITION_MS = (FAILURE_THRESHOLD + 8) * INTERVAL_MS;
/** How long nothing more may arrive after a transition (several intervals past every threshold). */
const QUIET_MS = (FAILURE_THRESHOLD + 2) * INTERVAL_MS;
/** Runs of every check, after a hand-over, that would trigger an alert whose state was forgotten. */
const RUNS_AFTER_HANDOVER = FAILURE_THRESHOLD + 2;

const name = (index: number): string => `alerting-${String(index).padStart(2, "0")}`;
const path = (index: number): string => `/a/${index}`;
const NAMES = Array.from({ length: CHECKS }, (_, index) => name(index));
const KEYS = NAMES.map((check) => `${check}/${OUTPUT}`);

const TRIGGERED = "triggered/critical";
const RESOLVED = "resolved/ok";

/** A notification as the receiver got it (the webhook's default body: the notification as JSON). */
interface Received {
  readonly key: string;
  readonly status: string;
  readonly state: string;
}

let hook: Receiver | undefined;
let target: Server | undefined;
let targetPort = 0;
/** What the target answers: 503 while failing, else 200. */
let failing = false;
/** Request times (ms since the epoch) of the target, per path. */
const requests = new Map<string, number[]>();

const cluster = createCluster({
  instances: 3,
  config: { notifications: { "group-threshold": 0, "group-wait": "0s" } },
  // Read at start(), once the receiver listens.
  configOf: () => ({ outputs: { [OUTPUT]: { type: "webhook", url: `${hook?.url}/notify` } } }),
});

/** Starts the receiver and the target, then the cluster. */
async function startAll(): Promise<void> {
  hook = await startReceiver();
  target = createServer((request, response) => {
    const key = request.url ?? "";
    const times = requests.get(key);
    if (times === undefined) requests.set(key, [Date.now()]);
    else times.push(Date.now());
    response.writeHead(failing ? 503 : 200, { "content-type": "text/plain" });
    response.end(failing ? "down" : "ok");
  });
  await new Promise<void>((done) => target?.listen(0, "127.0.0.1", done));
  const address = target.address();
  targetPort = typeof address === "object" && address !== null ? address.port : 0;
  await cluster.start();
  await cluster.waitForStable(3);
}

async function stopAll(): Promise<void> {
  await cluster.stop();
  await hook?.close();
  if (target !== undefined) {
    target.closeAllConnections();
    await new Promise<void>((done) => target?.close(() => done()));
  }
}

/** Notifications received so far (the receiver's request count). */
const receivedCount = (): number => hook?.requests.length ?? 0;

/**
 * The `<status>/<state>` of the notifications received per alert key from the request number `from`
 * on, sorted by key.
 */
function statusesByKey(from: number): Array<[string, string[]]> {
  const byKey = new Map<string, string[]>();
  for (const request of hook?.requests.slice(from) ?? []) {
    const notification: Received = JSON.parse(request.body.toString("utf8"));
    const statuses = byKey.get(notification.key);
    const status = `${notification.status}/${notification.state}`;
    if (statuses === undefined) byKey.set(notification.key, [status]);
    else statuses.push(status);
  }
  return [...byKey.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
}

/** Every alert with exactly `statuses`, sorted by key. */
const exactly = (statuses: readonly string[]): Array<[string, readonly string[]]> => KEYS.map((key) => [key, statuses]);

/** Waits until `count` notifications arrived from the request number `from` on. */
async function waitForNotifications(from: number, count: number, what: string): Promise<void> {
  await until(
    async () => (receivedCount() - from >= count ? true : undefined),
    `${count} ${what}`,
    TRANSITION_MS,
  ).catch((error) => {
    throw new Error(
      `${error}: ${receivedCount() - from} received: ${JSON.stringify(statusesByKey(from))}\n${cluster.outputs(2_000)}`,
    );
  });
}

/** `GET /alerts` on every live instance lists the alerts of `expected` (keys), each sent. */
async function expectTriggered(expected: readonly string[]): Promise<void> {
  for (const instance of cluster.alive()) {
    const answer = await call(instance.baseUrl, "GET", "/alerts");
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const listed = (answer.body as Array<{ check: string; output: string; "last-sent": string | null }>).map(
      (alert) => `${alert.check}/${alert.output}${alert["last-sent"] === null ? " (held)" : ""}`,
    );
    expect(listed, `GET /alerts on ${instance.id}`).toEqual(expected);
  }
}

/**
 * Waits until the history on every live instance holds `counts` notifications per
 * `<status>/<outcome>`, nothing else.
 */
async function expectHistory(counts: Record<string, number>): Promise<void> {
  const sorted = (record: Record<string, number>) => JSON.stringify(Object.entries(record).sort());
  for (const instance of cluster.alive()) {
    let last: unknown;
    await until(
      async () => {
        const answer = await call(instance.baseUrl, "GET", "/alerts/history?limit=1000");
        last = answer;
        if (answer.status !== 200) return undefined;
        const seen: Record<string, number> = {};
        for (const entry of answer.body.notifications as Array<{ status: string; outcome: string }>) {
          const key = `${entry.status}/${entry.outcome}`;
          seen[key] = (seen[key] ?? 0) + 1;
        }
        last = seen;
        return sorted(seen) === sorted(counts) ? true : undefined;
      },
      `the alert history on ${instance.id}`,
      5_000,
    ).catch((error) => {
      throw new Error(`${error}: expected ${JSON.stringify(counts)}, last ${JSON.stringify(last)}`);
    });
  }
}

/** Requests of the target for check `index` at or after `fromMs`. */
const requestsSince = (index: number, fromMs: number): number =>
  (requests.get(path(index)) ?? []).filter((at) => at >= fromMs).length;

/** Waits until every check ran `runs` times from `fromMs` on. */
async function waitForRuns(fromMs: number, runs: number, what: string, timeoutMs: number): Promise<void> {
  await until(
    async () => (NAMES.every((_, index) => requestsSince(index, fromMs) >= runs) ? true : undefined),
    `${runs} runs of every check ${what}`,
    timeoutMs,
  ).catch((error) => {
    throw new Error(`${error}\n${cluster.outputs(2_000)}`);
  });
}

/** Makes the target fail and waits for one trigger per alert; returns the first request's number. */
async function failAndExpectTriggers(): Promise<number> {
  const from = receivedCount();
  failing = true;
  await waitForNotifications(from, CHECKS, "triggers");
  expect(statusesByKey(from)).toEqual(exactly([TRIGGERED]));
  return from;
}

/**
 * Makes the target succeed, waits for the resolves, then checks that each alert got exactly one
 * trigger and one resolve since the request number `from`, and that none is listed as triggered.
 */
async function succeedAndExpectResolves(from: number, what: string): Promise<void> {
  const resolvedFrom = receivedCount();
  failing = false;
  await waitForNotifications(resolvedFrom, CHECKS, `resolves ${what}`);
  await sleep(QUIET_MS);
  expect(statusesByKey(from), what).toEqual(exactly([TRIGGERED, RESOLVED]));
  await expectTriggered([]);
}

/** Posts the 30 checks (through the balancer) and waits until each ran twice, successfully. */
async function createChecks(): Promise<void> {
  const definitions = NAMES.map((check, index) => ({
    name: check,
    target: "127.0.0.1",
    port: targetPort,
    path: path(index),
    "valid-status": [200],
    timeout: "1s",
    interval: `${INTERVAL_MS / 1000}s`,
    alerts: [{ output: OUTPUT, "failure-threshold": FAILURE_THRESHOLD, "success-threshold": SUCCESS_THRESHOLD }],
  }));
  expect(
    await call(cluster.balancer.url, "POST", "/healthcheck/bulk", { body: { "http-checks": definitions } }),
  ).toEqual({ status: 201, body: { message: "Healthchecks successfully added" } });
  await waitForRuns(0, 2, "since their creation", 10_000);
}

/** The instance with the most shards. */
async function biggestOwner(): Promise<Instance> {
  const view = await cluster.clusterView(cluster.alive()[0] ?? cluster.byId("a"));
  const biggest = [...view.members].sort((x, y) => y.shards - x.shards)[0];
  return cluster.byId(biggest?.id ?? "b");
}

/** The checks whose runs paused for more than two intervals after `fromMs` (those that moved). */
const pausedSince = (fromMs: number): string[] =>
  NAMES.filter((_, index) => {
    const times = requests.get(path(index)) ?? [];
    return times.some((at, position) => at > fromMs && at - (times[position - 1] ?? at) > 2 * INTERVAL_MS);
  });

describe.skipIf(SKIP !== undefined)("alerts of 30 checks on three instances, one killed and restarted", () => {
  beforeAll(startAll, 90_000);
  afterAll(stopAll, 60_000);
  let victim: Instance | undefined;

  it("sends one trigger per alert when the target fails and one resolve when it is back, across the instances", async () => {
    await createChecks();
    // Successes send nothing.
    expect(hook?.requests).toEqual([]);
    const from = await failAndExpectTriggers();
    await sleep(QUIET_MS);
    expect(statusesByKey(from)).toEqual(exactly([TRIGGERED]));
    await expectTriggered(KEYS);
    await succeedAndExpectResolves(from, "with three instances");
    await expectHistory({ "triggered/delivered": CHECKS, "resolved/delivered": CHECKS });
  }, 90_000);

  it("neither triggers again nor misses a resolve when the owner of checks is SIGKILLed between the two", async () => {
    const from = await failAndExpectTriggers();
    // The deliveries of the instance about to be killed are recorded before it dies.
    await expectHistory({ "triggered/delivered": 2 * CHECKS, "resolved/delivered": CHECKS });

    victim = await biggestOwner();
    const killedAt = await cluster.kill(victim);
    // The survivors take the victim's checks over within the lease (+ an interval), then run each
    // more than the failure threshold while it still fails: a forgotten trigger would be sent again.
    await waitForRuns(killedAt + LEASE_MS + 2 * INTERVAL_MS, RUNS_AFTER_HANDOVER, "after the takeover", 20_000);
    const moved = pausedSince(killedAt);
    expect(moved.length, "checks paused by the kill (the victim's)").toBeGreaterThan(0);
    await sleep(2 * INTERVAL_MS);
    const after = `after the kill of ${victim.id} (${moved.length} checks moved)`;
    expect(statusesByKey(from), after).toEqual(exactly([TRIGGERED]));
    await expectTriggered(KEYS);

    await succeedAndExpectResolves(from, after);
    await expectHistory({ "triggered/delivered": 2 * CHECKS, "resolved/delivered": 2 * CHECKS });
  }, 90_000);

  it("neither triggers again nor misses a resolve when the killed instance comes back and takes shards again", async () => {
    if (victim === undefined) throw new Error("the previous test killed no instance");
    const from = await failAndExpectTriggers();

    await cluster.restart(victim);
    const views = await cluster.waitForStable(3);
    const shards = views[0]?.members.find((member) => member.id === victim?.id)?.shards ?? 0;
    expect(shards, `shards of ${victim.id} once back`).toBeGreaterThan(0);
    // Checks handed back run more than the failure threshold on their new owner while failing.
    await waitForRuns(Date.now() + INTERVAL_MS, RUNS_AFTER_HANDOVER, "after the hand-back", 15_000);
    await sleep(2 * INTERVAL_MS);
    const after = `after ${victim.id} came back`;
    expect(statusesByKey(from), after).toEqual(exactly([TRIGGERED]));
    await expectTriggered(KEYS);

    await succeedAndExpectResolves(from, after);
    await expectHistory({ "triggered/delivered": 3 * CHECKS, "resolved/delivered": 3 * CHECKS });
  }, 90_000);
});
