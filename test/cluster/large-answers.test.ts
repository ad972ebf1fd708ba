/**
 * Index answers larger than one NATS message (1 MiB by default), asked of a non-owner: the owner
 * sends them in parts and the non-owner reassembles them, within the same bounds as on one
 * instance (docs/cluster.md, Behaviour details).
 *
 * 30 001 events are indexed on the stream's owner (30 000 of service "many", one "extra"), with
 * `streams.max-query-results: 30000`:
 * 1. an index search of the 30 000 through the non-owner → 200 with all of them (about 3 MiB);
 * 2. a search of all 30 001 → on the non-owner the same 400 as on the owner (max-query-results);
 * 3. the same two through the non-owner's Riemann input (its queries search the stream).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/process.js";
import { RiemannClient } from "../support/riemann.js";
import { until } from "../support/until.js";
import { b64, call, clusterSkip, createCluster, type Instance } from "./harness.js";

const SKIP = clusterSkip("the cluster large answer tests (test/cluster/large-answers.test.ts)");

const STREAM = "big";
const MANY = 30_000;
const BATCH = 1_000;
/** About 100 bytes of JSON per event: the 30 000 make about 3 MiB, three NATS messages at least. */
const PADDING = "x".repeat(40);

describe.skipIf(SKIP !== undefined)("index answers larger than a NATS message, through a non-owner", () => {
  const riemannPorts = new Map<string, number>();
  const cluster = createCluster({
    instances: 2,
    balancer: false,
    configOf: (id) => ({
      streams: {
        "max-query-results": MANY,
        riemann: { enabled: true, port: riemannPorts.get(id), "query-stream": STREAM },
      },
    }),
  });
  let owner: Instance;
  let nonOwner: Instance;

  beforeAll(async () => {
    for (const id of ["a", "b"]) riemannPorts.set(id, await freePort());
    await cluster.start();
    await cluster.waitForStable(2);
    const [a] = cluster.instances as [Instance];
    const config = `{:actions {:action :index :params [[:host]]}}`;
    const created = await call(a.baseUrl, "POST", `/api/v1/stream/${STREAM}`, { body: { config: b64(config) } });
    expect(created.status).toBe(201);
    owner = await until(() => cluster.streamOwner(STREAM), `an owner of stream ${STREAM}`, 15_000);
    nonOwner = cluster.instances.find((instance) => instance !== owner) as Instance;
    await until(
      async () => ((await cluster.streamOwner(STREAM, nonOwner))?.id === owner.id ? true : undefined),
      `the non-owner to see ${owner.id} own ${STREAM}`,
      15_000,
    );
    // Pushed to the owner itself: run at once, nothing through JetStream.
    for (let start = 0; start <= MANY; start += BATCH) {
      const events = [];
      for (let i = start; i < Math.min(start + BATCH, MANY + 1); i++) {
        events.push({ host: `h${i}`, service: i < MANY ? "many" : "extra", metric: i, description: PADDING, time: 1 });
      }
      const pushed = await call(owner.baseUrl, "PUT", `/api/v1/stream/${STREAM}`, { body: { events } });
      expect(pushed.status).toBe(200);
    }
  }, 120_000);
  afterAll(() => cluster.stop(), 60_000);

  const search = (instance: Instance, condition: string) =>
    call(instance.baseUrl, "POST", `/api/v1/index/${STREAM}/search`, {
      body: { query: b64(condition) },
      timeoutMs: 30_000,
    });

  it("answers a 30 000-event search through the non-owner with every event", async () => {
    const onOwnerStarted = performance.now();
    const onOwner = await search(owner, '[:= :service "many"]');
    const onOwnerElapsed = performance.now() - onOwnerStarted;
    expect(onOwner.status).toBe(200);
    expect(onOwner.body.events).toHaveLength(MANY);
    const started = performance.now();
    const through = await search(nonOwner, '[:= :service "many"]');
    const elapsed = performance.now() - started;
    expect(through.status, JSON.stringify(through.body).slice(0, 300)).toBe(200);
    expect(through.body.events).toHaveLength(MANY);
    // More than one NATS message (1 MiB) of events.
    expect(JSON.stringify(through.body).length).toBeGreaterThan(2 * 1024 * 1024);
    expect(through.body.events).toEqual(onOwner.body.events);
    console.info(
      `30 000-event search: ${Math.round(elapsed)} ms through the non-owner, ${Math.round(onOwnerElapsed)} ms on the owner`,
    );
  }, 60_000);

  it("answers a search beyond max-query-results with the owner's own error", async () => {
    const onOwner = await search(owner, "[:always-true]");
    expect(onOwner).toEqual({
      status: 400,
      body: { error: `index search matches more than ${MANY} events (streams.max-query-results)` },
    });
    expect(await search(nonOwner, "[:always-true]")).toEqual(onOwner);
  }, 60_000);

  it("answers the non-owner's Riemann queries from the owner's index, in parts too", async () => {
    const port = riemannPorts.get(nonOwner.id) as number;
    const client = await RiemannClient.connect(port);
    try {
      const many = await client.send({ query: 'service = "many"' });
      expect(many.ok, many.error).toBe(true);
      expect(many.events).toHaveLength(MANY);
      expect(new Set(many.events.map((event) => event.host)).size).toBe(MANY);
      const all = await client.send({ query: "true" });
      expect(all).toMatchObject({
        ok: false,
        error: `query matches more than ${MANY} events (streams.max-query-results)`,
      });
    } finally {
      client.socket.destroy();
    }
  }, 60_000);
});
