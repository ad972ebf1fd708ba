import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { outputsSection } from "../../../../src/platform/outputs/config.js";
import { slackMessage } from "../../../../src/platform/outputs/notifiers/slack.js";
import { DEFAULT_TEXT, DEFAULT_TITLE } from "../../../../src/platform/outputs/notifiers/template.js";
import {
  groupOf,
  type NotifierHarness,
  notificationOf,
  notifierHarness,
  streamingServer,
} from "../../../support/notifiers.js";
import { type Receiver, type Responder, startReceiver } from "../../../support/receiver.js";
import { temporaryDirectory } from "../../../support/temporary.js";

const SECRET_PATH = "/services/T0001/B0001/s3cr3tW3bh00kT0k3n";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(responder?: Responder): Promise<Receiver> {
  const started = await startReceiver(responder);
  cleanups.push(() => started.close());
  return started;
}

function harness(definition: Record<string, unknown>, publicUrl = ""): NotifierHarness {
  const started = notifierHarness({ chat: { type: "slack", ...definition } }, publicUrl);
  cleanups.push(() => started.close());
  return started;
}

const json = (request: { body: Buffer } | undefined) => JSON.parse(request?.body.toString("utf8") ?? "null");
const templates = { text: DEFAULT_TEXT, title: DEFAULT_TITLE };
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

describe("slack output", () => {
  it("POSTs the incoming-webhook JSON to the webhook URL: text, a header, the text as a section, the fields", async () => {
    const hook = await receiver(() => ({ status: 200, body: "ok" }));
    const { outputs, settled } = harness({ "webhook-url": `${hook.url}${SECRET_PATH}` });
    expect(outputs.offer("chat", notificationOf())).toBe(true);
    await hook.acceptedAtLeast(1);
    const [request] = hook.requests;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe(SECRET_PATH);
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.headers["user-agent"]).toBe("vigie");
    const text = 'api &lt;prod&gt; is critical (triggered): HTTP 503 &amp; "slow"\nhttps://status.example.org/status';
    expect(json(request)).toEqual({
      text,
      blocks: [
        { type: "header", text: { type: "plain_text", text: "api <prod> is critical (triggered)" } },
        { type: "section", text: { type: "mrkdwn", text } },
        {
          type: "section",
          fields: [
            { type: "mrkdwn", text: "*State*\ncritical" },
            { type: "mrkdwn", text: "*Status*\ntriggered" },
            { type: "mrkdwn", text: "*Since*\n2024-05-01T10:00:00.000Z" },
            { type: "mrkdwn", text: "*Duration*\n0 s" },
            { type: "mrkdwn", text: "*team*\nweb" },
          ],
        },
      ],
    });
    expect(await settled("chat", "sent", 1)).toBe(1);
  });

  it("does not retry a refusal and logs Slack's reason, never the webhook URL", async () => {
    const hook = await receiver(() => ({ status: 404, body: "no_service" }));
    const { outputs, settled, logs, rawLogs } = harness({ "webhook-url": `${hook.url}${SECRET_PATH}` });
    outputs.offer("chat", notificationOf());
    expect(await settled("chat", "dropped-rejected", 1)).toBe(1);
    await sleep(300);
    expect(hook.requests).toHaveLength(1);
    const warning = logs.find((line) => line.level === 40);
    expect(warning).toMatchObject({ output: "chat", reason: "HTTP 404: no_service", answer: "no_service" });
    expect(rawLogs.join("")).not.toContain("s3cr3t");
  });

  it("retries a 503 and delivers the message once", async () => {
    const hook = await receiver((_, index) => (index === 0 ? { status: 503, body: "rollup_error" } : { status: 200 }));
    const { outputs, settled, logs } = harness({ "webhook-url": `${hook.url}${SECRET_PATH}` });
    outputs.offer("chat", notificationOf());
    await hook.acceptedAtLeast(1);
    expect(await settled("chat", "sent", 1)).toBe(1);
    await sleep(200);
    expect(hook.requests).toHaveLength(2);
    expect(hook.accepted).toHaveLength(1);
    expect(json(hook.requests[0])).toEqual(json(hook.requests[1]));
    expect(logs.some((line) => line.reason === "HTTP 503: rollup_error")).toBe(true);
  });

  it("renders a group: the count, every alert, and the grouped fields", () => {
    const message = slackMessage(
      groupOf([{ name: "db" }, { name: "web", state: "ok", status: "resolved" }]),
      templates,
      "",
    );
    expect(message.text).toBe(
      '2 alerts:\n- db is critical (triggered): HTTP 503 &amp; "slow"\n- web is ok (resolved): HTTP 503 &amp; "slow"\n\nhttps://status.example.org/status',
    );
    expect(message.blocks[0]).toEqual({
      type: "header",
      text: { type: "plain_text", text: "2 alerts: db triggered; web resolved;" },
    });
    expect(message.blocks[2]).toEqual({
      type: "section",
      fields: [
        { type: "mrkdwn", text: "*Alerts*\n2" },
        { type: "mrkdwn", text: "*State*\ncritical" },
        { type: "mrkdwn", text: "*team*\nweb" },
      ],
    });
  });

  it("renders the documented variables of a custom template, and a plain stream event", () => {
    const custom = {
      text: "{{name}}|{{state}}|{{status}}|{{message}}|{{since}}|{{duration}}|{{url}}|{{labels.team}}|{{key}}",
      title: "{{#critical}}DOWN{{/critical}}{{^critical}}UP{{/critical}} {{name}}",
    };
    const message = slackMessage(notificationOf({ duration: 90 }), custom, "");
    expect(message.text).toBe(
      'api &lt;prod&gt;|critical|triggered|HTTP 503 &amp; "slow"|2024-05-01T10:00:00.000Z|90|https://status.example.org/status|web|api/pager',
    );
    expect(message.blocks[0]).toEqual({ type: "header", text: { type: "plain_text", text: "DOWN api <prod>" } });
    const stream = slackMessage(
      { host: "web-1", service: "cpu", state: "ok", description: "load 0.2", time: 1714557600 },
      custom,
      "https://vigie.example.org",
    );
    expect(stream.text).toBe(
      "cpu|ok|resolved|load 0.2|2024-05-01T10:00:00.000Z|0|https://vigie.example.org||web-1/cpu",
    );
    expect(stream.blocks[0]).toEqual({ type: "header", text: { type: "plain_text", text: "UP cpu" } });
  });

  it("cuts parts to Slack's limits", () => {
    const long = slackMessage(notificationOf({ message: "x".repeat(5000), name: "n".repeat(200) }), templates, "");
    const [header, section] = long.blocks;
    expect(header?.type === "header" && header.text.text.length).toBe(150);
    expect(section?.type === "section" && "text" in section && section.text.text.length).toBe(3000);
    expect(long.text.length).toBeGreaterThan(5000);
  });

  it("takes the webhook URL from an environment variable or a file", async () => {
    const hook = await receiver();
    vi.stubEnv("VIGIE_TEST_SLACK_URL", `${hook.url}/from-env`);
    const file = join(temporaryDirectory(), "slack-url");
    writeFileSync(file, `${hook.url}/from-file\n`);
    const fromEnv = harness({ "webhook-url-env": "VIGIE_TEST_SLACK_URL" });
    const fromFile = harness({ "webhook-url-file": file });
    fromEnv.outputs.offer("chat", notificationOf());
    await hook.acceptedAtLeast(1);
    fromFile.outputs.offer("chat", notificationOf());
    await hook.acceptedAtLeast(2);
    expect(hook.requests.map((request) => request.url)).toEqual(["/from-env", "/from-file"]);
  });

  it("refuses a broken template or a missing URL, naming the key, never echoing the URL", () => {
    const parse = (definition: Record<string, unknown>) => () =>
      outputsSection({ chat: { type: "slack", ...definition } }, "outputs");
    expect(parse({ "webhook-url": "https://hooks.slack.com/x", template: "{{#alerts}}{{name}}" })).toThrow(
      /^outputs\.chat\.template: is not a valid template: Unclosed section "alerts"/,
    );
    expect(parse({ "webhook-url": "https://hooks.slack.com/x", "title-template": "{{name" })).toThrow(
      /^outputs\.chat\.title-template: is not a valid template/,
    );
    expect(parse({})).toThrow("outputs.chat.webhook-url: is required");
    expect(parse({ "webhook-url": "ftp://s3cr3t@example.org" })).toThrow(
      /^outputs\.chat\.webhook-url: must be an http or https URL$/,
    );
    expect(parse({ "webhook-url": "https://a.example", "webhook-url-env": "X" })).toThrow(
      "outputs.chat.webhook-url: takes one of webhook-url, webhook-url-env and webhook-url-file",
    );
    expect(
      outputsSection({ chat: { type: "slack", "webhook-url": "https://a.example" } }, "outputs").chat,
    ).toMatchObject({ type: "slack", "batch-size": 1 });
  });

  it("delivers what a stream sends to it through output!, on a real server", async () => {
    const hook = await receiver();
    const { server, push } = await streamingServer(
      { chat: { type: "slack", "webhook-url": `${hook.url}${SECRET_PATH}` } },
      "chat",
    );
    cleanups.push(() => server.close());
    expect(await push([{ host: "web-1", service: "cpu", state: "critical", description: "load 9" }])).toBe(200);
    await hook.acceptedAtLeast(1);
    const body = json(hook.requests[0]);
    expect(hook.requests[0]?.url).toBe(SECRET_PATH);
    expect(body.text).toMatch(/^cpu is critical \(triggered\): load 9/);
    expect(body.blocks[0]).toEqual({
      type: "header",
      text: { type: "plain_text", text: "cpu is critical (triggered)" },
    });
  });
});
