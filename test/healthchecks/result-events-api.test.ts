/**
 * Periodic results reach the streams through the platform's event sink (docs/healthchecks.md;
 * never the streams module itself), in a server with both modules; an unknown stream is counted and
 * the check runs on.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { healthchecksModule } from "../../src/healthchecks/index.js";
import type { VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";
import { until } from "../support/until.js";
import { closedPort } from "./local-servers.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("results into streams", () => {
  let server: VigieServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("pushes every periodic result into the configured streams, and counts what an unknown stream drops", async () => {
    const directory = temporaryDirectory();
    writeFileSync(join(directory, "checks.edn"), "{:checks {:actions {:action :index :params [[:service]]}}}");
    const port = await closedPort();
    server = await startTestServer({
      // The order of src/server.ts: streams before the modules that produce events.
      modules: [streamsModule, healthchecksModule],
      config: {
        streams: { directories: [directory] },
        healthchecks: {
          "min-interval": "100ms",
          streams: ["missing", "checks"],
          "tcp-checks": [
            {
              name: "db",
              description: "the database",
              target: "127.0.0.1",
              port,
              interval: "200ms",
              timeout: "150ms",
              labels: { team: "data" },
            },
          ],
        },
      },
    });
    const app = (server as VigieServer).app;
    const indexed = await until(async () => {
      const response = await app.inject({
        method: "GET",
        url: `/api/v1/index/checks/search?query=${encodeURIComponent(b64('[:= :service "db"]'))}`,
      });
      const events = response.json().events as Array<Record<string, unknown>>;
      return events.length > 0 ? events : undefined;
    }, "a result in the index of checks");
    expect(indexed[0]).toMatchObject({
      service: "db",
      host: "127.0.0.1",
      state: "critical",
      ttl: 0.4,
      tags: ["healthcheck", "tcp"],
      team: "data",
    });
    expect(typeof indexed[0]?.metric).toBe("number");
    expect(typeof indexed[0]?.description).toBe("string");
    // The unknown stream first in the list stopped nothing: the check ran on, and the drops are counted.
    const metrics = (await app.inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toMatch(/vigie_event_sink_dropped_total\{stream="missing"\} [1-9]/);
    // No result of the existing stream was lost, not even at start-up.
    expect(metrics).not.toContain('vigie_event_sink_dropped_total{stream="checks"}');
    // A one-off result is answered, not pushed.
    const once = await app.inject({
      method: "POST",
      url: "/healthcheck/tcp",
      payload: { name: "once", target: "127.0.0.1", port, timeout: "150ms", "one-off": true },
    });
    expect(once.statusCode).toBe(500);
    const search = await app.inject({
      method: "GET",
      url: `/api/v1/index/checks/search?query=${encodeURIComponent(b64('[:= :service "once"]'))}`,
    });
    expect(search.json().events).toEqual([]);
    const latest = await app.inject({ method: "GET", url: "/result/db" });
    expect(latest.json()).toMatchObject({ name: "db", success: false });
  });
});
