import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { outputsSection } from "../../../../src/platform/outputs/config.js";
import { headerText, ntfyMessage } from "../../../../src/platform/outputs/notifiers/ntfy.js";
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

const TOKEN = "tk_s3cr3tntfyt0k3n";
const PUBLISHED = { status: 200, body: '{"id":"x1","time":1714557600,"event":"message","topic":"alerts"}' };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(responder: Responder = () => PUBLISHED): Promise<Receiver> {
  const started = await startReceiver(responder);
  cleanups.push(() => started.close());
  return started;
}

function harness(definition: Record<string, unknown>): NotifierHarness {
  const started = notifierHarness({ push: { type: "ntfy", ...definition } });
  cleanups.push(() => started.close());
  return started;
}

const templates = { text: DEFAULT_TEXT, title: DEFAULT_TITLE };
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));
/** What ntfy reads from an RFC 2047 encoded word. */
const decoded = (header: string | string[] | undefined) => {
  const match = /^=\?UTF-8\?B\?(.*)\?=$/.exec(String(header));
  return match === null ? header : Buffer.from(match[1] ?? "", "base64").toString("utf8");
};

describe("ntfy output", () => {
  it("POSTs the message as plain text to the topic URL, with Title, Priority, Tags, Click and the token", async () => {
    const ntfy = await receiver();
    const { outputs, settled } = harness({ url: `${ntfy.url}/alerts`, token: TOKEN });
    outputs.offer("push", notificationOf());
    await ntfy.acceptedAtLeast(1);
    const [request] = ntfy.requests;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/alerts");
    expect(request?.headers).toMatchObject({
      "content-type": "text/plain; charset=utf-8",
      authorization: `Bearer ${TOKEN}`,
      title: "api <prod> is critical (triggered)",
      priority: "urgent",
      tags: "rotating_light",
      click: "https://status.example.org/status",
    });
    expect(request?.body.toString("utf8")).toBe(
      'api <prod> is critical (triggered): HTTP 503 & "slow"\nhttps://status.example.org/status',
    );
    expect(await settled("push", "sent", 1)).toBe(1);
  });

  it("sends a resolve at the default priority, and a title outside ASCII as an RFC 2047 encoded word", async () => {
    const ntfy = await receiver();
    const { outputs } = harness({ url: `${ntfy.url}/alerts` });
    outputs.offer("push", notificationOf({ name: "café ☕", state: "ok", status: "resolved" }));
    await ntfy.acceptedAtLeast(1);
    const headers = ntfy.requests[0]?.headers ?? {};
    expect(headers).toMatchObject({ priority: "default", tags: "white_check_mark" });
    expect(headers.authorization).toBeUndefined();
    expect(headers.title).toMatch(/^=\?UTF-8\?B\?/);
    expect(decoded(headers.title)).toBe("café ☕ is ok (resolved)");
    expect(headerText("plain")).toBe("plain");
  });

  it("does not retry a refusal and logs ntfy's error, never the token", async () => {
    const ntfy = await receiver(() => ({
      status: 403,
      body: '{"code":40301,"http":403,"error":"forbidden","link":"https://ntfy.sh/docs/publish/#authentication"}',
    }));
    const { outputs, settled, logs, rawLogs } = harness({ url: `${ntfy.url}/alerts`, token: TOKEN });
    outputs.offer("push", notificationOf());
    expect(await settled("push", "dropped-rejected", 1)).toBe(1);
    await sleep(300);
    expect(ntfy.requests).toHaveLength(1);
    expect(logs.find((line) => line.level === 40)).toMatchObject({ reason: "HTTP 403: forbidden" });
    expect(rawLogs.join("")).not.toContain("s3cr3t");
  });

  it("retries a 503 and delivers the message once", async () => {
    const ntfy = await receiver((_, index) => (index === 0 ? { status: 503 } : PUBLISHED));
    const { outputs, settled } = harness({ url: `${ntfy.url}/alerts` });
    outputs.offer("push", notificationOf());
    await ntfy.acceptedAtLeast(1);
    expect(await settled("push", "sent", 1)).toBe(1);
    await sleep(200);
    expect(ntfy.requests).toHaveLength(2);
    expect(ntfy.accepted).toHaveLength(1);
  });

  it("renders a group, a stream event, and cuts the body to 4096 bytes", () => {
    const group = ntfyMessage(
      groupOf([{ name: "db" }, { name: "web", state: "ok", status: "resolved" }]),
      templates,
      "",
    );
    expect(group.body).toBe(
      '2 alerts:\n- db is critical (triggered): HTTP 503 & "slow"\n- web is ok (resolved): HTTP 503 & "slow"\n\nhttps://status.example.org/status',
    );
    expect(group.headers).toMatchObject({ title: "2 alerts: db triggered; web resolved;", priority: "urgent" });
    const stream = ntfyMessage({ service: "cpu", state: "ok", description: "fine" }, templates, "");
    expect(stream).toEqual({
      body: "cpu is ok (resolved): fine",
      headers: { title: "cpu is ok (resolved)", priority: "default", tags: "white_check_mark" },
    });
    const long = ntfyMessage(notificationOf({ message: "é".repeat(3000) }), templates, "");
    expect(Buffer.byteLength(long.body)).toBeLessThanOrEqual(4096);
    expect(long.body).toMatch(/é…$/);
  });

  it("takes the token from an environment variable or a file, and refuses a broken template", async () => {
    vi.stubEnv("VIGIE_TEST_NTFY_TOKEN", TOKEN);
    const file = join(temporaryDirectory(), "ntfy-token");
    writeFileSync(file, `${TOKEN}\n`);
    const ntfy = await receiver();
    harness({ url: ntfy.url, "token-env": "VIGIE_TEST_NTFY_TOKEN" }).outputs.offer("push", notificationOf());
    await ntfy.acceptedAtLeast(1);
    harness({ url: ntfy.url, "token-file": file }).outputs.offer("push", notificationOf());
    await ntfy.acceptedAtLeast(2);
    expect(ntfy.requests.map((request) => request.headers.authorization)).toEqual([
      `Bearer ${TOKEN}`,
      `Bearer ${TOKEN}`,
    ]);
    expect(() =>
      outputsSection({ push: { type: "ntfy", url: "https://ntfy.sh/a", template: "{{#x}}{{/y}}" } }, "outputs"),
    ).toThrow(/^outputs\.push\.template: is not a valid template/);
    expect(() => outputsSection({ push: { type: "ntfy", url: "https://ntfy.sh/a", token: "a b" } }, "outputs")).toThrow(
      /^outputs\.push\.token: must be a token$/,
    );
  });

  it("delivers what a stream sends to it through output!, on a real server", async () => {
    const ntfy = await receiver();
    const { server, push } = await streamingServer({ push: { type: "ntfy", url: `${ntfy.url}/alerts` } }, "push");
    cleanups.push(() => server.close());
    expect(await push([{ host: "web-1", service: "cpu", state: "critical", description: "load 9" }])).toBe(200);
    await ntfy.acceptedAtLeast(1);
    expect(ntfy.requests[0]?.headers).toMatchObject({ title: "cpu is critical (triggered)", priority: "urgent" });
    expect(ntfy.requests[0]?.body.toString("utf8")).toMatch(/^cpu is critical \(triggered\): load 9/);
  });
});
