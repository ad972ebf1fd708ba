import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  dedupKey,
  PAGERDUTY_API_URL,
  pagerdutyEvent,
  severityOf,
} from "../../../../src/platform/outputs/notifiers/pagerduty.js";
import { type Receiver, type Responder, startReceiver } from "../../../support/receiver.js";
import { temporaryDirectory } from "../../../support/temporary.js";
import { afterTest, definitionOf, FAST, notification, notifierOutputs, serverWithOutput } from "./outputs-harness.js";

const KEY = "R0UT1NGKEY0123456789abcdefABCDEF";

async function receiver(responder?: Responder): Promise<Receiver> {
  const started = await startReceiver(responder);
  afterTest(() => started.close());
  return started;
}

function pagerduty(apiUrl: string, extra: Record<string, unknown> = {}) {
  return { type: "pagerduty", "routing-key": KEY, "api-url": apiUrl, ...FAST, ...extra };
}

const bodyOf = (request: { body: Buffer }) => JSON.parse(request.body.toString("utf8"));

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("pagerduty configuration", () => {
  it("defaults: PagerDuty's API, one event per batch, the default templates", () => {
    const definition = definitionOf({ type: "pagerduty", "routing-key": KEY });
    expect(definition).toMatchObject({ "api-url": PAGERDUTY_API_URL, "batch-size": 1 });
  });

  it("refuses a broken template naming its key, and never echoes the routing key", () => {
    expect(() => definitionOf({ type: "pagerduty", "routing-key": KEY, "title-template": "{{#a}}x" })).toThrow(
      /^outputs\.probe\.title-template: is not a valid template: /,
    );
    let message = "";
    try {
      definitionOf({ type: "pagerduty", "routing-key": `${KEY} space` });
    } catch (error) {
      message = String(error);
    }
    expect(message).toContain("outputs.probe.routing-key: must be a key without spaces or line breaks");
    expect(message).not.toContain(KEY);
    expect(() => definitionOf({ type: "pagerduty" })).toThrow("outputs.probe.routing-key: is required");
  });

  it("reads routing-key from routing-key-env or routing-key-file, one source at most", () => {
    vi.stubEnv("VIGIE_TEST_PD_KEY", KEY);
    expect(definitionOf({ type: "pagerduty", "routing-key-env": "VIGIE_TEST_PD_KEY" })).toMatchObject({
      "routing-key": KEY,
    });
    const file = join(temporaryDirectory(), "pd-key");
    writeFileSync(file, `${KEY}\n`);
    expect(definitionOf({ type: "pagerduty", "routing-key-file": file })).toMatchObject({ "routing-key": KEY });
    expect(() => definitionOf({ type: "pagerduty", "routing-key": KEY, "routing-key-file": file })).toThrow(
      "outputs.probe.routing-key: takes one of routing-key, routing-key-env and routing-key-file",
    );
    expect(() => definitionOf({ type: "pagerduty", "routing-key-env": "VIGIE_TEST_UNSET_VARIABLE" })).toThrow(
      "outputs.probe.routing-key-env: names the environment variable VIGIE_TEST_UNSET_VARIABLE, which is not set",
    );
  });
});

describe("pagerduty events", () => {
  const definition = () => {
    const parsed = definitionOf({ type: "pagerduty", "routing-key": KEY });
    if (parsed.type !== "pagerduty") throw new Error("not pagerduty");
    return parsed;
  };

  it("a trigger: summary from title-template, severity from the state, the alert's key as dedup_key", () => {
    expect(JSON.parse(pagerdutyEvent(notification("triggered"), definition(), ""))).toEqual({
      routing_key: KEY,
      dedup_key: "api/pager",
      event_action: "trigger",
      payload: {
        summary: "api <prod> is critical (triggered)",
        source: "api <prod>",
        severity: "critical",
        timestamp: "2023-11-14T22:13:20.000Z",
        custom_details: {
          status: "triggered",
          state: "critical",
          message: 'HTTP 503 & "slow"',
          since: "2023-11-14T22:13:20.000Z",
          duration: "0",
          labels: { team: "web" },
          text: 'api <prod> is critical (triggered): HTTP 503 & "slow"\nhttps://vigie.example.org/status',
        },
      },
      client: "Vigie",
      client_url: "https://vigie.example.org/status",
    });
  });

  it("a reminder is a trigger again with the same dedup_key; a resolve is a resolve", () => {
    const reminder = JSON.parse(pagerdutyEvent(notification("reminder"), definition(), ""));
    expect(reminder).toMatchObject({ event_action: "trigger", dedup_key: "api/pager" });
    expect(JSON.parse(pagerdutyEvent(notification("resolved"), definition(), ""))).toEqual({
      routing_key: KEY,
      dedup_key: "api/pager",
      event_action: "resolve",
    });
  });

  it("a stream event: host as source, host/service as dedup_key, the public URL as the link", () => {
    const event = { host: "web-1", service: "cpu", state: "warning", description: "load 9", time: 1_700_000_000 };
    expect(JSON.parse(pagerdutyEvent(event, definition(), "https://vigie.example.org/"))).toMatchObject({
      dedup_key: "web-1/cpu",
      event_action: "trigger",
      payload: { summary: "cpu is warning (triggered)", source: "web-1", severity: "warning" },
      client_url: "https://vigie.example.org/",
    });
    const ok = JSON.parse(pagerdutyEvent({ ...event, state: "ok" }, definition(), ""));
    expect(ok).toEqual({ routing_key: KEY, dedup_key: "web-1/cpu", event_action: "resolve" });
  });

  it("maps states to PagerDuty's severities, and keeps long keys stable", () => {
    expect(["ok", "info", "warn", "warning", "error", "critical", "down"].map(severityOf)).toEqual([
      "info",
      "info",
      "warning",
      "warning",
      "error",
      "critical",
      "critical",
    ]);
    const long = "k".repeat(300);
    expect(dedupKey(long)).toBe(dedupKey(long));
    expect(dedupKey(long)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(dedupKey("api/pager")).toBe("api/pager");
  });
});

describe("pagerduty delivery", () => {
  const accepted: Responder = () => ({
    status: 202,
    headers: { "content-type": "application/json" },
    body: '{"status":"success","message":"Event processed","dedup_key":"api/pager"}',
  });

  it("POSTs the event as JSON to <api-url>/v2/enqueue", async () => {
    const target = await receiver(accepted);
    const { outputs, reaches } = notifierOutputs({ pd: pagerduty(`${target.url}/prefix/`) });
    outputs.offer("pd", notification("triggered"));
    await target.acceptedAtLeast(1);
    const [request] = target.requests;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/prefix/v2/enqueue");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(bodyOf(request ?? { body: Buffer.from("{}") })).toMatchObject({
      routing_key: KEY,
      event_action: "trigger",
      dedup_key: "api/pager",
    });
    await reaches("pd", "sent", 1);
  });

  it("does not retry a 400, and logs PagerDuty's reason, never the routing key", async () => {
    const target = await receiver(() => ({
      status: 400,
      headers: { "content-type": "application/json" },
      body: '{"status":"invalid event","message":"Event object is invalid","errors":["Length of \'routing_key\' is incorrect"]}',
    }));
    const { outputs, reaches, logs, rawLogs } = notifierOutputs({ pd: pagerduty(target.url) });
    outputs.offer("pd", notification("triggered"));
    await reaches("pd", "dropped-rejected", 1);
    expect(target.requests).toHaveLength(1);
    const line = logs.find((entry) => entry.level === 40);
    expect(line?.reason).toBe("HTTP 400: Event object is invalid; Length of 'routing_key' is incorrect");
    expect(rawLogs.join("")).not.toContain(KEY);
  });

  it("retries a 503 and delivers once", async () => {
    const target = await receiver((_request, index) => (index === 0 ? { status: 503 } : { status: 202 }));
    const { outputs, reaches, rawLogs } = notifierOutputs({ pd: pagerduty(target.url) });
    outputs.offer("pd", notification("resolved"));
    await reaches("pd", "sent", 1);
    expect(target.requests).toHaveLength(2);
    expect(target.accepted).toHaveLength(1);
    expect(target.requests[0]?.body.equals(target.requests[1]?.body ?? Buffer.alloc(0))).toBe(true);
    expect(rawLogs.join("")).not.toContain(KEY);
  });
});

describe("pagerduty through a server", () => {
  it("a stream's output! reaches PagerDuty: trigger, then resolve with the same dedup_key", async () => {
    const target = await receiver(() => ({ status: 202 }));
    const { push } = await serverWithOutput("pd", { pd: pagerduty(target.url) });
    await push({ host: "web-1", service: "cpu", state: "critical", description: "load 9", time: 1_700_000_000 });
    await target.acceptedAtLeast(1);
    await push({ host: "web-1", service: "cpu", state: "ok", time: 1_700_000_060 });
    await target.acceptedAtLeast(2);
    expect(target.requests.map((request) => request.url)).toEqual(["/v2/enqueue", "/v2/enqueue"]);
    expect(target.requests.map((request) => bodyOf(request))).toEqual([
      expect.objectContaining({
        routing_key: KEY,
        event_action: "trigger",
        dedup_key: "web-1/cpu",
        payload: expect.objectContaining({ summary: "cpu is critical (triggered)", source: "web-1" }),
      }),
      { routing_key: KEY, event_action: "resolve", dedup_key: "web-1/cpu" },
    ]);
  });
});
