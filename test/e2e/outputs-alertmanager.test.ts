import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandPath, type Daemon, startAlertmanager } from "../support/daemon.js";
import {
  addStream,
  freePort,
  startVigie,
  stopVigie,
  temporaryDirectory,
  type VigieProcess,
} from "../support/process.js";
import { until } from "../support/until.js";

/** The Alertmanager binary (Debian's `prometheus-alertmanager` package, installed by .ci/run), if any. */
const ALERTMANAGER = commandPath(
  "prometheus-alertmanager",
  "prometheus-alertmanager",
  "the alertmanager output e2e test",
);

/** A `gettableAlert` of Alertmanager's API v2, the fields the test reads. */
interface GettableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL?: string;
  status: { state: string };
}

describe.skipIf(ALERTMANAGER === "")("Vigie's alertmanager output into a real Alertmanager", () => {
  let vigie: VigieProcess | undefined;
  let alertmanager: Daemon | undefined;
  let alertmanagerUrl = "";

  beforeAll(async () => {
    const directory = temporaryDirectory();
    ({ daemon: alertmanager, url: alertmanagerUrl } = await startAlertmanager(ALERTMANAGER, directory));

    const vigiePort = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        "http:",
        `  port: ${vigiePort}`,
        "streams:",
        "  outputs:",
        "    alerts:",
        "      type: alertmanager",
        // A trailing slash: the output must still post to /api/v2/alerts.
        `      url: ${alertmanagerUrl}/`,
        "      labels: [host, env]",
        `      generator-url: http://127.0.0.1:${vigiePort}/api/v1/stream/alerting`,
        "      flush-interval: 100ms",
        "",
      ].join("\n"),
    );
    vigie = await startVigie({ configFile, port: vigiePort, cwd: directory });
    expect(await addStream(vigie.baseUrl, "alerting", "{:actions {:action :output :params [:alerts]}}")).toBe(201);
  });

  afterAll(async () => {
    await Promise.all([alertmanager?.stop(), stopVigie(vigie)]);
  });

  async function push(events: unknown[]): Promise<void> {
    const response = await fetch(`${vigie?.baseUrl}/api/v1/stream/alerting`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ events }),
    });
    expect(response.status).toBe(200);
  }

  async function alerts(): Promise<GettableAlert[]> {
    const filter = encodeURIComponent('alertname="vigie_e2e_cpu"');
    const response = await fetch(`${alertmanagerUrl}/api/v2/alerts?filter=${filter}`);
    expect(response.status).toBe(200);
    return (await response.json()) as GettableAlert[];
  }

  it("fires an alert on a critical event and resolves it on an ok event", async () => {
    const now = Date.now() / 1000;
    await push([
      {
        service: "vigie_e2e_cpu",
        host: "web-1",
        env: "prod",
        state: "critical",
        metric: 0.97,
        description: "cpu at 97% on web-1",
        time: now,
      },
    ]);
    const [firing] = await until(async () => {
      const listed = await alerts();
      return listed.length > 0 ? listed : undefined;
    }, "the alert in Alertmanager").catch((error: unknown) => {
      throw new Error(`${error}; Alertmanager said:\n${alertmanager?.output().slice(-3000)}`);
    });
    expect(firing).toMatchObject({
      labels: { alertname: "vigie_e2e_cpu", host: "web-1", env: "prod" },
      annotations: { summary: "cpu at 97% on web-1", state: "critical", metric: "0.97" },
      status: { state: "active" },
      generatorURL: `${vigie?.baseUrl}/api/v1/stream/alerting`,
    });
    expect(Date.parse(firing?.startsAt ?? "")).toBe(Math.floor(now * 1000));
    // Fired with endsAt = time + the default ttl of 120 s.
    expect(Date.parse(firing?.endsAt ?? "")).toBe(Math.floor((now + 120) * 1000));

    await push([{ service: "vigie_e2e_cpu", host: "web-1", env: "prod", state: "ok", time: Date.now() / 1000 }]);
    await until(async () => {
      const listed = await alerts();
      const stillActive = listed.some(
        (alert) => alert.status.state === "active" && Date.parse(alert.endsAt) > Date.now(),
      );
      return stillActive ? undefined : true;
    }, "the alert to be resolved");
    const metrics = await (await fetch(`${vigie?.baseUrl}/metrics`)).text();
    expect(metrics).toContain('stream_output_events_total{output="alerts",outcome="sent"} 2');
  });
});
