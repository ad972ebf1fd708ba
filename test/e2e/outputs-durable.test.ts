/**
 * Durable outputs of the real process: events pushed while the receiver is down survive a `kill -9`
 * and reach the receiver, in order, once the server started again and the receiver came up. The
 * same without `durable` loses them, which shows that the test can fail.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { type Receiver, acceptedNumbers as received, startReceiver } from "../support/receiver.js";
import { until } from "../support/until.js";

const range = (count: number, from = 0) => Array.from({ length: count }, (_, i) => from + i);

/** The value of a series of `/metrics`, undefined when absent. */
async function metric(baseUrl: string, series: string): Promise<number | undefined> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const EVENTS = 300;

describe("durable outputs of the real process", () => {
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

  /** A configuration with a stream `out` (in a streams file) that outputs to `hook`, an http output to `receiverPort`. */
  async function install(durable: boolean, receiverPort: number) {
    const directory = temporaryDirectory();
    const streams = join(directory, "streams");
    mkdirSync(streams);
    writeFileSync(join(streams, "out.edn"), "{:out {:actions {:action :output :params [:hook]}}}");
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        "http:",
        `  port: ${port}`,
        "database:",
        "  url: sqlite:./data/vigie.db",
        "streams:",
        `  directories: [${JSON.stringify(streams)}]`,
        "  outputs:",
        "    hook:",
        "      type: http",
        `      url: http://127.0.0.1:${receiverPort}/events`,
        "      batch-size: 7",
        "      flush-interval: 50ms",
        ...(durable ? ["      durable: true"] : []),
        "",
      ].join("\n"),
    );
    return () => startVigie({ configFile, port, cwd: directory });
  }

  async function push(baseUrl: string, events: unknown[]): Promise<void> {
    const response = await fetch(`${baseUrl}/api/v1/stream/out`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ events }),
    });
    expect(response.status).toBe(200);
  }

  /**
   * Pushes {@link EVENTS} events while the receiver is down, waits until the output holds them all
   * (written to the database when durable), kills the process with SIGKILL, starts it again and
   * brings the receiver up.
   * @returns the receiver and the restarted process
   */
  async function crashWhileReceiverDown(durable: boolean): Promise<{ receiver: Receiver; restarted: VigieProcess }> {
    const receiverPort = await freePort();
    const start = await install(durable, receiverPort);
    const first = await start();
    vigie = first;
    for (let from = 0; from < EVENTS; from += 30) {
      await push(
        first.baseUrl,
        range(30, from).map((n) => ({ host: "web-1", service: "durable", n, metric: n })),
      );
    }
    // Every event reached the output's queue; a durable one has written them (a few milliseconds
    // after the output took them).
    const series = durable
      ? 'stream_output_durable_events{output="hook"}'
      : 'stream_output_queue_events{output="hook"}';
    await until(async () => ((await metric(first.baseUrl, series)) === EVENTS ? true : undefined), `${series}`);
    first.child.kill("SIGKILL");
    await first.exited;
    const restarted = await start();
    vigie = restarted;
    const up = await startReceiver(undefined, receiverPort);
    receiver = up;
    return { receiver: up, restarted };
  }

  it("delivers every event accepted before a kill -9, in order, once the receiver is back", async () => {
    const { receiver: up, restarted } = await crashWhileReceiverDown(true);
    await until(async () => (received(up).length >= EVENTS ? true : undefined), `${EVENTS} events`, 30_000);
    // Let a duplicate (there should be none here) arrive before checking.
    await new Promise((wait) => setTimeout(wait, 300));
    expect(received(up)).toEqual(range(EVENTS));
    await until(
      async () =>
        (await metric(restarted.baseUrl, 'stream_output_durable_events{output="hook"}')) === 0 ? true : undefined,
      "nothing left on disk",
    );
    // New events go out after the restored ones.
    await push(restarted.baseUrl, [{ n: EVENTS }]);
    await until(async () => (received(up).length > EVENTS ? true : undefined), "the new event");
    expect(received(up)).toEqual(range(EVENTS + 1));
  });

  it("loses the events of an output that is not durable (the same crash)", async () => {
    const { receiver: up, restarted } = await crashWhileReceiverDown(false);
    await push(restarted.baseUrl, [{ n: EVENTS }]);
    await until(async () => (received(up).length > 0 ? true : undefined), "the new event");
    expect(received(up)).toEqual([EVENTS]);
  });
});
