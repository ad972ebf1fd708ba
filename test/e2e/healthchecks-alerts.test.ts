/**
 * Alerting on a failing healthcheck end to end (docs/healthchecks.md): the real server runs a tcp
 * check against a port the test controls, pushes every result into the stream of
 * examples/streams/streams/healthchecks-alerts.edn, which sends them to a real Alertmanager
 * (Debian's prometheus-alertmanager): one alert fires while the check fails, and resolves when it
 * recovers.
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandPath, type Daemon, startAlertmanager } from "../support/daemon.js";
import { freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";

const ALERTMANAGER = commandPath(
  "prometheus-alertmanager",
  "prometheus-alertmanager",
  "the healthchecks alerting e2e test",
);
const EXAMPLE = resolve(import.meta.dirname, "../../examples/streams/streams/healthchecks-alerts.edn");
const CHECK = "vigie_e2e_db";
/** The check's interval: its events' ttl (twice it) is what would end the alert without the ok. */
const INTERVAL_S = 3;

interface GettableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  endsAt: string;
  status: { state: string };
}

describe.skipIf(ALERTMANAGER === "")("a failing healthcheck alerts through a real Alertmanager", () => {
  let alertmanager: Daemon | undefined;
  let vigie: VigieProcess | undefined;
  let alertmanagerUrl = "";
  let target: Server | undefined;
  let targetPort = 0;

  beforeAll(async () => {
    const directory = temporaryDirectory();
    ({ daemon: alertmanager, url: alertmanagerUrl } = await startAlertmanager(ALERTMANAGER, directory));

    // The shipped example, alone in a stream directory of the test.
    const streams = join(directory, "streams");
    mkdirSync(streams);
    copyFileSync(EXAMPLE, join(streams, "healthchecks-alerts.edn"));
    targetPort = await freePort(); // nothing listens yet: the check fails
    const vigiePort = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        "http:",
        `  port: ${vigiePort}`,
        "streams:",
        `  directories: [${JSON.stringify(streams)}]`,
        "  outputs:",
        `    alerts: {type: alertmanager, url: "${alertmanagerUrl}", flush-interval: 100ms}`,
        "healthchecks:",
        "  min-interval: 100ms",
        "  streams: [healthchecks]",
        "  tcp-checks:",
        `    - {name: ${CHECK}, description: the database, target: 127.0.0.1, port: ${targetPort}, interval: ${INTERVAL_S}s, timeout: 1s}`,
        "",
      ].join("\n"),
    );
    vigie = await startVigie({ configFile, port: vigiePort, cwd: directory });
  });

  afterAll(async () => {
    target?.close();
    await Promise.all([alertmanager?.stop(), stopVigie(vigie)]);
  });

  async function alerts(): Promise<GettableAlert[]> {
    const filter = encodeURIComponent(`alertname="${CHECK}"`);
    const response = await fetch(`${alertmanagerUrl}/api/v2/alerts?filter=${filter}`);
    expect(response.status).toBe(200);
    return (await response.json()) as GettableAlert[];
  }

  const active = (listed: GettableAlert[]) =>
    listed.filter((alert) => alert.status.state === "active" && Date.parse(alert.endsAt) > Date.now());

  it("fires one alert while the check fails, and resolves it when the check recovers", async () => {
    const firing = await until(
      async () => {
        const listed = active(await alerts());
        return listed.length > 0 ? listed : undefined;
      },
      "the alert of the failing check",
      20_000,
    ).catch((error: unknown) => {
      throw new Error(`${error}; Vigie said:\n${vigie?.output().slice(-3000)}`);
    });
    expect(firing).toHaveLength(1);
    expect(firing[0]).toMatchObject({
      labels: { alertname: CHECK, host: "127.0.0.1" },
      annotations: { state: "critical" },
    });
    // More critical results refresh the same alert: still one.
    await new Promise((wait) => setTimeout(wait, INTERVAL_S * 1000));
    expect(active(await alerts())).toHaveLength(1);

    target = createServer((socket) => socket.end());
    await new Promise<void>((done) => target?.listen(targetPort, "127.0.0.1", done));
    await until(
      async () => (active(await alerts()).length === 0 ? true : undefined),
      "the alert to be resolved after the recovery",
      20_000,
    );
    const resolvedAt = Date.now();
    // Resolved by the ok result, not by the end the last critical result set (its time + ttl):
    // the ok comes one interval after the last failure, the ttl is two.
    const history = (await (await fetch(`${vigie?.baseUrl}/result/${CHECK}/history?limit=20`)).json()) as {
      results: Array<{ timestamp: string; success: boolean }>;
    };
    const lastFailure = history.results.find((result) => !result.success);
    expect(lastFailure).toBeDefined();
    const naturalEnd = Date.parse(lastFailure?.timestamp ?? "") + 2 * INTERVAL_S * 1000;
    expect(resolvedAt).toBeLessThan(naturalEnd - 500);
    const metrics = await (await fetch(`${vigie?.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/stream_output_events_total\{output="alerts",outcome="sent"\} [1-9]/);
  });
});
