import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { addStream, freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { type Receiver, acceptedNumbers as received, startReceiver } from "../support/receiver.js";
import { until } from "../support/until.js";

const range = (count: number, from = 0) => Array.from({ length: count }, (_, i) => from + i);

describe("the http output of the real process", () => {
  let vigie: VigieProcess | undefined;
  let receiver: Receiver | undefined;
  afterEach(async () => {
    if (vigie !== undefined && vigie.child.exitCode === null) {
      vigie.child.kill("SIGKILL");
      await vigie.exited;
    }
    vigie = undefined;
    await receiver?.close();
    receiver = undefined;
  });

  /** Starts Vigie with one output `hook` (the YAML keys given) and a stream `out` that outputs to it. */
  async function start(outputYaml: string): Promise<VigieProcess> {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        "http:",
        `  port: ${port}`,
        "streams:",
        "  drain-timeout: 10s",
        "  outputs:",
        "    hook:",
        ...outputYaml.split("\n").map((line) => `      ${line}`),
        "",
      ].join("\n"),
    );
    const started = await startVigie({ configFile, port, cwd: directory });
    vigie = started;
    expect(await addStream(started.baseUrl, "out", "{:actions {:action :output :params [:hook]}}")).toBe(201);
    return started;
  }

  async function push(process: VigieProcess, events: unknown[]): Promise<void> {
    const response = await fetch(`${process.baseUrl}/api/v1/stream/out`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ events }),
    });
    expect(response.status).toBe(200);
  }

  it("delivers every event exactly once, in order, to a receiver that fails first (503, then a dropped connection)", async () => {
    receiver = await startReceiver((_request, index) => {
      if (index === 0) return { status: 503 };
      if (index === 1) return "drop";
      return { status: 200 };
    });
    const process = await start(
      ["type: http", `url: ${receiver.url}/events`, "batch-size: 5", "flush-interval: 100ms"].join("\n"),
    );
    for (let from = 0; from < 20; from += 4) {
      await push(
        process,
        range(4, from).map((n) => ({ host: "web-1", service: "e2e", n, metric: n, time: 1_700_000_000 + n })),
      );
    }
    await until(async () => (received(receiver as Receiver).length >= 20 ? true : undefined), "20 events");
    // Let a duplicate (there must be none) arrive before checking.
    await new Promise((wait) => setTimeout(wait, 300));
    expect(received(receiver)).toEqual(range(20));
    expect(receiver.requests.length).toBeGreaterThanOrEqual(receiver.accepted.length + 2);
    const metrics = await (await fetch(`${process.baseUrl}/metrics`)).text();
    expect(metrics).toContain('stream_output_events_total{output="hook",outcome="sent"} 20');
    expect(metrics).toMatch(/stream_output_retries_total\{output="hook"\} [2-9]/);
    expect(metrics).toContain('stream_output_queue_events{output="hook"} 0');
  });

  it("drains on SIGTERM: events pushed just before reach the receiver before the process exits", async () => {
    receiver = await startReceiver(async () => {
      // A receiver that takes its time: the process must wait for it.
      await new Promise((wait) => setTimeout(wait, 50));
      return { status: 200 };
    });
    const secretUrl = receiver.url.replace("http://", "http://drain-user:drain-s3cret@");
    // flush-interval 1h: only the drain can make these events leave.
    const process = await start(
      ["type: http", `url: ${secretUrl}/in`, "batch-size: 10", "flush-interval: 1h"].join("\n"),
    );
    await push(
      process,
      range(35).map((n) => ({ service: "e2e", n })),
    );
    // Full batches leave at once; the last 5 events wait for the interval, or the drain.
    await until(async () => (receiver?.accepted.length === 3 ? true : undefined), "the full batches");
    expect(received(receiver)).toEqual(range(30));
    process.child.kill("SIGTERM");
    expect(await process.exited).toBe(0);
    expect(received(receiver)).toEqual(range(35));
    expect(receiver.requests[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from("drain-user:drain-s3cret").toString("base64")}`,
    );
    expect(process.output()).not.toContain("drain-s3cret");
  });
});
