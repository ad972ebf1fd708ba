import { describe, expect, it } from "vitest";
import {
  bulkDocument,
  bulkPath,
  encodeBulkBatch,
  readBulkAnswer,
} from "../../../src/platform/outputs/elasticsearch-output.js";
import { definitionOf, outputsHarness, receiver } from "../../support/outputs-harness.js";

const elasticsearch = (url: string, overrides: Record<string, unknown> = {}) =>
  definitionOf({ type: "elasticsearch", url, ...overrides });

const settings = { index: "logs-{date}", action: "index" } as const;

/** The documents of a bulk body: every other line, parsed. */
const documents = (body: Buffer) =>
  body
    .toString()
    .split("\n")
    .filter((_line, index) => index % 2 === 1)
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line));

const bulkAnswer = (statuses: number[]) =>
  JSON.stringify({
    errors: statuses.some((status) => status >= 300),
    items: statuses.map((status) => ({
      index:
        status >= 300
          ? { status, error: { type: status === 429 ? "es_rejected_execution_exception" : "mapper_parsing_exception" } }
          : { status },
    })),
  });

describe("bulkDocument", () => {
  it("writes the action line with the index of the event's UTC date, and the event with an @timestamp", () => {
    expect(bulkDocument({ service: "cpu", metric: 0.5, time: 1_700_000_000.25 }, settings, 0)).toBe(
      '{"index":{"_index":"logs-2023.11.14"}}\n{"@timestamp":"2023-11-14T22:13:20.250Z","service":"cpu","metric":0.5,"time":1700000000.25}\n',
    );
    // 23:59:59.9 UTC stays on its day; an event's own @timestamp is kept; create for data streams.
    expect(
      bulkDocument({ "@timestamp": "x", time: 1_700_006_399.9 }, { index: "a-{date}-{date}", action: "create" }, 0),
    ).toBe('{"create":{"_index":"a-2023.11.14-2023.11.14"}}\n{"@timestamp":"x","time":1700006399.9}\n');
  });

  it("takes now for an event without time, and gives nothing for a time that is no date", () => {
    expect(bulkDocument({}, settings, 86_400)).toBe(
      '{"index":{"_index":"logs-1970.01.02"}}\n{"@timestamp":"1970-01-02T00:00:00.000Z"}\n',
    );
    expect(bulkDocument({ time: 1e300 }, settings, 0)).toBeUndefined();
    expect(bulkDocument({ time: 300_000_000_000 }, settings, 0)).toBeUndefined(); // year 11 476
    expect(encodeBulkBatch([{ time: 1e300 }, { time: 1 }], settings, 0)).toMatchObject({ rejected: 1 });
  });

  it("escapes what JSON escapes in documents: one document is one line", () => {
    const line = bulkDocument({ description: 'a "quoted"\nline\u2028' }, { index: "x", action: "index" }, 0);
    expect(line?.split("\n")).toHaveLength(3);
  });
});

describe("readBulkAnswer", () => {
  const request = () => ({ documents: ["a\n", "b\n", "c\n", "d\n"] });
  const answer = (text: string, status = 200) => ({ status, text, retryAfterMs: undefined });

  it("is sent on a 2xx without errors", () => {
    expect(readBulkAnswer(request(), answer('{"errors":false,"items":[]}'))).toEqual({ kind: "sent" });
  });

  it("keeps only the 429 and 5xx documents for another try, counting the others", () => {
    const bulk = request();
    expect(readBulkAnswer(bulk, answer(bulkAnswer([201, 429, 400, 503])))).toEqual({
      kind: "retry",
      reason: "HTTP 200: 3 of 4 documents failed (es_rejected_execution_exception)",
      settled: { sent: 1, rejected: 1 },
    });
    expect(bulk.documents).toEqual(["b\n", "d\n"]);
  });

  it("counts refused documents when none is worth another try", () => {
    expect(readBulkAnswer(request(), answer(bulkAnswer([201, 400, 201, 409])))).toEqual({
      kind: "sent",
      rejected: 2,
      reason: "HTTP 200: 2 of 4 documents failed (mapper_parsing_exception)",
    });
  });

  it("refuses the unit when the answer does not say which documents failed, and reads other statuses as usual", () => {
    expect(readBulkAnswer(request(), answer('{"errors":true,"items":[{"index":{"status":201}}]}'))).toMatchObject({
      kind: "rejected",
    });
    expect(readBulkAnswer(request(), answer("", 502))).toEqual({ kind: "retry", reason: "HTTP 502" });
    expect(readBulkAnswer(request(), answer("no", 401))).toMatchObject({ kind: "rejected", reason: "HTTP 401" });
  });

  it("filters the answer to what is read, under the base URL's path", () => {
    expect(bulkPath("/es/")).toBe("/es/_bulk?filter_path=errors,items.*.status,items.*.error.type");
  });
});

describe("the elasticsearch output through the delivery model", () => {
  it("POSTs NDJSON to <url>/_bulk, resends only the documents that met a 429 or 5xx, counts the refused ones", async () => {
    const target = await receiver((request, index) => {
      const count = documents(request.body).length;
      if (index === 0) return { status: 503 };
      if (index === 1) return { status: 200, body: bulkAnswer([201, 429, 400, 201, 500]) };
      return { status: 200, body: bulkAnswer(Array.from({ length: count }, () => 201)) };
    });
    const { outputs, reaches, count, metric } = outputsHarness({
      search: elasticsearch(target.url, { "api-key": "a2V5OnNlY3JldA==" }),
    });
    outputs.sink("search")([0, 1, 2, 3, 4].map((n) => ({ service: "s", n, time: 1_700_000_000 + n })));
    await reaches("search", "sent", 4);
    expect(await count("search", "dropped-rejected")).toBe(1);
    expect(await metric('stream_output_retries_total{output="search"}')).toBe(2);
    expect(target.requests).toHaveLength(3);
    const [first, second, third] = target.requests;
    expect(first?.url).toBe("/_bulk?filter_path=errors,items.*.status,items.*.error.type");
    expect(first?.headers).toMatchObject({
      "content-type": "application/x-ndjson",
      authorization: "ApiKey a2V5OnNlY3JldA==",
    });
    expect(first?.body.toString().split("\n")[0]).toBe('{"index":{"_index":"vigie-2023.11.14"}}');
    expect(first?.body.toString().endsWith("\n")).toBe(true);
    expect(documents(second?.body ?? Buffer.alloc(0)).map((document) => document.n)).toEqual([0, 1, 2, 3, 4]);
    expect(documents(third?.body ?? Buffer.alloc(0)).map((document) => document.n)).toEqual([1, 4]);
  });

  it("drops what is still failing at max-retry-time as retries-exhausted, not the documents already settled", async () => {
    const target = await receiver((_request, index) => ({
      status: 200,
      body: bulkAnswer(index === 0 ? [201, 429] : [429]),
    }));
    const { outputs, reaches, count } = outputsHarness({
      search: elasticsearch(target.url, { "max-retry-time": "300ms" }),
    });
    outputs.sink("search")([{ n: 0 }, { n: 1 }]);
    // The first document went in at the first try: it is counted sent, once, and never sent again.
    await reaches("search", "dropped-retries-exhausted", 1);
    expect(await count("search", "sent")).toBe(1);
    expect(target.requests.length).toBeGreaterThan(1);
    for (const request of target.requests.slice(1))
      expect(documents(request.body)).toEqual([{ n: 1, "@timestamp": expect.any(String) }]);
  });
});
