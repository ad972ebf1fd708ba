/**
 * The loki and elasticsearch outputs of the real process, against local receivers that check the
 * documented requests: Loki's push body, a bulk request whose answer fails some documents, and
 * `vigie config check` refusing a bad definition without printing its secrets.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { addStream, freePort, runCli, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { until } from "../support/until.js";

const TOKEN = "l0ki-s3cret-t0ken";

describe("the loki and elasticsearch outputs of the real process", () => {
  let vigie: VigieProcess | undefined;
  const receivers: Receiver[] = [];
  afterEach(async () => {
    if (vigie !== undefined && vigie.child.exitCode === null) {
      vigie.child.kill("SIGKILL");
      await vigie.exited;
    }
    vigie = undefined;
    for (const receiver of receivers.splice(0)) await receiver.close();
  });

  /** Starts Vigie with the given `outputs:` lines and a stream `out` that sends to `logs` and `search`. */
  async function start(outputs: string[]): Promise<VigieProcess> {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      ["http:", `  port: ${port}`, "outputs:", ...outputs.map((line) => `  ${line}`), ""].join("\n"),
    );
    const started = await startVigie({ configFile, port, cwd: directory, env: { VIGIE_TEST_LOKI_TOKEN: TOKEN } });
    vigie = started;
    const stream =
      "{:actions {:action :sdo :children [{:action :output :params [:logs]} {:action :output :params [:search]}]}}";
    expect(await addStream(started.baseUrl, "out", stream)).toBe(201);
    return started;
  }

  it("pushes to Loki and bulk-indexes into Elasticsearch, resending only the documents that met a 429", async () => {
    const loki = await startReceiver((_request, index) => (index === 0 ? { status: 502 } : { status: 204 }));
    receivers.push(loki);
    let bulks = 0;
    const elastic = await startReceiver((request) => {
      const documents = request.body.toString().split("\n").length >> 1;
      bulks += 1;
      // The first bulk: document 2 meets a full queue (429), document 3 a mapping error (400).
      const statuses = bulks === 1 ? [201, 429, 400, 201] : Array.from({ length: documents }, () => 201);
      return {
        status: 200,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          errors: statuses.some((s) => s >= 300),
          items: statuses.map((status) => ({ index: { status } })),
        }),
      };
    });
    receivers.push(elastic);
    const process = await start([
      "logs:",
      "  type: loki",
      `  url: ${loki.url}`,
      "  labels: [host, service]",
      "  tenant: ops",
      "  token-env: VIGIE_TEST_LOKI_TOKEN",
      "  flush-interval: 100ms",
      "search:",
      "  type: elasticsearch",
      `  url: ${elastic.url}`,
      "  index: events-{date}",
      "  flush-interval: 100ms",
    ]);
    const events = [1, 2, 3, 4].map((n) => ({
      host: "web-1",
      service: "nginx",
      n,
      description: `line "${n}"`,
      time: 1_700_000_000 + n,
    }));
    const pushed = await fetch(`${process.baseUrl}/api/v1/stream/out`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ events }),
    });
    expect(pushed.status).toBe(200);
    await until(
      async () => (loki.accepted.length >= 1 && elastic.requests.length >= 2 ? true : undefined),
      "both outputs",
    );

    const push = loki.accepted[0];
    expect(push?.url).toBe("/loki/api/v1/push");
    expect(push?.headers).toMatchObject({
      "content-type": "application/json",
      "x-scope-orgid": "ops",
      authorization: `Bearer ${TOKEN}`,
    });
    const body = JSON.parse(push?.body.toString() ?? "");
    expect(body.streams).toHaveLength(1);
    expect(body.streams[0].stream).toEqual({ host: "web-1", service: "nginx" });
    expect(body.streams[0].values.map((value: [string, string]) => value[0])).toEqual([
      "1700000001000000000",
      "1700000002000000000",
      "1700000003000000000",
      "1700000004000000000",
    ]);
    expect(JSON.parse(body.streams[0].values[0][1])).toMatchObject({ host: "web-1", n: 1, description: 'line "1"' });

    const [first, second] = elastic.requests;
    expect(first?.url).toBe("/_bulk?filter_path=errors,items.*.status,items.*.error.type");
    expect(first?.headers["content-type"]).toBe("application/x-ndjson");
    const lines = first?.body.toString().split("\n") ?? [];
    expect(lines[0]).toBe('{"index":{"_index":"events-2023.11.14"}}');
    expect(JSON.parse(lines[1] ?? "")).toMatchObject({ "@timestamp": "2023-11-14T22:13:21.000Z", n: 1 });
    const resent = second?.body
      .toString()
      .split("\n")
      .filter((_line, index) => index % 2 === 1 && _line !== "");
    expect(resent?.map((line) => JSON.parse(line).n)).toEqual([2]);

    await until(async () => {
      const metrics = await (await fetch(`${process.baseUrl}/metrics`)).text();
      return metrics.includes('stream_output_events_total{output="search",outcome="sent"} 3') ? metrics : undefined;
    }, "the metrics").then((metrics) => {
      expect(metrics).toContain('stream_output_events_total{output="search",outcome="dropped-rejected"} 1');
      expect(metrics).toContain('stream_output_events_total{output="logs",outcome="sent"} 4');
    });
    expect(process.output()).not.toContain(TOKEN);
  });

  it("config check refuses a bad definition with exit 2, naming the key, printing no secret", async () => {
    const file = join(temporaryDirectory(), "vigie.yaml");
    writeFileSync(
      file,
      [
        "outputs:",
        "  search:",
        "    type: elasticsearch",
        "    url: http://elastic:pa55word@127.0.0.1:9200",
        "    index: Events-{date}",
        "",
      ].join("\n"),
    );
    const refused = await runCli(["config", "check", "--config", file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("invalid configuration: outputs.search.index: must be an index name");
    expect(refused.stderr + refused.stdout).not.toContain("pa55word");
  });
});
