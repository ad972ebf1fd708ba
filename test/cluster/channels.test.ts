/**
 * Publish/subscribe (docs/cluster.md): `publish` runs on the stream's owner and reaches the
 * WebSocket subscribers of every instance, each once, whichever instance received the push.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subscribe, type TestSubscriber } from "../support/websocket.js";
import { b64, call, clusterSkip, createCluster, type Instance, sleep } from "./harness.js";

const SKIP = clusterSkip("the cluster channel tests (test/cluster/channels.test.ts)");

const STREAM = "to-channel";
const CONFIG = "{:actions {:action :publish :params [:alerts]}}";

describe.skipIf(SKIP !== undefined)("channels across instances", () => {
  const cluster = createCluster({ instances: 2, balancer: false });
  let owner: Instance;
  let other: Instance;
  const subscribers: TestSubscriber[] = [];

  beforeAll(async () => {
    await cluster.start();
    await cluster.waitForStable(2);
    const [first] = cluster.instances;
    const created = await call(first?.baseUrl ?? "", "POST", `/api/v1/stream/${STREAM}`, {
      body: { config: b64(CONFIG) },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const deadline = Date.now() + 10_000;
    let found: Instance | undefined;
    while (found === undefined && Date.now() < deadline) {
      found = await cluster.streamOwner(STREAM);
      if (found === undefined) await sleep(100);
    }
    if (found === undefined) throw new Error(`no owner of ${STREAM} within 10 s:\n${cluster.outputs()}`);
    owner = found;
    other = cluster.instances.find((instance) => instance !== owner) as Instance;
  }, 90_000);

  afterAll(async () => {
    for (const subscriber of subscribers) await subscriber.close().catch(() => {});
    await cluster.stop();
  }, 60_000);

  it("delivers what the owner publishes to the subscribers of every instance, once each", async () => {
    const url = (instance: Instance) => `${instance.baseUrl.replace(/^http/, "ws")}/api/v1/channel/alerts`;
    const onOwner = await subscribe(url(owner));
    const onOther = await subscribe(url(other));
    subscribers.push(onOwner, onOther);
    // Pushed to the instance that does not own the stream (forwarded), then to the owner itself.
    for (const [index, instance] of [other, owner].entries()) {
      const pushed = await call(instance.baseUrl, "PUT", `/api/v1/stream/${STREAM}`, {
        body: { events: [{ host: `via-${index}`, service: "cpu", metric: index }] },
      });
      expect(pushed.status, JSON.stringify(pushed.body)).toBe(200);
    }
    const hosts = (events: unknown[]) => events.map((event) => (event as { host: string }).host).sort();
    expect(hosts(await onOwner.received(2))).toEqual(["via-0", "via-1"]);
    expect(hosts(await onOther.received(2))).toEqual(["via-0", "via-1"]);
    // Nothing arrives twice.
    await sleep(500);
    expect(onOwner.events).toHaveLength(2);
    expect(onOther.events).toHaveLength(2);
  }, 30_000);
});
