import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import type { DeliveryOutcome, Notification } from "../../../src/platform/notifications.js";
import type { OutputDefinition } from "../../../src/platform/outputs/config.js";
import { outputMetrics } from "../../../src/platform/outputs/metrics.js";
import { groupEvent, notificationEvent, OutputNotifier } from "../../../src/platform/outputs/notifier.js";
import { Outputs } from "../../../src/platform/outputs/outputs.js";
import { type Receiver, type Responder, startReceiver } from "../../support/receiver.js";
import { until } from "../../support/until.js";

const ms = (milliseconds: number) => ({ text: `${milliseconds}ms`, milliseconds });

function http(url: string, overrides: Partial<OutputDefinition> = {}): OutputDefinition {
  return {
    type: "http",
    url,
    headers: {},
    format: "ndjson",
    "queue-size": 100,
    "batch-size": 1,
    "flush-interval": ms(1),
    timeout: ms(2000),
    "max-retry-time": ms(3000),
    ...overrides,
  } as OutputDefinition;
}

function notification(name: string, overrides: Partial<Notification> = {}): Notification {
  return {
    name,
    state: "critical",
    status: "triggered",
    message: "connection refused",
    since: "2026-11-26T10:00:00.000Z",
    duration: 0,
    url: "http://vigie.example/status",
    labels: { team: "web" },
    key: `${name}/chat`,
    ...overrides,
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(responder?: Responder): Promise<Receiver> {
  const started = await startReceiver(responder);
  cleanups.push(() => started.close());
  return started;
}

function harness(definitions: Record<string, OutputDefinition>, threshold: number, waitMs: number) {
  let notifier: OutputNotifier | undefined;
  const outputs: Outputs = new Outputs(definitions, {
    metrics: outputMetrics(new Registry(), () => outputs.queued()),
    logger: pino({ level: "silent" }),
    settled: (batch, start, end, outcome, reason) => notifier?.settled(batch, start, end, outcome, reason),
    beforeDrain: () => notifier?.flush(),
  });
  notifier = new OutputNotifier(outputs, { threshold, waitMs }, (output) => output !== "pager");
  const built = notifier;
  cleanups.push(async () => {
    await outputs.drain(0);
    built.close();
  });
  return { outputs, notifier: built };
}

/** Records each notification's outcome. */
function outcomes() {
  const seen: Array<{ outcome: DeliveryOutcome; reason: string | undefined }> = [];
  return { seen, listener: (outcome: DeliveryOutcome, reason?: string) => seen.push({ outcome, reason }) };
}

describe("the notifier", () => {
  it("sends a notification as an event with the template fields, and reports it delivered", async () => {
    const target = await receiver();
    const { notifier } = harness({ chat: http(target.url) }, 5, 0);
    const { seen, listener } = outcomes();
    notifier.notify("chat", notification("website"), listener);
    await until(async () => (seen.length === 1 ? true : undefined), "one outcome");
    expect(seen).toEqual([{ outcome: "delivered", reason: undefined }]);
    const sent = JSON.parse(target.accepted[0]?.body.toString() ?? "");
    expect(sent).toMatchObject({
      service: "website",
      state: "critical",
      status: "triggered",
      description: "connection refused",
      since: "2026-11-26T10:00:00.000Z",
      duration: "0",
      url: "http://vigie.example/status",
      labels: { team: "web" },
      key: "website/chat",
    });
    expect(typeof sent.time).toBe("number");
  });

  it("reports an undeclared output as dropped at once", () => {
    const { notifier } = harness({}, 5, 0);
    const { seen, listener } = outcomes();
    expect(notifier.has("nope")).toBe(false);
    notifier.notify("nope", notification("website"), listener);
    expect(seen).toEqual([{ outcome: "dropped", reason: "output nope is not declared" }]);
  });

  it("reports a refusal as failed, with the reason, without retrying", async () => {
    const target = await receiver(() => ({ status: 400, body: "invalid payload" }));
    const { notifier } = harness({ chat: http(target.url) }, 5, 0);
    const { seen, listener } = outcomes();
    notifier.notify("chat", notification("website"), listener);
    await until(async () => (seen.length === 1 ? true : undefined), "one outcome");
    expect(seen[0]?.outcome).toBe("failed");
    expect(seen[0]?.reason).toContain("400");
    expect(target.requests).toHaveLength(1);
  });

  it("retries a 503 and reports the notification delivered once", async () => {
    const target = await receiver((_request, index) => ({ status: index === 0 ? 503 : 200 }));
    const { notifier } = harness({ chat: http(target.url) }, 5, 0);
    const { seen, listener } = outcomes();
    notifier.notify("chat", notification("website"), listener);
    await until(async () => (seen.length === 1 ? true : undefined), "one outcome");
    expect(seen).toEqual([{ outcome: "delivered", reason: undefined }]);
    expect(target.requests).toHaveLength(2);
    expect(target.accepted).toHaveLength(1);
  });

  it("groups more than group-threshold notifications to one output into one message", async () => {
    const target = await receiver();
    const { notifier } = harness({ chat: http(target.url) }, 5, 100);
    const { seen, listener } = outcomes();
    for (let index = 0; index < 50; index++) notifier.notify("chat", notification(`site-${index}`), listener);
    await until(async () => (seen.length === 50 ? true : undefined), "50 outcomes");
    expect(seen.every((entry) => entry.outcome === "delivered")).toBe(true);
    expect(target.accepted).toHaveLength(1);
    const sent = JSON.parse(target.accepted[0]?.body.toString() ?? "");
    expect(sent.count).toBe(50);
    expect(sent.alerts).toHaveLength(50);
    expect(sent.alerts[49].service).toBe("site-49");
  });

  it("sends each alone when no more than group-threshold are pending, and never groups an ungrouped type", async () => {
    const chat = await receiver();
    const pager = await receiver();
    const { notifier } = harness({ chat: http(chat.url), pager: http(pager.url) }, 5, 50);
    for (let index = 0; index < 5; index++) notifier.notify("chat", notification(`site-${index}`));
    for (let index = 0; index < 10; index++) notifier.notify("pager", notification(`site-${index}`));
    await chat.acceptedAtLeast(5);
    await pager.acceptedAtLeast(10);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(chat.accepted).toHaveLength(5);
    expect(pager.accepted).toHaveLength(10);
  });

  it("sends pending groups when the outputs drain, and reports what was never sent as dropped", async () => {
    const target = await receiver(() => "hang");
    const { outputs, notifier } = harness({ chat: http(target.url) }, 5, 60_000);
    const { seen, listener } = outcomes();
    notifier.notify("chat", notification("website"), listener);
    await outputs.drain(200);
    expect(target.requests).toHaveLength(1);
    notifier.close();
    expect(seen).toEqual([{ outcome: "dropped", reason: "the server stopped before it was delivered" }]);
  });
});

describe("notification events", () => {
  it("carry the fields a stream event has, and a group lists its alerts", () => {
    const event = notificationEvent(notification("website", { status: "resolved", state: "ok", duration: 90 }), 1000);
    expect(event).toMatchObject({ service: "website", state: "ok", status: "resolved", duration: "90", time: 1 });
    const group = groupEvent([event, notificationEvent(notification("shop"), 2000)], 3000);
    expect(group).toMatchObject({ count: 2, state: "critical", status: "triggered", service: "2 alerts" });
  });
});
