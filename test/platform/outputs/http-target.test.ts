import { getEventListeners } from "node:events";
import { createServer, type Server } from "node:http";
import { describe, expect, it } from "vitest";
import {
  HttpTarget,
  requestHeaders,
  splitCredentials,
  statusOutcome,
  USER_AGENT,
} from "../../../src/platform/outputs/http-target.js";
import { startReceiver } from "../../support/receiver.js";

describe("splitCredentials", () => {
  it("turns user:password@ into a Basic authorization (RFC 7617) and removes it from the URL", () => {
    const { url, authorization } = splitCredentials("https://us%40er:p%3Ass%20w@example.org:8443/hook?x=1");
    expect(url.href).toBe("https://example.org:8443/hook?x=1");
    expect(authorization).toBe(`Basic ${Buffer.from("us@er:p:ss w").toString("base64")}`);
  });

  it("accepts a user without password, and a malformed escape as written", () => {
    expect(splitCredentials("http://token@127.0.0.1/").authorization).toBe(
      `Basic ${Buffer.from("token:").toString("base64")}`,
    );
    expect(splitCredentials("http://a%zz:b@127.0.0.1/").authorization).toBe(
      `Basic ${Buffer.from("a%zz:b").toString("base64")}`,
    );
  });

  it("leaves a URL without user info alone", () => {
    const { url, authorization } = splitCredentials("http://127.0.0.1:9093");
    expect(url.href).toBe("http://127.0.0.1:9093/");
    expect(authorization).toBeUndefined();
  });
});

describe("requestHeaders", () => {
  it("sends the configured headers, names in lower case; the protocol's win over configured ones of the same name", () => {
    expect(
      requestHeaders(
        { "X-Scope-OrgID": "t1", "Content-Type": "text/html", Title: "Alert" },
        { "content-type": "application/x-protobuf" },
        undefined,
      ),
    ).toEqual({
      "x-scope-orgid": "t1",
      "content-type": "application/x-protobuf",
      title: "Alert",
      "user-agent": USER_AGENT,
    });
  });

  it("adds the URL's authorization unless one is configured, and keeps a configured User-Agent", () => {
    expect(requestHeaders({}, {}, "Basic eDp5")).toEqual({ authorization: "Basic eDp5", "user-agent": "vigie" });
    expect(requestHeaders({ AUTHORIZATION: "Bearer t", "User-Agent": "me" }, {}, "Basic eDp5")).toEqual({
      authorization: "Bearer t",
      "user-agent": "me",
    });
  });
});

describe("statusOutcome", () => {
  const answer = (status: number, text = "", retryAfterMs?: number) => ({ status, text, retryAfterMs });

  it("sends on 2xx, retries 429 and 5xx with Retry-After, refuses other statuses with the answer's start", () => {
    expect(statusOutcome(answer(204))).toEqual({ kind: "sent" });
    expect(statusOutcome(answer(429, "", 3000), "slow down")).toEqual({
      kind: "retry",
      reason: "HTTP 429: slow down",
      retryAfterMs: 3000,
    });
    expect(statusOutcome(answer(502))).toEqual({ kind: "retry", reason: "HTTP 502" });
    expect(statusOutcome(answer(400, "x".repeat(300)), "")).toEqual({
      kind: "rejected",
      reason: "HTTP 400",
      answer: "x".repeat(200),
    });
  });

  it("keeps the service's reason on one line of at most 200 characters", () => {
    const outcome = statusOutcome(answer(403), `denied\r\n\tnow ${"y".repeat(300)}`);
    expect(outcome.kind === "rejected" && outcome.reason).toBe(`HTTP 403: denied now ${"y".repeat(189)}…`);
  });
});

describe("HttpTarget.send", () => {
  it("uses the configured method, adds per-request headers, and hands the answer to the reader", async () => {
    const receiver = await startReceiver(() => ({ status: 409, headers: { "retry-after": "7" }, body: "taken" }));
    const seen: unknown[] = [];
    const target = new HttpTarget({
      url: `${receiver.url}/x`,
      headers: { "X-One": "1" },
      protocolHeaders: {},
      timeoutMs: 2000,
      method: "PUT",
      readAnswer: (read) => {
        seen.push(read);
        return statusOutcome(read, read.text);
      },
    });
    try {
      const outcome = await target.send("body", new AbortController().signal, { "x-two": "2" });
      expect(outcome).toEqual({ kind: "rejected", reason: "HTTP 409: taken", answer: "taken" });
      expect(seen).toEqual([{ status: 409, text: "taken", retryAfterMs: 7000 }]);
      expect(receiver.requests[0]).toMatchObject({ method: "PUT", url: "/x", headers: { "x-one": "1", "x-two": "2" } });
    } finally {
      await target.close(true);
      await receiver.close();
    }
  });

  it("keeps the configured URL's query beside the query of the receiver's path", async () => {
    const server = await listening((request, response) => {
      request.resume();
      request.on("end", () => response.end(request.url));
    });
    const urls: string[] = [];
    const readAnswer = (answer: { text: string }) => {
      urls.push(answer.text);
      return { kind: "sent" as const };
    };
    const own = (path: string) => `${path.replace(/\/+$/, "")}/_bulk?filter_path=errors`;
    const targets = [
      new HttpTarget({
        url: `${server.url}es?pipeline=p`,
        path: own,
        headers: {},
        protocolHeaders: {},
        timeoutMs: 2000,
      }),
      new HttpTarget({ url: `${server.url}hook?x=1&y=2`, headers: {}, protocolHeaders: {}, timeoutMs: 2000 }),
      new HttpTarget({ url: `${server.url}es`, path: own, headers: {}, protocolHeaders: {}, timeoutMs: 2000 }),
    ];
    try {
      for (const target of targets) await target.post("[]", new AbortController().signal, { readAnswer });
      expect(urls).toEqual([
        "/es/_bulk?filter_path=errors&pipeline=p",
        "/hook?x=1&y=2",
        "/es/_bulk?filter_path=errors",
      ]);
    } finally {
      for (const target of targets) await target.close(true);
      await server.close();
    }
  });

  it("sends nothing once closed, even when closed before its first request", async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    const target = new HttpTarget({ url: receiver.url, headers: {}, protocolHeaders: {}, timeoutMs: 2000 });
    try {
      await target.close(false);
      await expect(target.post("body", new AbortController().signal)).rejects.toThrow(/closed/);
      expect(receiver.requests).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it("reads only what the outcome needs, whatever the answer's size, and leaves no listener on the signal", async () => {
    const long = "x".repeat(300_000);
    const answers = [
      { status: 204, body: "" },
      { status: 200, body: long },
      { status: 503, body: long, retryAfter: "3" },
      { status: 400, body: `${"é".repeat(150)}${long}` },
      { status: 201, body: "ok" },
    ];
    let index = 0;
    const server = await listening((request, response) => {
      request.resume();
      request.on("end", () => {
        const answer = answers[index++ % answers.length] ?? { status: 500, body: "" };
        response.writeHead(answer.status, answer.retryAfter === undefined ? {} : { "retry-after": answer.retryAfter });
        response.end(answer.body);
      });
    });
    const target = new HttpTarget({ url: server.url, headers: {}, protocolHeaders: {}, timeoutMs: 2000 });
    const controller = new AbortController();
    try {
      const outcomes = [];
      for (let i = 0; i < answers.length; i++) outcomes.push(await target.post("[]", controller.signal));
      expect(outcomes).toEqual([
        { kind: "sent" },
        { kind: "sent" },
        { kind: "retry", reason: "HTTP 503", retryAfterMs: 3000 },
        // 200 bytes: 100 two-byte characters.
        { kind: "rejected", reason: "HTTP 400", answer: "é".repeat(100) },
        { kind: "sent" },
      ]);
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    } finally {
      await target.close(true);
      await server.close();
    }
  });

  it("rejects when the signal aborts while the receiver has not answered", async () => {
    const server = await listening(() => {});
    const target = new HttpTarget({ url: server.url, headers: {}, protocolHeaders: {}, timeoutMs: 10_000 });
    const controller = new AbortController();
    try {
      const sending = target.post("[]", controller.signal);
      setTimeout(() => controller.abort(), 50);
      await expect(sending).rejects.toMatchObject({ name: "AbortError" });
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
      await expect(target.post("[]", controller.signal)).rejects.toMatchObject({ name: "AbortError" });
    } finally {
      await target.close(true);
      await server.close();
    }
  });
});

/** An HTTP server on 127.0.0.1 answering with `handler`; `close` ends its connections too. */
async function listening(
  handler: Parameters<typeof createServer>[1],
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
