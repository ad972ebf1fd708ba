import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { outputsSection } from "../../../../src/platform/outputs/config.js";
import { JSON_ESCAPE, NO_ESCAPE } from "../../../../src/platform/outputs/notifiers/template.js";
import { isJsonContentType, webhookBody } from "../../../../src/platform/outputs/notifiers/webhook.js";
import {
  groupOf,
  type NotifierHarness,
  notificationOf,
  notifierHarness,
  streamingServer,
} from "../../../support/notifiers.js";
import { type Receiver, type Responder, startReceiver } from "../../../support/receiver.js";
import { temporaryDirectory } from "../../../support/temporary.js";

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

function harness(definition: Record<string, unknown>): NotifierHarness {
  const started = notifierHarness({ hook: { type: "webhook", ...definition } });
  cleanups.push(() => started.close());
  return started;
}

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));
const TEMPLATE = '{"title": "{{name}} is {{state}}", "text": "{{message}}", "labels": "{{labels.team}}"}';

describe("webhook output", () => {
  it("POSTs the event as JSON by default, with the configured headers", async () => {
    const hook = await receiver();
    const { outputs, settled } = harness({ url: `${hook.url}/in?x=1`, headers: { "X-Api-Key": "s3cr3t" } });
    const event = notificationOf();
    outputs.offer("hook", event);
    await hook.acceptedAtLeast(1);
    const [request] = hook.requests;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/in?x=1");
    expect(request?.headers).toMatchObject({ "content-type": "application/json", "x-api-key": "s3cr3t" });
    expect(JSON.parse(request?.body.toString("utf8") ?? "")).toEqual(event);
    expect(await settled("hook", "sent", 1)).toBe(1);
  });

  it("PUTs a template's body, its variables escaped as JSON string content, so the body stays JSON", async () => {
    const hook = await receiver();
    const { outputs } = harness({ url: hook.url, method: "PUT", template: TEMPLATE });
    outputs.offer("hook", notificationOf({ message: 'line 1\nsaid "hi" \\ done' }));
    await hook.acceptedAtLeast(1);
    expect(hook.requests[0]?.method).toBe("PUT");
    expect(JSON.parse(hook.requests[0]?.body.toString("utf8") ?? "")).toEqual({
      title: "api <prod> is critical",
      text: 'line 1\nsaid "hi" \\ done',
      labels: "web",
    });
  });

  it("sends a text template as it is with another content type", async () => {
    const hook = await receiver();
    const { outputs } = harness({
      url: hook.url,
      "content-type": "text/plain; charset=utf-8",
      template: '{{name}}: "{{message}}"',
    });
    outputs.offer("hook", notificationOf());
    await hook.acceptedAtLeast(1);
    expect(hook.requests[0]?.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(hook.requests[0]?.body.toString("utf8")).toBe('api <prod>: "HTTP 503 & "slow""');
  });

  it("does not retry a refusal (the answer's start logged), never logs the URL's credentials", async () => {
    const hook = await receiver(() => ({ status: 401, body: "bad key" }));
    const { outputs, settled, logs, rawLogs } = harness({ url: hook.url.replace("http://", "http://me:s3cr3t@") });
    outputs.offer("hook", notificationOf());
    expect(await settled("hook", "dropped-rejected", 1)).toBe(1);
    await sleep(300);
    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from("me:s3cr3t").toString("base64")}`);
    expect(logs.find((line) => line.level === 40)).toMatchObject({ reason: "HTTP 401", answer: "bad key" });
    expect(rawLogs.join("")).not.toContain("s3cr3t");
  });

  it("retries a 503 and delivers the message once", async () => {
    const hook = await receiver((_, index) => (index === 0 ? { status: 503 } : { status: 200 }));
    const { outputs, settled } = harness({ url: hook.url });
    outputs.offer("hook", notificationOf());
    await hook.acceptedAtLeast(1);
    expect(await settled("hook", "sent", 1)).toBe(1);
    await sleep(200);
    expect(hook.requests).toHaveLength(2);
    expect(hook.accepted).toHaveLength(1);
  });

  it("renders a group and a stream event", () => {
    const list = '{"count": {{count}}, "names": [{{#alerts}}"{{name}}",{{/alerts}}""]}';
    expect(JSON.parse(webhookBody(groupOf([{ name: 'a"b' }, { name: "c" }]), list, JSON_ESCAPE, ""))).toEqual({
      count: 2,
      names: ['a"b', "c", ""],
    });
    expect(
      webhookBody({ service: "cpu", state: "ok" }, "{{name}} {{status}} {{url}}", NO_ESCAPE, "https://v.example"),
    ).toBe("cpu resolved https://v.example");
    expect(isJsonContentType("application/json; charset=utf-8")).toBe(true);
    expect(isJsonContentType("application/vnd.api+json")).toBe(true);
    expect(isJsonContentType("text/plain")).toBe(false);
  });

  it("takes the URL from an environment variable or a file, and refuses bad keys naming them", async () => {
    const hook = await receiver();
    vi.stubEnv("VIGIE_TEST_WEBHOOK_URL", `${hook.url}/from-env`);
    const file = join(temporaryDirectory(), "webhook-url");
    writeFileSync(file, `${hook.url}/from-file\n`);
    harness({ "url-env": "VIGIE_TEST_WEBHOOK_URL" }).outputs.offer("hook", notificationOf());
    await hook.acceptedAtLeast(1);
    harness({ "url-file": file }).outputs.offer("hook", notificationOf());
    await hook.acceptedAtLeast(2);
    expect(hook.requests.map((request) => request.url)).toEqual(["/from-env", "/from-file"]);
    const parse = (definition: Record<string, unknown>) => () =>
      outputsSection({ hook: { type: "webhook", url: "https://a.example", ...definition } }, "outputs");
    expect(parse({ template: "{{#alerts}}" })).toThrow(/^outputs\.hook\.template: is not a valid template/);
    expect(parse({ method: "GET" })).toThrow(/^outputs\.hook\.method: must be one of POST, PUT$/);
    expect(parse({ "content-type": "json\r\nX: y" })).toThrow(
      /^outputs\.hook\.content-type: must be a media type such as application\/json/,
    );
    expect(parse({ "title-template": "x" })).toThrow(/^outputs\.hook\.title-template: unknown key/);
    expect(parse({})()).toMatchObject({
      hook: { method: "POST", headers: {}, "content-type": "application/json", "batch-size": 1 },
    });
  });

  it("delivers what a stream sends to it through output!, on a real server", async () => {
    const hook = await receiver();
    const { server, push } = await streamingServer(
      { hook: { type: "webhook", url: hook.url, template: '{"text": "{{name}}: {{message}}"}' } },
      "hook",
    );
    cleanups.push(() => server.close());
    expect(await push([{ host: "web-1", service: "cpu", state: "critical", description: 'load "9"' }])).toBe(200);
    await hook.acceptedAtLeast(1);
    expect(JSON.parse(hook.requests[0]?.body.toString("utf8") ?? "")).toEqual({ text: 'cpu: load "9"' });
  });
});
