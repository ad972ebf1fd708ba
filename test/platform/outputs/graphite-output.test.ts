import { createServer, type Server, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import {
  encodeGraphiteBatch,
  graphitePath,
  parsePathTemplate,
  pathOf,
} from "../../../src/platform/outputs/graphite-output.js";
import { streamingServer } from "../../support/notifiers.js";
import { afterTest, definitionOf, outputsHarness } from "../../support/outputs-harness.js";
import { until } from "../../support/until.js";

/** A plaintext carbon on 127.0.0.1: the lines it received, and the connections it accepted. */
interface Carbon {
  readonly port: number;
  readonly lines: string[];
  readonly connections: Socket[];
  close(): Promise<void>;
}

async function carbon(port = 0): Promise<Carbon> {
  const lines: string[] = [];
  const connections: Socket[] = [];
  const server: Server = createServer((socket) => {
    connections.push(socket);
    let pending = "";
    socket.on("data", (chunk) => {
      pending += chunk.toString("utf8");
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      lines.push(...parts);
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const address = server.address();
  const actual = typeof address === "object" && address !== null ? address.port : 0;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const socket of connections) socket.destroy();
      server.close(() => resolve());
    });
  afterTest(close);
  return { port: actual, lines, connections, close };
}

const graphite = (port: number, overrides: Record<string, unknown> = {}) =>
  definitionOf({ type: "graphite", host: "127.0.0.1", port, ...overrides });

describe("graphite paths", () => {
  it("fills the template, each value's dots, spaces and other characters becoming _", () => {
    const template = parsePathTemplate("vigie.{host}.{service}.x");
    expect(pathOf({ host: "web-1.example.org", service: "disk used /var" }, template)).toBe(
      "vigie.web-1_example_org.disk_used__var.x",
    );
    expect(pathOf({ host: 7, service: "é\n" }, parsePathTemplate("{host}:{service}"))).toBe("7:__");
    expect(pathOf({ service: "cpu" }, template)).toBeUndefined();
    expect(pathOf({ host: "", service: "cpu" }, template)).toBeUndefined();
  });

  it("validates templates", () => {
    expect(graphitePath("servers.{host}.{service}", "p")).toBe("servers.{host}.{service}");
    for (const bad of ["a b", "{}", "a.{b", "x/y", ""]) expect(() => graphitePath(bad, "p"), bad).toThrow();
  });

  it("writes `<path> <metric> <unix seconds>` lines, skipping events without a numeric metric or a path", () => {
    expect(
      encodeGraphiteBatch(
        [
          { host: "a", service: "cpu", metric: 0.5, time: 1_700_000_000.9 },
          { host: "a", service: "cpu", state: "ok" },
          { host: "a", service: "cpu", metric: "1" },
          { service: "cpu", metric: 1 },
          { host: "a", service: "load", metric: -2 },
        ],
        parsePathTemplate("{host}.{service}"),
        1_700_000_100.5,
      ),
    ).toEqual({ units: [{ payload: "a.cpu 0.5 1700000000\na.load -2 1700000100\n", events: 2 }], rejected: 3 });
  });
});

describe("the graphite output over TCP", () => {
  it("sends batches over one connection, and counts skipped events", async () => {
    const server = await carbon();
    const { outputs, reaches } = outputsHarness({ metrics: graphite(server.port) });
    outputs.sink("metrics")([
      { host: "a", service: "cpu", metric: 1, time: 10 },
      { host: "a", service: "cpu" },
    ]);
    await reaches("metrics", "sent", 1);
    outputs.sink("metrics")({ host: "b", service: "cpu", metric: 2, time: 11 });
    await reaches("metrics", "sent", 2);
    await until(async () => (server.lines.length === 2 ? true : undefined), "two lines");
    expect(server.lines).toEqual(["a.cpu 1 10", "b.cpu 2 11"]);
    await reaches("metrics", "dropped-rejected", 1);
    expect(server.connections).toHaveLength(1);
  });

  it("retries while carbon refuses connections, and reconnects after carbon closed the connection", async () => {
    const first = await carbon();
    const port = first.port;
    await first.close();
    const { outputs, reaches, metric } = outputsHarness({ metrics: graphite(port) });
    outputs.sink("metrics")({ host: "a", service: "x", metric: 1, time: 1 });
    await until(
      async () => ((await metric('stream_output_retries_total{output="metrics"}')) >= 2 ? true : undefined),
      "retries",
    );
    const server = await carbon(port);
    await reaches("metrics", "sent", 1);
    // Carbon restarts: it closes the connection the output holds once it read the first line (a
    // reset would drop unread bytes). The close completes only when the output closed its side too,
    // so the next batch is written after the output saw the close, and opens another connection.
    await until(async () => (server.lines.length === 1 ? true : undefined), "the first line");
    await Promise.all(
      server.connections.map(
        (socket) =>
          new Promise((resolve) => {
            socket.once("close", resolve);
            socket.end();
          }),
      ),
    );
    outputs.sink("metrics")({ host: "a", service: "x", metric: 2, time: 2 });
    await reaches("metrics", "sent", 2);
    await until(async () => (server.lines.length === 2 ? true : undefined), "two lines");
    expect(server.lines).toEqual(["a.x 1 1", "a.x 2 2"]);
    expect(server.connections).toHaveLength(2);
  });
});

describe("the graphite output on a real server", () => {
  it("writes what a stream sends to it", async () => {
    const server = await carbon();
    const vigie = await streamingServer(
      { carbon: { type: "graphite", host: "127.0.0.1", port: server.port, path: "vigie.{host}.{service}" } },
      "carbon",
    );
    afterTest(() => vigie.server.close());
    expect(
      await vigie.push([{ host: "web1.example.org", service: "disk used", metric: 0.95, time: 1_763_800_000.5 }]),
    ).toBe(200);
    await until(async () => (server.lines.length === 1 ? true : undefined), "one line");
    expect(server.lines).toEqual(["vigie.web1_example_org.disk_used 0.95 1763800000"]);
  });
});
