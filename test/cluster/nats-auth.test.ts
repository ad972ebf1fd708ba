/**
 * Cluster mode with `security.require-token: true` on a nats-server that requires a token: the
 * instance connects with VIGIE_NATS_TOKEN while an anonymous client is refused by NATS (so nobody
 * can put events into the streams around the API's tokens); without NATS credentials the instance
 * refuses to start, naming cluster.nats.allow-anonymous; with that key set it tries anonymously and
 * this NATS turns it away.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { dump } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, freePort, runCli, temporaryDirectory } from "../support/process.js";
import { clusterSkip, createCluster } from "./harness.js";

const SKIP = clusterSkip("the NATS authorization tests (test/cluster/nats-auth.test.ts)");

const NATS_TOKEN = "nats-T0ken-for-vigie-4kq9";

describe.skipIf(SKIP !== undefined)("cluster mode on a NATS that requires a token", () => {
  const cluster = createCluster({
    instances: 1,
    balancer: false,
    natsToken: NATS_TOKEN,
    config: { security: { "require-token": true } },
    firstEnv: { VIGIE_NATS_TOKEN: NATS_TOKEN },
  });
  beforeAll(() => cluster.start(), 90_000);
  afterAll(() => cluster.stop(), 60_000);

  /** A configuration file for another instance of the cluster, with `nats` keys of its own. */
  async function configFile(nats: Record<string, unknown>): Promise<string> {
    const directory = temporaryDirectory();
    const file = join(directory, "vigie.yaml");
    const port = await freePort();
    writeFileSync(
      file,
      dump({
        http: { host: "127.0.0.1", port },
        database: { url: cluster.database.url },
        security: { "require-token": true },
        cluster: { enabled: true, "instance-id": "z", nats: { servers: [cluster.natsUrl], ...nats } },
      }),
    );
    return file;
  }

  it("connects with the token (VIGIE_NATS_TOKEN) while NATS refuses an anonymous client", async () => {
    const [instance] = cluster.instances;
    expect((await fetch(`${instance?.baseUrl}/healthz`)).status).toBe(200);
    // The instance created its JetStream stream through the authorised connection.
    const authorised = await connect({ servers: cluster.natsUrl, token: NATS_TOKEN, timeout: 5_000 });
    try {
      const manager = await jetstreamManager(authorised);
      expect((await manager.streams.info("VIGIE_EVENTS")).config.subjects).toEqual(["vigie.events.>"]);
    } finally {
      await authorised.close();
    }
    // What an event published straight to vigie.events.<stream> would need.
    await expect(connect({ servers: cluster.natsUrl, timeout: 5_000 })).rejects.toThrow(/authorization/i);
  });

  it("refuses to start without NATS credentials, naming cluster.nats.allow-anonymous", async () => {
    const file = await configFile({});
    const started = await runCli(["serve", "--config", file]);
    expect(started.code).toBe(2);
    expect(started.stderr).toContain(
      "vigie: invalid configuration: cluster.nats.token: is required when security.require-token is true",
    );
    expect(started.stderr).toContain("cluster.nats.allow-anonymous: true");
  });

  it("with cluster.nats.allow-anonymous: true, connects anonymously and this NATS turns it away", async () => {
    const file = await configFile({ "allow-anonymous": true });
    const child = spawn(process.execPath, [CLI, "serve", "--config", file], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    // Bounded: a process that started after all is killed rather than left running.
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const code = await new Promise<number | string>((done) =>
      child.on("exit", (exit, signal) => done(exit ?? signal ?? -1)),
    );
    clearTimeout(timer);
    expect(code, output).toBe(1);
    expect(output).toMatch(/cannot start: cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+: .*authorization/i);
  });
});
