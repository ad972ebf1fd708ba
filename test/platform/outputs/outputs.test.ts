import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { uncompressSync } from "snappy";
import { describe, expect, it, vi } from "vitest";
import type { OutputDefinition } from "../../../src/platform/outputs/config.js";
import { LOG_INTERVAL_MS } from "../../../src/platform/outputs/delivery.js";
import type { Event } from "../../../src/streams/event.js";
import { afterTest, outputsHarness as harness, receiver } from "../../support/outputs-harness.js";
import { startReceiver } from "../../support/receiver.js";
import { temporaryDirectory } from "../../support/temporary.js";
import { until } from "../../support/until.js";

const ms = (milliseconds: number) => ({ text: `${milliseconds}ms`, milliseconds });

/** Common keys with short timings, so that the suite stays fast. */
const common = {
  "queue-size": 10_000,
  "batch-size": 100,
  "flush-interval": ms(30),
  timeout: ms(2000),
  "max-retry-time": ms(5000),
  durable: false,
};

type Definition<T extends OutputDefinition["type"]> = Extract<OutputDefinition, { type: T }>;

function http(url: string, overrides: Partial<Definition<"http">> = {}): Definition<"http"> {
  return { type: "http", url, headers: {}, format: "json", ...common, ...overrides };
}

const events = (count: number, from = 0): Event[] =>
  Array.from({ length: count }, (_, i) => ({ service: "s", n: from + i, metric: from + i, time: 1000 + from + i }));

/** The events of a json batch request. */
const bodyEvents = (request: { body: Buffer }): Event[] => JSON.parse(request.body.toString("utf8"));
const numbers = (requests: ReadonlyArray<{ body: Buffer }>) => requests.flatMap((r) => bodyEvents(r).map((e) => e.n));
const range = (count: number, from = 0) => Array.from({ length: count }, (_, i) => from + i);
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

describe("batching", () => {
  it("sends full batches at once, and the rest flush-interval after its first event", async () => {
    const target = await receiver();
    const { outputs, reaches } = harness({ hook: http(target.url, { "flush-interval": ms(300) }) });
    const sink = outputs.sink("hook");
    const pushed = performance.now();
    sink(events(250));
    await target.acceptedAtLeast(2);
    expect(target.requests.map((r) => bodyEvents(r).length)).toEqual([100, 100]);
    expect((target.requests[1]?.at ?? 0) - pushed).toBeLessThan(250);
    await target.acceptedAtLeast(3);
    expect(target.requests.map((r) => bodyEvents(r).length)).toEqual([100, 100, 50]);
    expect((target.requests[2]?.at ?? 0) - pushed).toBeGreaterThanOrEqual(290);
    expect(numbers(target.requests)).toEqual(range(250));
    await reaches("hook", "sent", 250);
  });

  it("waits flush-interval after a batch's first event, not after its last", async () => {
    const target = await receiver();
    const { outputs } = harness({ hook: http(target.url, { "flush-interval": ms(300) }) });
    const sink = outputs.sink("hook");
    const first = performance.now();
    sink({ n: 0 });
    await sleep(150);
    expect(target.requests).toHaveLength(0);
    const last = performance.now();
    sink([{ n: 1 }, { n: 2 }]);
    await target.acceptedAtLeast(1);
    const at = target.requests[0]?.at ?? 0;
    expect(at - first).toBeGreaterThanOrEqual(295);
    // 300 ms after the last event would be at least 450 ms after the first.
    expect(at - last).toBeLessThan(300);
    expect(bodyEvents(target.requests[0] ?? { body: Buffer.from("[]") })).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
    // A later event starts a batch of its own, with its own interval.
    sink({ n: 3 });
    await target.acceptedAtLeast(2);
    expect(numbers(target.requests)).toEqual([0, 1, 2, 3]);
  });

  it("arms one timer per batch, not one per event", async () => {
    const target = await receiver();
    const { outputs } = harness({ hook: http(target.url, { "batch-size": 1000, "flush-interval": ms(50) }) });
    const sink = outputs.sink("hook");
    const spy = vi.spyOn(globalThis, "setTimeout");
    let timers: number;
    try {
      for (let i = 0; i < 500; i++) sink({ n: i });
      timers = spy.mock.calls.length;
    } finally {
      spy.mockRestore();
    }
    expect(timers).toBe(1);
    await target.acceptedAtLeast(1);
    expect(numbers(target.requests)).toEqual(range(500));
  });

  it("keeps one batch in flight: the next leaves only once the previous one was answered", async () => {
    let answered = 0;
    const answeredAt: number[] = [];
    const target = await receiver(async () => {
      await sleep(100);
      answered += 1;
      answeredAt.push(performance.now());
      return { status: 204 };
    });
    const { outputs } = harness({ hook: http(target.url, { "batch-size": 10 }) });
    outputs.sink("hook")(events(40));
    await sleep(50);
    expect(target.requests).toHaveLength(1);
    await target.acceptedAtLeast(4);
    expect(answered).toBe(4);
    for (let i = 1; i < 4; i++) expect(target.requests[i]?.at).toBeGreaterThanOrEqual(answeredAt[i - 1] ?? Infinity);
    expect(numbers(target.requests)).toEqual(range(40));
  });
});

describe("retries", () => {
  it("retries 503 and 429, honouring Retry-After, and delivers every event once, in order", async () => {
    const target = await receiver((_request, index) => {
      if (index === 0) return { status: 503 };
      if (index === 1) return { status: 429, headers: { "retry-after": "1" } };
      return { status: 200 };
    });
    const { outputs, count, metric, reaches } = harness({ hook: http(target.url) });
    outputs.sink("hook")(events(5));
    await target.acceptedAtLeast(1);
    expect(target.requests).toHaveLength(3);
    expect((target.requests[2]?.at ?? 0) - (target.requests[1]?.at ?? 0)).toBeGreaterThanOrEqual(990);
    for (const request of target.requests) expect(numbers([request])).toEqual(range(5));
    outputs.sink("hook")(events(5, 5));
    await target.acceptedAtLeast(2);
    expect(numbers(target.accepted)).toEqual(range(10));
    await reaches("hook", "sent", 10);
    expect(await metric('stream_output_retries_total{output="hook"}')).toBe(2);
    expect(await metric('stream_output_request_duration_seconds_count{output="hook"}')).toBe(4);
    expect(await count("hook", "dropped-retries-exhausted")).toBe(0);
  }, 10_000);

  it("retries a dropped connection", async () => {
    const target = await receiver((_request, index) => (index === 0 ? "drop" : { status: 200 }));
    const { outputs, metric } = harness({ hook: http(target.url) });
    outputs.sink("hook")(events(3));
    await target.acceptedAtLeast(1);
    expect(target.requests).toHaveLength(2);
    expect(numbers(target.accepted)).toEqual(range(3));
    expect(await metric('stream_output_retries_total{output="hook"}')).toBe(1);
  });

  it("aborts a request after timeout and retries it", async () => {
    const target = await receiver((_request, index) => (index === 0 ? "hang" : { status: 200 }));
    const { outputs, metric } = harness({ hook: http(target.url, { timeout: ms(200) }) });
    outputs.sink("hook")(events(3));
    await target.acceptedAtLeast(1);
    expect(target.requests).toHaveLength(2);
    expect((target.requests[1]?.at ?? 0) - (target.requests[0]?.at ?? 0)).toBeGreaterThanOrEqual(200);
    expect(await metric('stream_output_retries_total{output="hook"}')).toBe(1);
  });

  it("times each attempt from its own start, also when an earlier one of the queue was answered", async () => {
    const target = await receiver((_request, index) => (index === 1 ? "hang" : { status: 200 }));
    const { outputs, metric } = harness({ hook: http(target.url, { timeout: ms(300), "batch-size": 2 }) });
    outputs.sink("hook")(events(2));
    await target.acceptedAtLeast(1);
    // Most of the first attempt's timeout has passed when the second batch leaves.
    await sleep(200);
    outputs.sink("hook")(events(2, 2));
    await target.acceptedAtLeast(2);
    expect(target.requests).toHaveLength(3);
    expect((target.requests[2]?.at ?? 0) - (target.requests[1]?.at ?? 0)).toBeGreaterThanOrEqual(300);
    expect(numbers(target.requests.filter((_request, index) => index !== 1))).toEqual(range(4));
    expect(await metric('stream_output_retries_total{output="hook"}')).toBe(1);
  });

  it("retries a receiver that refuses connections, then delivers once it listens", async () => {
    const placeholder = await startReceiver();
    const port = placeholder.port;
    await placeholder.close();
    const { outputs, metric, reaches } = harness({ hook: http(`http://127.0.0.1:${port}/in`) });
    outputs.sink("hook")(events(2));
    await until(
      async () => ((await metric('stream_output_retries_total{output="hook"}')) >= 2 ? true : undefined),
      "two retries",
    );
    const target = await startReceiver(undefined, port);
    afterTest(() => target.close());
    await target.acceptedAtLeast(1);
    expect(target.requests[0]?.url).toBe("/in");
    expect(numbers(target.accepted)).toEqual(range(2));
    await reaches("hook", "sent", 2);
  });

  it("drops a batch as retries-exhausted after max-retry-time, logs once a minute, and goes on with the next", async () => {
    const target = await receiver((request) => (bodyEvents(request)[0]?.n === 0 ? { status: 500 } : { status: 200 }));
    const { outputs, count, logs, metric, reaches } = harness({
      hook: http(target.url, { "batch-size": 3, "max-retry-time": ms(400) }),
    });
    outputs.sink("hook")(events(6));
    await target.acceptedAtLeast(1);
    expect(numbers(target.accepted)).toEqual([3, 4, 5]);
    expect(await count("hook", "dropped-retries-exhausted")).toBe(3);
    await reaches("hook", "sent", 3);
    const failedTries = target.requests.length - 1;
    // 100 ms doubling with jitter within 400 ms: at least 3 tries, the last one at the deadline.
    expect(failedTries).toBeGreaterThanOrEqual(3);
    expect(await metric('stream_output_retries_total{output="hook"}')).toBe(failedTries - 1);
    expect(LOG_INTERVAL_MS).toBe(60_000);
    const lines = logs.filter((line) => line.output === "hook");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, output: "hook", reason: "HTTP 500" });
  });

  it("does not wait past max-retry-time for a Retry-After", async () => {
    const target = await receiver(() => ({ status: 503, headers: { "retry-after": "3600" } }));
    const { outputs, reaches } = harness({ hook: http(target.url, { "max-retry-time": ms(60_000) }) });
    outputs.sink("hook")(events(2));
    await reaches("hook", "dropped-retries-exhausted", 2);
    expect(target.requests).toHaveLength(1);
  });

  it("does not retry other 4xx: counted rejected, the answer's first 200 bytes logged without URL or header secrets", async () => {
    const answer = `${"bad request: ".padEnd(190, "x")}0123456789TAIL-NOT-LOGGED`;
    const target = await receiver((_request, index) => (index === 0 ? { status: 400, body: answer } : { status: 200 }));
    const url = target.url.replace("http://", "http://robot:pa55word@");
    const { outputs, logs, rawLogs, metric, reaches } = harness({
      hook: http(`${url}/hook?key=k3y`, { headers: { "X-Token": "s3cret-token" } }),
    });
    outputs.sink("hook")(events(4));
    await reaches("hook", "dropped-rejected", 4);
    outputs.sink("hook")(events(2, 4));
    await target.acceptedAtLeast(1);
    expect(target.requests).toHaveLength(2);
    expect(numbers(target.accepted)).toEqual([4, 5]);
    expect(await metric('stream_output_retries_total{output="hook"}')).toBe(0);
    const [line] = logs.filter((entry) => entry.output === "hook");
    expect(line).toMatchObject({ level: 40, output: "hook", reason: "HTTP 400", answer: answer.slice(0, 200) });
    expect(String(line?.msg)).toContain("hook");
    const everything = rawLogs.join("\n");
    for (const secret of ["pa55word", "robot", "s3cret-token", "k3y", "TAIL-NOT-LOGGED", "127.0.0.1"]) {
      expect(everything).not.toContain(secret);
    }
  });
});

describe("the bounded queue", () => {
  it("drops and counts what does not fit while the receiver hangs, and a push never waits", async () => {
    const target = await receiver(() => "hang");
    const { outputs, metric, reaches } = harness({
      hook: http(target.url, { "queue-size": 10, "batch-size": 4, timeout: ms(60_000) }),
    });
    const sink = outputs.sink("hook");
    sink(events(4));
    await until(async () => (target.requests.length === 1 ? true : undefined), "the first request");
    const started = performance.now();
    for (let i = 0; i < 100_000; i++) sink({ n: i });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeLessThan(1000);
    await reaches("hook", "dropped-queue-full", 100_000 - 6);
    expect(await metric('stream_output_queue_events{output="hook"}')).toBe(10);
    expect([...outputs.queued()]).toEqual([["hook", 10]]);
  });

  it("costs a push nothing but counted drops when the receiver is dead", async () => {
    const placeholder = await startReceiver();
    await placeholder.close();
    const { outputs, reaches } = harness({
      hook: http(`http://127.0.0.1:${placeholder.port}`, { "queue-size": 100, "max-retry-time": ms(60_000) }),
    });
    const sink = outputs.sink("hook");
    const started = performance.now();
    for (let i = 0; i < 1000; i++) sink(events(10, i * 10));
    expect(performance.now() - started).toBeLessThan(1000);
    await reaches("hook", "dropped-queue-full", 10_000 - 100);
    expect([...outputs.queued()]).toEqual([["hook", 100]]);
  });

  it("refuses an output that is not declared", () => {
    const { outputs } = harness({});
    expect(() => outputs.sink("nope")).toThrow("output nope is not declared");
  });
});

describe("drain", () => {
  it("sends everything queued at once, in order, then drops later events as queue-full", async () => {
    const target = await receiver();
    const { outputs, count, reaches } = harness({ hook: http(target.url, { "flush-interval": ms(60_000) }) });
    outputs.sink("hook")(events(150));
    await sleep(50);
    expect(target.requests).toHaveLength(1);
    const started = performance.now();
    await outputs.drain(5000);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(numbers(target.accepted)).toEqual(range(150));
    expect(await count("hook", "sent")).toBe(150);
    outputs.sink("hook")({ n: 150 });
    await reaches("hook", "dropped-queue-full", 1);
    expect([...outputs.queued()]).toEqual([["hook", 0]]);
  });

  it("retries as usual while draining", async () => {
    const target = await receiver((_request, index) => (index < 2 ? { status: 503 } : { status: 200 }));
    const { outputs, count } = harness({ hook: http(target.url, { "flush-interval": ms(60_000) }) });
    outputs.sink("hook")(events(3));
    await outputs.drain(5000);
    expect(numbers(target.accepted)).toEqual(range(3));
    expect(await count("hook", "sent")).toBe(3);
  });

  it("gives up at the deadline: what is left is counted retries-exhausted", async () => {
    const target = await receiver(() => "hang");
    const other = await receiver();
    const { outputs, count, metric } = harness({
      slow: http(target.url, { "batch-size": 10, timeout: ms(60_000) }),
      fast: http(other.url),
    });
    outputs.sink("slow")(events(25));
    outputs.sink("fast")(events(5));
    await until(async () => (target.requests.length === 1 ? true : undefined), "the first request");
    const started = performance.now();
    await outputs.drain(300);
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1500);
    expect(await count("slow", "dropped-retries-exhausted")).toBe(25);
    expect(await count("fast", "sent")).toBe(5);
    expect(await metric('stream_output_queue_events{output="slow"}')).toBe(0);
    expect(target.requests).toHaveLength(1);
  });

  it("returns at once when nothing is queued", async () => {
    const target = await receiver();
    const { outputs } = harness({ hook: http(target.url) });
    const started = performance.now();
    await outputs.drain(5000);
    expect(performance.now() - started).toBeLessThan(100);
  });
});

describe("http requests", () => {
  it("sends the URL's user:password as Basic authorization, not in the URL, with the configured headers", async () => {
    const target = await receiver();
    const url = target.url.replace("http://", "http://us%40er:p%3Ass@");
    const { outputs } = harness({
      hook: http(`${url}/path/in?x=1`, { headers: { "X-Api-Key": "k", "content-type": "text/html" } }),
    });
    outputs.sink("hook")({ a: 1 });
    await target.acceptedAtLeast(1);
    const [request] = target.requests;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/path/in?x=1");
    expect(request?.headers.authorization).toBe(`Basic ${Buffer.from("us@er:p:ss").toString("base64")}`);
    expect(request?.headers["x-api-key"]).toBe("k");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.headers["user-agent"]).toBe("vigie");
    expect(request?.body.toString()).toBe('[{"a":1}]');
  });

  it("lets a configured Authorization header win over the URL's credentials", async () => {
    const target = await receiver();
    const url = target.url.replace("http://", "http://user:password@");
    const { outputs } = harness({ hook: http(url, { headers: { Authorization: "Bearer t" } }) });
    outputs.sink("hook")({ a: 1 });
    await target.acceptedAtLeast(1);
    expect(target.requests[0]?.headers.authorization).toBe("Bearer t");
  });

  it("keeps one connection alive across batches", async () => {
    const target = await receiver();
    const { outputs } = harness({ hook: http(target.url, { "batch-size": 1 }) });
    for (let i = 0; i < 5; i++) {
      outputs.sink("hook")({ n: i });
      await target.acceptedAtLeast(i + 1);
    }
    expect(new Set(target.requests.map((r) => r.remotePort)).size).toBe(1);
  });

  it("ndjson: one event per line, application/x-ndjson", async () => {
    const target = await receiver();
    const { outputs } = harness({ hook: http(target.url, { format: "ndjson" }) });
    outputs.sink("hook")([{ a: 1 }, { b: [2] }]);
    await target.acceptedAtLeast(1);
    expect(target.requests[0]?.headers["content-type"]).toBe("application/x-ndjson");
    expect(target.requests[0]?.body.toString()).toBe('{"a":1}\n{"b":[2]}\n');
  });

  it("slack: one POST per event in order; a refused one is counted and the next goes on; a failed one is retried first", async () => {
    const target = await receiver((request, index) => {
      const text = JSON.parse(request.body.toString()).text;
      if (text === "refused") return { status: 404, body: "no such channel" };
      if (text === "flaky" && index < 3) return { status: 502 };
      return { status: 200 };
    });
    const { outputs, count, reaches } = harness({ chat: http(target.url, { format: "slack" }) });
    outputs.sink("chat")([
      { description: "first" },
      { description: "refused" },
      { description: "flaky" },
      { service: "cpu", state: "critical", host: "web-1" },
    ]);
    await target.acceptedAtLeast(3);
    expect(target.requests.map((r) => JSON.parse(r.body.toString()).text)).toEqual([
      "first",
      "refused",
      "flaky",
      "flaky",
      "cpu is critical on web-1",
    ]);
    expect(target.requests[0]?.headers["content-type"]).toBe("application/json");
    await reaches("chat", "sent", 3);
    expect(await count("chat", "dropped-rejected")).toBe(1);
  });

  it("text: one text/plain POST per event; at max-retry-time the events not yet sent are dropped", async () => {
    const target = await receiver((request) => (request.body.toString() === "b" ? { status: 503 } : { status: 200 }));
    const { outputs, count, reaches } = harness({
      ntfy: http(target.url, { format: "text", "max-retry-time": ms(250) }),
    });
    outputs.sink("ntfy")([{ description: "a" }, { description: "b" }, { description: "c" }]);
    await reaches("ntfy", "dropped-retries-exhausted", 2);
    expect(await count("ntfy", "sent")).toBe(1);
    expect(target.requests[0]?.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(new Set(target.requests.map((r) => r.body.toString()))).toEqual(new Set(["a", "b"]));
    // The next batch is not held back by the dropped one.
    outputs.sink("ntfy")({ description: "d" });
    await reaches("ntfy", "sent", 2);
    expect(target.accepted.map((r) => r.body.toString())).toEqual(["a", "d"]);
  });
});

describe("the other output types through the delivery model", () => {
  it("prometheus-remote-write: snappy protobuf with remote write 1.0's headers; non-samples rejected", async () => {
    const target = await receiver();
    const { outputs, count, reaches } = harness({
      tsdb: {
        type: "prometheus-remote-write",
        url: `${target.url}/api/v1/write`,
        headers: { "X-Scope-OrgID": "tenant", "Content-Type": "text/plain" },
        ...common,
      },
    });
    outputs.sink("tsdb")([
      { service: "cpu", host: "a", metric: 1.5, time: 100 },
      { service: "cpu", host: "a" },
      { service: "cpu", host: "a", metric: 2.5, time: 50 },
    ]);
    await target.acceptedAtLeast(1);
    const [request] = target.requests;
    expect(request?.url).toBe("/api/v1/write");
    expect(request?.headers).toMatchObject({
      "content-encoding": "snappy",
      "content-type": "application/x-protobuf",
      "x-prometheus-remote-write-version": "0.1.0",
      "x-scope-orgid": "tenant",
    });
    const WriteRequest = protobuf
      .loadSync(fileURLToPath(new URL("../../../proto/remote-write.proto", import.meta.url)))
      .lookupType("prometheus.WriteRequest");
    const bytes = uncompressSync(request?.body ?? Buffer.alloc(0));
    if (typeof bytes === "string") throw new Error("snappy gave a string");
    expect(WriteRequest.toObject(WriteRequest.decode(bytes), { longs: Number })).toEqual({
      timeseries: [
        {
          labels: [
            { name: "__name__", value: "cpu" },
            { name: "host", value: "a" },
          ],
          samples: [
            { value: 2.5, timestamp: 50_000 },
            { value: 1.5, timestamp: 100_000 },
          ],
        },
      ],
    });
    await reaches("tsdb", "sent", 2);
    expect(await count("tsdb", "dropped-rejected")).toBe(1);
  });

  it("alertmanager: POST <url>/api/v2/alerts under a path prefix; events without service rejected", async () => {
    const target = await receiver();
    const { outputs, count, reaches } = harness({
      alerts: {
        type: "alertmanager",
        url: `${target.url}/am/`,
        headers: {},
        labels: ["host"],
        "generator-url": "http://vigie.example/streams",
        ...common,
      },
    });
    outputs.sink("alerts")([{ service: "cpu", host: "a", state: "critical", time: 100 }, { host: "b" }]);
    await target.acceptedAtLeast(1);
    expect(target.requests[0]?.url).toBe("/am/api/v2/alerts");
    expect(target.requests[0]?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(target.requests[0]?.body.toString() ?? "")).toEqual([
      {
        labels: { alertname: "cpu", host: "a" },
        annotations: { summary: "cpu is critical on a", state: "critical" },
        startsAt: "1970-01-01T00:01:40.000Z",
        endsAt: "1970-01-01T00:03:40.000Z",
        generatorURL: "http://vigie.example/streams",
      },
    ]);
    await reaches("alerts", "sent", 1);
    expect(await count("alerts", "dropped-rejected")).toBe(1);
  });

  it("alertmanager: a firing event with a negative ttl does not make Alertmanager refuse the batch", async () => {
    // Like Alertmanager's API v2: 400 for the whole request when one alert ends before it starts.
    const target = await receiver((request) => {
      const alerts: Array<{ startsAt: string; endsAt: string }> = JSON.parse(request.body.toString());
      const invalid = alerts.some((alert) => Date.parse(alert.endsAt) < Date.parse(alert.startsAt));
      return invalid ? { status: 400, body: '{"message":"start time must be before end time"}' } : { status: 200 };
    });
    const { outputs, count, reaches } = harness({
      alerts: {
        type: "alertmanager",
        url: target.url,
        headers: {},
        labels: ["host"],
        "generator-url": undefined,
        ...common,
      },
    });
    outputs.sink("alerts")([
      { service: "cpu", host: "a", state: "critical", time: 100 },
      { service: "disk", host: "a", state: "warning", time: 100, ttl: -60 },
    ]);
    await reaches("alerts", "sent", 2);
    expect(await count("alerts", "dropped-rejected")).toBe(0);
    const sent: Array<{ startsAt: string; endsAt: string }> = JSON.parse(target.requests[0]?.body.toString() ?? "");
    expect(sent[1]).toMatchObject({ startsAt: "1970-01-01T00:01:40.000Z", endsAt: "1970-01-01T00:01:40.000Z" });
  });

  it("file: appends with O_APPEND per batch (a rotated file is recreated) and retries write errors", async () => {
    const directory = temporaryDirectory();
    const logs = join(directory, "logs");
    mkdirSync(logs);
    const path = join(logs, "events.jsonl");
    const { outputs, metric, reaches } = harness({
      archive: { type: "file", path, "date-suffix": false, ...common, "batch-size": 2 },
    });
    outputs.sink("archive")([{ n: 0 }, { n: 1 }]);
    await reaches("archive", "sent", 2);
    renameSync(path, `${path}.1`);
    outputs.sink("archive")([{ n: 2 }, { n: 3 }]);
    await reaches("archive", "sent", 4);
    expect(readFileSync(`${path}.1`, "utf8")).toBe('{"n":0}\n{"n":1}\n');
    expect(readFileSync(path, "utf8")).toBe('{"n":2}\n{"n":3}\n');

    rmSync(logs, { recursive: true });
    outputs.sink("archive")([{ n: 4 }, { n: 5 }]);
    await until(
      async () => ((await metric('stream_output_retries_total{output="archive"}')) >= 1 ? true : undefined),
      "a retry",
    );
    expect(existsSync(path)).toBe(false);
    mkdirSync(logs);
    await reaches("archive", "sent", 6);
    expect(readFileSync(path, "utf8")).toBe('{"n":4}\n{"n":5}\n');
  });
});
