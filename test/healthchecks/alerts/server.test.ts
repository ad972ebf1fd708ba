/**
 * Alerts end to end as a user sees them (docs/alerts.md, docs/notifications.md): a real server
 * (`app.inject()`), real http checks against a local target whose answer the test switches, real
 * `slack` outputs posting to local receivers, and what GET /alerts and GET /alerts/history say.
 *
 * - fifty checks failing at once reach Slack as one grouped message naming the fifty;
 * - a parent down holds its twenty children back: only the parent's notification is sent, the
 *   children's are recorded as suppressed with the parent's name;
 * - a maintenance window created through the API sends nothing, and the trigger comes on the first
 *   result after the window;
 * - a receiver answering 503 then 200 gets the notification once (delivered); a 400 is not retried
 *   (failed, with the service's reason);
 * - reminders every `repeat`, and one resolve after `success-threshold` successes.
 */
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import type { VigieServer } from "../../../src/server.js";
import { type Receiver, type Responder, startReceiver } from "../../support/receiver.js";
import { startTestServer } from "../../support/server.js";
import { until } from "../../support/until.js";

/** The interval of every check, in milliseconds. */
const INTERVAL_MS = 200;

/** An HTTP server the checks ask: `GET /<name>` answers 503 while `<name>` is failing, else 200. */
interface Target {
  readonly port: number;
  readonly failing: Set<string>;
  close(): Promise<void>;
}

async function startTarget(): Promise<Target> {
  const failing = new Set<string>();
  const server: Server = createServer((request, response) => {
    const name = (request.url ?? "/").slice(1);
    response.writeHead(failing.has(name) ? 503 : 200, { "content-type": "text/plain" });
    response.end(failing.has(name) ? "down" : "up");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  return {
    port: typeof address === "object" && address !== null ? address.port : 0,
    failing,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An http check of `/<name>` on the target, every {@link INTERVAL_MS}. */
function check(target: Target, name: string, fields: Record<string, unknown> = {}) {
  return {
    name,
    target: "127.0.0.1",
    port: target.port,
    path: `/${name}`,
    "valid-status": [200],
    timeout: `${INTERVAL_MS}ms`,
    interval: `${INTERVAL_MS}ms`,
    ...fields,
  };
}

/** A `slack` output posting to `receiver`, with short timings. */
function slack(receiver: Receiver) {
  return {
    type: "slack",
    "webhook-url": receiver.url,
    "flush-interval": "10ms",
    timeout: "2s",
    "max-retry-time": "5s",
  };
}

/** A Slack message as a receiver got it. */
interface SlackMessage {
  readonly text: string;
  readonly blocks: ReadonlyArray<{ readonly type: string; readonly fields?: ReadonlyArray<{ readonly text: string }> }>;
}

function messagesOf(receiver: Receiver, which: "requests" | "accepted" = "accepted"): SlackMessage[] {
  return receiver[which].map((request) => JSON.parse(request.body.toString()));
}

/** The value of a field of the message's fields block (`State`, `Status`, `Alerts` …). */
function fieldOf(message: SlackMessage, name: string): string | undefined {
  const fields = message.blocks.find((block) => block.fields !== undefined)?.fields ?? [];
  const prefix = `*${name}*\n`;
  return fields.find((item) => item.text.startsWith(prefix))?.text.slice(prefix.length);
}

/** One notification of GET /alerts/history. */
interface HistoryEntry {
  readonly check: string;
  readonly output: string;
  readonly timestamp: string;
  readonly status: string;
  readonly state: string;
  readonly outcome: string;
  readonly reason?: string;
}

async function get<T>(server: VigieServer, url: string): Promise<T> {
  const response = await server.app.inject({ method: "GET", url });
  expect(response.statusCode, `GET ${url}: ${response.body}`).toBe(200);
  return response.json();
}

async function post(server: VigieServer, url: string, payload: Record<string, unknown>): Promise<void> {
  const response = await server.app.inject({ method: "POST", url, payload });
  expect(response.statusCode, `POST ${url}: ${response.body}`).toBe(201);
}

/** The history, oldest first, once it holds `count` notifications. */
async function historyOf(server: VigieServer, count: number): Promise<HistoryEntry[]> {
  const entries = await until(async () => {
    const { notifications } = await get<{ notifications: HistoryEntry[] }>(server, "/alerts/history?limit=1000");
    return notifications.length >= count ? notifications : undefined;
  }, `${count} notifications in the history`);
  return [...entries].reverse();
}

/** Waits until `count` checks have a successful latest result. */
async function allSucceeding(server: VigieServer, count: number): Promise<void> {
  await until(async () => {
    const results = await get<unknown[]>(server, "/result?success=true");
    return results.length === count ? true : undefined;
  }, `${count} successful checks`);
}

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** Records when each request reached a receiver (Date.now()), answering as `responder` says. */
function timed(responder: Responder = () => ({ status: 200 })): { responder: Responder; times: number[] } {
  const times: number[] = [];
  return {
    times,
    responder: (request, index) => {
      times.push(Date.now());
      return responder(request, index);
    },
  };
}

/** What each test started, stopped after it in reverse order. */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The target, the receivers and a server with one `slack` output per receiver (no grouping by default). */
async function setUp(options: {
  receivers: Record<string, Receiver>;
  notifications?: Record<string, unknown>;
}): Promise<{ server: VigieServer; target: Target }> {
  const target = await startTarget();
  cleanups.push(() => target.close());
  for (const receiver of Object.values(options.receivers)) cleanups.push(() => receiver.close());
  const outputs = Object.fromEntries(Object.entries(options.receivers).map(([name, r]) => [name, slack(r)]));
  const healthchecks = { "min-interval": "100ms" };
  const server = await startTestServer({
    modules: [healthchecksModule],
    config: { outputs, notifications: options.notifications ?? { "group-threshold": 0 }, healthchecks },
  });
  cleanups.push(() => server.close());
  return { server, target };
}

describe("alerts end to end: grouping", () => {
  it("sends fifty checks failing at once to Slack as one grouped message naming them", async () => {
    const names = Array.from({ length: 50 }, (_, index) => `site-${String(index).padStart(2, "0")}`);
    const chat = timed();
    const receiver = await startReceiver(chat.responder);
    const { server, target } = await setUp({ receivers: { chat: receiver }, notifications: { "group-wait": "1s" } });
    for (const name of names) {
      await post(server, "/healthcheck/http", check(target, name, { alerts: [{ output: "chat" }] }));
    }
    await allSucceeding(server, names.length);

    for (const name of names) target.failing.add(name);
    await receiver.acceptedAtLeast(1);
    const history = await historyOf(server, names.length);
    // Nothing else comes: no second message, no leftover sent alone.
    await sleep(1500);
    expect(receiver.requests).toHaveLength(1);

    const [message] = messagesOf(receiver);
    expect(message === undefined ? undefined : fieldOf(message, "Alerts")).toBe("50");
    expect(message === undefined ? undefined : fieldOf(message, "State")).toBe("critical");
    expect(message?.text).toMatch(/^50 alerts:\n/);
    for (const name of names) expect(message?.text).toContain(`- ${name} is critical (triggered)`);

    expect(history).toHaveLength(names.length);
    expect(new Set(history.map((entry) => entry.check))).toEqual(new Set(names));
    for (const entry of history) {
      expect(entry).toMatchObject({ output: "chat", status: "triggered", state: "critical", outcome: "delivered" });
    }
    // The grouped message leaves once the thresholds are reached (how soon is bench/alerts.mjs's).
    const first = Math.min(...history.map((entry) => Date.parse(entry.timestamp)));
    expect(chat.times[0]).toBeGreaterThanOrEqual(first);
  });
});

describe("alerts end to end: dependencies", () => {
  it("sends only the parent's notification when a parent down holds its twenty children back", async () => {
    const children = Array.from({ length: 20 }, (_, index) => `app-${String(index).padStart(2, "0")}`);
    const receiver = await startReceiver();
    const { server, target } = await setUp({ receivers: { chat: receiver } });
    await post(
      server,
      "/healthcheck/http",
      check(target, "router", { alerts: [{ output: "chat", "failure-threshold": 1 }] }),
    );
    for (const name of children) {
      const fields = { alerts: [{ output: "chat", "failure-threshold": 3 }], "depends-on": ["router"] };
      await post(server, "/healthcheck/http", check(target, name, fields));
    }
    await allSucceeding(server, children.length + 1);

    // The router and everything behind it go down together.
    for (const name of ["router", ...children]) target.failing.add(name);
    const history = await historyOf(server, children.length + 1);
    await sleep(500);
    expect(receiver.requests).toHaveLength(1);
    const [message] = messagesOf(receiver);
    expect(message?.text).toMatch(/^router is critical \(triggered\)/);
    expect(message === undefined ? undefined : fieldOf(message, "Status")).toBe("triggered");

    expect(history[0]).toMatchObject({ check: "router", status: "triggered", outcome: "delivered" });
    const suppressed = history.filter((entry) => entry.outcome === "suppressed");
    expect(suppressed.map((entry) => entry.check).sort()).toEqual(children);
    for (const entry of suppressed) {
      expect(entry).toMatchObject({ output: "chat", status: "triggered", reason: "router is down (depends-on)" });
    }
    expect(history).toHaveLength(children.length + 1);
    // The children's alerts are triggered, their trigger never sent.
    const alerts = await get<Array<{ check: string; "last-sent": string | null }>>(server, "/alerts");
    expect(alerts.map((alert) => alert.check)).toEqual([...children, "router"]);
    for (const alert of alerts) {
      expect(alert["last-sent"] === null).toBe(alert.check !== "router");
    }
  });
});

describe("alerts end to end: maintenance windows", () => {
  it("sends nothing during a maintenance window, and the trigger on the first result after it", async () => {
    const chat = timed();
    const receiver = await startReceiver(chat.responder);
    const { server, target } = await setUp({ receivers: { chat: receiver } });
    const end = Date.now() + 2000;
    await post(server, "/maintenance", {
      name: "upgrade",
      checks: ["db"],
      start: new Date(Date.now() - 1000).toISOString(),
      end: new Date(end).toISOString(),
    });
    target.failing.add("db");
    await post(
      server,
      "/healthcheck/http",
      check(target, "db", { alerts: [{ output: "chat", "failure-threshold": 2 }] }),
    );

    // The check fails all along the window: results are kept, marked, and nothing is sent.
    await sleep(end - Date.now() - 100);
    expect(receiver.requests).toHaveLength(0);
    expect(await get<unknown[]>(server, "/alerts")).toEqual([]);
    const { results } = await get<{ results: Array<{ success: boolean; maintenance?: boolean }> }>(
      server,
      "/result/db/history",
    );
    expect(results.length).toBeGreaterThanOrEqual(2);
    for (const result of results) expect(result).toMatchObject({ success: false, maintenance: true });

    await receiver.acceptedAtLeast(1, 5000);
    expect(chat.times[0]).toBeGreaterThanOrEqual(end);
    const history = await historyOf(server, 1);
    expect(history).toEqual([expect.objectContaining({ check: "db", status: "triggered", outcome: "delivered" })]);
    expect(Date.parse(history[0]?.timestamp ?? "")).toBeGreaterThanOrEqual(end);
    await sleep(500);
    expect(receiver.requests).toHaveLength(1);
    expect(messagesOf(receiver)[0]?.text).toMatch(/^db is critical \(triggered\)/);
  });
});

describe("alerts end to end: delivery", () => {
  it("delivers once to a receiver answering 503 then 200, and does not retry a 400", async () => {
    const flaky = await startReceiver((_, index) => (index === 0 ? { status: 503 } : { status: 200 }));
    const strict = await startReceiver(() => ({ status: 400, body: "invalid_payload" }));
    const { server, target } = await setUp({ receivers: { flaky, strict } });
    target.failing.add("db");
    const alerts = [
      { output: "flaky", "failure-threshold": 1 },
      { output: "strict", "failure-threshold": 1 },
    ];
    await post(server, "/healthcheck/http", check(target, "db", { alerts }));

    const history = await historyOf(server, 2);
    await sleep(1000);
    expect(flaky.requests).toHaveLength(2);
    expect(flaky.accepted).toHaveLength(1);
    // The retry is the same message.
    expect(flaky.requests[1]?.body.toString()).toBe(flaky.requests[0]?.body.toString());
    expect(strict.requests).toHaveLength(1);
    const byOutput = Object.fromEntries(history.map((entry) => [entry.output, entry]));
    expect(history).toHaveLength(2);
    expect(byOutput.flaky).toEqual({
      check: "db",
      output: "flaky",
      timestamp: expect.any(String),
      status: "triggered",
      state: "critical",
      outcome: "delivered",
    });
    expect(byOutput.strict).toEqual({
      check: "db",
      output: "strict",
      timestamp: expect.any(String),
      status: "triggered",
      state: "critical",
      outcome: "failed",
      reason: "refused: HTTP 400: invalid_payload",
    });
  });
});

describe("alerts end to end: reminders and resolves", () => {
  it("sends reminders every repeat, then one resolve after success-threshold successes", async () => {
    const receiver = await startReceiver();
    const { server, target } = await setUp({ receivers: { chat: receiver } });
    target.failing.add("db");
    const alert = { output: "chat", "failure-threshold": 2, "success-threshold": 2, repeat: "1s" };
    await post(server, "/healthcheck/http", check(target, "db", { alerts: [alert] }));

    // The trigger and two reminders, then the check comes back.
    await receiver.acceptedAtLeast(3, 6000);
    target.failing.delete("db");
    await until(async () => (receiver.accepted.length >= 4 ? true : undefined), "the resolve");
    await sleep(800);
    const statuses = messagesOf(receiver).map((message) => fieldOf(message, "Status"));
    expect(statuses).toEqual(["triggered", "reminder", "reminder", "resolved"]);
    expect(receiver.requests).toHaveLength(4);
    expect(messagesOf(receiver)[3]?.text).toMatch(/^db is ok \(resolved\)/);

    const history = await historyOf(server, 4);
    expect(history.map((entry) => [entry.status, entry.state, entry.outcome])).toEqual([
      ["triggered", "critical", "delivered"],
      ["reminder", "critical", "delivered"],
      ["reminder", "critical", "delivered"],
      ["resolved", "ok", "delivered"],
    ]);
    // Reminders are `repeat` apart on the results' times (a reminder is due on the first result past
    // `repeat`; the upper bound only tells one apart from a skipped one).
    const times = history.map((entry) => Date.parse(entry.timestamp));
    for (const index of [1, 2]) {
      const gap = (times[index] ?? 0) - (times[index - 1] ?? 0);
      expect(gap).toBeGreaterThanOrEqual(1000);
      expect(gap).toBeLessThan(2000);
    }
    // The resolve came on the second success in a row, not the first nor the third.
    const resolvedAt = times[3] ?? 0;
    // The result history is written in batches: wait until it holds a result after the resolve.
    const results = await until(async () => {
      const { results } = await get<{ results: Array<{ success: boolean; timestamp: string }> }>(
        server,
        "/result/db/history?limit=1000",
      );
      return results.some((result) => Date.parse(result.timestamp) > resolvedAt) ? results : undefined;
    }, "the results after the resolve");
    const upTo = results.filter((result) => Date.parse(result.timestamp) <= resolvedAt);
    const lastFailure = upTo.findIndex((result) => !result.success);
    expect(lastFailure).toBe(2);
    expect(await get<unknown[]>(server, "/alerts")).toEqual([]);
  });
});
