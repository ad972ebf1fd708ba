/**
 * scale-out.md, the `cluster` section: cluster mode on SQLite is a configuration error naming
 * `cluster.enabled`; an unreachable NATS at start-up is an error naming the server; a NATS that
 * goes away later makes forwarded pushes answer 503, never stops an instance, and once it is back
 * forwarding works again.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, runCli, temporaryDirectory } from "../support/process.js";
import { until } from "../support/until.js";
import { b64, call, clusterSkip, createCluster, type Instance, sleep } from "./harness.js";

const SKIP = clusterSkip("the cluster failure tests (test/cluster/failures.test.ts)");

const STREAM = "failures";

describe("cluster configuration errors", () => {
  it("refuses cluster.enabled on SQLite, naming the key (exit 2)", async () => {
    const directory = temporaryDirectory();
    const file = join(directory, "vigie.yaml");
    writeFileSync(file, "database: { url: 'sqlite:./v.db' }\ncluster: { enabled: true }\n");
    const result = await runCli(["serve", "--config", file], { cwd: directory });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "invalid configuration: cluster.enabled: needs database.url to be a PostgreSQL URL",
    );
  });
});

describe.skipIf(SKIP !== undefined)("NATS unreachable or gone", () => {
  const cluster = createCluster({ instances: 2, balancer: false });
  let owner: Instance;
  let other: Instance;

  beforeAll(async () => {
    await cluster.start();
    await cluster.waitForStable(2);
    const [first] = cluster.instances;
    const created = await call(first?.baseUrl ?? "", "POST", `/api/v1/stream/${STREAM}`, {
      body: { config: b64("{:actions {:action :index :params [[:host]]}}") },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    owner = await until(async () => cluster.streamOwner(STREAM), `an owner of ${STREAM}`, 10_000);
    other = cluster.instances.find((instance) => instance !== owner) as Instance;
  }, 90_000);
  afterAll(() => cluster.stop(), 60_000);

  it("stops at start-up with an error naming the NATS server it cannot reach", async () => {
    const directory = temporaryDirectory();
    const file = join(directory, "vigie.yaml");
    const port = await freePort();
    writeFileSync(
      file,
      [
        `http: { host: 127.0.0.1, port: ${await freePort()} }`,
        `database: { url: "${cluster.database.url}" }`,
        `cluster: { enabled: true, instance-id: lonely, nats: { servers: ["nats://127.0.0.1:${port}"] } }`,
        "",
      ].join("\n"),
    );
    const result = await runCli(["serve", "--config", file], { cwd: directory });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`cannot connect to NATS at nats://127.0.0.1:${port}`);
  }, 30_000);

  it("answers 503 to forwarded pushes while NATS is away, keeps serving the rest, and forwards again once it is back", async () => {
    const push = (on: Instance, host: string) =>
      call(on.baseUrl, "PUT", `/api/v1/stream/${STREAM}`, { body: { events: [{ host, service: "s" }] } });
    expect((await push(other, "before")).status).toBe(200);

    await cluster.killNats();
    const started = Date.now();
    const refused = await push(other, "while-away");
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(typeof refused.body.error).toBe("string");
    expect(Date.now() - started).toBeLessThan(6_000);
    // The owner takes its own pushes; both instances keep answering.
    expect((await push(owner, "to-owner")).status).toBe(200);
    for (const instance of cluster.instances) {
      expect((await call(instance.baseUrl, "GET", "/healthz")).status).toBe(200);
    }
    await sleep(1_000);
    expect(cluster.alive()).toHaveLength(2);

    await cluster.restartNats();
    await until(
      async () => ((await push(other, "after")).status === 200 ? true : undefined),
      "a forwarded push accepted again",
      20_000,
    );
    const query = b64('[:= :host "after"]');
    const found = await until(
      async () => {
        const answer = await call(owner.baseUrl, "GET", `/api/v1/index/${STREAM}/search?query=${query}`);
        return answer.status === 200 && answer.body.events.length > 0 ? answer.body.events : undefined;
      },
      "the forwarded event in the owner's index",
      20_000,
    );
    expect(found[0]).toMatchObject({ host: "after" });
  }, 90_000);
});
