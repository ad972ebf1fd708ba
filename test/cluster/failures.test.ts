/**
 * docs/cluster.md, failures: cluster mode on SQLite is a configuration error naming
 * `cluster.enabled`; an unreachable NATS at start-up is an error naming the server; a NATS that
 * goes away later makes forwarded pushes answer 503, never stops an instance, and once it is back
 * forwarding works again. A remote write received by a non-owner is forwarded like a push; an
 * instance whose configuration-file checks differ from another's says which.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { compressSync } from "snappy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, runCli, temporaryDirectory } from "../support/process.js";
import { until } from "../support/until.js";
import { b64, call, clusterSkip, createCluster, type Instance, sleep } from "./harness.js";

const SKIP = clusterSkip("the cluster failure tests (test/cluster/failures.test.ts)");

const STREAM = "failures";

const WriteRequest = protobuf
  .loadSync(fileURLToPath(new URL("../../proto/remote-write.proto", import.meta.url)))
  .lookupType("prometheus.WriteRequest");

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
  // Instance b lists a configuration-file check that a does not: b says so when it starts.
  const cluster = createCluster({
    instances: 2,
    balancer: false,
    configOf: (id) =>
      id === "b"
        ? {
            healthchecks: {
              "http-checks": [
                { name: "only-b", target: "127.0.0.1", port: 9, "valid-status": [200], interval: "1h", timeout: "1s" },
              ],
            },
          }
        : {},
  });
  let owner: Instance;
  let other: Instance;

  beforeAll(async () => {
    await cluster.start();
    await cluster.waitForStable(2);
    const [first] = cluster.instances;
    const created = await call(first?.baseUrl ?? "", "POST", `/api/v1/stream/${STREAM}`, {
      body: { config: b64("{:actions {:action :index :params [[:host :service]]}}") },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    owner = await until(async () => cluster.streamOwner(STREAM), `an owner of ${STREAM}`, 10_000);
    other = cluster.instances.find((instance) => instance !== owner) as Instance;
  }, 90_000);
  afterAll(() => cluster.stop(), 60_000);

  it("logs an error naming the configuration-file checks that differ from another instance's", () => {
    const output = cluster.byId("b").process?.output() ?? "";
    expect(output).toContain("the configuration-file healthchecks of this instance differ from those of a: only-b");
    expect(cluster.byId("a").process?.output() ?? "").not.toContain("differ from those of");
  });

  it("forwards a Prometheus remote write received by a non-owner, answered 204 once JetStream has it", async () => {
    const request = WriteRequest.encode(
      WriteRequest.fromObject({
        timeseries: [
          { labels: [{ name: "__name__", value: "up" }], samples: [{ value: 1, timestamp: 1_700_000_000_500 }] },
        ],
      }),
    ).finish();
    const response = await fetch(`${other.baseUrl}/api/v1/prometheus/remote-write/${STREAM}`, {
      method: "POST",
      headers: { "content-type": "application/x-protobuf", "content-encoding": "snappy" },
      body: compressSync(Buffer.from(request)),
    });
    expect(response.status).toBe(204);
    const query = b64('[:= :service "up"]');
    const found = await until(
      async () => {
        const answer = await call(owner.baseUrl, "GET", `/api/v1/index/${STREAM}/search?query=${query}`);
        return answer.status === 200 && answer.body.events.length > 0 ? answer.body.events : undefined;
      },
      "the remote-written sample in the owner's index",
      10_000,
    );
    expect(found).toEqual([{ service: "up", metric: 1, time: 1_700_000_000.5 }]);
  }, 30_000);

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
