/**
 * Durable outputs in cluster mode (docs/outputs.md, "Durable outputs"): two instances share the
 * JetStream queue of an http output whose receiver is down; events pushed to one of them are kept in
 * JetStream through a `kill -9` of every instance and reach the receiver, in order, once the
 * instances are back and the receiver is up.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACK_WAIT_MS, outputStreamName } from "../../src/platform/outputs/jetstream-queue.js";
import { freePort } from "../support/process.js";
import { acceptedNumbers, type Receiver, startReceiver } from "../support/receiver.js";
import { until } from "../support/until.js";
import { b64, call, clusterSkip, createCluster } from "./harness.js";

const SKIP = clusterSkip("the cluster durable output tests (test/cluster/outputs-durable.test.ts)");

const EVENTS = 200;
const PER_PUSH = 20;
const STREAM = "out";

describe.skipIf(SKIP !== undefined)("durable outputs in cluster mode", () => {
  const outputs: Record<string, unknown> = {};
  const cluster = createCluster({ instances: 2, balancer: false, config: { outputs } });
  let receiverPort = 0;
  let receiver: Receiver | undefined;
  beforeAll(async () => {
    receiverPort = await freePort();
    outputs.hook = {
      type: "http",
      url: `http://127.0.0.1:${receiverPort}/events`,
      "batch-size": 10,
      "flush-interval": "50ms",
      durable: true,
    };
    await cluster.start();
    await cluster.waitForStable(2);
  }, 90_000);
  afterAll(async () => {
    await receiver?.close();
    await cluster.stop();
  }, 60_000);

  /** Events held in the output's JetStream stream (each message is a JSON array of events). */
  async function eventsInJetStream(): Promise<number> {
    const connection = await connect({ servers: cluster.natsUrl });
    try {
      const manager = await jetstreamManager(connection);
      const name = outputStreamName("hook");
      const { state } = await manager.streams.info(name);
      let events = 0;
      for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
        const message = await manager.streams.getMessage(name, { seq }).catch(() => null);
        if (message !== null) events += (message.json() as unknown[]).length;
      }
      return events;
    } finally {
      await connection.close();
    }
  }

  it(
    "delivers every event pushed while the receiver was down, after every instance was killed",
    async () => {
      const [a, b] = cluster.instances;
      if (a === undefined || b === undefined) throw new Error("two instances expected");
      const config = "{:actions {:action :output :params [:hook]}}";
      expect(
        (await call(a.baseUrl, "POST", `/api/v1/stream/${STREAM}`, { body: { config: b64(config) } })).status,
      ).toBe(201);
      for (const instance of [a, b]) {
        await until(
          async () =>
            (await call(instance.baseUrl, "GET", `/api/v1/stream/${STREAM}`)).status === 200 ? true : undefined,
          `stream ${STREAM} on ${instance.id}`,
        );
      }
      await until(() => cluster.streamOwner(STREAM), `an owner of ${STREAM}`, 10_000);
      // Pushed one after the other to one instance, owner or not: Vigie keeps the order of one
      // instance's pushes, not across instances (docs/cluster.md), so this is the order sent.
      for (let from = 0; from < EVENTS; from += PER_PUSH) {
        const events = Array.from({ length: PER_PUSH }, (_, i) => ({ service: "durable", n: from + i }));
        const answer = await call(a.baseUrl, "PUT", `/api/v1/stream/${STREAM}`, { body: { events } });
        expect(answer.status).toBe(200);
      }
      await until(async () => ((await eventsInJetStream()) === EVENTS ? true : undefined), "every event in JetStream");
      await cluster.kill(a);
      await cluster.kill(b);
      await cluster.restart(a);
      await cluster.restart(b);
      const up = await startReceiver(undefined, receiverPort);
      receiver = up;
      // The message an instance held when it was killed comes back after the acknowledgement wait.
      await until(
        async () => (acceptedNumbers(up).length >= EVENTS ? true : undefined),
        `${EVENTS} events at the receiver`,
        ACK_WAIT_MS + 30_000,
      );
      await new Promise((wait) => setTimeout(wait, 500));
      expect(acceptedNumbers(up)).toEqual(Array.from({ length: EVENTS }, (_, n) => n));
      await until(async () => ((await eventsInJetStream()) === 0 ? true : undefined), "an empty JetStream queue");
    },
    ACK_WAIT_MS + 120_000,
  );
});
